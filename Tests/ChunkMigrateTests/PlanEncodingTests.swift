import Foundation
import Testing
import MigrationJournal
@testable import ChunkMigrate
import ChunkMigrateDemo

/// A plan's JSON and what becomes of it. `EncodedPlans/` holds these plans as the version before
/// ``EntityMapping`` had non-optional properties encoded them (and a journal header's entity,
/// whose `keys` is a number): frozen `plan.json` files that journals started by that version hold.
@Suite("Plan encoding")
struct PlanEncodingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The plan of the Plans article (the README's until the guides moved to the DocC catalog, hence
    /// `EncodedPlans/readme.json`).
    static func documentedPlan() throws -> Data {
        let article = try String(
            contentsOf: root.appendingPathComponent("Sources/ChunkMigrate/ChunkMigrate.docc/Plans.md"), encoding: .utf8)
        let section = article.components(separatedBy: "A plan is a JSON file")[1]
        let block = section.components(separatedBy: "```json\n")[1].components(separatedBy: "```")[0]
        return Data(block.utf8)
    }

    static func plans() throws -> [(String, MigrationPlan)] {
        let minimal = """
            { "entities": [
                { "name": "A", "source": { "table": "a" }, "destination": { "table": "a" } },
                { "name": "B", "source": { "table": "b", "key": "id" }, "destination": { "table": "b", "key": "id" },
                  "relationships": { "a_id": { "from": "a_id", "to": "A" } } } ] }
            """
        let spelled = """
            { "entities": [
                { "name": "A", "source": { "table": "a" }, "destination": { "table": "a" },
                  "keys": "allocate", "columns": {}, "relationships": {} },
                { "name": "B", "source": { "table": "b", "key": "id" }, "destination": { "table": "b", "key": "id" },
                  "keys": "preserve", "columns": { "x": "x" },
                  "relationships": { "a_id": { "from": "a_id", "to": "A", "missing": "fail" } } } ] }
            """
        var mutated = try MigrationPlan.decode(json: Data(minimal.utf8))
        mutated.entities[0].keys = .allocate
        mutated.entities[0].relationships = [:]
        mutated.entities[1].columns = ["t": "t"]
        return [
            ("readme", try MigrationPlan.decode(json: try documentedPlan())),
            ("demo", DemoStore.plan),
            ("book", BookDemoStore.plan),
            ("example", try MigrationPlan.decode(json: Data(contentsOf: root.appendingPathComponent("Examples/BookMigration/plan.json")))),
            ("jsonDefaultsLeftOut", try MigrationPlan.decode(json: Data(minimal.utf8))),
            ("jsonDefaultsSpelled", try MigrationPlan.decode(json: Data(spelled.utf8))),
            (
                "initDefaults",
                MigrationPlan(entities: [
                    EntityMapping(name: "A", source: .init(table: "a"), destination: .init(table: "a")),
                    EntityMapping(
                        name: "B", source: .init(table: "b", key: "id"), destination: .init(table: "b", key: "id"),
                        relationships: ["a_id": .init(from: "a_id", to: "A")]),
                ])
            ),
            (
                "initSpelled",
                MigrationPlan(entities: [
                    EntityMapping(
                        name: "A", source: .init(table: "a"), destination: .init(table: "a"), keys: .allocate,
                        columns: [:], relationships: [:],
                        distinct: .init(source: "lower(name)", destination: "name")),
                    EntityMapping(
                        name: "B", source: .init(table: "b", key: "id", where: "id > 0"), destination: .init(table: "b", key: "id"),
                        keys: .preserve, relationships: ["a_id": .init(from: "name", to: "A", missing: .fail)]),
                ])
            ),
            ("mutated", mutated),
        ]
    }

    static func earlierEncoding(_ name: String) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent("Tests/ChunkMigrateTests/EncodedPlans/\(name).json"))
    }

    @Test(
        "a plan as an earlier version encoded it decodes to the same plan: the Plans article's, the demos', the example's, defaults left out or spelled"
    )
    func earlierEncodingsDecodeAlike() throws {
        for (name, plan) in try Self.plans() {
            #expect(try MigrationPlan.decode(json: try Self.earlierEncoding(name)) == plan, "\(name)")
        }
    }

    @Test("encoding spells out every default, and a plan decodes back from its encoding, to the same bytes again")
    func canonicalEncoding() throws {
        for (name, plan) in try Self.plans() {
            let encoded = try plan.encodedJSON()
            let decoded = try MigrationPlan.decode(json: encoded)
            #expect(decoded == plan, "\(name)")
            #expect(try decoded.encodedJSON() == encoded, "\(name)")
        }
        let text = String(
            decoding: try MigrationPlan.decode(json: try Self.earlierEncoding("jsonDefaultsLeftOut")).encodedJSON(), as: UTF8.self)
        #expect(text.components(separatedBy: #""keys" : "allocate""#).count == 3)
        #expect(text.contains(#""missing" : "fail""#) && text.contains(#""columns" : {"#) && text.contains(#""relationships" : {"#))
    }

    @Test("a job whose frozen plan.json an earlier version wrote resumes with the same plan, spelled either way, and refuses another")
    func resumeJournalOfEarlierVersion() async throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 3_000)
        let schema = try String(contentsOf: files.schema, encoding: .utf8)
        let destination = folder.path("new.sqlite"), journal = folder.path("journal")
        let job = try MigrationJob.start(
            plan: DemoStore.plan, source: files.source, destination: destination, journal: journal,
            schema: schema, options: MigrationOptions(batchSize: 200), logger: quietLogger)
        #expect(try await job.run(for: .zero) != .complete)
        // The journal as the earlier version would have written it: its plan.json, and the
        // header's fingerprint of those bytes.
        let earlier = try Self.earlierEncoding("demo")
        #expect(earlier != (try DemoStore.plan.encodedJSON()))
        let layout = JournalLayout(directory: journal.path)
        var header = try JournalHeader.decode(Array(try Data(contentsOf: URL(fileURLWithPath: layout.header))), file: layout.header)
        header.planFingerprint = JournalSHA256.hex(Array(earlier))
        try Data(try header.encoded()).write(to: URL(fileURLWithPath: layout.header))
        try earlier.write(to: URL(fileURLWithPath: layout.plan))

        var other = DemoStore.plan
        other.entities[0].columns["title"] = "upper(title)"
        let refused = try #require(throws: MigrationError.self) {
            try MigrationJob.resume(at: journal, plan: other, logger: quietLogger)
        }
        #expect(refused.code == .mismatch && refused.message.hasPrefix("the plan differs"))

        let spelledDifferently = try MigrationPlan.decode(json: try Self.earlierEncoding("demo"))
        let resumed = try MigrationJob.resume(at: journal, plan: spelledDifferently, logger: quietLogger)
        #expect(try await resumed.run() == .complete)
        let again = try MigrationJob.resume(at: journal, plan: DemoStore.plan, logger: quietLogger)
        #expect(again.isComplete)
        let report = JournalReader.verify(directory: journal.path)
        #expect(report.problems.isEmpty, "\(report.problems)")
    }

    @Test("defaults apply when the JSON leaves them out, and the journal header still stores keys as a number")
    func defaults() throws {
        let plan = try MigrationPlan.decode(json: try Self.earlierEncoding("jsonDefaultsLeftOut"))
        #expect(plan.entities[0].keys == .allocate)
        #expect(plan.entities[0].columns.isEmpty && plan.entities[0].relationships.isEmpty)
        #expect(plan.entities[1].relationships["a_id"]?.missing == .fail)
        #expect(try MigrationPlan.decode(json: try Self.earlierEncoding("jsonDefaultsSpelled")).entities[1].keys == .preserve)
        let entity = JournalHeader.Entity(name: "A", sourceTable: "a", destinationTable: "a", keys: .preserve, relationships: ["x": "B"])
        #expect(try JSONEncoder.sortedAndIndented().encode(entity) == Self.earlierEncoding("headerEntity"))
    }

    @Test("a key policy the plan misspells is refused at its path")
    func badKeyPolicy() throws {
        let json = #"{"entities": [{"name": "A", "source": {"table": "a"}, "destination": {"table": "b"}, "keys": "shuffle"}]}"#
        let error = try #require(throws: MigrationError.self) { try MigrationPlan.decode(json: Data(json.utf8), file: "plan.json") }
        #expect(error.message.hasPrefix("entities[0].keys: \"shuffle\" is not a key policy"))
    }
}
