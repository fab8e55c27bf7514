import Foundation
import Testing
@testable import ChunkMigrate

/// The layout derived from a model, as Core Data names it, against the schemas Apple's framework
/// wrote: every real fixture store's own model cache gives its schema exactly.
@Suite("Core Data layouts")
struct CoreDataLayoutTests {
    /// The layout of a fixture's model, checked against the fixture's schema.
    static func layout(_ name: String, in folder: TemporaryFolder) throws -> (CoreDataLayout, CoreDataLayout.OtherTables, URL) {
        let store = try CoreDataModelTests.copy(name, into: folder)
        let model = try #require(try CoreDataModel.read(store: store))
        let (layout, others) = try CoreDataLayout(model: model).resolved(
            against: Database(path: store.path, mode: .source),
            schema: "main", file: store.path)
        return (layout, others, store)
    }

    /// Every SQLite store under the fixtures, found by walking the folders (by its header;
    /// `-wal` and `-shm` aside), as a path relative to the fixtures folder, in name order.
    static let allStores: [String] = {
        let root = CoreDataStoreTests.fixtures.standardizedFileURL
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else { return [] }
        var found: [String] = []
        for case let url as URL in walker where !url.lastPathComponent.hasSuffix("-wal") && !url.lastPathComponent.hasSuffix("-shm") {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                let handle = try? FileHandle(forReadingFrom: url)
            else { continue }
            defer { try? handle.close() }
            guard let header = try? handle.read(upToCount: 16), header == Data("SQLite format 3\0".utf8) else { continue }
            found.append(String(url.standardizedFileURL.path.dropFirst(root.path.count + 1)))
        }
        return found.sorted()
    }()

    /// The fixture stores that have no model cache (written before iOS 10, or kik's) or an empty
    /// one (NotesV7's `Z_CONTENT` is NULL): there is no model of theirs to derive a layout from.
    static let withoutModelCache: Set<String> = [
        "NotesV7.storedata", "BookMigration/Model1.sqlite", "SplitName/MWKCoreDataTests.sqlite", "SplitName/MWKCoreDataTests2.sqlite",
        "kik.sqlite",
        "apps/apptentive-ios/ATDataModelv1.sqlite", "apps/apptentive-ios/ATDataModelv2.sqlite", "apps/apptentive-ios/ATDataModelv3.sqlite",
        "apps/apptentive-ios/ATDataModelv4.sqlite", "apps/apptentive-ios/ATDataModelv5.sqlite",
        "apps/apptentive-ios/container-3.5.0/ATDataModel.sqlite", "apps/apptentive-ios/v2CorruptDatabase/ATDataModel.sqlite",
        "apps/apptentive-ios/v2WALDatabase/ATDataModel.sqlite", "apps/apptentive-ios/v3WALDatabase/ATDataModel.sqlite",
    ]

    @Test(
        "the walk finds every fixture store: the corpus's 50, real's 4, the messenger's 59, and the others",
        .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"))
    func storesFound() {
        func count(_ folder: String) -> Int { Self.allStores.filter { $0.hasPrefix(folder + "/") }.count }
        #expect(count("corpus") == 50 && count("real") == 4 && count("Messenger") == 59)
        #expect(Set(CoreDataModelTests.cachedFixtures).isSubset(of: Self.allStores))
        #expect(Self.withoutModelCache.isSubset(of: Self.allStores))
        #expect(Self.allStores.count >= 149)
    }

    @Test(
        "every fixture store with a model cache: the layout derived from its own model is its schema, every table and column accounted for",
        .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"), arguments: allStores)
    func fixtureLayouts(_ name: String) throws {
        let folder = try TemporaryFolder()
        let store = try CoreDataModelTests.copy(name, into: folder)
        guard let model = try CoreDataModel.read(store: store) else {
            #expect(Self.withoutModelCache.contains(name), "\(name) has no model cache")
            return
        }
        let database = try Database(path: store.path, mode: .source)
        let (layout, others) = try CoreDataLayout(model: model).resolved(against: database, schema: "main", file: store.path)
        #expect(others.unknown == [])
        let tables = Set(
            try database.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").compactMap { $0[0].text })
        let accounted = Set(
            layout.tables.values.map(\.name) + layout.joinTables.map(\.name) + others.history + others.mirroring + others.fetchIndexes
        )
        .union(CoreDataLayout.bookkeepingTables)
        #expect(tables == accounted)
        // Column by column, both ways (resolved(against:) refuses a missing or extra one; counted here too).
        for table in layout.tables.values {
            let columns = try database.tableSchema(table.name, in: "main")?.columns.map { $0.name.uppercased() } ?? []
            #expect(Set(columns) == Set(table.columns.map { $0.name.uppercased() }), "\(table.name)")
            #expect(columns.count == table.columns.count, "\(table.name)")
        }
        for join in layout.joinTables {
            let columns = try database.tableSchema(join.name, in: "main")?.columns.map { $0.name.uppercased() } ?? []
            #expect(columns.sorted() == join.columns.map { $0.uppercased() }.sorted(), "\(join.name)")
        }
        // Entity numbers: Z_PRIMARYKEY, every one.
        let numbers = try database.rows("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_ENT")
        #expect(
            numbers
                == layout.entities.values.sorted { $0.number < $1.number }.map {
                    [.integer($0.number), .text($0.name), .integer($0.parent ?? 0)]
                })
    }

    @Test(
        "Core Data's naming, case by case: sibling columns numbered in entity order, to-many columns left out of the numbering, join key columns numbered per target, a reflexive relationship, a to-many without inverse, entity order ignoring case",
        .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"))
    func namingCases() throws {
        let folder = try TemporaryFolder()
        let (notes, _, _) = try Self.layout("NoteStore.sqlite", in: folder)
        let object = try #require(notes.table(named: "ZICCLOUDSYNCINGOBJECT"))
        // ICAttachment (4) has ZTITLE; ICNote (11) and ICFolder (14), its siblings in entity order, the next ones.
        #expect(object.column(named: "ZTITLE1")?.role == .attribute(entity: "ICNote", property: "title"))
        #expect(object.column(named: "ZTITLE2")?.role == .attribute(entity: "ICFolder", property: "title"))
        #expect((1...5).allSatisfy { object.column(named: "ZACCOUNT\($0)") != nil })

        // LocalOrganizationSettings.organization is the third to-one of that name; FamilyOrganization's
        // to-many settings takes no number, so LocalOrganization's to-one is ZSETTINGS1.
        let (admin, _, _) = try Self.layout("RMAdminStore-Local.sqlite", in: folder)
        #expect(
            admin.table(named: "ZCOREORGANIZATIONSETTINGS")?.column(named: "ZORGANIZATION2")?.role
                == .toOne(entity: "LocalOrganizationSettings", property: "organization"))
        #expect(
            admin.table(named: "ZCOREORGANIZATION")?.column(named: "ZSETTINGS1")?.role
                == .toOne(entity: "LocalOrganization", property: "settings"))

        // Reaction.users comes first in name order, SystemMessage.users gets Z_23USERS1.
        let (messenger, _, _) = try Self.layout("Messenger/store2-101-0.wiredatabase", in: folder)
        let users = try #require(messenger.joinTable(of: "users", entity: "SystemMessage"))
        #expect(users.name == "Z_15USERS" && users.sides.contains { $0.column == "Z_23USERS1" && $0.property == "users" })
        #expect(messenger.joinTable(of: "users", entity: "Reaction")?.sides.contains { $0.column == "Z_23USERS" } == true)
        #expect(messenger.table(named: "ZMESSAGE")?.column(named: "Z10_QUOTE")?.role == .toOneEntity(entity: "Message", property: "quote"))
        #expect(
            messenger.table(named: "ZGENERICMESSAGEDATA")?.column(named: "Z_FOK_ASSET")?.role
                == .toOneOrder(entity: "GenericMessageData", property: "asset"))
        let ordered = try #require(messenger.joinTable(of: "lastServerSyncedActiveParticipants", entity: "Conversation"))
        #expect(
            Set(ordered.columns) == [
                "Z_5LASTSERVERSYNCEDACTIVECONVERSATIONS", "Z_23LASTSERVERSYNCEDACTIVEPARTICIPANTS",
                "Z_FOK_5LASTSERVERSYNCEDACTIVECONVERSATIONS", "Z_FOK_23LASTSERVERSYNCEDACTIVEPARTICIPANTS",
            ])

        let (photos, others, _) = try Self.layout("PhotosLibrary/Photos.sqlite", in: folder)
        #expect(photos.joinTable(of: "mergeCandidates", entity: "Person")?.columns == ["Z_47MERGECANDIDATES", "REFLEXIVE"])
        #expect(
            photos.table(named: "ZASSETCONTRIBUTOR")?.column(named: "Z3LIBRARYSCOPEASSETCONTRIBUTORS")?.role
                == .toManyOwner(entity: "Asset", property: "libraryScopeAssetContributors"))
        // Album (28) sorts before Asset (3) by name: it names the table of Album.assets <-> Asset.albums.
        #expect(photos.joinTable(of: "albums", entity: "Asset")?.name == "Z_28ASSETS")
        #expect(others.fetchIndexes.contains("Z_RT_Asset_boundedByRect") && others.history.count == 3)

        // NetworkAttachment before NWActivityFragment: entity order ignores case.
        let (netusage, _, _) = try Self.layout("netusage.sqlite", in: folder)
        #expect(netusage.entity(named: "NetworkAttachment")?.number == 12 && netusage.entity(named: "NWActivityFragment")?.number == 13)
    }

    /// The layout of a fixture's model alone, no store read.
    static func modelLayout(_ name: String) throws -> CoreDataLayout {
        let folder = try TemporaryFolder()
        return try CoreDataLayout(model: try #require(try CoreDataModel.read(store: try CoreDataModelTests.copy(name, into: folder))))
    }

    @Test(
        "a relationship and its inverse on one entity: the side met first in the entity's property table names the join table, from the model alone",
        .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"))
    func selfManyToManyFromTheModel() throws {
        // UserClient's 67-bucket table: trustedClients (bucket 48) comes before trustedByClients
        // (61) until 2.96 adds needsSessionMigration, also at 61, and the run from 59 on spills
        // trustedByClients over the end to bucket 0. ignoredClients (2) stays first.
        for (store, trusted, ignored) in [
            ("Messenger/store2-29-0.wiredatabase", "Z_16TRUSTEDCLIENTS", "Z_16IGNOREDCLIENTS"),
            ("Messenger/store2-95-0.wiredatabase", "Z_25TRUSTEDCLIENTS", "Z_25IGNOREDCLIENTS"),
            ("Messenger/store2-96-0.wiredatabase", "Z_25TRUSTEDBYCLIENTS", "Z_25IGNOREDCLIENTS"),
        ] {
            let layout = try Self.modelLayout(store)
            #expect(layout.joinTable(of: "trustedClients", entity: "UserClient")?.name == trusted, "\(store)")
            #expect(layout.joinTable(of: "ignoredByClients", entity: "UserClient")?.name == ignored, "\(store)")
        }
        let bookmarks = try Self.modelLayout("apps/ddg-browserserviceskit-bookmarks/Bookmarks_V4.sqlite")
        #expect(bookmarks.joinTable(of: "favoriteFolders", entity: "BookmarkEntity")?.name == "Z_1FAVORITES")
    }

    @Test(
        "two many-to-manys of one entity whose inverses share a name: the one met first in the entity's property table keeps the bare column name",
        .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"))
    func sharedInverseNames() throws {
        // Asset's table has 317 buckets: memoriesBeingRepresentativeAssets hashes to 10,
        // suggestionsBeingRepresentativeAssets to 12; from macOS 15 on, the keys put in before the
        // first fill its run past 12, and it comes second.
        for (store, memories, suggestions) in [
            ("corpus/photos-14.6/Photos.sqlite", "Z_3REPRESENTATIVEASSETS", "Z_3REPRESENTATIVEASSETS1"),
            ("corpus/photos-15.4.1/Photos.sqlite", "Z_3REPRESENTATIVEASSETS1", "Z_3REPRESENTATIVEASSETS"),
        ] {
            let layout = try Self.modelLayout(store)
            #expect(
                layout.joinTable(of: "representativeAssets", entity: "Memory")?.sides.first { $0.property == "representativeAssets" }?
                    .column == memories)
            #expect(
                layout.joinTable(of: "representativeAssets", entity: "Suggestion")?.sides.first { $0.property == "representativeAssets" }?
                    .column == suggestions)
        }
        // GenericAlbum.keyAssets is met in Album's walk, before Asset's: its column keeps the bare name.
        let photos15 = try Self.modelLayout("corpus/photos-15.4.1/Photos.sqlite")
        #expect(photos15.joinTable(of: "keyAssets", entity: "GenericAlbum")?.name == "Z_29KEYASSETS")
        #expect(
            Set(photos15.joinTable(of: "keyAssets", entity: "Suggestion")?.columns ?? []) == [
                "Z_3KEYASSETS1", "Z_65SUGGESTIONSBEINGKEYASSETS",
            ])
    }

    @Test("Core Data's property tables: CFString's hashes of 10.4 and 10.5, prime buckets by capacity, linear probing")
    func propertyOrder() {
        #expect(CoreDataPropertyOrder.bucketCount(for: 185) == 317 && CoreDataPropertyOrder.bucketCount(for: 199) == 317)
        #expect(CoreDataPropertyOrder.bucketCount(for: 200) == 521 && CoreDataPropertyOrder.bucketCount(for: 40) == 67)
        #expect(CoreDataPropertyOrder.hash("memoriesBeingRepresentativeAssets") % 317 == 10)
        #expect(CoreDataPropertyOrder.hash("suggestionsBeingRepresentativeAssets") % 317 == 12)
        #expect(CoreDataPropertyOrder.hash("trustedClients") % 67 == 48 && CoreDataPropertyOrder.hash("trustedByClients") % 67 == 61)
        // Linear probing: a key whose bucket is taken goes to the next free one.
        let keys = ["trustedByClients", "needsSessionMigration"]
        #expect(CoreDataPropertyOrder.order(keys, count: 40) == keys)
        // The 10.5 table grows from 4 buckets, rehashing in bucket order.
        var table = CoreDataPropertyOrder.Table()
        for key in ["_ent", "_pk", "_opt", "a", "b", "c", "d"] { table.insert(key) }
        #expect(table.slots.count == 16 && Set(table.keys) == ["_ent", "_pk", "_opt", "a", "b", "c", "d"])
        table.insert("a")
        #expect(table.keys.count == 7)
    }

    @Test(
        "a store that does not fit its model is refused naming the table, the column and the property",
        .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"))
    func storeNotFittingItsModel() throws {
        let folder = try TemporaryFolder()
        for (change, words) in [
            ("ALTER TABLE ZOBJECT ADD COLUMN ZEXTRA VARCHAR", "ZOBJECT.ZEXTRA belongs to no property of entity Object"),
            (
                "DROP INDEX Z_Event_byValueStringIndex; ALTER TABLE ZOBJECT DROP COLUMN ZVALUESTRING",
                "ZOBJECT has no column ZVALUESTRING for attribute Event.valueString"
            ),
            ("UPDATE Z_PRIMARYKEY SET Z_ENT = 40 WHERE Z_NAME = 'Source'", "Z_PRIMARYKEY numbers entity Source 40"),
            ("DROP TABLE Z_4EVENT", "no join table Z_4EVENT for the many-to-many"),
        ] {
            let store = folder.path(UUID().uuidString + ".db")
            try FileManager.default.copyItem(at: try #require(CoreDataStoreTests.fixture("knowledgec-10.14.db")), to: store)
            try execute(change, on: store)
            let model = try #require(try CoreDataModel.read(store: store))
            let error = #expect(throws: MigrationError.self) {
                try CoreDataLayout(model: model).resolved(
                    against: Database(path: store.path, mode: .source), schema: "main", file: store.path)
            }
            #expect(error?.message.contains(words) == true && error?.file == store.path, "\(String(describing: error))")
            // The check says so too, as a violation.
            let report = try CoreDataStoreCheck.run(store: store)
            #expect(report.violations.contains { $0.contains(words) })
        }
    }

    @Test(
        "an empty store written from a fixture's model has the fixture's tables and columns, entity numbers and indexes Core Data names",
        .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"),
        arguments: ["Messenger/store2-101-0.wiredatabase", "NoteStore.sqlite", "knowledgec-10.14.db", "RMAdminStore-Local.sqlite"])
    func emptyStores(_ name: String) throws {
        let folder = try TemporaryFolder()
        let (layout, _, store) = try Self.layout(name, in: folder)
        let empty = folder.path("empty.sqlite")
        try CoreDataEmptyStore.create(at: empty, model: layout.model)
        // Written from the model alone, it must fit the model, and its layout the fixture's.
        let (written, others) = try CoreDataLayout(model: layout.model).resolved(
            against: Database(path: empty.path, mode: .source),
            schema: "main", file: empty.path)
        #expect(others == CoreDataLayout.OtherTables())
        // The tables as SQLite declares them, column by column with their types, in both files.
        func declared(_ store: URL, _ table: String) throws -> Set<String> {
            Set(
                try Database(path: store.path, mode: .source).tableSchema(table, in: "main")?.columns.map {
                    "\($0.name.uppercased()) \($0.type)"
                } ?? [])
        }
        for table in layout.tables.values {
            #expect(try declared(empty, table.name) == (try declared(store, table.name)), "\(table.name)")
            #expect(try !declared(empty, table.name).isEmpty)
        }
        // Join tables: the same names, column by column.
        #expect(Set(written.joinTables.map(\.name)) == Set(layout.joinTables.map(\.name)))
        for join in layout.joinTables {
            #expect(try declared(empty, join.name) == (try declared(store, join.name)), "\(join.name)")
        }
        let realIndexes = Set(
            try Database(path: store.path, mode: .source).rows(
                "SELECT name FROM sqlite_schema WHERE type = 'index' AND name LIKE '%_INDEX'"
            ).compactMap { $0[0].text })
        let writtenIndexes = Set(
            try Database(path: empty.path, mode: .source).rows(
                "SELECT name FROM sqlite_schema WHERE type = 'index' AND name LIKE '%_INDEX'"
            ).compactMap { $0[0].text })
        // Every index name written is one Core Data gave the real store.
        #expect(writtenIndexes.subtracting(realIndexes) == [])
        #expect(try CoreDataStoreCheck.run(store: empty).violations == [])
    }
}
