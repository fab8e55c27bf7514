import Foundation
import Testing
@testable import ChunkMigrate

/// Core Data to Core Data: plans inferred from two stores, entity numbers rewritten by name,
/// `Z_MAX` kept ahead of the keys, the store's identity carried over, and the invariants Core Data
/// relies on checked on every store, with the real stores of the shared fixtures.
@Suite("Core Data migrations")
struct CoreDataMigrationTests {
    static let fixtureNames = [
        "Accounts3.sqlite", "DataUsage.sqlite", "NoteStore.sqlite", "NotesV7.storedata", "RMAdminStore-Local.sqlite",
        "kik.sqlite", "knowledgec-10.13.db", "knowledgec-10.14.db", "netusage.sqlite", "BookMigration/Model1.sqlite",
        "CoreDataStack/TestModel.sqlite",
    ]
    static let fixturesPresent = fixtureNames.allSatisfy { CoreDataStoreTests.fixture($0) != nil }

    /// A copy of `store` with every entity and join table emptied and every `Z_MAX` set to 0,
    /// metadata and model cache kept: the store Core Data creates for the same model.
    static func emptiedCopy(of store: URL, named name: String, in folder: TemporaryFolder) throws -> URL {
        let copy = folder.path(name)
        try FileManager.default.copyItem(at: store, to: copy)
        let database = try Database(path: copy.path, mode: .readWrite)
        let tables = try database.rows("""
            SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
            AND name NOT IN ('Z_PRIMARYKEY', 'Z_METADATA', 'Z_MODELCACHE')
            """).compactMap { $0[0].text }
        try database.execute("BEGIN; " + tables.map { "DELETE FROM \(SQL.quote($0));" }.joined() + " UPDATE Z_PRIMARYKEY SET Z_MAX = 0; COMMIT;")
        return copy
    }

    /// Infers the plan from the two stores and runs it to the end.
    @discardableResult
    static func migrate(_ source: URL, into destination: URL, folder: TemporaryFolder, journal: String = "journal",
                        batchSize: Int = 3, options: InferenceOptions = InferenceOptions()) throws -> InferredPlan {
        let inferred = try MigrationPlan.infer(source: source, destination: destination, options: options)
        let job = try MigrationJob.start(plan: inferred.plan, source: source, destination: destination,
                                         journal: folder.path(journal), options: MigrationOptions(batchSize: batchSize),
                                         logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
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

    @Test("every fixture store, as Apple's framework wrote it, satisfies the invariants check-coredata checks",
          .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"), arguments: fixtureNames)
    func fixtureStoresPassTheCheck(_ name: String) throws {
        let folder = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy(name, into: folder)
        let report = try CoreDataStoreCheck.run(store: store)
        #expect(report.violations == [])
        #expect(report.checked > 3)
    }

    @Test("the check names what breaks the invariants: a stray Z_ENT, Z_MAX behind a key, a dangling join row, a polymorphic column that disagrees",
          .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"))
    func checkFindsViolations() throws {
        let folder = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy("knowledgec-10.14.db", into: folder)
        let database = try Database(path: store.path, mode: .readWrite)
        // Object is 9, Event 11; Z9_VALUE holds the entity of the row ZVALUE points at.
        try database.execute("""
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
        #expect(text.contains("ZOBJECT.ZVALUE: 1 rows point at no row of Object or disagree with Z9_VALUE"))
    }

    @Test("identity migration of every fixture store into an emptied copy of itself: every table's rows equal, keys preserved, the check passes",
          .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"), arguments: fixtureNames)
    func identityMigration(_ name: String) throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy(name, into: folder)
        let destination = try Self.emptiedCopy(of: source, named: "new.sqlite", in: folder)
        let inferred = try Self.migrate(source, into: destination, folder: folder)
        #expect(inferred.plan.coreData != nil)
        #expect(inferred.plan.entities.allSatisfy { $0.keys == .preserve || $0.source.key == nil })

        let layout = try CoreDataLayout.read(Database(path: source.path, mode: .readOnly), file: source.path)
        var compared = 0
        for table in layout.tables.values.map(\.name) + layout.joinTables.map(\.name) {
            #expect(try Self.rows(destination, table) == (try Self.rows(source, table)), "\(table)")
            compared += try Self.rows(source, table).count
        }
        #expect(compared > 0 || name.hasPrefix("CoreDataStack"))
        let modelEntities = "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_ENT"
        #expect(try Database(path: destination.path, mode: .readOnly).rows(modelEntities)
                == (try Database(path: source.path, mode: .readOnly).rows(modelEntities)))
        #expect(try Self.rows(destination, "Z_METADATA") == (try Self.rows(source, "Z_METADATA")))
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
    }

    @Test("knowledgeC 10.13 into an emptied 10.14: the inferred plan runs without edits, entity numbers follow the names, values and relationships arrive unchanged",
          .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"))
    func knowledgeC() throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy("knowledgec-10.13.db", into: folder)
        let new = try CoreDataStoreTests.copy("knowledgec-10.14.db", into: folder)
        let destination = try Self.emptiedCopy(of: new, named: "migrated.sqlite", in: folder)
        let inferred = try Self.migrate(source, into: destination, folder: folder, batchSize: 4)

        #expect(inferred.decisions.contains("entity Object: number 8 -> 9"))
        #expect(inferred.decisions.contains { $0.contains("join table Z_4EVENT -> Z_4EVENT") && $0.contains("Z_10EVENT -> Z_11EVENT") })
        #expect(inferred.notes.contains { $0.hasPrefix("ACHANGE: persistent history is not copied") })
        let object = try #require(inferred.plan.entities.first { $0.name == "Object" })
        #expect(object.columns["Z9_VALUE"] == "coredata_entity(Z8_VALUE)")
        #expect(object.columns["Z_ENT"] == "coredata_entity(Z_ENT)")

        // Every row: the same key, the entity of the same name, the same values in every column
        // both models have.
        let oldNames = try Self.entityNames(source), newNames = try Self.entityNames(destination)
        let old = try Self.rows(source, "ZOBJECT", columns: "Z_PK, Z_ENT, Z_OPT, ZSTREAMNAME, ZVALUESTRING, ZSTARTDATE, ZENDDATE, ZEVENT, ZSOURCE, ZVALUE, ZUUID")
        let migrated = try Self.rows(destination, "ZOBJECT", columns: "Z_PK, Z_ENT, Z_OPT, ZSTREAMNAME, ZVALUESTRING, ZSTARTDATE, ZENDDATE, ZEVENT, ZSOURCE, ZVALUE, ZUUID")
        #expect(old.count == 21 && migrated.count == old.count)
        for (before, after) in zip(old, migrated) {
            #expect(before[0] == after[0])
            #expect(oldNames[before[1].integer ?? -1] == newNames[after[1].integer ?? -2])
            #expect(Array(before[2...]) == Array(after[2...]))
        }
        #expect(Set(migrated.map { $0[1] }) == [.integer(11)])  // Event: 10 in 10.13, 11 in 10.14
        let maxRows = try Database(path: destination.path, mode: .readOnly).rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY WHERE Z_MAX > 0 ORDER BY Z_NAME")
        #expect(maxRows == [[.text("Object"), .integer(528)], [.text("Source"), .integer(14)], [.text("StructuredMetadata"), .integer(14)]])
        // The store's identity follows the data; the model's metadata stays the new one's.
        let uuid = try scalar("SELECT Z_UUID FROM Z_METADATA", on: source)
        #expect(try scalar("SELECT Z_UUID FROM Z_METADATA", on: destination) == uuid)
        #expect(try scalar("SELECT Z_PLIST FROM Z_METADATA", on: destination) == (try scalar("SELECT Z_PLIST FROM Z_METADATA", on: new)))
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
    }

    @Test("stopped after every batch and resumed, a Core Data migration gives the destination of an uninterrupted run, with Z_MAX ahead of every key at every stop",
          .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"))
    func pausedAfterEveryBatch() throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy("kik.sqlite", into: folder)
        // A Z_MAX behind the keys in the source: the batches themselves must raise it.
        try execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'KikMessage'", on: source)
        let reference = try Self.emptiedCopy(of: source, named: "reference.sqlite", in: folder)
        try Self.migrate(source, into: reference, folder: folder, journal: "reference", batchSize: 7)

        let destination = try Self.emptiedCopy(of: source, named: "stopped.sqlite", in: folder)
        let plan = try MigrationPlan.infer(source: source, destination: destination).plan
        _ = try MigrationJob.start(plan: plan, source: source, destination: destination, journal: folder.path("stopped"),
                                   options: MigrationOptions(batchSize: 7), logger: quietLogger)
        var runs = 0
        while true {
            let job = try MigrationJob.resume(at: folder.path("stopped"), options: MigrationOptions(batchSize: 7), logger: quietLogger)
            let outcome = try job.runBlocking(for: .zero)
            runs += 1
            let database = try Database(path: destination.path, mode: .readOnly)
            let behind = try database.scalar("""
                SELECT count(*) FROM Z_PRIMARYKEY WHERE Z_NAME = 'KikMessage' AND Z_MAX < (SELECT ifnull(max(Z_PK), 0) FROM ZKIKMESSAGE)
                """)
            #expect(behind == .integer(0), "after run \(runs)")
            if outcome == .complete { break }
        }
        #expect(runs > 10)
        #expect(try dump(destination) == (try dump(reference)))
        #expect(try scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'KikMessage'", on: destination)
                == (try scalar("SELECT max(Z_PK) FROM ZKIKMESSAGE", on: source)))
    }

    /// Two stores written for the tests: the old model has Item 1 (Link 2, Note 3, Photo 4) and
    /// Owner 5, ZITEM.ZREF a polymorphic to-one into the Item tree and ZOWNER a to-one into Owner;
    /// the new model adds Account 1, renames Note to Memo and Owner to Person, removes Photo and
    /// adds ZITEM.ZPINNED, so every number shifts.
    static func renamedModelStores(in folder: TemporaryFolder) throws -> (old: URL, new: URL) {
        let old = folder.path("old.sqlite"), new = folder.path("new.sqlite")
        let metadata = { (uuid: String, names: [String]) -> String in
            let plist: [String: Any] = ["NSStoreUUID": uuid, "NSStoreType": "SQLite",
                                        "NSStoreModelVersionHashes": Dictionary(uniqueKeysWithValues: names.map { ($0, Data([1, 2])) })]
            let bytes = try! PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
            return "INSERT INTO Z_METADATA VALUES (1, '\(uuid)', x'\(bytes.map { String(format: "%02x", $0) }.joined())');"
        }
        let bookkeeping = """
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            """
        // Old: Item 1 (Link 2, Note 3, Photo 4), Owner 5; ZITEM.ZREF points into the Item tree.
        try execute(bookkeeping + """
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 40), (2, 'Link', 1, 0), (3, 'Note', 1, 0), (4, 'Photo', 1, 0), (5, 'Owner', 0, 2);
            CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZOWNER INTEGER, ZREF INTEGER, Z1_REF INTEGER, ZTITLE VARCHAR);
            CREATE INDEX ZITEM_ZOWNER_INDEX ON ZITEM (ZOWNER);
            CREATE INDEX ZITEM_ZREF_INDEX ON ZITEM (ZREF);
            CREATE TABLE ZOWNER (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            INSERT INTO ZOWNER VALUES (1, 5, 1, 'ann'), (2, 5, 1, 'bob');
            INSERT INTO ZITEM VALUES (3, 2, 1, 1, NULL, NULL, 'link'), (7, 3, 2, 2, 3, 2, 'note'), (8, 4, 1, 1, 7, 3, 'photo'),
                                     (12, 3, 1, NULL, 12, 3, 'self'), (20, 2, 4, 2, 7, 3, 'link 2');
            """ + metadata("OLD-UUID", ["Item", "Link", "Note", "Photo", "Owner"]), on: old)
        // New: Account 1 is new, Item 2 (Link 3, Memo 4: Note renamed; Photo removed), Person 5 (Owner renamed).
        try execute(bookkeeping + """
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Account', 0, 0), (2, 'Item', 0, 0), (3, 'Link', 2, 0), (4, 'Memo', 2, 0), (5, 'Person', 0, 0);
            CREATE TABLE ZACCOUNT (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER);
            CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZOWNER INTEGER, ZREF INTEGER, Z2_REF INTEGER, ZTITLE VARCHAR, ZPINNED INTEGER);
            CREATE INDEX ZITEM_ZOWNER_INDEX ON ZITEM (ZOWNER);
            CREATE INDEX ZITEM_ZREF_INDEX ON ZITEM (ZREF);
            CREATE TABLE ZPERSON (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            """ + metadata("NEW-UUID", ["Account", "Item", "Link", "Memo", "Person"]), on: new)

        return (old, new)
    }

    @Test("renamed entities, a removed sub-entity and a polymorphic column whose numbers shift, in stores written for the test")
    func renamesAndRemovedSubEntity() throws {
        let folder = try TemporaryFolder()
        let (old, new) = try Self.renamedModelStores(in: folder)
        let inferred = try Self.migrate(old, into: new, folder: folder, batchSize: 2,
                                    options: InferenceOptions(renames: ["Memo": "Note", "Person": "Owner"]))
        #expect(inferred.decisions.contains("entity Memo (renamed from Note): number 3 -> 4"))
        #expect(inferred.notes.contains("entity Photo (4): no counterpart in the destination model; its 1 rows are not copied"))
        #expect(inferred.notes.contains("entity Account (1): new in the destination model; left empty"))
        #expect(try Self.rows(new, "ZITEM") == [
            [.integer(3), .integer(3), .integer(1), .integer(1), .null, .null, .text("link"), .null],
            [.integer(7), .integer(4), .integer(2), .integer(2), .integer(3), .integer(3), .text("note"), .null],
            [.integer(12), .integer(4), .integer(1), .null, .integer(12), .integer(4), .text("self"), .null],
            [.integer(20), .integer(3), .integer(4), .integer(2), .integer(7), .integer(4), .text("link 2"), .null],
        ])
        #expect(try Self.rows(new, "ZPERSON") == [[.integer(1), .integer(5), .integer(1), .text("ann")],
                                                  [.integer(2), .integer(5), .integer(1), .text("bob")]])
        #expect(try Database(path: new.path, mode: .readOnly).rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT")
                == [[.text("Account"), .integer(0)], [.text("Item"), .integer(40)], [.text("Link"), .integer(0)],
                    [.text("Memo"), .integer(0)], [.text("Person"), .integer(2)]])
        let metadataAfter = try CoreDataMetadata.read(Database(path: new.path, mode: .readOnly), file: new.path)
        #expect(metadataAfter.uuid == "OLD-UUID" && metadataAfter.storeUUID == "OLD-UUID")
        #expect(metadataAfter.hashedEntities == ["Account", "Item", "Link", "Memo", "Person"])
        #expect(try CoreDataStoreCheck.run(store: new).violations == [])
    }

    @Test("with the models' XML: renamingIdentifiers rename entities and attributes, defaults fill non-optional attributes, indexed attributes are not taken for relationships, and keys can be allocated with every to-one and self-reference through the ID map")
    func modelsAndAllocatedKeys() throws {
        let folder = try TemporaryFolder()
        let (old, new) = try Self.renamedModelStores(in: folder)
        try execute("ALTER TABLE ZITEM ADD COLUMN ZRANK INTEGER; CREATE INDEX ZITEM_ZRANK_INDEX ON ZITEM (ZRANK); UPDATE ZITEM SET ZRANK = Z_PK * 10;", on: old)
        try execute("ALTER TABLE ZITEM ADD COLUMN ZPOSITION INTEGER; CREATE INDEX ZITEM_ZPOSITION_INDEX ON ZITEM (ZPOSITION);", on: new)
        func model(_ xml: String) throws -> CoreDataModel {
            let file = folder.path(UUID().uuidString + ".xml")
            try ("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<model type=\"com.apple.IDECoreDataModeler.DataModel\">" + xml + "</model>")
                .write(to: file, atomically: true, encoding: .utf8)
            return try CoreDataModel.read(contentsOf: file)
        }
        let oldModel = try model("""
            <entity name="Item" isAbstract="YES"><attribute name="title" attributeType="String"/><attribute name="rank" attributeType="Integer 64" indexed="YES"/>
              <relationship name="owner" maxCount="1" destinationEntity="Owner"/><relationship name="ref" maxCount="1" destinationEntity="Item"/></entity>
            <entity name="Link" parentEntity="Item"/><entity name="Note" parentEntity="Item"/><entity name="Photo" parentEntity="Item"/>
            <entity name="Owner"><attribute name="name" attributeType="String"/><relationship name="items" toMany="YES" destinationEntity="Item"/></entity>
            """)
        let newModel = try model("""
            <entity name="Account"/>
            <entity name="Item" isAbstract="YES"><attribute name="title" optional="YES" attributeType="String"/>
              <attribute name="position" optional="YES" attributeType="Integer 64" renamingIdentifier="rank"/>
              <relationship name="owner" maxCount="1" destinationEntity="Person"/><relationship name="ref" maxCount="1" destinationEntity="Item"/></entity>
            <entity name="Link" parentEntity="Item"/>
            <entity name="Memo" parentEntity="Item" renamingIdentifier="Note"><attribute name="pinned" attributeType="Boolean" defaultValueString="YES"/></entity>
            <entity name="Person" renamingIdentifier="Owner"><attribute name="name" attributeType="String"/><relationship name="items" toMany="YES" destinationEntity="Item"/></entity>
            """)
        #expect(oldModel.entity(named: "Note")?.parent == "Item")
        #expect(newModel.toOneTargets(of: "Memo") == ["owner": "Person", "ref": "Item"])

        // Without the models, the stores cannot tell where ZOWNER points nor that ZPOSITION is an attribute.
        let blind = try #require(throws: MigrationError.self) {
            try MigrationPlan.infer(source: old, destination: new,
                                    options: InferenceOptions(renames: ["Memo": "Note", "Person": "Owner"], keys: .allocate))
        }
        #expect(blind.message.contains("the target of ZITEM.ZOWNER is unknown"), "\(blind)")

        let inferred = try Self.migrate(old, into: new, folder: folder, batchSize: 2,
                                        options: InferenceOptions(sourceModel: oldModel, destinationModel: newModel, keys: .allocate))
        #expect(inferred.decisions.contains("entity Person (renamed from Owner): number 5 -> 5"))
        #expect(inferred.decisions.contains("ZITEM.ZPOSITION: renamed from ZRANK (renamingIdentifier)"))
        let item = try #require(inferred.plan.entities.first { $0.name == "Item" })
        #expect(item.keys == .allocate)
        #expect(item.relationships == ["ZOWNER": .init(from: "ZOWNER", to: "Person"), "ZREF": .init(from: "ZREF", to: "Item")])
        #expect(item.columns["ZPOSITION"] == "ZRANK")
        // Keys 3, 7, 12, 20 became 1, 2, 3, 4 in source-key order; ZREF follows them (12 refers to itself).
        // Memo's new non-optional pinned takes its default (YES) in Memo rows only.
        #expect(try Self.rows(new, "ZITEM", columns: "Z_PK, Z_ENT, ZOWNER, ZREF, Z2_REF, ZTITLE, ZPOSITION, ZPINNED") == [
            [.integer(1), .integer(3), .integer(1), .null, .null, .text("link"), .integer(30), .null],
            [.integer(2), .integer(4), .integer(2), .integer(1), .integer(3), .text("note"), .integer(70), .integer(1)],
            [.integer(3), .integer(4), .null, .integer(3), .integer(4), .text("self"), .integer(120), .integer(1)],
            [.integer(4), .integer(3), .integer(2), .integer(2), .integer(4), .text("link 2"), .integer(200), .null],
        ])
        #expect(inferred.decisions.contains("ZITEM.ZPINNED: non-optional with default 1 in Memo: NULLs take the default"))
        #expect(try Database(path: new.path, mode: .readOnly).rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY WHERE Z_MAX > 0 ORDER BY Z_ENT")
                == [[.text("Item"), .integer(4)], [.text("Person"), .integer(2)]])
        let report = try CoreDataStoreCheck.run(store: new)
        #expect(report.violations == [] && report.unchecked.contains("ZITEM.ZOWNER"))
        // New keys: the old store's object-ID URIs must not name these objects.
        #expect(try scalar("SELECT Z_UUID FROM Z_METADATA", on: new) == .text("NEW-UUID"))
        #expect(inferred.notes.contains { $0.hasPrefix("keys allocated: the destination keeps its own store UUID") })
    }

    @Test("a new uniqueness constraint that source rows violate: the batch fails naming the row, or, when asked, the first row of each value is kept and the rest counted",
          .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"))
    func newUniquenessConstraint() throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy("knowledgec-10.13.db", into: folder)
        // 10.14 adds a unique index on ZOBJECT.ZUUID; give three later rows the first row's UUID.
        try execute("""
            UPDATE ZOBJECT SET ZUUID = (SELECT ZUUID FROM ZOBJECT ORDER BY Z_PK LIMIT 1)
            WHERE Z_PK IN (SELECT Z_PK FROM ZOBJECT ORDER BY Z_PK LIMIT 3 OFFSET 10)
            """, on: source)
        let duplicate = try #require(try scalar("SELECT Z_PK FROM ZOBJECT ORDER BY Z_PK LIMIT 1 OFFSET 10", on: source).integer)
        let new = try CoreDataStoreTests.copy("knowledgec-10.14.db", into: folder)

        let failing = try Self.emptiedCopy(of: new, named: "failing.sqlite", in: folder)
        let inferred = try MigrationPlan.infer(source: source, destination: failing)
        #expect(inferred.notes.contains { $0.hasPrefix("ZOBJECT(ZUUID): a new uniqueness constraint that 3 rows of the source violate") })
        let job = try MigrationJob.start(plan: inferred.plan, source: source, destination: failing, journal: folder.path("failing"),
                                         options: MigrationOptions(batchSize: 4), logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.entity == "Object" && error.sourceKey == duplicate && error.column == "ZUUID", "\(error)")
        #expect(error.message.contains("UNIQUE constraint failed"))

        let kept = try Self.emptiedCopy(of: new, named: "kept.sqlite", in: folder)
        let keeping = try Self.migrate(source, into: kept, folder: folder, journal: "kept", batchSize: 4,
                                       options: InferenceOptions(keepFirstDuplicate: true))
        #expect(keeping.notes.contains { $0.contains("these 3 are not copied") })
        #expect(try scalar("SELECT count(*) FROM ZOBJECT", on: kept) == .integer(18))
        #expect(try scalar("SELECT count(DISTINCT ZUUID) FROM ZOBJECT", on: kept) == .integer(18))
        #expect(try scalar("SELECT min(Z_PK) FROM ZOBJECT", on: kept) == (try scalar("SELECT min(Z_PK) FROM ZOBJECT", on: source)))
        #expect(try CoreDataStoreCheck.run(store: kept).violations == [])
    }

    @Test("a generated Core Data store of 1M items into its next model, stopped every few hundred milliseconds and resumed: every row, entity number, polymorphic value, join pair and Z_MAX as the source says, and the check passes")
    func generatedStoreAtScale() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 1_000_000)
        let inferred = try MigrationPlan.infer(source: files.old, destination: files.new)
        #expect(inferred.decisions.contains("join table Z_2TAGS -> Z_3TAGS (columns Z_2ITEMS -> Z_3ITEMS, Z_5TAGS -> Z_6TAGS)"))
        _ = try MigrationJob.start(plan: inferred.plan, source: files.old, destination: files.new, journal: folder.path("journal"),
                                   logger: quietLogger)
        var runs = 0
        while try MigrationJob.resume(at: folder.path("journal"), logger: quietLogger).runBlocking(for: .milliseconds(300)) == .paused {
            runs += 1
        }
        #expect(runs >= 3)

        let database = try Database(path: files.new.path, mode: .readWrite)
        try database.execute("""
            ATTACH DATABASE '\(files.old.path)' AS o;
            CREATE TEMP TABLE number AS SELECT od.Z_ENT AS old, nd.Z_ENT AS new FROM o.Z_PRIMARYKEY od JOIN main.Z_PRIMARYKEY nd USING (Z_NAME);
            """)
        func count(_ sql: String) throws -> Int64 { try database.scalar(sql).integer ?? -1 }
        let mapped = { (column: String) in "(SELECT new FROM temp.number WHERE old = s.\(column))" }
        for table in ["ZFOLDER", "ZITEM", "ZTAG"] {
            #expect(try count("SELECT count(*) FROM main.\(table)") == (try count("SELECT count(*) FROM o.\(table)")), "\(table)")
        }
        #expect(try count("SELECT count(*) FROM main.ZITEM") == 1_000_000)
        #expect(try count("""
            SELECT count(*) FROM o.ZITEM s LEFT JOIN main.ZITEM n ON n.Z_PK = s.Z_PK
            WHERE n.Z_PK IS NULL OR n.Z_ENT IS NOT \(mapped("Z_ENT")) OR n.Z3_LINKED IS NOT \(mapped("Z2_LINKED"))
               OR n.Z_OPT IS NOT s.Z_OPT OR n.ZFOLDER IS NOT s.ZFOLDER OR n.Z_FOK_FOLDER IS NOT s.Z_FOK_FOLDER
               OR n.ZLINKED IS NOT s.ZLINKED OR n.ZCREATED IS NOT s.ZCREATED OR n.ZSIZE IS NOT s.ZSIZE
               OR n.ZTITLE IS NOT s.ZTITLE OR n.ZURL IS NOT s.ZURL OR n.ZBODY IS NOT s.ZBODY OR n.ZPINNED IS NOT NULL
            """) == 0)
        #expect(try count("""
            SELECT count(*) FROM o.ZFOLDER s LEFT JOIN main.ZFOLDER n ON n.Z_PK = s.Z_PK
            WHERE n.Z_PK IS NULL OR n.Z_ENT IS NOT \(mapped("Z_ENT")) OR n.ZPARENT IS NOT s.ZPARENT OR n.ZNAME IS NOT s.ZNAME
            """) == 0)
        #expect(try count("SELECT count(*) FROM main.Z_3TAGS") == (try count("SELECT count(*) FROM o.Z_2TAGS")))
        #expect(try count("SELECT count(*) FROM (SELECT Z_2ITEMS, Z_5TAGS FROM o.Z_2TAGS EXCEPT SELECT Z_3ITEMS, Z_6TAGS FROM main.Z_3TAGS)") == 0)
        #expect(try count("""
            SELECT count(*) FROM main.Z_PRIMARYKEY n JOIN o.Z_PRIMARYKEY s USING (Z_NAME)
            WHERE n.Z_MAX <> s.Z_MAX
            """) == 0)
        #expect(try count("SELECT count(*) FROM main.Z_METADATA n, o.Z_METADATA s WHERE n.Z_UUID = s.Z_UUID") == 1)
        #expect(try count("SELECT count(*) FROM main.sqlite_schema WHERE type = 'index' AND name = 'ZITEM_ZLINKED_INDEX'") == 1)
        try database.execute("DETACH DATABASE o")
        let report = try CoreDataStoreCheck.run(store: files.new)
        #expect(report.violations == [] && report.checked >= 10)
    }

    @Test("a sub-entity that becomes a root of its own, a removed sub-entity with join rows and a duplicate of a kept row: each table gets its own rows, join rows to left-out rows are left out, the kept row is the first of the tree")
    func subEntitiesLeftOutAndMoved() throws {
        let folder = try TemporaryFolder()
        let old = folder.path("old.sqlite"), new = folder.path("new.sqlite")
        let bookkeeping = """
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            INSERT INTO Z_METADATA VALUES (1, 'U', NULL);
            """
        // Old: Item 1 with sub-entities Note 2 and Photo 3, Tag 4, Item.tags many-to-many.
        try execute(bookkeeping + """
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 9), (2, 'Note', 1, 0), (3, 'Photo', 1, 0), (4, 'Tag', 0, 2);
            CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCODE VARCHAR);
            CREATE INDEX ZITEM_ZCODE_INDEX ON ZITEM (ZCODE);
            CREATE TABLE ZTAG (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            CREATE TABLE Z_1TAGS (Z_1ITEMS INTEGER, Z_4TAGS INTEGER, PRIMARY KEY (Z_1ITEMS, Z_4TAGS));
            INSERT INTO ZITEM VALUES (1, 1, 1, 'a'), (2, 3, 1, 'x'), (3, 2, 1, 'n'), (4, 1, 1, 'x'), (5, 1, 1, 'x'), (6, 3, 1, 'p');
            INSERT INTO ZTAG VALUES (1, 4, 1, 'red'), (2, 4, 1, 'blue');
            INSERT INTO Z_1TAGS VALUES (1, 1), (2, 1), (3, 2), (4, 2), (5, 1), (6, 2);
            """, on: old)
        // New: Photo removed, Note a root of its own, a unique constraint on ZITEM.ZCODE.
        try execute(bookkeeping + """
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 0), (2, 'Note', 0, 0), (3, 'Tag', 0, 0);
            CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCODE VARCHAR);
            CREATE UNIQUE INDEX Z_Item_UNIQUE_code ON ZITEM (ZCODE);
            CREATE TABLE ZNOTE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCODE VARCHAR);
            CREATE TABLE ZTAG (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            CREATE TABLE Z_1TAGS (Z_1ITEMS INTEGER, Z_3TAGS INTEGER, PRIMARY KEY (Z_1ITEMS, Z_3TAGS));
            """, on: new)
        let inferred = try Self.migrate(old, into: new, folder: folder, batchSize: 2, options: InferenceOptions(keepFirstDuplicate: true))
        #expect(inferred.notes.contains { $0.hasPrefix("ZITEM(ZCODE): a new uniqueness constraint that 1 rows of the source violate") },
                "\(inferred.notes)")
        // Items only (Photo rows 2 and 6 left out, Note row 3 in its own table); of 'x', row 4 is
        // the first Item (row 2 was a Photo) and row 5 its duplicate.
        #expect(try Self.rows(new, "ZITEM") == [[.integer(1), .integer(1), .integer(1), .text("a")],
                                                [.integer(4), .integer(1), .integer(1), .text("x")]])
        #expect(try Self.rows(new, "ZNOTE") == [[.integer(3), .integer(2), .integer(1), .text("n")]])
        // Join rows of the Photos and of the duplicate are gone with them.
        #expect(try Self.rows(new, "Z_1TAGS") == [[.integer(1), .integer(1)], [.integer(4), .integer(2)]])
        #expect(try CoreDataStoreCheck.run(store: new).violations == [])
    }

    @Test("a source entity the plan maps nowhere fails its batch naming the entity and the row, not a silent NULL")
    func unmappedEntityFails() throws {
        let folder = try TemporaryFolder()
        let old = folder.path("old.sqlite"), new = folder.path("new.sqlite")
        let schema = """
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 9), (2, 'Note', 1, 0);
            INSERT INTO Z_METADATA VALUES (1, 'U', NULL);
            """
        try execute(schema + "INSERT INTO ZITEM VALUES (4, 1, 1, 'a'), (9, 2, 1, 'b');", on: old)
        try execute(schema, on: new)
        var plan = try MigrationPlan.infer(source: old, destination: new).plan
        plan.coreData?.entities["Note"] = nil
        let job = try MigrationJob.start(plan: plan, source: old, destination: new, journal: folder.path("journal"),
                                         logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.entity == "Item" && error.sourceKey == 9 && error.code == .batch)
        #expect(error.message.contains("source entity Note (2) has no counterpart in the destination model"))
        #expect(try scalar("SELECT count(*) FROM ZITEM", on: new) == .integer(0))
    }

    @Test("bad input: a destination that is not a Core Data store, unrelated models, a destination that already holds rows",
          .enabled(if: fixturesPresent, "shared/fixtures/coredata is absent"))
    func badInput() throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy("kik.sqlite", into: folder)
        let plain = folder.path("plain.sqlite")
        try execute("CREATE TABLE t (id INTEGER PRIMARY KEY)", on: plain)
        let notCoreData = try #require(throws: MigrationError.self) { try MigrationPlan.infer(source: source, destination: plain) }
        #expect(notCoreData.file == plain.path && notCoreData.message.contains("the destination is not"))

        let other = try Self.emptiedCopy(of: try CoreDataStoreTests.copy("netusage.sqlite", into: folder), named: "other.sqlite", in: folder)
        let unrelated = try #require(throws: MigrationError.self) { try MigrationPlan.infer(source: source, destination: other) }
        #expect(unrelated.message.contains("no entity in common"))

        // A completed migration's destination cannot take a second copy.
        let destination = try Self.emptiedCopy(of: source, named: "new.sqlite", in: folder)
        let inferred = try Self.migrate(source, into: destination, folder: folder)
        let before = try dump(destination)
        let again = try #require(throws: MigrationError.self) {
            try MigrationJob.start(plan: inferred.plan, source: source, destination: destination,
                                   journal: folder.path("second"), logger: quietLogger)
        }
        #expect(again.message.contains("the destination already holds rows in ZKIKATTACHMENT"), "\(again)")
        #expect(again.entity == "KikAttachment" && again.file == destination.path)
        #expect(try dump(destination) == before)
    }
}
