import Foundation
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// Core Data to Core Data: plans inferred from the models two stores carry, entity numbers
/// rewritten by name, `Z_MAX` kept ahead of the keys, the store's identity carried over, and the
/// invariants Core Data relies on checked on every store, with the real stores of the shared
/// fixtures and stores written from models for the tests.
@Suite("Core Data migrations")
struct CoreDataMigrationTests {
    static let fixtureNames = [
        "Accounts3.sqlite", "DataUsage.sqlite", "NoteStore.sqlite", "NotesV7.storedata", "RMAdminStore-Local.sqlite",
        "kik.sqlite", "knowledgec-10.13.db", "knowledgec-10.14.db", "netusage.sqlite", "BookMigration/Model1.sqlite",
        "CoreDataStack/TestModel.sqlite", "PhotosLibrary/Photos.sqlite",
    ]
    /// The fixtures that carry their model (or, for the 2013 BookMigration store, have its XML).
    static let modelledFixtures = fixtureNames.filter { !["kik.sqlite", "NotesV7.storedata"].contains($0) }
    static let fixturesPresent = fixtureNames.allSatisfy { CoreDataStoreTests.fixture($0) != nil }

    /// The model of a fixture without a model cache, from the XML beside it.
    static func givenModel(for name: String) throws -> CoreDataModel? {
        guard name == "BookMigration/Model1.sqlite", let xml = CoreDataStoreTests.fixture("BookMigration/Model1.xcdatamodel.xml") else {
            return nil
        }
        return try CoreDataModel.read(contentsOf: xml)
    }

    /// Infers the plan from the two stores and runs it to the end.
    @discardableResult
    static func migrate(
        _ source: URL, into destination: URL, folder: TemporaryFolder, journal: String = "journal",
        batchSize: Int = 3, options: InferenceOptions = InferenceOptions()
    ) throws -> InferredPlan {
        let inferred = try MigrationPlan.infer(source: source, destination: destination, options: options)
        let job = try MigrationJob.start(
            plan: inferred.plan, source: source, destination: destination,
            journal: folder.path(journal), options: MigrationOptions(batchSize: batchSize),
            logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        // The check the job made while it wrote the store (derived values computed alongside,
        // lookups as their indexes come) finds what the check made apart finds.
        let own = try #require(job.storeCheck)
        let apart = try CoreDataStoreCheck.run(migrated: destination, source: source, plan: inferred.plan)
        #expect(
            Set(own.violations) == Set(apart.violations) && Set(own.carried) == Set(apart.carried) && own.checked == apart.checked,
            "\(own) against \(apart)")
        return inferred
    }

    /// The rows of `table`, ordered by its key or rowid.
    static func rows(_ store: URL, _ table: String, columns: String = "*") throws -> [[SQLiteValue]] {
        try Database(path: store.path, mode: .readOnly).rows("SELECT \(columns) FROM \(SQL.quote(table)) ORDER BY rowid")
    }

    static func entityNames(_ store: URL) throws -> [Int64: String] {
        let rows = try Database(path: store.path, mode: .readOnly).rows("SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY")
        return Dictionary(uniqueKeysWithValues: rows.compactMap { row in row[0].integer.map { ($0, row[1].text ?? "") } })
    }

    @Test(
        "every fixture store, as Apple's framework wrote it, satisfies the invariants check-coredata checks against its own model",
        .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"), arguments: fixtureNames)
    func fixtureStoresPassTheCheck(_ name: String) throws {
        let folder = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy(name, into: folder)
        let report = try CoreDataStoreCheck.run(store: store, model: try Self.givenModel(for: name))
        #expect(report.violations == [])
        if Self.modelledFixtures.contains(name) {
            #expect(report.unchecked == [] && report.checked > 5, "\(report)")
        } else {
            // No model: what needs one is said, not skipped silently.
            #expect(report.unchecked.count == 1 && report.unchecked[0].contains("no model cache"))
        }
    }

    @Test(
        "the check names what breaks the invariants: a stray Z_ENT, Z_MAX behind a key, dangling join rows, a polymorphic column that disagrees, a required value missing",
        .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"))
    func checkFindsViolations() throws {
        let folder = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy("knowledgec-10.14.db", into: folder)
        let database = try Database(path: store.path, mode: .readWrite)
        // Object is 9, Event 11; Z9_VALUE holds the entity of the row ZVALUE points at.
        try database.execute(
            """
            UPDATE ZOBJECT SET Z_ENT = 5 WHERE Z_PK = (SELECT min(Z_PK) FROM ZOBJECT);
            UPDATE Z_PRIMARYKEY SET Z_MAX = 3 WHERE Z_NAME = 'Object';
            INSERT INTO Z_4EVENT (Z_4CUSTOMMETADATA, Z_11EVENT) VALUES (999, 998);
            UPDATE ZOBJECT SET ZVALUE = (SELECT max(Z_PK) FROM ZOBJECT), Z9_VALUE = 10 WHERE Z_PK = (SELECT max(Z_PK) FROM ZOBJECT);
            """)
        let report = try CoreDataStoreCheck.run(store: store)
        let text = report.violations.joined(separator: "\n")
        #expect(report.violations.count == 5, "\(text)")
        #expect(text.contains("ZOBJECT: 1 rows have a Z_ENT outside the entity tree of Object"))
        #expect(text.contains("Z_MAX of Object is 3"))
        #expect(text.contains("Z_4EVENT.Z_4CUSTOMMETADATA: 1 rows point at no row of CustomMetadata"))
        #expect(text.contains("Z_4EVENT.Z_11EVENT: 1 rows point at no row of Event"))
        #expect(text.contains("ZOBJECT.ZVALUE: 1 rows point at no row of"), "\(text)")
    }

    @Test(
        "identity migration of every fixture store into an emptied copy of itself: every table's rows equal, keys preserved, the app's metadata carried, the check passes",
        .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"), arguments: modelledFixtures)
    func identityMigration(_ name: String) throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy(name, into: folder)
        let destination = try CoreDataTesting.emptiedCopy(of: source, named: "new.sqlite", in: folder)
        let model = try Self.givenModel(for: name)
        let inferred = try Self.migrate(
            source, into: destination, folder: folder,
            options: InferenceOptions(sourceModel: model, destinationModel: model))
        #expect(inferred.plan.coreData != nil)
        #expect(inferred.plan.entities.allSatisfy { $0.keys == .preserve || $0.source.key == nil })

        let storeModel = try #require(try model ?? CoreDataModel.read(store: source))
        let (layout, others) = try CoreDataLayout(model: storeModel).resolved(
            against: Database(path: source.path, mode: .source),
            schema: "main", file: source.path)
        var compared = 0
        // The model's tables, and persistent history (Photos' library holds only history).
        for table in layout.tables.values.map(\.name) + layout.joinTables.map(\.name) + others.history {
            #expect(try Self.rows(destination, table) == (try Self.rows(source, table)), "\(table)")
            compared += try Self.rows(source, table).count
        }
        #expect(compared > 0 || name.hasPrefix("CoreDataStack"))
        let modelEntities = "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_ENT"
        #expect(
            try Database(path: destination.path, mode: .readOnly).rows(modelEntities)
                == (try Database(path: source.path, mode: .readOnly).rows(modelEntities)))
        // The store's identity and the app's own metadata keys (RMAdminStore's STUnique) follow the data.
        let before = try CoreDataMetadata.read(Database(path: source.path, mode: .source), file: source.path)
        let after = try CoreDataMetadata.read(Database(path: destination.path, mode: .readOnly), file: destination.path)
        #expect(after.uuid == before.uuid)
        #expect(CoreDataTesting.describe(after.plist ?? [:]) == CoreDataTesting.describe(before.plist ?? [:]))
        #expect(try CoreDataStoreCheck.run(store: destination, model: model).violations == [])
    }

    @Test(
        "knowledgeC 10.13 into an emptied 10.14: the inferred plan runs without edits, entity numbers follow the names, values and relationships arrive unchanged",
        .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"))
    func knowledgeC() throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy("knowledgec-10.13.db", into: folder)
        let new = try CoreDataStoreTests.copy("knowledgec-10.14.db", into: folder)
        let destination = try CoreDataTesting.emptiedCopy(of: new, named: "migrated.sqlite", in: folder)
        let inferred = try Self.migrate(source, into: destination, folder: folder, batchSize: 4)

        #expect(inferred.decisions.contains("entity Object: number 8 -> 9"))
        #expect(inferred.decisions.contains { $0.contains("join table Z_4EVENT -> Z_4EVENT") && $0.contains("Z_10EVENT -> Z_11EVENT") })
        #expect(inferred.notes.contains { $0.hasPrefix("ACHANGE: the destination has no persistent history") })
        let object = try #require(inferred.plan.entities.first { $0.name == "Object" })
        #expect(object.columns["Z9_VALUE"] == "coredata_entity(Z8_VALUE)")
        #expect(object.columns["Z_ENT"] == "coredata_entity(Z_ENT)")

        // Every row: the same key, the entity of the same name, the same values in every column
        // both models have.
        let oldNames = try Self.entityNames(source), newNames = try Self.entityNames(destination)
        let old = try Self.rows(
            source, "ZOBJECT",
            columns: "Z_PK, Z_ENT, Z_OPT, ZSTREAMNAME, ZVALUESTRING, ZSTARTDATE, ZENDDATE, ZEVENT, ZSOURCE, ZVALUE, ZUUID")
        let migrated = try Self.rows(
            destination, "ZOBJECT",
            columns: "Z_PK, Z_ENT, Z_OPT, ZSTREAMNAME, ZVALUESTRING, ZSTARTDATE, ZENDDATE, ZEVENT, ZSOURCE, ZVALUE, ZUUID")
        #expect(old.count == 21 && migrated.count == old.count)
        for (before, after) in zip(old, migrated) {
            #expect(before[0] == after[0])
            #expect(oldNames[before[1].integer ?? -1] == newNames[after[1].integer ?? -2])
            #expect(Array(before[2...]) == Array(after[2...]))
        }
        #expect(Set(migrated.map { $0[1] }) == [.integer(11)])  // Event: 10 in 10.13, 11 in 10.14
        let maxRows = try Database(path: destination.path, mode: .readOnly).rows(
            "SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY WHERE Z_MAX > 0 ORDER BY Z_NAME")
        #expect(
            maxRows == [[.text("Object"), .integer(528)], [.text("Source"), .integer(14)], [.text("StructuredMetadata"), .integer(14)]])
        // The store's identity follows the data; the model's metadata stays the new one's.
        let uuid = try scalar("SELECT Z_UUID FROM Z_METADATA", on: source)
        #expect(try scalar("SELECT Z_UUID FROM Z_METADATA", on: destination) == uuid)
        let hashes = { (store: URL) in
            try CoreDataMetadata.read(Database(path: store.path, mode: .source), file: store.path).plist?["NSStoreModelVersionHashes"]
                as? [String: Data]
        }
        #expect(try hashes(destination) == (try hashes(new)))
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
    }

    @Test(
        "stopped after every batch and resumed, a Core Data migration gives the destination of an uninterrupted run, with Z_MAX ahead of every key at every stop",
        .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"))
    func pausedAfterEveryBatch() throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy("netusage.sqlite", into: folder)
        // A Z_MAX behind the keys in the source: the batches themselves must raise it.
        try execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Process'", on: source)
        let reference = try CoreDataTesting.emptiedCopy(of: source, named: "reference.sqlite", in: folder)
        try Self.migrate(source, into: reference, folder: folder, journal: "reference", batchSize: 40)

        let destination = try CoreDataTesting.emptiedCopy(of: source, named: "stopped.sqlite", in: folder)
        let plan = try MigrationPlan.infer(source: source, destination: destination).plan
        _ = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("stopped"),
            options: MigrationOptions(batchSize: 40), logger: quietLogger)
        var runs = 0
        while true {
            let job = try MigrationJob.resume(at: folder.path("stopped"), options: MigrationOptions(batchSize: 40), logger: quietLogger)
            let outcome = try job.runBlocking(for: .zero)
            runs += 1
            let database = try Database(path: destination.path, mode: .readOnly)
            let behind = try database.scalar(
                """
                SELECT count(*) FROM Z_PRIMARYKEY WHERE Z_NAME = 'Process' AND Z_MAX < (SELECT ifnull(max(Z_PK), 0) FROM ZPROCESS)
                """)
            #expect(behind == .integer(0), "after run \(runs)")
            if outcome == .complete { break }
        }
        #expect(runs > 10)
        #expect(try dump(destination) == (try dump(reference)))
        #expect(
            try scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Process'", on: destination)
                == (try scalar("SELECT max(Z_PK) FROM ZPROCESS", on: source)))
    }

    /// Old: Item 1 (Link 2, Note 3, Photo 4) and Owner 5, Item.ref a to-one into the Item tree
    /// (polymorphic `Z1_REF`), Item.owner a to-one into Owner. New: Account 1 is new, Note renamed
    /// Memo, Owner renamed Person, Photo removed, Item gains `pinned`; every number shifts.
    static let oldRenamedModel = """
        <entity name="Item"><attribute name="title" optional="YES" attributeType="String"/>
          <attribute name="rank" optional="YES" attributeType="Integer 64"/>
          <relationship name="owner" optional="YES" maxCount="1" destinationEntity="Owner" inverseName="items"/>
          <relationship name="ref" optional="YES" maxCount="1" destinationEntity="Item"/></entity>
        <entity name="Link" parentEntity="Item"/><entity name="Note" parentEntity="Item"/><entity name="Photo" parentEntity="Item"/>
        <entity name="Owner"><attribute name="name" optional="YES" attributeType="String"/>
          <relationship name="items" optional="YES" toMany="YES" destinationEntity="Item" inverseName="owner"/></entity>
        """

    static func newRenamedModel(renamingIdentifiers: Bool) -> String {
        """
        <entity name="Account"/>
        <entity name="Item"><attribute name="title" optional="YES" attributeType="String"/>
          <attribute name="\(renamingIdentifiers ? "position\" elementID=\"rank" : "rank")" optional="YES" attributeType="Integer 64"/>
          <relationship name="owner" optional="YES" maxCount="1" destinationEntity="Person" inverseName="items"/>
          <relationship name="ref" optional="YES" maxCount="1" destinationEntity="Item"/></entity>
        <entity name="Link" parentEntity="Item"/>
        <entity name="Memo" parentEntity="Item"\(renamingIdentifiers ? " elementID=\"Note\"" : "")><attribute name="pinned" attributeType="Boolean" defaultValueString="YES"/></entity>
        <entity name="Person"\(renamingIdentifiers ? " elementID=\"Owner\"" : "")><attribute name="name" optional="YES" attributeType="String"/>
          <relationship name="items" optional="YES" toMany="YES" destinationEntity="Item" inverseName="owner"/></entity>
        """
    }

    static func renamedModelStores(in folder: TemporaryFolder, renamingIdentifiers: Bool) throws -> (old: URL, new: URL) {
        let old = try CoreDataTesting.store(
            try CoreDataTesting.model(oldRenamedModel), at: folder.path("old.sqlite"), uuid: "OLD-UUID",
            metadata: ["SyncToken": "t-17"],
            rows: """
                INSERT INTO ZOWNER (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 5, 1, 'ann'), (2, 5, 1, 'bob');
                INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZOWNER, ZREF, Z1_REF, ZTITLE, ZRANK) VALUES
                    (3, 2, 1, 1, NULL, NULL, 'link', 30), (7, 3, 2, 2, 3, 2, 'note', 70), (8, 4, 1, 1, 7, 3, 'photo', 80),
                    (12, 3, 1, NULL, 12, 3, 'self', 120), (20, 2, 4, 2, 7, 3, 'link 2', 200)
                """)
        try execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 40 WHERE Z_NAME = 'Item'", on: old)
        let new = try CoreDataTesting.store(
            try CoreDataTesting.model(newRenamedModel(renamingIdentifiers: renamingIdentifiers)),
            at: folder.path("new.sqlite"), uuid: "NEW-UUID")
        return (old, new)
    }

    @Test("renames given by the caller, a removed sub-entity and a polymorphic column whose numbers shift")
    func renamesAndRemovedSubEntity() throws {
        let folder = try TemporaryFolder()
        let (old, new) = try Self.renamedModelStores(in: folder, renamingIdentifiers: false)
        let inferred = try Self.migrate(
            old, into: new, folder: folder, batchSize: 2,
            options: InferenceOptions(renames: ["Memo": "Note", "Person": "Owner"]))
        #expect(inferred.decisions.contains("entity Memo (renamed from Note): number 3 -> 4"))
        #expect(inferred.decisions.contains("entity Memo: renamed from Note (given)"))
        #expect(inferred.notes.contains("entity Photo (4): no counterpart in the destination model; its 1 rows are not copied"))
        #expect(inferred.notes.contains("entity Account (1): new in the destination model; left empty"))
        // Memo's new pinned: ZITEM keeps its columns (only added and renamed ones), so Core Data adds
        // the column in place and every row of the table takes the default, Link's too.
        #expect(
            try Self.rows(new, "ZITEM", columns: "Z_PK, Z_ENT, Z_OPT, ZOWNER, ZREF, Z2_REF, ZTITLE, ZRANK, ZPINNED") == [
                [.integer(3), .integer(3), .integer(1), .integer(1), .null, .null, .text("link"), .integer(30), .integer(1)],
                [.integer(7), .integer(4), .integer(2), .integer(2), .integer(3), .integer(3), .text("note"), .integer(70), .integer(1)],
                [.integer(12), .integer(4), .integer(1), .null, .integer(12), .integer(4), .text("self"), .integer(120), .integer(1)],
                [
                    .integer(20), .integer(3), .integer(4), .integer(2), .integer(7), .integer(4), .text("link 2"), .integer(200),
                    .integer(1),
                ],
            ])
        #expect(
            try Self.rows(new, "ZPERSON", columns: "Z_PK, Z_ENT, Z_OPT, ZNAME") == [
                [.integer(1), .integer(5), .integer(1), .text("ann")],
                [.integer(2), .integer(5), .integer(1), .text("bob")],
            ])
        #expect(
            try Database(path: new.path, mode: .readOnly).rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT")
                == [
                    [.text("Account"), .integer(0)], [.text("Item"), .integer(40)], [.text("Link"), .integer(0)],
                    [.text("Memo"), .integer(0)], [.text("Person"), .integer(2)],
                ])
        let metadataAfter = try CoreDataMetadata.read(Database(path: new.path, mode: .readOnly), file: new.path)
        #expect(metadataAfter.uuid == "OLD-UUID" && metadataAfter.storeUUID == "OLD-UUID")
        #expect(metadataAfter.hashedEntities == ["Account", "Item", "Link", "Memo", "Person"])
        #expect(metadataAfter.plist?["SyncToken"] as? String == "t-17")
        #expect(try CoreDataStoreCheck.run(store: new).violations == [])
    }

    @Test(
        "renamingIdentifiers rename entities and attributes, a new required attribute takes its default in every row of its table, and keys can be allocated with every to-one and self-reference through the ID map"
    )
    func renamingIdentifiersAndAllocatedKeys() throws {
        let folder = try TemporaryFolder()
        let (old, new) = try Self.renamedModelStores(in: folder, renamingIdentifiers: true)
        let inferred = try Self.migrate(old, into: new, folder: folder, batchSize: 2, options: InferenceOptions(keys: .allocate))
        #expect(inferred.decisions.contains("entity Person (renamed from Owner): number 5 -> 5"))
        #expect(inferred.decisions.contains("Item.position: renamed from Item.rank (renamingIdentifier)"))
        #expect(
            inferred.decisions.contains(
                "ZPINNED: new in Memo, every row of ZITEM takes the default 1 (Item, Link too), as Core Data's in-place column add gives it"
            ),
            "\(inferred.decisions)")
        let item = try #require(inferred.plan.entities.first { $0.name == "Item" })
        #expect(item.keys == .allocate)
        // Photo's rows are not copied: a reference to one has no mapping and becomes NULL.
        #expect(
            item.relationships == ["ZOWNER": .init(from: "ZOWNER", to: "Person"), "ZREF": .init(from: "ZREF", to: "Item", missing: .null)])
        #expect(item.columns["ZPOSITION"] == "ZRANK")
        // Keys 3, 7, 12, 20 became 1, 2, 3, 4 in source-key order; ZREF follows them (12 refers to itself).
        // Memo's new required pinned takes its default (YES) in every row of ZITEM, as Core Data's
        // in-place column add gives it: ZITEM keeps its columns (one renamed, one added).
        #expect(
            try Self.rows(new, "ZITEM", columns: "Z_PK, Z_ENT, ZOWNER, ZREF, Z2_REF, ZTITLE, ZPOSITION, ZPINNED") == [
                [.integer(1), .integer(3), .integer(1), .null, .null, .text("link"), .integer(30), .integer(1)],
                [.integer(2), .integer(4), .integer(2), .integer(1), .integer(3), .text("note"), .integer(70), .integer(1)],
                [.integer(3), .integer(4), .null, .integer(3), .integer(4), .text("self"), .integer(120), .integer(1)],
                [.integer(4), .integer(3), .integer(2), .integer(2), .integer(4), .text("link 2"), .integer(200), .integer(1)],
            ])
        #expect(
            try Database(path: new.path, mode: .readOnly).rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY WHERE Z_MAX > 0 ORDER BY Z_ENT")
                == [[.text("Item"), .integer(4)], [.text("Person"), .integer(2)]])
        #expect(try CoreDataStoreCheck.run(store: new).violations == [])
        // New keys: the old store's object-ID URIs must not name these objects; the app's keys follow all the same.
        #expect(try scalar("SELECT Z_UUID FROM Z_METADATA", on: new) == .text("NEW-UUID"))
        #expect(
            try CoreDataMetadata.read(Database(path: new.path, mode: .readOnly), file: new.path).plist?["SyncToken"] as? String == "t-17")
        #expect(inferred.notes.contains { $0.hasPrefix("keys allocated: the destination keeps its own store UUID") })
    }

    @Test(
        "a new uniqueness constraint that source rows violate: the batch fails naming the row, or, when asked, the first row of each value is kept and the rest counted",
        .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"))
    func newUniquenessConstraint() throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy("knowledgec-10.13.db", into: folder)
        // 10.14 adds a uniqueness constraint on Object.uuid; give three later rows the first row's UUID.
        try execute(
            """
            UPDATE ZOBJECT SET ZUUID = (SELECT ZUUID FROM ZOBJECT ORDER BY Z_PK LIMIT 1)
            WHERE Z_PK IN (SELECT Z_PK FROM ZOBJECT ORDER BY Z_PK LIMIT 3 OFFSET 10)
            """, on: source)
        let duplicate = try #require(try scalar("SELECT Z_PK FROM ZOBJECT ORDER BY Z_PK LIMIT 1 OFFSET 10", on: source).integer)
        let new = try CoreDataStoreTests.copy("knowledgec-10.14.db", into: folder)

        let failing = try CoreDataTesting.emptiedCopy(of: new, named: "failing.sqlite", in: folder)
        let inferred = try MigrationPlan.infer(source: source, destination: failing)
        #expect(
            inferred.notes.contains {
                $0.hasPrefix("ZOBJECT(ZUUID): a new uniqueness constraint of Object that 3 rows of the source violate")
            }, "\(inferred.notes)")
        let job = try MigrationJob.start(
            plan: inferred.plan, source: source, destination: failing, journal: folder.path("failing"),
            options: MigrationOptions(batchSize: 4), logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.entity == "Object" && error.sourceKey == duplicate && error.column == "ZUUID", "\(error)")
        #expect(error.message.contains("UNIQUE constraint failed"))

        let kept = try CoreDataTesting.emptiedCopy(of: new, named: "kept.sqlite", in: folder)
        let keeping = try Self.migrate(
            source, into: kept, folder: folder, journal: "kept", batchSize: 4,
            options: InferenceOptions(keepFirstDuplicate: true))
        #expect(keeping.notes.contains { $0.contains("these 3 are not copied") })
        #expect(try scalar("SELECT count(*) FROM ZOBJECT", on: kept) == .integer(18))
        #expect(try scalar("SELECT count(DISTINCT ZUUID) FROM ZOBJECT", on: kept) == .integer(18))
        #expect(try scalar("SELECT min(Z_PK) FROM ZOBJECT", on: kept) == (try scalar("SELECT min(Z_PK) FROM ZOBJECT", on: source)))
        #expect(try CoreDataStoreCheck.run(store: kept).violations == [])
    }

    @Test(
        "a generated Core Data store of 1M items into its next model, stopped every few hundred milliseconds and resumed: every row, entity number, polymorphic value, join pair and Z_MAX as the source says, and the check passes"
    )
    func generatedStoreAtScale() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 1_000_000)
        let inferred = try MigrationPlan.infer(source: files.old, destination: files.new)
        #expect(
            inferred.decisions.contains("join table Z_2TAGS -> Z_3TAGS (columns Z_2ITEMS -> Z_3ITEMS, Z_5TAGS -> Z_6TAGS)"),
            "\(inferred.decisions)")
        _ = try MigrationJob.start(
            plan: inferred.plan, source: files.old, destination: files.new, journal: folder.path("journal"),
            logger: quietLogger)
        var runs = 0
        while try MigrationJob.resume(at: folder.path("journal"), logger: quietLogger).runBlocking(for: .milliseconds(300)) == .paused {
            runs += 1
        }
        #expect(runs >= 3)

        let database = try Database(path: files.new.path, mode: .readWrite)
        try database.execute(
            """
            ATTACH DATABASE '\(files.old.path)' AS o;
            CREATE TEMP TABLE number AS SELECT od.Z_ENT AS old, nd.Z_ENT AS new FROM o.Z_PRIMARYKEY od JOIN main.Z_PRIMARYKEY nd USING (Z_NAME);
            """)
        func count(_ sql: String) throws -> Int64 { try database.scalar(sql).integer ?? -1 }
        let mapped = { (column: String) in "(SELECT new FROM temp.number WHERE old = s.\(column))" }
        for table in ["ZFOLDER", "ZITEM", "ZTAG"] {
            #expect(try count("SELECT count(*) FROM main.\(table)") == (try count("SELECT count(*) FROM o.\(table)")), "\(table)")
        }
        #expect(try count("SELECT count(*) FROM main.ZITEM") == 1_000_000)
        #expect(
            try count(
                """
                SELECT count(*) FROM o.ZITEM s LEFT JOIN main.ZITEM n ON n.Z_PK = s.Z_PK
                WHERE n.Z_PK IS NULL OR n.Z_ENT IS NOT \(mapped("Z_ENT")) OR n.Z3_LINKED IS NOT \(mapped("Z2_LINKED"))
                   OR n.Z_OPT IS NOT s.Z_OPT OR n.ZFOLDER IS NOT s.ZFOLDER OR n.Z_FOK_FOLDER IS NOT s.Z_FOK_FOLDER
                   OR n.ZLINKED IS NOT s.ZLINKED OR n.ZCREATED IS NOT s.ZCREATED OR n.ZSIZE IS NOT s.ZSIZE
                   OR n.ZTITLE IS NOT s.ZTITLE OR n.ZURL IS NOT s.ZURL OR n.ZBODY IS NOT s.ZBODY OR n.ZPINNED IS NOT NULL
                """) == 0)
        #expect(
            try count(
                """
                SELECT count(*) FROM o.ZFOLDER s LEFT JOIN main.ZFOLDER n ON n.Z_PK = s.Z_PK
                WHERE n.Z_PK IS NULL OR n.Z_ENT IS NOT \(mapped("Z_ENT")) OR n.ZPARENT IS NOT s.ZPARENT OR n.ZNAME IS NOT s.ZNAME
                """) == 0)
        #expect(try count("SELECT count(*) FROM main.Z_3TAGS") == (try count("SELECT count(*) FROM o.Z_2TAGS")))
        #expect(
            try count("SELECT count(*) FROM (SELECT Z_2ITEMS, Z_5TAGS FROM o.Z_2TAGS EXCEPT SELECT Z_3ITEMS, Z_6TAGS FROM main.Z_3TAGS)")
                == 0)
        #expect(
            try count(
                """
                SELECT count(*) FROM main.Z_PRIMARYKEY n JOIN o.Z_PRIMARYKEY s USING (Z_NAME)
                WHERE n.Z_MAX <> s.Z_MAX
                """) == 0)
        #expect(try count("SELECT count(*) FROM main.Z_METADATA n, o.Z_METADATA s WHERE n.Z_UUID = s.Z_UUID") == 1)
        #expect(try count("SELECT count(*) FROM main.sqlite_schema WHERE type = 'index' AND name = 'ZITEM_ZLINKED_INDEX'") == 1)
        try database.execute("DETACH DATABASE o")
        let report = try CoreDataStoreCheck.run(store: files.new)
        #expect(report.violations == [] && report.checked >= 10)
    }

    @Test(
        "a sub-entity that becomes a root of its own, a removed sub-entity with join rows and a duplicate of a kept row: each table gets its own rows, join rows to left-out rows are left out, the kept row is the first of the tree"
    )
    func subEntitiesLeftOutAndMoved() throws {
        let folder = try TemporaryFolder()
        // Old: Item 1 with sub-entities Note 2 and Photo 3, Tag 4, Item.tags many-to-many.
        let old = try CoreDataTesting.store(
            try CoreDataTesting.model(
                """
                <entity name="Item"><attribute name="code" optional="YES" attributeType="String"/>
                  <relationship name="tags" optional="YES" toMany="YES" destinationEntity="Tag" inverseName="items"/></entity>
                <entity name="Note" parentEntity="Item"/><entity name="Photo" parentEntity="Item"/>
                <entity name="Tag"><attribute name="name" optional="YES" attributeType="String"/>
                  <relationship name="items" optional="YES" toMany="YES" destinationEntity="Item" inverseName="tags"/></entity>
                """), at: folder.path("old.sqlite"), uuid: "U",
            rows: """
                INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZCODE) VALUES (1, 1, 1, 'a'), (2, 3, 1, 'x'), (3, 2, 1, 'n'), (4, 1, 1, 'x'), (5, 1, 1, 'x'), (6, 3, 1, 'p');
                INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 4, 1, 'red'), (2, 4, 1, 'blue');
                INSERT INTO Z_1TAGS (Z_1ITEMS, Z_4TAGS) VALUES (1, 1), (2, 1), (3, 2), (4, 2), (5, 1), (6, 2)
                """)
        // New: Photo removed, Note a root of its own, a uniqueness constraint on Item.code.
        let new = try CoreDataTesting.store(
            try CoreDataTesting.model(
                """
                <entity name="Item"><attribute name="code" optional="YES" attributeType="String"/>
                  <relationship name="tags" optional="YES" toMany="YES" destinationEntity="Tag" inverseName="items"/>
                  <uniquenessConstraints><uniquenessConstraint><constraint value="code"/></uniquenessConstraint></uniquenessConstraints></entity>
                <entity name="Note"><attribute name="code" optional="YES" attributeType="String"/></entity>
                <entity name="Tag"><attribute name="name" optional="YES" attributeType="String"/>
                  <relationship name="items" optional="YES" toMany="YES" destinationEntity="Item" inverseName="tags"/></entity>
                """), at: folder.path("new.sqlite"), uuid: "V")
        let inferred = try Self.migrate(old, into: new, folder: folder, batchSize: 2, options: InferenceOptions(keepFirstDuplicate: true))
        #expect(
            inferred.notes.contains { $0.hasPrefix("ZITEM(ZCODE): a new uniqueness constraint of Item that 1 rows of the source violate") },
            "\(inferred.notes)")
        // Items only (Photo rows 2 and 6 left out, Note row 3 in its own table); of 'x', row 4 is
        // the first Item (row 2 was a Photo) and row 5 its duplicate.
        #expect(
            try Self.rows(new, "ZITEM", columns: "Z_PK, Z_ENT, Z_OPT, ZCODE") == [
                [.integer(1), .integer(1), .integer(1), .text("a")],
                [.integer(4), .integer(1), .integer(1), .text("x")],
            ])
        #expect(try Self.rows(new, "ZNOTE", columns: "Z_PK, Z_ENT, Z_OPT, ZCODE") == [[.integer(3), .integer(2), .integer(1), .text("n")]])
        // Join rows of the Photos, the Note and the duplicate are gone with them.
        #expect(try Self.rows(new, "Z_1TAGS", columns: "Z_1ITEMS, Z_3TAGS") == [[.integer(1), .integer(1)], [.integer(4), .integer(2)]])
        #expect(try CoreDataStoreCheck.run(store: new).violations == [])
    }

    @Test("a source entity the plan maps nowhere fails its batch naming the entity and the row, not a silent NULL")
    func unmappedEntityFails() throws {
        let folder = try TemporaryFolder()
        let model = try CoreDataTesting.model(
            """
            <entity name="Item"><attribute name="title" optional="YES" attributeType="String"/></entity>
            <entity name="Note" parentEntity="Item"/>
            """)
        let old = try CoreDataTesting.store(
            model, at: folder.path("old.sqlite"), uuid: "U",
            rows: "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (4, 1, 1, 'a'), (9, 2, 1, 'b')")
        let new = try CoreDataTesting.store(model, at: folder.path("new.sqlite"), uuid: "V")
        var plan = try MigrationPlan.infer(source: old, destination: new).plan
        plan.coreData?.entities["Note"] = nil
        let job = try MigrationJob.start(
            plan: plan, source: old, destination: new, journal: folder.path("journal"),
            logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.entity == "Item" && error.sourceKey == 9 && error.code == .batch)
        #expect(error.message.contains("source entity Note (2) has no counterpart in the destination model"))
        #expect(try scalar("SELECT count(*) FROM ZITEM", on: new) == .integer(0))
    }

    @Test(
        "bad input: a destination that is not a Core Data store, unrelated models, a destination that already holds rows",
        .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"))
    func badInput() throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy("netusage.sqlite", into: folder)
        let plain = folder.path("plain.sqlite")
        try execute("CREATE TABLE t (id INTEGER PRIMARY KEY)", on: plain)
        let notCoreData = try #require(throws: MigrationError.self) { try MigrationPlan.infer(source: source, destination: plain) }
        #expect(notCoreData.file == plain.path && notCoreData.message.contains("the destination is not"))

        let other = try CoreDataTesting.emptiedCopy(
            of: try CoreDataStoreTests.copy("Accounts3.sqlite", into: folder), named: "other.sqlite", in: folder)
        let unrelated = try #require(throws: MigrationError.self) { try MigrationPlan.infer(source: source, destination: other) }
        #expect(unrelated.message.contains("no entity in common"))

        // A completed migration's destination cannot take a second copy.
        let destination = try CoreDataTesting.emptiedCopy(of: source, named: "new.sqlite", in: folder)
        let inferred = try Self.migrate(source, into: destination, folder: folder, batchSize: 50)
        let before = try dump(destination)
        let again = try #require(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: inferred.plan, source: source, destination: destination,
                journal: folder.path("second"), logger: quietLogger)
        }
        #expect(again.message.contains("the destination already holds rows in"), "\(again)")
        #expect(again.file == destination.path)
        #expect(try dump(destination) == before)
    }
}
