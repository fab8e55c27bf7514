import Foundation
import Testing
import MigrationJournal
@testable import ChunkMigrate

/// A plan's encoding is the job's frozen `plan.json`, whose SHA-256 a journal keeps: the same plan
/// must encode to the same bytes in every version. `EncodedPlans/` holds the bytes that the code
/// before ``EntityMapping`` had non-optional properties wrote for these plans (and a journal header
/// entity, whose `keys` is a number).
@Suite("Plan encoding")
struct PlanEncodingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func readmePlan() throws -> Data {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = readme.components(separatedBy: "A plan is a JSON file")[1]
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
            ("readme", try MigrationPlan.decode(json: try readmePlan())),
            ("demo", DemoStore.plan),
            ("book", BookDemoStore.plan),
            ("example", try MigrationPlan.decode(json: Data(contentsOf: root.appendingPathComponent("Examples/BookMigration/plan.json")))),
            ("jsonDefaultsLeftOut", try MigrationPlan.decode(json: Data(minimal.utf8))),
            ("jsonDefaultsSpelled", try MigrationPlan.decode(json: Data(spelled.utf8))),
            ("initDefaults", MigrationPlan(entities: [
                EntityMapping(name: "A", source: .init(table: "a"), destination: .init(table: "a")),
                EntityMapping(name: "B", source: .init(table: "b", key: "id"), destination: .init(table: "b", key: "id"),
                              relationships: ["a_id": .init(from: "a_id", to: "A")]),
            ])),
            ("initSpelled", MigrationPlan(entities: [
                EntityMapping(name: "A", source: .init(table: "a"), destination: .init(table: "a"), keys: .allocate,
                              columns: [:], relationships: [:],
                              distinct: .init(source: "lower(name)", destination: "name")),
                EntityMapping(name: "B", source: .init(table: "b", key: "id", where: "id > 0"), destination: .init(table: "b", key: "id"),
                              keys: .preserve, relationships: ["a_id": .init(from: "name", to: "A", missing: .fail)]),
            ])),
            ("mutated", mutated),
        ]
    }

    static func expected(_ name: String) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent("Tests/ChunkMigrateTests/EncodedPlans/\(name).json"))
    }

    @Test("plans encode to the bytes they always had: the README's, the demos', the example's, defaults left out or spelled")
    func sameBytes() throws {
        for (name, plan) in try Self.plans() {
            let encoded = try plan.encodedJSON()
            #expect(String(decoding: encoded, as: UTF8.self) == String(decoding: try Self.expected(name), as: UTF8.self), "\(name)")
        }
    }

    @Test("a decoded plan encodes back to the bytes it was decoded from")
    func roundTrip() throws {
        for (name, _) in try Self.plans() {
            let bytes = try Self.expected(name)
            #expect(try MigrationPlan.decode(json: bytes).encodedJSON() == bytes, "\(name)")
        }
    }

    @Test("defaults apply when the JSON leaves them out, and the journal header still stores keys as a number")
    func defaults() throws {
        let plan = try MigrationPlan.decode(json: try Self.expected("jsonDefaultsLeftOut"))
        #expect(plan.entities[0].keys == .allocate)
        #expect(plan.entities[0].columns.isEmpty && plan.entities[0].relationships.isEmpty)
        #expect(plan.entities[1].relationships["a_id"]?.missing == .fail)
        #expect(try MigrationPlan.decode(json: try Self.expected("jsonDefaultsSpelled")).entities[1].keys == .preserve)
        let entity = JournalHeader.Entity(name: "A", sourceTable: "a", destinationTable: "a", keys: .preserve, relationships: ["x": "B"])
        #expect(try JSONEncoder.sortedAndIndented().encode(entity) == Self.expected("headerEntity"))
    }

    @Test("a key policy the plan misspells is refused at its path")
    func badKeyPolicy() throws {
        let json = #"{"entities": [{"name": "A", "source": {"table": "a"}, "destination": {"table": "b"}, "keys": "shuffle"}]}"#
        let error = try #require(throws: MigrationError.self) { try MigrationPlan.decode(json: Data(json.utf8), file: "plan.json") }
        #expect(error.message.hasPrefix("entities[0].keys: \"shuffle\" is not a key policy"))
    }
}
