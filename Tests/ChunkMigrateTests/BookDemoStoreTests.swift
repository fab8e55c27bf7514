import Foundation
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// `BookDemoStore`: the BookMigration example's custom migration (model 1 to model 3, plus three
/// attributes promoted out of a property list) on a generated store of thousands of books,
/// checked the way `BookMigrationExampleTests` checks the example's real store, run straight
/// through and stopped after every batch.
@Suite("Book demo store")
struct BookDemoStoreTests {
    static let books = 5_000

    /// Runs the generated plan from `files.old` into `destination` to the end.
    static func migrate(_ files: BookDemoStore.Files, into destination: URL, journal: URL, batchSize: Int? = nil) throws {
        let job = try MigrationJob.start(
            plan: BookDemoStore.plan, source: files.old, destination: destination, journal: journal,
            schema: BookDemoStore.destinationSchema, options: MigrationOptions(batchSize: batchSize),
            logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
    }

    static func rows(_ store: URL, _ sql: String) throws -> [[SQLiteValue]] {
        try Database(path: store.path, mode: .readOnly).rows(sql)
    }

    /// `isbn`, `pages` and `rating` of each book's `ZMETADATA` as Foundation decodes it, by key
    /// (NULL for a key the list lacks and for a NULL blob).
    static func decodedMetadata(_ source: URL) throws -> [[SQLiteValue]] {
        try rows(source, "SELECT Z_PK, ZMETADATA FROM ZBOOK ORDER BY Z_PK").map { row in
            guard case let .blob(bytes) = row[1] else { return [row[0], .null, .null, .null] }
            let list = try #require(try PropertyListSerialization.propertyList(from: Data(bytes), format: nil) as? [String: Any])
            return [
                row[0],
                (list["isbn"] as? String).map { .text($0) } ?? .null,
                (list["pages"] as? NSNumber).map { .integer($0.int64Value) } ?? .null,
                (list["rating"] as? NSNumber).map { .real($0.doubleValue) } ?? .null,
            ]
        }
    }

    @Test(
        "the generated store: model 1's tables plus ZMETADATA, names repeating irregularly, sparse keys, users, the same bytes from the same arguments"
    )
    func generatedStore() throws {
        let folder = try TemporaryFolder()
        let files = try BookDemoStore.generate(in: folder.path("store"), books: Self.books)
        let source = files.old
        #expect(
            try Self.rows(source, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").map { $0[0] }
                == [.text("ZBOOK"), .text("ZUSER"), .text("Z_METADATA"), .text("Z_PRIMARYKEY")])
        #expect(
            try Self.rows(source, "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT")
                == [[.integer(1), .text("Book"), .integer(0)], [.integer(2), .text("User"), .integer(0)]])
        let counts = try Self.rows(
            source,
            """
            SELECT count(*), count(DISTINCT ZAUTHORNAME), count(ZAUTHORNAME), count(ZUSER), count(ZMETADATA), max(Z_PK),
                   (SELECT count(*) FROM ZUSER)
            FROM ZBOOK
            """)[0]
        #expect(counts[0] == .integer(Int64(Self.books)))
        #expect(counts[1] == .integer(Int64(BookDemoStore.authorCount(books: Self.books))))
        #expect(counts[2].integer! < Int64(Self.books) && counts[3].integer! < Int64(Self.books) && counts[4].integer! < Int64(Self.books))
        #expect(counts[5].integer! > Int64(Self.books))
        #expect(counts[6] == .integer(Int64(BookDemoStore.userCount(books: Self.books))))
        // Names first appear in an order unlike their numbers.
        let firstNames = try Self.rows(
            source, "SELECT ZAUTHORNAME FROM ZBOOK WHERE ZAUTHORNAME IS NOT NULL GROUP BY ZAUTHORNAME ORDER BY min(Z_PK) LIMIT 5")
        #expect(firstNames != firstNames.sorted { $0[0].text! < $1[0].text! })
        // Some lists lack a key.
        let decoded = try Self.decodedMetadata(source)
        for column in 1...3 { #expect(decoded.contains { $0[column] == .null } && decoded.contains { $0[column] != .null }) }
        let store = try Data(contentsOf: source)
        let again = try BookDemoStore.generate(in: folder.path("again"), books: Self.books)
        #expect(try Data(contentsOf: again.old) == store)
        #expect(try String(contentsOf: files.plan, encoding: .utf8) == BookDemoStore.planJSON)
        #expect(try String(contentsOf: files.schema, encoding: .utf8) == BookDemoStore.destinationSchema)
    }

    @Test(
        "model 1 to model 3 plus the property list's values: one Author per distinct name, every book with its author, one File per book with a user, isbn, pages and rating as Foundation decodes them, Z_MAX, check-coredata"
    )
    func migrated() throws {
        let folder = try TemporaryFolder()
        let files = try BookDemoStore.generate(in: folder.path("store"), books: Self.books)
        let source = files.old, destination = folder.path("new.sqlite")
        try Self.migrate(files, into: destination, journal: folder.path("new.journal"))

        // Users kept with their keys.
        #expect(
            try Self.rows(destination, "SELECT Z_PK, Z_ENT, Z_OPT, ZUSERID FROM ZUSER ORDER BY Z_PK")
                == (try Self.rows(source, "SELECT Z_PK, 4, Z_OPT, ZUSERID FROM ZUSER ORDER BY Z_PK")))
        // One Author per distinct name, keys 1, 2, ... in order of first appearance by book key.
        let authors = try Self.rows(
            source,
            """
            SELECT row_number() OVER (ORDER BY min(Z_PK)), 1, 1, ZAUTHORNAME FROM ZBOOK
            WHERE ZAUTHORNAME IS NOT NULL GROUP BY ZAUTHORNAME ORDER BY min(Z_PK)
            """)
        #expect(authors.count == BookDemoStore.authorCount(books: Self.books))
        #expect(try Self.rows(destination, "SELECT Z_PK, Z_ENT, Z_OPT, ZNAME FROM ZAUTHOR ORDER BY Z_PK") == authors)
        // Every book with an author name has exactly that author; the others none.
        #expect(
            try Self.rows(
                destination,
                """
                SELECT b.Z_PK, a.ZNAME FROM ZBOOK b JOIN Z_1BOOKS j ON j.Z_2BOOKS = b.Z_PK JOIN ZAUTHOR a ON a.Z_PK = j.Z_1AUTHORS
                ORDER BY b.Z_PK
                """) == (try Self.rows(source, "SELECT Z_PK, ZAUTHORNAME FROM ZBOOK WHERE ZAUTHORNAME IS NOT NULL ORDER BY Z_PK")))
        #expect(
            try Self.rows(destination, "SELECT count(*) FROM Z_1BOOKS")
                == (try Self.rows(source, "SELECT count(*) FROM ZBOOK WHERE ZAUTHORNAME IS NOT NULL")))
        // Books keep their keys, titles and Z_OPT, and take isbn, pages and rating from the list.
        #expect(
            try Self.rows(destination, "SELECT Z_PK, Z_ENT, Z_OPT, ZTITLE FROM ZBOOK ORDER BY Z_PK")
                == (try Self.rows(source, "SELECT Z_PK, 2, Z_OPT, ZTITLE FROM ZBOOK ORDER BY Z_PK")))
        #expect(
            try Self.rows(destination, "SELECT Z_PK, ZISBN, ZPAGES, ZRATING FROM ZBOOK ORDER BY Z_PK")
                == (try Self.decodedMetadata(source)))
        // One File per book with a user, keys 1, 2, ... in book order, with the book's fileURL.
        #expect(
            try Self.rows(destination, "SELECT Z_PK, Z_ENT, Z_OPT, ZBOOK, ZUSER, ZFILEURL FROM ZFILE ORDER BY Z_PK")
                == (try Self.rows(
                    source,
                    """
                    SELECT row_number() OVER (ORDER BY Z_PK), 3, 1, Z_PK, ZUSER, ZFILEURL FROM ZBOOK WHERE ZUSER IS NOT NULL ORDER BY Z_PK
                    """)))
        // Core Data's bookkeeping.
        let sourceMax = try Self.rows(source, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Book'")[0][0]
        #expect(
            try Self.rows(destination, "SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT") == [
                [.text("Author"), .integer(Int64(authors.count))],
                [.text("Book"), sourceMax],
                [.text("File"), try Self.rows(source, "SELECT count(*) FROM ZBOOK WHERE ZUSER IS NOT NULL")[0][0]],
                [.text("User"), .integer(Int64(BookDemoStore.userCount(books: Self.books)))],
            ])
        #expect(try Self.rows(destination, "SELECT Z_UUID FROM Z_METADATA") == [[.text(BookDemoStore.sourceUUID)]])
        #expect(try Self.rows(destination, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '_chunkmigrate%'") == [[.integer(0)]])
        let check = try CoreDataStoreCheck.run(store: destination)
        #expect(check.isValid, "\(check.violations)")
    }

    @Test(
        "stopped after every batch and resumed in a new job each time: the same rows as a run straight through, no duplicate author, no missing join row"
    )
    func pausedAfterEveryBatch() throws {
        let folder = try TemporaryFolder()
        let files = try BookDemoStore.generate(in: folder.path("store"), books: Self.books)
        let reference = folder.path("reference.sqlite")
        try Self.migrate(files, into: reference, journal: folder.path("reference.journal"))

        let destination = folder.path("stopped.sqlite"), journal = folder.path("stopped.journal")
        let options = MigrationOptions(batchSize: 400)
        _ = try MigrationJob.start(
            plan: BookDemoStore.plan, source: files.old, destination: destination, journal: journal,
            schema: BookDemoStore.destinationSchema, options: options, logger: quietLogger)
        var runs = 0
        while true {
            let job = try MigrationJob.resume(at: journal, options: options, logger: quietLogger)
            let outcome = try job.runBlocking(for: .zero)
            runs += 1
            let duplicates = try Self.rows(destination, "SELECT count(*) - count(DISTINCT ZNAME) FROM ZAUTHOR")
            #expect(duplicates == [[.integer(0)]], "after run \(runs)")
            if outcome == .complete { break }
            try #require(runs < 1_000)
        }
        // Book, Author, BookAuthors and File read 5,000 rows each, 400 per batch.
        #expect(runs >= 3 * Self.books / 400)
        #expect(try dump(destination) == (try dump(reference)))
        #expect(
            try Self.rows(destination, "SELECT count(*) FROM ZBOOK b WHERE b.Z_PK IN (SELECT Z_2BOOKS FROM Z_1BOOKS)")
                == (try Self.rows(files.old, "SELECT count(*) FROM ZBOOK WHERE ZAUTHORNAME IS NOT NULL")))
        let check = try CoreDataStoreCheck.run(store: destination)
        #expect(check.isValid, "\(check.violations)")
    }
}
