import Foundation
import MigrationJournal

/// A generated pair of Core Data stores: `old.sqlite`, full, at "model N", and `new.sqlite`, empty,
/// as Core Data creates it for "model N+1", whose entity numbers are all shifted by a new entity.
///
/// The layout is the one Core Data writes (compare the real stores in `shared/fixtures/coredata`):
/// `Z_PRIMARYKEY`, `Z_METADATA` with a binary property list, `Z_MODELCACHE`, one table per root
/// entity holding its whole inheritance tree, `Z_ENT` in every row, a polymorphic to-one column
/// `Z<n>_<REL>`, an ordered relationship's `Z_FOK_<REL>` and a many-to-many join table
/// `Z_<n><REL>`. Used by the Core Data tests and `Tools/bench-coredata`.
///
/// ```swift
/// let files = try CoreDataDemoStore.generate(in: folder, rows: 100_000)
/// // files.old: 100,000 items with folders, links and tags; files.new: the empty model N+1 store
/// ```
public enum CoreDataDemoStore {
    /// The files ``generate(in:rows:)`` writes.
    public struct Files: Sendable {
        /// The store at model N, `old.sqlite`.
        public var old: URL
        /// The empty store at model N+1, `new.sqlite`.
        public var new: URL
    }

    /// An entity of one of the two models, as its row in `Z_PRIMARYKEY` names it.
    public struct Entity: Sendable, Equatable {
        /// `Z_ENT`: the entity's number in its store.
        public var number: Int
        /// `Z_NAME`.
        public var name: String
        /// `Z_SUPER`: the number of its super-entity, 0 for a root.
        public var superEntity: Int
    }

    /// The entities of model N (`old.sqlite`): Folder and Tag are roots, Item is an abstract root
    /// whose sub-entities Link and Note share its table `ZITEM`.
    public static let sourceEntities = [
        Entity(number: 1, name: "Folder", superEntity: 0),
        Entity(number: 2, name: "Item", superEntity: 0),
        Entity(number: 3, name: "Link", superEntity: 2),
        Entity(number: 4, name: "Note", superEntity: 2),
        Entity(number: 5, name: "Tag", superEntity: 0),
    ]

    /// The entities of model N+1 (`new.sqlite`): a new root, Account, takes number 1 and every
    /// other entity moves up by one.
    public static let destinationEntities = [
        Entity(number: 1, name: "Account", superEntity: 0),
        Entity(number: 2, name: "Folder", superEntity: 0),
        Entity(number: 3, name: "Item", superEntity: 0),
        Entity(number: 4, name: "Link", superEntity: 3),
        Entity(number: 5, name: "Note", superEntity: 3),
        Entity(number: 6, name: "Tag", superEntity: 0),
    ]

    /// `Z_METADATA.Z_UUID` of `old.sqlite`, and the `NSStoreUUID` of its metadata: the store's
    /// identity, which object-ID URIs contain.
    public static let sourceUUID = "5C0DE0A1-1D2E-4F60-8A7B-0123456789AB"

    /// `Z_METADATA.Z_UUID` of `new.sqlite` as created, before any migration.
    public static let destinationUUID = "A7E5F00D-3B4C-4D5E-9F60-FEDCBA987654"

    /// The tables and indexes of model N, in Core Data's own spelling. The indexes are created
    /// after the rows (it is faster); `sourceIndexes` lists them.
    static let sourceTables = """
        CREATE TABLE ZFOLDER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZPARENT INTEGER, ZNAME VARCHAR );
        CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZFOLDER INTEGER, Z_FOK_FOLDER INTEGER, ZLINKED INTEGER, Z2_LINKED INTEGER, ZCREATED TIMESTAMP, ZSIZE INTEGER, ZTITLE VARCHAR, ZURL VARCHAR, ZBODY VARCHAR );
        CREATE TABLE ZTAG ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
        CREATE TABLE Z_2TAGS ( Z_2ITEMS INTEGER, Z_5TAGS INTEGER, PRIMARY KEY (Z_2ITEMS, Z_5TAGS) );
        \(bookkeepingTables)
        """

    static let sourceIndexes = """
        CREATE INDEX ZFOLDER_ZPARENT_INDEX ON ZFOLDER (ZPARENT);
        CREATE INDEX ZITEM_ZFOLDER_INDEX ON ZITEM (ZFOLDER);
        CREATE INDEX ZITEM_ZLINKED_INDEX ON ZITEM (ZLINKED);
        CREATE INDEX ZITEM_Z_ENT_INDEX ON ZITEM (Z_ENT);
        CREATE INDEX Z_2TAGS_Z_5TAGS_INDEX ON Z_2TAGS (Z_5TAGS, Z_2ITEMS);
        """

    /// The schema of model N+1: `ZACCOUNT` is new, `ZITEM` gains `ZPINNED`, and the columns and
    /// tables named by entity numbers follow the new numbers (`Z3_LINKED`, `Z_3TAGS`).
    static let destinationSchema = """
        CREATE TABLE ZACCOUNT ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
        CREATE TABLE ZFOLDER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZPARENT INTEGER, ZNAME VARCHAR );
        CREATE INDEX ZFOLDER_ZPARENT_INDEX ON ZFOLDER (ZPARENT);
        CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZPINNED INTEGER, ZFOLDER INTEGER, Z_FOK_FOLDER INTEGER, ZLINKED INTEGER, Z3_LINKED INTEGER, ZCREATED TIMESTAMP, ZSIZE INTEGER, ZTITLE VARCHAR, ZURL VARCHAR, ZBODY VARCHAR );
        CREATE INDEX ZITEM_ZFOLDER_INDEX ON ZITEM (ZFOLDER);
        CREATE INDEX ZITEM_ZLINKED_INDEX ON ZITEM (ZLINKED);
        CREATE INDEX ZITEM_Z_ENT_INDEX ON ZITEM (Z_ENT);
        CREATE TABLE ZTAG ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
        CREATE TABLE Z_3TAGS ( Z_3ITEMS INTEGER, Z_6TAGS INTEGER, PRIMARY KEY (Z_3ITEMS, Z_6TAGS) );
        CREATE INDEX Z_3TAGS_Z_6TAGS_INDEX ON Z_3TAGS (Z_6TAGS, Z_3ITEMS);
        \(bookkeepingTables)
        """

    /// Core Data's bookkeeping tables, declared exactly as in every real store.
    static let bookkeepingTables = """
        CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
        CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
        CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB);
        """

    /// What a store's file starts as: the page size and incremental auto-vacuum Core Data uses,
    /// no journal while the store is filled (a failed generation is simply run again).
    static let bulkSettings = """
        PRAGMA page_size = 4096; PRAGMA auto_vacuum = INCREMENTAL;
        PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
        """

    /// Writes `old.sqlite` with `rows` items and `new.sqlite` into `directory`, replacing them if
    /// they exist. The same arguments give the same rows and the same metadata bytes.
    ///
    /// `old.sqlite` holds `max(1, rows / 100)` folders (each a child of an earlier one or a root),
    /// `rows` items (Links and Notes alternating irregularly, keys with gaps as after deletes, one
    /// in fifty outside any folder, about two in three linked to another item, earlier or later,
    /// of either sub-entity), `min(1000, max(1, rows / 10))` tags and about 1.9 tags per item.
    /// Folder's `Z_MAX` is 5 above its largest key (its last folders were deleted).
    /// - Parameters:
    ///   - directory: created if needed.
    ///   - rows: the number of items, at least 1.
    /// - Returns: the two stores' URLs.
    /// - Throws: `SQLiteError` if a store cannot be written, or an encoding error of the metadata.
    @discardableResult
    public static func generate(in directory: URL, rows: Int) throws -> Files {
        precondition(rows >= 1, "a Core Data demo store needs at least one item")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let files = Files(old: directory.appendingPathComponent("old.sqlite"),
                          new: directory.appendingPathComponent("new.sqlite"))
        for store in [files.old, files.new] {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                try? FileManager.default.removeItem(atPath: store.path + suffix)
            }
        }
        try writeSource(at: files.old, rows: rows)
        try writeDestination(at: files.new)
        return files
    }

    /// The key of the `i`th item (1-based): one key in five and three in thirty-seven left out,
    /// as after deletes. Strictly increasing in `i`, so the items' order is the keys' order.
    private static func itemKey(_ i: String) -> String { "(\(i) + \(i) / 5 + \(i) / 37 * 3)" }

    /// The entity number of the `i`th item: 3 (Link) or 4 (Note), in no regular pattern.
    private static func itemEntity(_ i: String) -> String {
        "(CASE WHEN (\(i) * 7) % 11 < 5 OR \(i) % 13 = 0 THEN 3 ELSE 4 END)"
    }

    private static func writeSource(at url: URL, rows: Int) throws {
        let folders = max(1, rows / 100)
        let tags = min(1000, max(1, rows / 10))
        let database = try Database(path: url.path, mode: .readWriteCreate)
        // Items fill the folders block by block: within block b (items b*F+1 ... b*F+F) every
        // folder gets exactly one item, so (b + 1) is the item's position in its folder's ordered
        // relationship, whatever the folder count.
        try database.execute("""
            \(bulkSettings)
            BEGIN;
            \(sourceTables)
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(folders))
            INSERT INTO ZFOLDER (Z_PK, Z_ENT, Z_OPT, ZPARENT, ZNAME)
            SELECT i, 1, 1 + i % 3, CASE WHEN i % 5 = 1 THEN NULL ELSE 1 + (i * 7919) % (i - 1) END, 'Folder ' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows)),
            item(i, linked, block, slot) AS (
                SELECT i,
                       CASE WHEN i % 3 = 0 THEN NULL
                            WHEN i % 10 = 1 AND i + 17 <= \(rows) THEN i + 17
                            WHEN i > 1 THEN max(1, i - 1 - (i * 13) % 40)
                            ELSE NULL END,
                       (i - 1) / \(folders), (i - 1) % \(folders)
                FROM n)
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZFOLDER, Z_FOK_FOLDER, ZLINKED, Z2_LINKED, ZCREATED, ZSIZE, ZTITLE, ZURL, ZBODY)
            SELECT \(itemKey("i")), \(itemEntity("i")), 1 + i % 4,
                   CASE WHEN i % 50 = 7 THEN NULL
                        ELSE 1 + ((CASE WHEN block % 2 = 0 THEN slot ELSE \(folders) - 1 - slot END) + block * 7) % \(folders) END,
                   CASE WHEN i % 50 = 7 THEN NULL ELSE block + 1 END,
                   \(itemKey("linked")),
                   CASE WHEN linked IS NULL THEN NULL ELSE \(itemEntity("linked")) END,
                   600000000.0 + i * 0.25,
                   (i * 2654435761) % 1000000,
                   CASE \(itemEntity("i")) WHEN 3 THEN 'Link ' ELSE 'Note ' END || i,
                   CASE \(itemEntity("i")) WHEN 3 THEN 'https://example.com/items/' || i || '?ref=' || ((i * 7) % 1000) END,
                   CASE \(itemEntity("i")) WHEN 4 THEN substr('Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur.', 1 + (i * 13) % 60, 60 + (i * 31) % 120) END
            FROM item;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(tags))
            INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZNAME) SELECT i, 5, 1, 'tag ' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows)),
            second(s) AS (VALUES (0), (1))
            INSERT INTO Z_2TAGS (Z_2ITEMS, Z_5TAGS)
            SELECT \(itemKey("i")),
                   1 + CASE s WHEN 0 THEN (i * 31) % \(tags) ELSE ((i * 31) % \(tags) + 1 + i % \(max(1, tags - 1))) % \(tags) END
            FROM n, second
            WHERE s = 0 OR (i % 10 <> 0 AND \(tags) > 1)
            ORDER BY 1, 2;
            \(sourceIndexes)
            INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES
                (1, 'Folder', 0, \(folders + 5)),
                (2, 'Item', 0, (SELECT max(Z_PK) FROM ZITEM)),
                (3, 'Link', 2, 0),
                (4, 'Note', 2, 0),
                (5, 'Tag', 0, \(tags));
            COMMIT;
            """)
        try writeMetadata(into: database, uuid: sourceUUID, entities: sourceEntities, revision: "N")
        try database.execute("PRAGMA journal_mode = WAL;")
    }

    private static func writeDestination(at url: URL) throws {
        let database = try Database(path: url.path, mode: .readWriteCreate)
        try database.execute("""
            \(bulkSettings)
            BEGIN;
            \(destinationSchema)
            \(destinationEntities.map { "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (\($0.number), '\($0.name)', \($0.superEntity), 0);" }.joined(separator: "\n"))
            COMMIT;
            """)
        try writeMetadata(into: database, uuid: destinationUUID, entities: destinationEntities, revision: "N+1")
        try database.execute("PRAGMA journal_mode = WAL;")
    }

    /// Writes the store's `Z_METADATA` row and its `Z_MODELCACHE` row.
    private static func writeMetadata(into database: Database, uuid: String, entities: [Entity], revision: String) throws {
        let metadata = try database.prepare("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)")
        try metadata.bind([.text(uuid), .blob(Array(try metadataPlist(uuid: uuid, entities: entities, revision: revision)))])
        _ = try metadata.step()
        let cache = try database.prepare("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)")
        try cache.bind([.blob(Array(try modelCache(entities: entities, revision: revision)))])
        _ = try cache.step()
    }

    /// The version hash of an entity: 32 bytes, the SHA-256 of its name and the model revision
    /// in which it last changed. Item and its sub-entities changed in N+1 (a new attribute);
    /// Folder and Tag did not, so their hashes are the same in both models, as Core Data's are.
    static func versionHash(of entity: String, revision: String) -> Data {
        let changed = ["Item", "Link", "Note", "Account"].contains(entity) ? revision : "N"
        var hash = JournalSHA256()
        hash.update(field: "chunkmigrate CoreDataDemoStore")
        hash.update(field: entity)
        hash.update(field: changed)
        return Data(hash.finalize())
    }

    /// `Z_PLIST`: the binary property list Core Data keeps in `Z_METADATA`.
    ///
    /// Written with `PropertyListEncoder` (binary) rather than `PropertyListSerialization`: both
    /// write the same format, which `PropertyListSerialization` reads, but on Linux the latter
    /// writes a dictionary's keys in hash order, which Swift seeds per process, so the bytes
    /// changed from one run to the next; the encoder keeps the order the keys are encoded in.
    static func metadataPlist(uuid: String, entities: [Entity], revision: String) throws -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        let hashes = entities.map { ($0.name, versionHash(of: $0.name, revision: revision)) }
        return try encoder.encode(StoreMetadata(uuid: uuid, hashes: OrderedDictionary(pairs: hashes)))
    }

    /// `Z_CONTENT`: Core Data stores its compiled model here, compressed; this store keeps a
    /// binary property list of the model's entities, which nothing reads but which is the
    /// destination model's, and so must survive a migration unchanged.
    static func modelCache(entities: [Entity], revision: String) throws -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return try encoder.encode(ModelCache(model: revision, entities: entities.map {
            ModelCache.Entry(name: $0.name, number: $0.number, superEntity: $0.superEntity)
        }))
    }

    /// The keys of `Z_PLIST`, in the order they are written.
    private struct StoreMetadata: Encodable {
        var uuid: String
        var hashes: OrderedDictionary

        enum CodingKeys: String, CodingKey {
            case storeType = "NSStoreType", uuid = "NSStoreUUID", hashes = "NSStoreModelVersionHashes"
            case hashesVersion = "NSStoreModelVersionHashesVersion", frameworkVersion = "NSPersistenceFrameworkVersion"
            case identifiers = "NSStoreModelVersionIdentifiers", autoVacuum = "_NSAutoVacuumLevel"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode("SQLite", forKey: .storeType)
            try container.encode(uuid, forKey: .uuid)
            try container.encode(hashes, forKey: .hashes)
            try container.encode(3, forKey: .hashesVersion)
            try container.encode(1000, forKey: .frameworkVersion)
            try container.encode([""], forKey: .identifiers)
            try container.encode("2", forKey: .autoVacuum)
        }
    }

    /// A dictionary of data values encoded in the order of its pairs.
    private struct OrderedDictionary: Encodable {
        var pairs: [(String, Data)]

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: PropertyListKey.self)
            for (key, value) in pairs { try container.encode(value, forKey: PropertyListKey(stringValue: key)) }
        }
    }

    private struct ModelCache: Encodable {
        struct Entry: Encodable {
            var name: String
            var number: Int
            var superEntity: Int
        }
        var model: String
        var entities: [Entry]
    }
}
