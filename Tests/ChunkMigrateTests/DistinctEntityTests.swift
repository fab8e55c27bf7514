import Foundation
import Testing
@testable import ChunkMigrate

/// De-duplicated entities (`distinct`): one destination row per distinct value of a source
/// expression, keys in order of first appearance, relationships to them resolved by value.
@Suite("De-duplicated entities")
struct DistinctEntityTests {
    static let schema = """
        CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT, author_id INTEGER REFERENCES author(id));
        """

    static func plan(missing: EntityMapping.MissingPolicy = .fail) -> MigrationPlan {
        MigrationPlan(entities: [
            EntityMapping(
                name: "Book", source: .init(table: "book", key: "id"), destination: .init(table: "book", key: "id"),
                keys: .preserve, columns: ["title": "title"],
                relationships: ["author_id": .init(from: "trim(author)", to: "Author", missing: missing)]),
            EntityMapping(
                name: "Author", source: .init(table: "book", key: "id"), destination: .init(table: "author", key: "id"),
                distinct: .init(source: "trim(author)", destination: "name")),
        ])
    }

    /// Books whose author names repeat across and within batches, with NULLs and spaces.
    static func source(in folder: TemporaryFolder) throws -> URL {
        let source = folder.path("source.sqlite")
        try execute(
            """
            CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT, author TEXT);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
            INSERT INTO book SELECT i * 3, 'book ' || i,
                CASE WHEN i % 17 = 0 THEN NULL WHEN i % 5 = 0 THEN ' writer ' || ((i * 7) % 23) ELSE 'writer ' || ((i * 7) % 23) END FROM n;
            """, on: source)
        return source
    }

    /// What the destination should hold: authors in order of first appearance, each book with its author.
    static func expected(_ source: URL) throws -> (authors: [[SQLiteValue]], books: [[SQLiteValue]]) {
        let database = try Database(path: source.path, mode: .readOnly)
        let names = try database.rows("SELECT trim(author) FROM book WHERE author IS NOT NULL GROUP BY trim(author) ORDER BY min(id)")
        let authors = names.enumerated().map { [SQLiteValue.integer(Int64($0.offset + 1)), $0.element[0]] }
        let key = Dictionary(uniqueKeysWithValues: authors.map { ($0[1], $0[0]) })
        let books = try database.rows("SELECT id, title, trim(author) FROM book ORDER BY id").map { row in
            [row[0], row[1], key[row[2]] ?? .null]
        }
        return (authors, books)
    }

    @Test(
        "one row per distinct value in order of first appearance, across batches of every size, and every relationship by value",
        arguments: [1, 7, 50, 1000])
    func distinctAcrossBatches(_ batchSize: Int) throws {
        let folder = try TemporaryFolder()
        let source = try Self.source(in: folder)
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: Self.plan(), source: source, destination: destination, journal: folder.path("journal"),
            schema: Self.schema, options: MigrationOptions(batchSize: batchSize), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        let expected = try Self.expected(source)
        #expect(expected.authors.count == 23)
        #expect(try Database(path: destination.path, mode: .readOnly).rows("SELECT id, name FROM author ORDER BY id") == expected.authors)
        #expect(
            try Database(path: destination.path, mode: .readOnly).rows("SELECT id, title, author_id FROM book ORDER BY id")
                == expected.books)
        // The job's own unique index on the natural key is gone; the schema is as it was.
        #expect(try scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'index'", on: destination) == .integer(0))
    }

    @Test("stopped after every batch and resumed: no author twice, none missing")
    func resumed() throws {
        let folder = try TemporaryFolder()
        let source = try Self.source(in: folder)
        let destination = folder.path("new.sqlite")
        _ = try MigrationJob.start(
            plan: Self.plan(), source: source, destination: destination, journal: folder.path("journal"),
            schema: Self.schema, options: MigrationOptions(batchSize: 13), logger: quietLogger)
        var runs = 0
        while try MigrationJob.resume(at: folder.path("journal"), options: MigrationOptions(batchSize: 13), logger: quietLogger)
            .runBlocking(for: .zero) == .paused
        {
            runs += 1
        }
        #expect(runs > 40)
        let expected = try Self.expected(source)
        #expect(try Database(path: destination.path, mode: .readOnly).rows("SELECT id, name FROM author ORDER BY id") == expected.authors)
        #expect(
            try Database(path: destination.path, mode: .readOnly).rows("SELECT id, title, author_id FROM book ORDER BY id")
                == expected.books)
    }

    @Test("a value with no row fails the batch naming the row and the value, or becomes NULL under missing: null")
    func missingValue() throws {
        let folder = try TemporaryFolder()
        let source = try Self.source(in: folder)
        // Authors only from the first 10 books: later books name authors that have no row.
        var plan = Self.plan()
        plan.entities[1].source.where = "id <= 30"
        let failing = try MigrationJob.start(
            plan: plan, source: source, destination: folder.path("a.sqlite"), journal: folder.path("a"),
            schema: Self.schema, options: MigrationOptions(batchSize: 50), logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try failing.runBlocking() }
        #expect(error.code == .missingMapping && error.entity == "Book" && error.column == "author_id", "\(error)")
        let firstMissing = try #require(
            try scalar(
                """
                SELECT min(id) FROM book WHERE trim(author) NOT IN (SELECT trim(author) FROM book WHERE id <= 30 AND author IS NOT NULL)
                """, on: source
            ).integer)
        #expect(error.sourceKey == firstMissing)
        #expect(error.message.contains("has no row in Author"))

        var nulls = plan
        nulls.entities[0].relationships["author_id"]?.missing = .null
        let lenient = try MigrationJob.start(
            plan: nulls, source: source, destination: folder.path("b.sqlite"), journal: folder.path("b"),
            schema: Self.schema, options: MigrationOptions(batchSize: 50), logger: quietLogger)
        #expect(try lenient.runBlocking() == .complete)
        #expect(
            try scalar("SELECT count(*) FROM book WHERE author_id IS NULL", on: folder.path("b.sqlite"))
                == (try scalar(
                    "SELECT count(*) FROM book WHERE trim(author) NOT IN (SELECT trim(author) FROM book WHERE id <= 30 AND author IS NOT NULL) OR author IS NULL",
                    on: source)))
    }

    @Test(
        "an expression that reads another entity's destination table runs after that entity, whatever the plan's order; a read that cannot be ordered is refused"
    )
    func undeclaredDependencies() throws {
        let folder = try TemporaryFolder()
        let source = try Self.source(in: folder)
        // The join listed first, resolving the author with a subquery into the destination.
        let plan = MigrationPlan(entities: [
            EntityMapping(
                name: "Book", source: .init(table: "book", key: "id"), destination: .init(table: "book", key: "id"),
                keys: .preserve,
                columns: ["title": "title", "author_id": "(SELECT a.id FROM main.author AS a WHERE a.name = trim(s.author))"]),
            EntityMapping(
                name: "Author", source: .init(table: "book", key: "id"), destination: .init(table: "author", key: "id"),
                distinct: .init(source: "trim(author)", destination: "name")),
        ])
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            schema: Self.schema, options: MigrationOptions(batchSize: 40), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        #expect(
            try Database(path: destination.path, mode: .readOnly).rows("SELECT id, title, author_id FROM book ORDER BY id")
                == (try Self.expected(source).books))

        // Author reads Book's table too: no order satisfies both reads.
        var cyclic = plan
        cyclic.entities[1].columns = ["id_of_first_book": "(SELECT min(b.id) FROM main.book AS b WHERE b.title = s.title)"]
        let error = try #require(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: cyclic, source: source, destination: folder.path("cyclic.sqlite"), journal: folder.path("cyclic"),
                schema:
                    "CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT, id_of_first_book INTEGER); CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT, author_id INTEGER);",
                logger: quietLogger)
        }
        #expect(error.message.contains("reads the destination table") && error.message.contains("cannot run first"), "\(error)")
    }

    @Test(
        "plan errors name the plan path: an unknown natural-key column, an expression SQLite rejects, skip on a relationship by value, preserved keys, a natural key not unique in the destination"
    )
    func planErrors() throws {
        let folder = try TemporaryFolder()
        let source = try Self.source(in: folder)
        func start(_ plan: MigrationPlan, _ name: String, schema: String = Self.schema, append: Bool = false) -> MigrationError? {
            var options = MigrationOptions(batchSize: 10)
            options.appendToExistingRows = append
            do {
                _ = try MigrationJob.start(
                    plan: plan, source: source, destination: folder.path(name + ".sqlite"),
                    journal: folder.path(name), schema: schema, options: options, logger: quietLogger)
                return nil
            } catch { return error as? MigrationError }
        }
        var plan = Self.plan()
        plan.entities[1].distinct?.destination = "nmae"
        #expect(
            start(plan, "a")?.message.contains(
                "entities[1].distinct.destination: the destination table \"author\" has no column \"nmae\"; did you mean \"name\"?") == true
        )
        plan = Self.plan()
        plan.entities[1].distinct?.source = "trim(autor)"
        #expect(start(plan, "b")?.message.hasPrefix("entities[1].distinct.source: SQLite rejects \"trim(autor)\"") == true)
        plan = Self.plan(missing: .skip)
        #expect(start(plan, "c")?.message.hasPrefix("entities[0].relationships.author_id.missing: \"skip\" is not available") == true)
        plan = Self.plan()
        plan.entities[1].keys = .preserve
        #expect(start(plan, "d")?.message.hasPrefix("entities[1].keys: a de-duplicated entity (distinct) allocates its keys") == true)
        let duplicated = start(Self.plan(), "e", schema: Self.schema + "INSERT INTO author VALUES (100, 'x'), (101, 'x');", append: true)
        #expect(
            duplicated?.message.hasPrefix("entities[1].distinct.destination: the natural key name must be unique in author") == true,
            "\(String(describing: duplicated))")
    }
}
