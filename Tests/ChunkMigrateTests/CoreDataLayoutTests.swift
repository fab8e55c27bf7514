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
        let (layout, others) = try CoreDataLayout(model: model).resolved(against: Database(path: store.path, mode: .source),
                                                                         schema: "main", file: store.path)
        return (layout, others, store)
    }

    @Test("every real fixture store: the layout from its own model cache is its schema, every table and column accounted for",
          .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"), arguments: CoreDataModelTests.cachedFixtures)
    func fixtureLayouts(_ name: String) throws {
        let folder = try TemporaryFolder()
        let (layout, others, store) = try Self.layout(name, in: folder)
        #expect(others.unknown == [])
        let database = try Database(path: store.path, mode: .source)
        let tables = Set(try database.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").compactMap { $0[0].text })
        let accounted = Set(layout.tables.values.map(\.name) + layout.joinTables.map(\.name) + others.history + others.fetchIndexes)
            .union(CoreDataLayout.bookkeepingTables)
        #expect(tables == accounted)
        // Column by column, both ways (resolved(against:) refuses a missing or extra one; counted here too).
        for table in layout.tables.values {
            let columns = try database.tableSchema(table.name, in: "main")?.columns.map { $0.name.uppercased() } ?? []
            #expect(Set(columns) == Set(table.columns.map { $0.name.uppercased() }), "\(table.name)")
            #expect(columns.count == table.columns.count, "\(table.name)")
        }
        // Entity numbers: Z_PRIMARYKEY, every one.
        let numbers = try database.rows("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_ENT")
        #expect(numbers == layout.entities.values.sorted { $0.number < $1.number }.map {
            [.integer($0.number), .text($0.name), .integer($0.parent ?? 0)]
        })
    }

    @Test("Core Data's naming, case by case: sibling columns numbered in entity order, to-many columns left out of the numbering, join key columns numbered per target, a reflexive relationship, a to-many without inverse, entity order ignoring case",
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
        #expect(admin.table(named: "ZCOREORGANIZATIONSETTINGS")?.column(named: "ZORGANIZATION2")?.role
                == .toOne(entity: "LocalOrganizationSettings", property: "organization"))
        #expect(admin.table(named: "ZCOREORGANIZATION")?.column(named: "ZSETTINGS1")?.role
                == .toOne(entity: "LocalOrganization", property: "settings"))

        // Reaction.users comes first in name order, SystemMessage.users gets Z_23USERS1.
        let (messenger, _, _) = try Self.layout("Messenger/store2-101-0.wiredatabase", in: folder)
        let users = try #require(messenger.joinTable(of: "users", entity: "SystemMessage"))
        #expect(users.name == "Z_15USERS" && users.sides.contains { $0.column == "Z_23USERS1" && $0.property == "users" })
        #expect(messenger.joinTable(of: "users", entity: "Reaction")?.sides.contains { $0.column == "Z_23USERS" } == true)
        #expect(messenger.table(named: "ZMESSAGE")?.column(named: "Z10_QUOTE")?.role == .toOneEntity(entity: "Message", property: "quote"))
        #expect(messenger.table(named: "ZGENERICMESSAGEDATA")?.column(named: "Z_FOK_ASSET")?.role
                == .toOneOrder(entity: "GenericMessageData", property: "asset"))
        let ordered = try #require(messenger.joinTable(of: "lastServerSyncedActiveParticipants", entity: "Conversation"))
        #expect(Set(ordered.columns) == ["Z_5LASTSERVERSYNCEDACTIVECONVERSATIONS", "Z_23LASTSERVERSYNCEDACTIVEPARTICIPANTS",
                                         "Z_FOK_5LASTSERVERSYNCEDACTIVECONVERSATIONS", "Z_FOK_23LASTSERVERSYNCEDACTIVEPARTICIPANTS"])

        let (photos, others, _) = try Self.layout("PhotosLibrary/Photos.sqlite", in: folder)
        #expect(photos.joinTable(of: "mergeCandidates", entity: "Person")?.columns == ["Z_47MERGECANDIDATES", "REFLEXIVE"])
        #expect(photos.table(named: "ZASSETCONTRIBUTOR")?.column(named: "Z3LIBRARYSCOPEASSETCONTRIBUTORS")?.role
                == .toManyOwner(entity: "Asset", property: "libraryScopeAssetContributors"))
        // Album (28) sorts before Asset (3) by name: it names the table of Album.assets <-> Asset.albums.
        #expect(photos.joinTable(of: "albums", entity: "Asset")?.name == "Z_28ASSETS")
        #expect(others.fetchIndexes.contains("Z_RT_Asset_boundedByRect") && others.history.count == 3)

        // NetworkAttachment before NWActivityFragment: entity order ignores case.
        let (netusage, _, _) = try Self.layout("netusage.sqlite", in: folder)
        #expect(netusage.entity(named: "NetworkAttachment")?.number == 12 && netusage.entity(named: "NWActivityFragment")?.number == 13)
    }

    @Test("a relationship and its inverse on one entity: which side names the join table depends on the store, and the store tells",
          .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"))
    func selfManyToManyFromTheStore() throws {
        let folder = try TemporaryFolder()
        let (old, _, _) = try Self.layout("Messenger/store2-29-0.wiredatabase", in: folder)
        let (new, _, _) = try Self.layout("Messenger/store2-96-0.wiredatabase", in: folder)
        #expect(old.joinTable(of: "trustedClients", entity: "UserClient")?.name == "Z_16TRUSTEDCLIENTS")
        #expect(new.joinTable(of: "trustedClients", entity: "UserClient")?.name == "Z_25TRUSTEDBYCLIENTS")
    }

    @Test("a store that does not fit its model is refused naming the table, the column and the property",
          .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"))
    func storeNotFittingItsModel() throws {
        let folder = try TemporaryFolder()
        for (change, words) in [
            ("ALTER TABLE ZOBJECT ADD COLUMN ZEXTRA VARCHAR", "ZOBJECT.ZEXTRA belongs to no property of entity Object"),
            ("DROP INDEX Z_Event_byValueStringIndex; ALTER TABLE ZOBJECT DROP COLUMN ZVALUESTRING", "ZOBJECT has no column ZVALUESTRING for attribute Event.valueString"),
            ("UPDATE Z_PRIMARYKEY SET Z_ENT = 40 WHERE Z_NAME = 'Source'", "Z_PRIMARYKEY numbers entity Source 40"),
            ("DROP TABLE Z_4EVENT", "no join table Z_4EVENT for the many-to-many"),
        ] {
            let store = folder.path(UUID().uuidString + ".db")
            try FileManager.default.copyItem(at: try #require(CoreDataStoreTests.fixture("knowledgec-10.14.db")), to: store)
            try execute(change, on: store)
            let model = try #require(try CoreDataModel.read(store: store))
            let error = #expect(throws: MigrationError.self) {
                try CoreDataLayout(model: model).resolved(against: Database(path: store.path, mode: .source), schema: "main", file: store.path)
            }
            #expect(error?.message.contains(words) == true && error?.file == store.path, "\(String(describing: error))")
            // The check says so too, as a violation.
            let report = try CoreDataStoreCheck.run(store: store)
            #expect(report.violations.contains { $0.contains(words) })
        }
    }

    @Test("an empty store written from a fixture's model has the fixture's tables and columns, entity numbers and indexes Core Data names",
          .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"),
          arguments: ["Messenger/store2-101-0.wiredatabase", "NoteStore.sqlite", "knowledgec-10.14.db", "RMAdminStore-Local.sqlite"])
    func emptyStores(_ name: String) throws {
        let folder = try TemporaryFolder()
        let (layout, _, store) = try Self.layout(name, in: folder)
        let empty = folder.path("empty.sqlite")
        try CoreDataEmptyStore.create(at: empty, model: layout.model)
        // Written from the model alone, it must fit the model, and its layout the fixture's.
        let (written, others) = try CoreDataLayout(model: layout.model).resolved(against: Database(path: empty.path, mode: .source),
                                                                                schema: "main", file: empty.path)
        #expect(others == CoreDataLayout.OtherTables())
        // The tables as SQLite declares them, column by column with their types, in both files.
        func declared(_ store: URL, _ table: String) throws -> Set<String> {
            Set(try Database(path: store.path, mode: .source).tableSchema(table, in: "main")?.columns.map { "\($0.name.uppercased()) \($0.type)" } ?? [])
        }
        for table in layout.tables.values {
            #expect(try declared(empty, table.name) == (try declared(store, table.name)), "\(table.name)")
            #expect(try !declared(empty, table.name).isEmpty)
        }
        // Join tables: a relationship and its inverse in one entity tree may be named from either side.
        #expect(written.joinTables.count == layout.joinTables.count)
        for (mine, real) in zip(written.joinTables.sorted { $0.columns.sorted().joined() < $1.columns.sorted().joined() },
                                layout.joinTables.sorted { $0.columns.sorted().joined() < $1.columns.sorted().joined() }) {
            #expect(Set(mine.columns) == Set(real.columns))
            #expect(try declared(empty, mine.name) == (try declared(store, real.name)), "\(real.name)")
        }
        let realIndexes = Set(try Database(path: store.path, mode: .source).rows(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND name LIKE '%_INDEX'").compactMap { $0[0].text })
        let writtenIndexes = Set(try Database(path: empty.path, mode: .source).rows(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND name LIKE '%_INDEX'").compactMap { $0[0].text })
        // Every index name written is one Core Data gave the real store (where the table is not
        // a self-relationship's, whose name the store chose).
        let joins = Set(try CoreDataLayout(model: layout.model).joinTables.filter { $0.alternativeName != nil }
            .flatMap { [$0.name, $0.alternativeName!] })
        #expect(writtenIndexes.filter { name in !realIndexes.contains(name) && !joins.contains { name.hasPrefix($0 + "_") } } == [])
        #expect(try CoreDataStoreCheck.run(store: empty).violations == [])
    }
}
