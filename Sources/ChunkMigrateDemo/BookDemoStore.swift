import ChunkMigrate
import Foundation

/// A generated Core Data store of the objc.io BookMigration example at model 1, at any size, with
/// the destination schema and the plan that migrate it to model 3 plus three attributes promoted
/// out of a property-list blob: the custom migration of `Examples/BookMigration` at scale.
///
/// `old.sqlite` has the tables of the example's model-1 store (compare
/// `shared/fixtures/coredata/BookMigration/Model1.sqlite`: `ZBOOK`, `ZUSER`, `Z_PRIMARYKEY` with
/// Book 1 and User 2, `Z_METADATA` with a binary property list) and one more column,
/// `ZBOOK.ZMETADATA`, a binary property list dictionary with the keys `isbn` (text), `pages`
/// (integer) and `rating` (real). `Model3Plus.sql` is the example's `Model3.sql` with `ZISBN`,
/// `ZPAGES` and `ZRATING` on `ZBOOK`; `plan.json` is the example's plan with those three columns
/// read by `plist_value`. Used by its tests, `Tools/bench-books` and `Tools/kill-resume --books`.
///
/// ```swift
/// let files = try BookDemoStore.generate(in: folder, books: 1_000_000)
/// let job = try MigrationJob.start(plan: BookDemoStore.plan, source: files.old, destination: folder.appending(path: "new.sqlite"),
///                                  journal: folder.appending(path: "new.journal"), schema: BookDemoStore.destinationSchema,
///                                  logger: logger)
/// ```
package enum BookDemoStore {
    /// The files ``generate(in:books:)`` writes.
    package struct Files: Sendable {
        /// The store at model 1 with `ZBOOK.ZMETADATA`, `old.sqlite`.
        package var old: URL
        /// The destination's schema, ``destinationSchema``, `Model3Plus.sql`.
        package var schema: URL
        /// The plan, ``planJSON``, `plan.json`.
        package var plan: URL
    }

    /// `Z_METADATA.Z_UUID` of `old.sqlite`: the store's identity, which the migrated store takes.
    package static let sourceUUID = "B00C5000-0D1E-4A2B-9C3D-4E5F60718293"

    /// The tables of the example's model 1, as Core Data declares them, with `ZMETADATA` added to
    /// `ZBOOK`. The index on the to-one `ZUSER` is created after the rows.
    static let sourceTables = """
        CREATE TABLE ZBOOK ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZUSER INTEGER, ZAUTHORNAME VARCHAR, ZTITLE VARCHAR, ZFILEURL BLOB, ZMETADATA BLOB );
        CREATE TABLE ZUSER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZUSERID INTEGER );
        CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
        CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
        """

    /// The empty model-3 store as Core Data creates it (`Examples/BookMigration/Model3.sql`), with
    /// the attributes `isbn`, `pages` and `rating` added to Book: `ZISBN VARCHAR, ZPAGES INTEGER,
    /// ZRATING FLOAT`. Written as `Model3Plus.sql`.
    package static let destinationSchema = """
        -- The empty store Core Data creates for model 3 of the objc.io "Custom Core Data Migrations"
        -- example (Examples/BookMigration/Model3.sql), with three attributes added to Book that the
        -- plan fills from the property list in the old store's ZBOOK.ZMETADATA: isbn, pages, rating.
        CREATE TABLE ZAUTHOR ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
        CREATE TABLE Z_1BOOKS ( Z_1AUTHORS INTEGER, Z_2BOOKS INTEGER, PRIMARY KEY (Z_1AUTHORS, Z_2BOOKS) );
        CREATE TABLE ZBOOK ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR, ZISBN VARCHAR, ZPAGES INTEGER, ZRATING FLOAT );
        CREATE TABLE ZFILE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZBOOK INTEGER, ZUSER INTEGER, ZFILEURL BLOB );
        CREATE TABLE ZUSER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZUSERID INTEGER );
        CREATE INDEX Z_1BOOKS_Z_2BOOKS_INDEX ON Z_1BOOKS (Z_2BOOKS, Z_1AUTHORS);
        CREATE INDEX ZFILE_ZBOOK_INDEX ON ZFILE (ZBOOK);
        CREATE INDEX ZFILE_ZUSER_INDEX ON ZFILE (ZUSER);
        CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
        INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (1, 'Author', 0, 0), (2, 'Book', 0, 0), (3, 'File', 0, 0), (4, 'User', 0, 0);
        CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
        INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, '5B1E2F3A-0C4D-4E5F-8A9B-0C1D2E3F4A5B',
            x'62706c6973743030d5010203040506071011135f101d4e5350657273697374656e63654672616d65776f726b56657273696f6e5f10194e5353746f72654d6f64656c56657273696f6e4861736865735f10204e5353746f72654d6f64656c56657273696f6e48617368657356657273696f6e5f101e4e5353746f72654d6f64656c56657273696f6e4964656e746966696572735b4e5353746f7265547970651103e8d408090a0b0c0d0e0f56417574686f7254426f6f6b5446696c6554557365724f1020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f4f1020202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f4f1020404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f4f1020606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f1003a112505653514c697465000800130033004f00720093009f00a200ab00b200b700bc00c100e40107012a014d014f015101520000000000000201000000000000001400000000000000000000000000000159');
        CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB);

        """

    /// The plan: `Examples/BookMigration/plan.json` (users and books keep their keys, one Author
    /// per distinct `ZAUTHORNAME` joined to its books by value, one File per book with a user),
    /// with Book's `ZISBN`, `ZPAGES` and `ZRATING` read from `ZMETADATA` by `plist_value`.
    /// Written as `plan.json`.
    package static let planJSON = """
        {
          "coreData": { "entities": { "Book": "Book", "User": "User" } },
          "entities": [
            { "name": "User",
              "source": { "table": "ZUSER", "key": "Z_PK" },
              "destination": { "table": "ZUSER", "key": "Z_PK" },
              "keys": "preserve",
              "columns": { "Z_ENT": "coredata_entity(Z_ENT)", "Z_OPT": "Z_OPT", "ZUSERID": "ZUSERID" } },
            { "name": "Book",
              "source": { "table": "ZBOOK", "key": "Z_PK" },
              "destination": { "table": "ZBOOK", "key": "Z_PK" },
              "keys": "preserve",
              "columns": { "Z_ENT": "coredata_entity(Z_ENT)", "Z_OPT": "Z_OPT", "ZTITLE": "ZTITLE",
                           "ZISBN": "plist_value(ZMETADATA, 'isbn')",
                           "ZPAGES": "plist_value(ZMETADATA, 'pages')",
                           "ZRATING": "plist_value(ZMETADATA, 'rating')" } },
            { "name": "Author",
              "source": { "table": "ZBOOK", "key": "Z_PK" },
              "destination": { "table": "ZAUTHOR", "key": "Z_PK" },
              "distinct": { "source": "ZAUTHORNAME", "destination": "ZNAME" },
              "columns": { "Z_ENT": "coredata_entity_number('Author')", "Z_OPT": "1" } },
            { "name": "BookAuthors",
              "source": { "table": "ZBOOK", "key": "Z_PK", "where": "ZAUTHORNAME IS NOT NULL" },
              "destination": { "table": "Z_1BOOKS" },
              "relationships": {
                "Z_1AUTHORS": { "from": "ZAUTHORNAME", "to": "Author" },
                "Z_2BOOKS": { "from": "Z_PK", "to": "Book" } } },
            { "name": "File",
              "source": { "table": "ZBOOK", "key": "Z_PK", "where": "ZUSER IS NOT NULL" },
              "destination": { "table": "ZFILE", "key": "Z_PK" },
              "columns": { "Z_ENT": "coredata_entity_number('File')", "Z_OPT": "1", "ZFILEURL": "ZFILEURL" },
              "relationships": {
                "ZBOOK": { "from": "Z_PK", "to": "Book" },
                "ZUSER": { "from": "ZUSER", "to": "User" } } }
          ]
        }

        """

    /// ``planJSON`` decoded.
    package static let plan: MigrationPlan = {
        do { return try MigrationPlan.decode(json: Data(planJSON.utf8), file: "BookDemoStore.planJSON") } catch {
            fatalError("BookDemoStore.planJSON does not decode: \(error)")
        }
    }()

    /// How many distinct `ZMETADATA` property lists the store holds; each book takes one by a hash
    /// of its number, so neighbouring books hold different lists.
    static let metadataVariants = 1_000

    /// The number of distinct author names for `books` books: one per twenty books, at most 50,000.
    package static func authorCount(books: Int) -> Int { min(50_000, max(1, books / 20)) }

    /// The number of users for `books` books: one per five books, at most 1,000.
    package static func userCount(books: Int) -> Int { min(1_000, max(1, books / 5)) }

    /// Writes `old.sqlite` with `books` books, `Model3Plus.sql` and `plan.json` into `directory`,
    /// replacing them if they exist. The same arguments give the same bytes.
    ///
    /// The books have keys with gaps, as after deletes (Book's `Z_MAX` is 3 above the largest);
    /// ``authorCount(books:)`` author names, each book's drawn by a hash of its number, so that
    /// names come back in no regular order and first appear in an order unlike their numbers; one
    /// book in 97 has no author name; ``userCount(books:)`` users, one book in nine without one;
    /// `ZFILEURL` a blob of about 30 bytes; `ZMETADATA` one of 1,000 binary property lists with
    /// `isbn`, `pages` and `rating` (a tenth of them without `isbn`, a tenth without `pages`, a
    /// tenth without `rating`), NULL in one book in 211.
    /// - Parameters:
    ///   - directory: created if needed.
    ///   - books: the number of books, at least 1.
    /// - Returns: the three files' URLs.
    /// - Throws: `SQLiteError` if the store cannot be written, or an error writing a file or
    ///   encoding a property list.
    @discardableResult
    package static func generate(in directory: URL, books: Int) throws -> Files {
        precondition(books >= 1, "a book demo store needs at least one book")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let files = Files(
            old: directory.appendingPathComponent("old.sqlite"),
            schema: directory.appendingPathComponent("Model3Plus.sql"),
            plan: directory.appendingPathComponent("plan.json"))
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(atPath: files.old.path + suffix)
        }
        try writeSource(at: files.old, books: books)
        try destinationSchema.write(to: files.schema, atomically: true, encoding: .utf8)
        try planJSON.write(to: files.plan, atomically: true, encoding: .utf8)
        return files
    }

    /// The key of the `i`th book (1-based): one key in seven and two in fifty-three left out.
    /// Strictly increasing in `i`.
    private static func bookKey(_ i: String) -> String { "(\(i) + \(i) / 7 + \(i) / 53 * 2)" }

    private static func writeSource(at url: URL, books: Int) throws {
        let authors = authorCount(books: books)
        let users = userCount(books: books)
        let database = try Database(path: url.path, mode: .readWriteCreate)
        try database.execute(
            """
            \(CoreDataDemoStore.bulkSettings)
            BEGIN;
            \(sourceTables)
            CREATE TEMP TABLE metadata (n INTEGER PRIMARY KEY, plist BLOB);
            """)
        let insert = try database.prepare("INSERT INTO temp.metadata (n, plist) VALUES (?, ?)")
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        for n in 0..<metadataVariants {
            insert.reset()
            try insert.bind([.integer(Int64(n)), .blob(Array(try encoder.encode(BookMetadata(variant: n))))])
            _ = try insert.step()
        }
        insert.reset()
        // Author n's name starts with one of five first names; the number makes it unique. The
        // book's author is a multiplicative hash of its number modulo a prime, so names repeat
        // in an irregular order.
        try database.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(users))
            INSERT INTO ZUSER (Z_PK, Z_ENT, Z_OPT, ZUSERID) SELECT i, 2, 1 + i % 2, 100000 + i * 37 FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(books)),
            book(i, author) AS (SELECT i, 1 + (i * 2654435761 % 4294967311) % \(authors) FROM n)
            INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZUSER, ZAUTHORNAME, ZTITLE, ZFILEURL, ZMETADATA)
            SELECT \(bookKey("i")), 1, 1 + i % 3,
                   CASE WHEN i % 9 = 4 THEN NULL ELSE 1 + (i * 7919) % \(users) END,
                   CASE WHEN i % 97 = 0 THEN NULL
                        ELSE CASE author % 5 WHEN 0 THEN 'Ödön ' WHEN 1 THEN 'Franz ' WHEN 2 THEN 'Witold '
                                             WHEN 3 THEN 'Thomas ' ELSE 'Ingeborg ' END || 'Author ' || author END,
                   CASE i % 4 WHEN 0 THEN 'The Trial ' WHEN 1 THEN 'Cosmos ' WHEN 2 THEN 'Metamorphosis ' ELSE 'Malina ' END || i,
                   CAST('file:///books/' || i || '.epub' AS BLOB),
                   CASE WHEN i % 211 = 5 THEN NULL
                        ELSE (SELECT plist FROM temp.metadata WHERE n = (i * 40503) % \(metadataVariants)) END
            FROM book;
            CREATE INDEX ZBOOK_ZUSER_INDEX ON ZBOOK (ZUSER);
            INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES
                (1, 'Book', 0, (SELECT max(Z_PK) FROM ZBOOK) + 3),
                (2, 'User', 0, \(users));
            DROP TABLE temp.metadata;
            COMMIT;
            """)
        // The metadata Core Data writes for model 1 (Book 1, User 2), as an empty store of it has.
        let model = CoreDataModel(entities: [
            .init(name: "Book", properties: [.init(name: "title", kind: .attribute(.init(type: .string)))]),
            .init(name: "User", properties: [.init(name: "userId", kind: .attribute(.init(type: .integer32)))]),
        ])
        let metadata = try database.prepare("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)")
        try metadata.bind([
            .text(sourceUUID),
            .blob(
                Array(
                    try CoreDataEmptyStore.metadataPlist(
                        CoreDataLayout(model: model), uuid: sourceUUID, extra: [:]))),
        ])
        _ = try metadata.step()
        try database.execute("PRAGMA journal_mode = WAL;")
    }

    /// A book's `ZMETADATA`: the dictionary an app kept in a binary attribute, with a key left out
    /// in three variants of ten.
    ///
    /// Encoded with `PropertyListEncoder` (binary), not `PropertyListSerialization`: on Linux the
    /// latter writes a dictionary's keys in hash order, seeded per process, so the same store would
    /// get different bytes from one run to the next (see `CoreDataDemoStore`).
    struct BookMetadata: Encodable {
        var isbn: String?
        var pages: Int?
        var rating: Double?

        init(variant n: Int) {
            isbn = n % 10 == 7 ? nil : "978-\(n % 10)-\(String(10_000 + (n * 7_919) % 90_000))-\(String(100 + (n * 31) % 900))-\(n % 9)"
            pages = n % 10 == 8 ? nil : 48 + (n * 37) % 900
            rating = n % 10 == 9 ? nil : 1 + Double((n * 13) % 41) / 10
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(isbn, forKey: .isbn)
            try container.encodeIfPresent(pages, forKey: .pages)
            try container.encodeIfPresent(rating, forKey: .rating)
        }

        enum CodingKeys: String, CodingKey { case isbn, pages, rating }
    }
}
