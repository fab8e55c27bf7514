import Foundation
import Testing
@testable import ChunkMigrate

/// What the source already was, the migrated store is too: the job's check carries the source's
/// own anomalies (the same invariant, on the same rows) and fails only on what the migration
/// brought about.
@Suite("Core Data: the source's anomalies carried")
struct CoreDataCarriedTests {
    static let model = """
        <entity name="Folder">
            <attribute name="title" attributeType="String"/>
            <relationship name="notes" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Note" inverseName="folders" inverseEntity="Note"/>
        </entity>
        <entity name="Note">
            <attribute name="body" attributeType="String"/>
            <relationship name="folders" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Folder" inverseName="notes" inverseEntity="Folder"/>
        </entity>
        """

    /// A source whose rows 2 and 3 of Note have no body (required), and whose join table keeps a
    /// row to a folder deleted since; an empty destination of the same model.
    static func stores(in folder: TemporaryFolder) throws -> (source: URL, destination: URL) {
        let model = try CoreDataTesting.model(Self.model)
        let layout = try CoreDataLayout(model: model)
        let join = try #require(layout.joinTables.first)
        let folderSide = try #require(join.sides.first { $0.target == layout.entity(named: "Folder")?.number })
        let noteSide = try #require(join.sides.first { $0.target == layout.entity(named: "Note")?.number })
        let source = try CoreDataTesting.store(
            model, at: folder.path("Notes.sqlite"), uuid: "C0000000-0000-0000-0000-000000000001",
            rows: """
                INSERT INTO ZFOLDER (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (1, 1, 1, 'Inbox');
                INSERT INTO ZNOTE (Z_PK, Z_ENT, Z_OPT, ZBODY) VALUES (1, 2, 1, 'a'), (2, 2, 1, NULL), (3, 2, 1, NULL), (4, 2, 1, 'd');
                INSERT INTO \(join.name) (\(folderSide.column), \(noteSide.column)) VALUES (1, 1), (7, 4);
                """)
        let destination = try CoreDataTesting.store(model, at: folder.path("Migrated.sqlite"), uuid: "C0000000-0000-0000-0000-000000000002")
        return (source, destination)
    }

    static func run(_ plan: MigrationPlan, _ stores: (source: URL, destination: URL), in folder: TemporaryFolder) throws
        -> CoreDataStoreCheck.Report
    {
        let job = try MigrationJob.start(
            plan: plan, source: stores.source, destination: stores.destination, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 2), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        return try #require(job.storeCheck)
    }

    @Test("required values the source left NULL and a join row to a deleted row are carried: the job's check passes and names them")
    func sourceAnomaliesCarried() throws {
        let folder = try TemporaryFolder()
        let stores = try Self.stores(in: folder)
        #expect(try CoreDataStoreCheck.run(store: stores.source).violations.count == 2)
        let report = try Self.run(try MigrationPlan.infer(source: stores.source, destination: stores.destination).plan, stores, in: folder)
        #expect(report.isValid, "\(report.violations)")
        #expect(report.carried.count == 2, "\(report.carried)")
        #expect(
            report.carried.contains {
                $0.hasPrefix("ZNOTE.ZBODY: 2 rows of Note have no value for the required Note.body, the first with Z_PK 2")
            })
        #expect(report.carried.contains { $0.contains(": 1 rows point at no row of Folder") })
        // The check of the migrated store alone finds the same, as violations.
        #expect(try CoreDataStoreCheck.run(store: stores.destination).violations.count == 2)
    }

    @Test("a NULL the migration brought about fails the job's check: in a row the source had a value in, or in more rows than the source")
    func introducedIsAViolation() throws {
        for (expression, count) in [
            ("CASE WHEN Z_PK = 4 THEN NULL ELSE ZBODY END", 3), ("CASE WHEN Z_PK = 2 THEN 'b' WHEN Z_PK = 4 THEN NULL ELSE ZBODY END", 2),
        ] {
            let folder = try TemporaryFolder()
            let stores = try Self.stores(in: folder)
            var plan = try MigrationPlan.infer(source: stores.source, destination: stores.destination).plan
            let note = try #require(plan.entities.firstIndex { $0.destination.table == "ZNOTE" })
            plan.entities[note].columns["ZBODY"] = expression
            let report = try Self.run(plan, stores, in: folder)
            #expect(
                report.violations == [
                    "ZNOTE.ZBODY: \(count) rows of Note have no value for the required Note.body, the first with Z_PK \(count == 3 ? 2 : 3)"
                ],
                "\(expression): \(report.violations)")
            // The join row is the source's still.
            #expect(report.carried.count == 1 && report.carried[0].contains("point at no row of Folder"), "\(report.carried)")
        }
    }

    @Test(
        "a store whose Z_PRIMARYKEY still names an entity as it was before a rename (Core Data numbers entities from the model and never reads the name) migrates as any other"
    )
    func entityNameFromBeforeARename() throws {
        let folder = try TemporaryFolder()
        let stores = try Self.stores(in: folder)
        try Database(path: stores.source.path, mode: .readWrite).execute("UPDATE Z_PRIMARYKEY SET Z_NAME = 'Memo' WHERE Z_NAME = 'Note'")
        let inferred = try MigrationPlan.infer(source: stores.source, destination: stores.destination)
        #expect(
            inferred.notes.contains { $0.hasPrefix("Z_PRIMARYKEY of the source names entity 2 Memo, its name before a rename to Note") },
            "\(inferred.notes)")
        let report = try Self.run(inferred.plan, stores, in: folder)
        #expect(report.isValid, "\(report.violations)")
        #expect(
            try CoreDataMigrationTests.rows(stores.destination, "ZNOTE", columns: "Z_PK, Z_ENT, ZBODY")
                == (try CoreDataMigrationTests.rows(stores.source, "ZNOTE", columns: "Z_PK, Z_ENT, ZBODY")))
        #expect(try CoreDataMigrationTests.entityNames(stores.destination)[2] == "Note")
    }

    @Test("findings compared by invariant, entity, property and rows, through the plan's names")
    func sameFinding() {
        typealias Finding = CoreDataStoreCheck.Finding
        let had = Finding(.required, entity: "Note", property: "text", count: 2, keys: [2, 3], line: "")
        let names = CoreDataStoreCheck.Report.SourceNames(
            entities: ["Memo": "Note"], properties: ["Memo.body": ["body", "text"]], keysKept: ["Memo"])
        let same = CoreDataStoreCheck.Report.same
        #expect(same(Finding(.required, entity: "Memo", property: "body", count: 2, keys: [2, 3], line: ""), had, names))
        #expect(same(Finding(.required, entity: "Memo", property: "body", count: 1, keys: [3], line: ""), had, names))
        #expect(!same(Finding(.required, entity: "Memo", property: "body", count: 2, keys: [3, 4], line: ""), had, names))
        #expect(!same(Finding(.required, entity: "Memo", property: "body", count: 3, keys: [2, 3, 4], line: ""), had, names))
        #expect(!same(Finding(.dangling, entity: "Memo", property: "body", count: 1, line: ""), had, names))
        #expect(!same(Finding(.required, entity: "Memo", property: "title", count: 1, line: ""), had, names))
        #expect(
            !same(
                Finding(.required, entity: "Note", property: "body", count: 1, line: ""),
                Finding(.required, entity: "Folder", property: "body", count: 1, line: ""), .init()))
        // Keys allocated anew: the count alone.
        #expect(
            same(
                Finding(.required, entity: "Memo", property: "body", count: 2, keys: [8, 9], line: ""), had,
                .init(entities: ["Memo": "Note"], properties: ["Memo.body": ["body", "text"]])))
    }
}
