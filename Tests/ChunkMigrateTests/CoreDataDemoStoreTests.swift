import Foundation
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// The generated Core Data stores have the layout Core Data writes and the invariants it relies on.
@Suite("CoreDataDemoStore")
struct CoreDataDemoStoreTests {
    static let rows = 2_000

    /// Opens a generated store without creating `-wal`/`-shm` files next to it.
    static func open(_ store: URL) throws -> Database { try Database(path: store.path, mode: .source) }

    static func integer(_ database: Database, _ sql: String) throws -> Int64 {
        try #require(try database.scalar(sql).integer, "no integer from \(sql)")
    }

    @Test("old.sqlite: model N's entity numbers, inheritance and Z_MAX high-water marks")
    func sourceEntities() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: Self.rows)
        let old = try Self.open(files.old)
        let entities = try old.rows("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_ENT")
        #expect(
            entities == [
                [.integer(1), .text("Folder"), .integer(0)],
                [.integer(2), .text("Item"), .integer(0)],
                [.integer(3), .text("Link"), .integer(2)],
                [.integer(4), .text("Note"), .integer(2)],
                [.integer(5), .text("Tag"), .integer(0)],
            ])
        // Every row carries its own entity's number; Item is abstract, so its table holds only
        // Links and Notes, both of them.
        #expect(try old.rows("SELECT DISTINCT Z_ENT FROM ZFOLDER") == [[.integer(1)]])
        #expect(try old.rows("SELECT DISTINCT Z_ENT FROM ZTAG") == [[.integer(5)]])
        #expect(
            try old.rows("SELECT Z_ENT, count(*) > 100 FROM ZITEM GROUP BY Z_ENT ORDER BY 1")
                == [[.integer(3), .integer(1)], [.integer(4), .integer(1)]])
        #expect(try Self.integer(old, "SELECT count(*) FROM ZITEM") == Int64(Self.rows))
        #expect(try Self.integer(old, "SELECT count(*) FROM ZFOLDER") == Int64(Self.rows / 100))
        #expect(try Self.integer(old, "SELECT count(*) FROM ZTAG") == 200)

        // Z_MAX: at least the largest key of each root's table, 0 for sub-entities; Folder's is
        // strictly larger (folders were deleted at the end).
        for (entity, table) in [(1, "ZFOLDER"), (2, "ZITEM"), (5, "ZTAG")] {
            let zMax = try Self.integer(old, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = \(entity)")
            let largest = try Self.integer(old, "SELECT max(Z_PK) FROM \(table)")
            #expect(zMax >= largest, "Z_MAX of \(table)")
        }
        #expect(
            try Self.integer(old, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = 1")
                > (try Self.integer(old, "SELECT max(Z_PK) FROM ZFOLDER")))
        #expect(try old.rows("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_SUPER <> 0") == [[.integer(0)], [.integer(0)]])

        // Persistent history: two transactions of ten changes to the last items, numbered on.
        #expect(
            try old.rows("SELECT Z_ENT, Z_NAME, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT > 16000 ORDER BY Z_ENT") == [
                [.integer(16001), .text("CHANGE"), .integer(20)], [.integer(16002), .text("TRANSACTION"), .integer(2)],
                [.integer(16003), .text("TRANSACTIONSTRING"), .integer(4)],
            ])
        #expect(
            try Self.integer(
                old,
                """
                SELECT count(*) FROM ACHANGE c JOIN ZITEM i ON i.Z_PK = c.ZENTITYPK AND i.Z_ENT = c.ZENTITY JOIN ATRANSACTION t ON t.Z_PK = c.ZTRANSACTIONID
                """) == 20)
        // The derived count holds each folder's items, as Core Data's triggers keep it.
        #expect(
            try Self.integer(
                old, "SELECT count(*) FROM ZFOLDER f WHERE ZITEMCOUNT IS NOT (SELECT count(*) FROM ZITEM WHERE ZFOLDER = f.Z_PK)") == 0)
        #expect(
            try Self.integer(old, "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'Z\\_DA\\_%' ESCAPE '\\'") == 5)

        // Item keys have gaps, as after deletes.
        #expect(try Self.integer(old, "SELECT max(Z_PK) - count(*) FROM ZITEM") > 100)
        #expect(
            try Self.integer(old, "SELECT count(*) FROM ZITEM a WHERE NOT EXISTS (SELECT 1 FROM ZITEM b WHERE b.Z_PK = a.Z_PK + 1)") > 100)
    }

    @Test("old.sqlite: to-one, polymorphic, ordered and many-to-many relationships all resolve")
    func sourceRelationships() throws {
        let folder = try TemporaryFolder()
        let old = try Self.open(try CoreDataDemoStore.generate(in: folder.url, rows: Self.rows).old)

        // Z2_LINKED is the Z_ENT of the row ZLINKED points at, and NULL exactly when ZLINKED is.
        #expect(
            try Self.integer(
                old,
                """
                SELECT count(*) FROM ZITEM a LEFT JOIN ZITEM b ON b.Z_PK = a.ZLINKED
                WHERE (a.ZLINKED IS NULL) <> (a.Z2_LINKED IS NULL)
                   OR (a.ZLINKED IS NOT NULL AND (b.Z_PK IS NULL OR b.Z_ENT IS NOT a.Z2_LINKED))
                """) == 0)
        // ... and the links cover every case: none, a Link, a Note, a later row.
        #expect(try Self.integer(old, "SELECT count(*) FROM ZITEM WHERE ZLINKED IS NULL") > 100)
        #expect(try Self.integer(old, "SELECT count(*) FROM ZITEM WHERE Z2_LINKED = 3") > 100)
        #expect(try Self.integer(old, "SELECT count(*) FROM ZITEM WHERE Z2_LINKED = 4") > 100)
        #expect(try Self.integer(old, "SELECT count(*) FROM ZITEM WHERE ZLINKED > Z_PK") > 20)

        // Folders: the to-one and its ordered position; the parent is an earlier folder or NULL.
        #expect(
            try Self.integer(
                old,
                """
                SELECT count(*) FROM ZITEM WHERE ZFOLDER IS NOT NULL AND ZFOLDER NOT IN (SELECT Z_PK FROM ZFOLDER)
                """) == 0)
        #expect(try Self.integer(old, "SELECT count(*) FROM ZITEM WHERE (ZFOLDER IS NULL) <> (Z_FOK_FOLDER IS NULL)") == 0)
        #expect(try Self.integer(old, "SELECT count(*) FROM ZITEM WHERE ZFOLDER IS NULL") > 10)
        #expect(
            try Self.integer(
                old,
                """
                SELECT count(*) FROM (SELECT ZFOLDER, Z_FOK_FOLDER FROM ZITEM WHERE ZFOLDER IS NOT NULL
                                      GROUP BY ZFOLDER, Z_FOK_FOLDER HAVING count(*) > 1)
                """) == 0)
        #expect(try Self.integer(old, "SELECT count(DISTINCT ZFOLDER) FROM ZITEM") == Int64(Self.rows / 100))
        #expect(try Self.integer(old, "SELECT count(*) FROM ZFOLDER WHERE ZPARENT IS NOT NULL AND ZPARENT >= Z_PK") == 0)
        #expect(try Self.integer(old, "SELECT count(*) FROM ZFOLDER WHERE ZPARENT IS NULL") >= 1)
        #expect(try Self.integer(old, "SELECT count(*) FROM ZFOLDER WHERE ZPARENT IS NOT NULL") >= 1)

        // The join table: every row points at an existing item and tag, about two per item.
        #expect(
            try Self.integer(
                old,
                """
                SELECT count(*) FROM Z_2TAGS WHERE Z_2ITEMS NOT IN (SELECT Z_PK FROM ZITEM) OR Z_5TAGS NOT IN (SELECT Z_PK FROM ZTAG)
                """) == 0)
        let joins = try Self.integer(old, "SELECT count(*) FROM Z_2TAGS")
        #expect(joins >= Int64(Self.rows) * 17 / 10 && joins <= Int64(Self.rows) * 21 / 10)
        #expect(try Self.integer(old, "SELECT count(DISTINCT Z_2ITEMS) FROM Z_2TAGS") == Int64(Self.rows))

        // The indexes Core Data creates for to-one columns, the hierarchy and the join table.
        let indexes = try old.rows(
            """
            SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND tbl_name NOT IN ('ACHANGE', 'ATRANSACTION', 'ATRANSACTIONSTRING')
            ORDER BY name
            """
        )
        .compactMap { $0[0].text }
        #expect(
            indexes == [
                "ZFOLDER_ZPARENT_INDEX", "ZITEM_ZFOLDER_INDEX", "ZITEM_ZLINKED_INDEX", "ZITEM_Z_ENT_INDEX",
                "Z_2TAGS_Z_5TAGS_INDEX",
            ])
    }

    @Test("Z_METADATA: a binary property list whose NSStoreUUID is Z_UUID, with a hash per entity")
    func metadata() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: Self.rows)
        var hashes: [String: [String: Data]] = [:]
        for (store, uuid, names) in [
            (files.old, CoreDataDemoStore.sourceUUID, ["Folder", "Item", "Link", "Note", "Tag"]),
            (files.new, CoreDataDemoStore.destinationUUID, ["Account", "Folder", "Item", "Link", "Note", "Tag"]),
        ] {
            let database = try Self.open(store)
            let row = try #require(try database.rows("SELECT Z_VERSION, Z_UUID, Z_PLIST FROM Z_METADATA").first)
            #expect(try database.scalar("SELECT count(*) FROM Z_METADATA") == .integer(1))
            #expect(row[0] == .integer(1))
            #expect(row[1] == .text(uuid))
            guard case let .blob(bytes) = row[2] else { Issue.record("Z_PLIST is not a blob: \(row[2])"); continue }
            #expect(bytes.starts(with: Array("bplist00".utf8)))
            var format = PropertyListSerialization.PropertyListFormat.xml
            let plist = try #require(
                try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: &format)
                    as? [String: Any])
            #expect(format == .binary)
            #expect(plist["NSStoreUUID"] as? String == uuid)
            #expect(plist["NSStoreType"] as? String == "SQLite")
            #expect((plist["NSStoreModelVersionHashesVersion"] as? NSNumber)?.intValue == 3)
            #expect((plist["NSPersistenceFrameworkVersion"] as? NSNumber)?.intValue == 1000)
            let storeHashes = try #require(plist["NSStoreModelVersionHashes"] as? [String: Data])
            #expect(storeHashes.keys.sorted() == names)
            #expect(storeHashes.values.allSatisfy { $0.count == 32 })
            hashes[uuid] = storeHashes
            #expect(try database.scalar("SELECT count(*) FROM Z_MODELCACHE WHERE length(Z_CONTENT) > 0") == .integer(1))
        }
        // Unchanged entities keep their hash across the model versions; changed ones do not.
        let old = try #require(hashes[CoreDataDemoStore.sourceUUID]), new = try #require(hashes[CoreDataDemoStore.destinationUUID])
        #expect(old["Folder"] == new["Folder"])
        #expect(old["Item"] != new["Item"] && old["Tag"] != new["Tag"])
    }

    @Test("new.sqlite: model N+1 empty, every entity number shifted by Account, columns and tables renamed with them")
    func destination() throws {
        let folder = try TemporaryFolder()
        let new = try Self.open(try CoreDataDemoStore.generate(in: folder.url, rows: Self.rows).new)
        #expect(
            try new.rows("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_ENT") == [
                [.integer(1), .text("Account"), .integer(0), .integer(0)],
                [.integer(2), .text("Folder"), .integer(0), .integer(0)],
                [.integer(3), .text("Item"), .integer(0), .integer(0)],
                [.integer(4), .text("Link"), .integer(3), .integer(0)],
                [.integer(5), .text("Note"), .integer(3), .integer(0)],
                [.integer(6), .text("Tag"), .integer(0), .integer(0)],
            ])
        #expect(
            try new.rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT > 16000 ORDER BY Z_ENT")
                == [[.text("CHANGE"), .integer(0)], [.text("TRANSACTION"), .integer(0)], [.text("TRANSACTIONSTRING"), .integer(0)]])
        // Core Data's triggers for both derived counts, Tag's over the join table.
        #expect(
            try new.rows("SELECT tbl_name, count(*) FROM sqlite_schema WHERE type = 'trigger' GROUP BY 1 ORDER BY 1")
                == [
                    [.text("ZFOLDER"), .integer(1)], [.text("ZITEM"), .integer(4)], [.text("ZTAG"), .integer(1)],
                    [.text("Z_3TAGS"), .integer(2)],
                ])
        for table in ["ZACCOUNT", "ZFOLDER", "ZITEM", "ZTAG", "Z_3TAGS", "ACHANGE", "ATRANSACTION"] {
            #expect(try new.scalar("SELECT count(*) FROM \(table)") == .integer(0), "\(table) is not empty")
        }
        let itemColumns = try new.rows("SELECT name FROM pragma_table_info('ZITEM')").compactMap { $0[0].text }
        #expect(itemColumns.contains("ZPINNED") && itemColumns.contains("Z3_LINKED") && !itemColumns.contains("Z2_LINKED"))
        #expect(try new.rows("SELECT name FROM pragma_table_info('Z_3TAGS')").compactMap { $0[0].text } == ["Z_3ITEMS", "Z_6TAGS"])
        #expect(
            try new.scalar("SELECT count(*) FROM sqlite_schema WHERE name IN ('Z_2TAGS', 'Z_3TAGS_Z_6TAGS_INDEX', 'ZACCOUNT')")
                == .integer(2))
    }

    @Test("both stores are WAL stores closed cleanly, with Core Data's page size and auto-vacuum, and the same bytes every time")
    func fileAndDeterminism() throws {
        let folder = try TemporaryFolder()
        let first = try CoreDataDemoStore.generate(in: folder.path("first"), rows: Self.rows)
        let second = try CoreDataDemoStore.generate(in: folder.path("second"), rows: Self.rows)
        for store in [first.old, first.new] {
            #expect(Database.isWALStore(store.path), "\(store.lastPathComponent) is not in WAL mode")
            #expect(!FileManager.default.fileExists(atPath: store.path + "-wal"))
            let database = try Self.open(store)
            #expect(try database.scalar("PRAGMA page_size") == .integer(4096))
            #expect(try database.scalar("PRAGMA auto_vacuum") == .integer(2))
            #expect(try database.scalar("PRAGMA integrity_check") == .text("ok"))
        }
        #expect(try sha256(of: first.old) == (try sha256(of: second.old)))
        #expect(try sha256(of: first.new) == (try sha256(of: second.new)))
        // Across processes too: Swift seeds hashing per process, so a dictionary written in hash
        // order would change these bytes from one run to the next.
        let plist = try Self.open(first.old).scalar("SELECT Z_PLIST FROM Z_METADATA")
        guard case let .blob(bytes) = plist else { Issue.record("Z_PLIST is not a blob"); return }
        #expect(SHA256Hex.of(Data(bytes)) == "fb24833507595508295d3a64ebe4a01157a7dc8156677adb7976d9fa09036c2c")
        // A different size gives a different store.
        let smaller = try CoreDataDemoStore.generate(in: folder.path("smaller"), rows: 500)
        #expect(try sha256(of: smaller.old) != (try sha256(of: first.old)))
        #expect(try Self.integer(Self.open(smaller.old), "SELECT count(*) FROM ZTAG") == 50)
    }

    @Test("the smallest store: one item, one folder, one tag")
    func smallest() throws {
        let folder = try TemporaryFolder()
        let old = try Self.open(try CoreDataDemoStore.generate(in: folder.url, rows: 1).old)
        #expect(
            try old.rows("SELECT Z_PK, ZFOLDER, Z_FOK_FOLDER, ZLINKED, Z2_LINKED FROM ZITEM")
                == [[.integer(1), .integer(1), .integer(1), .null, .null]])
        #expect(try old.rows("SELECT * FROM Z_2TAGS") == [[.integer(1), .integer(1)]])
        #expect(
            try old.rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY WHERE Z_SUPER = 0 AND Z_ENT < 16000 ORDER BY Z_ENT")
                == [[.text("Folder"), .integer(6)], [.text("Item"), .integer(1)], [.text("Tag"), .integer(1)]])
    }
}
