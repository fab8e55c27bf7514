import Foundation
import MigrationJournal
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// A small source with authors, posts that belong to an author, and a post that points at an
/// author that does not exist (key 99).
private func makeBlogSource(at url: URL, danglingAuthor: Bool = true) throws {
    try execute(
        """
        CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT NOT NULL, partner INTEGER);
        CREATE TABLE post (id INTEGER PRIMARY KEY, author INTEGER, title TEXT NOT NULL);
        INSERT INTO author VALUES (5, 'ada', 9), (7, 'bob', NULL), (9, 'cy', 5);
        INSERT INTO post VALUES (-3, 7, 'negative keys work'), (1, 5, 'first'), (2, 5, 'second'), (4, 9, 'third'),
                                (6, \(danglingAuthor ? 99 : 7), 'dangling'), (8, NULL, 'anonymous'), (10, 7, 'last');
        """, on: url)
}

private let blogSchema = """
    CREATE TABLE writer (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, partner_id INTEGER);
    CREATE TABLE article (id INTEGER PRIMARY KEY, writer_id INTEGER, headline TEXT NOT NULL);
    """

private func blogPlan(missing: EntityMapping.MissingPolicy, headline: String = "title") -> MigrationPlan {
    MigrationPlan(entities: [
        EntityMapping(
            name: "Article", source: .init(table: "post", key: "id"), destination: .init(table: "article", key: "id"),
            columns: ["headline": headline],
            relationships: ["writer_id": .init(from: "author", to: "Writer", missing: missing)]),
        EntityMapping(
            name: "Writer", source: .init(table: "author", key: "id"), destination: .init(table: "writer", key: "id"),
            columns: ["name": "name"]),
    ])
}

@Suite("Plan features")
struct PlanFeatureTests {
    @Test("missing: fail stops the batch, names entity, batch, source key and column, and the job resumes once the row is fixed")
    func missingFail() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try makeBlogSource(at: source)
        let destination = folder.path("new.sqlite")
        let journal = folder.path("journal")
        let options = MigrationOptions(batchSize: 2)
        let job = try MigrationJob.start(
            plan: blogPlan(missing: .fail), source: source, destination: destination,
            journal: journal, schema: blogSchema, options: options, logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.code == .missingMapping)
        #expect(error.entity == "Article")
        #expect(error.batch == 3)
        #expect(error.sourceKey == 6)
        #expect(error.column == "writer_id")
        #expect(error.description.contains("99"))
        // The batches before it are committed; the failed one is not.
        #expect(
            try scalar("SELECT group_concat(headline, '|') FROM article", on: destination) == .text("negative keys work|first|second|third")
        )
        let status = try MigrationJob.status(at: journal)
        #expect(status.state == .failed)
        #expect(status.lastFailure?.contains("source key 6") == true)

        // Fix the row in the source (a fix that keeps the source's schema and key range), then resume.
        try execute("UPDATE post SET author = 7 WHERE id = 6", on: source)
        let resumed = try MigrationJob.resume(at: journal, options: options, logger: quietLogger)
        #expect(try resumed.runBlocking() == .complete)
        #expect(try scalar("SELECT count(*) FROM article", on: destination) == .integer(7))
        #expect(
            try scalar(
                """
                SELECT w.name FROM article a JOIN writer w ON w.id = a.writer_id WHERE a.headline = 'dangling'
                """, on: destination) == .text("bob"))
    }

    @Test("missing: null writes NULL and counts it; missing: skip leaves the row out and counts it")
    func missingNullAndSkip() throws {
        for policy in [EntityMapping.MissingPolicy.null, .skip] {
            let folder = try TemporaryFolder()
            let source = folder.path("source.sqlite")
            try makeBlogSource(at: source)
            let destination = folder.path("new.sqlite")
            let journal = folder.path("journal")
            let job = try MigrationJob.start(
                plan: blogPlan(missing: policy), source: source, destination: destination,
                journal: journal, schema: blogSchema, options: MigrationOptions(batchSize: 3),
                logger: quietLogger)
            #expect(try job.runBlocking() == .complete)
            let reader = try JournalReader(directory: journal.path)
            let articles = reader.batches(entity: 0)
            let written = try scalar("SELECT count(*) FROM article", on: destination).integer
            let dangling = try scalar("SELECT count(*) FROM article WHERE headline = 'dangling'", on: destination).integer
            if policy == .null {
                #expect(written == 7)
                #expect(dangling == 1)
                #expect(try scalar("SELECT writer_id IS NULL FROM article WHERE headline = 'dangling'", on: destination) == .integer(1))
                #expect(articles.reduce(0) { $0 + $1.relationshipsNulled } == 1)
            } else {
                #expect(written == 6)
                #expect(dangling == 0)
                #expect(articles.reduce(0) { $0 + $1.rowsSkipped } == 1)
                // A skipped row has no mapping.
                #expect(try reader.idMap().destination(of: 6, entity: 0) == nil)
            }
            // A NULL foreign key in the source stays NULL, whatever the policy.
            #expect(try scalar("SELECT writer_id IS NULL FROM article WHERE headline = 'anonymous'", on: destination) == .integer(1))
        }
    }

    @Test("relationships point where they pointed; targets run first whatever the plan order")
    func relationshipsResolveThroughIDMap() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try makeBlogSource(at: source, danglingAuthor: false)
        let destination = folder.path("new.sqlite")
        // Existing rows: refused unless asked for, then allocated keys start after them.
        try execute(blogSchema + "INSERT INTO writer VALUES (100, 'existing', NULL);", on: destination)
        let journal = folder.path("journal")
        let refused = try #require(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: blogPlan(missing: .fail), source: source, destination: destination, journal: journal,
                options: MigrationOptions(batchSize: 2), logger: quietLogger)
        }
        #expect(
            refused.entity == "Writer" && refused.file == destination.path
                && refused.message.contains("the destination already holds rows in writer"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: journal.path))
        var options = MigrationOptions(batchSize: 2)
        options.appendToExistingRows = true
        let job = try MigrationJob.start(
            plan: blogPlan(missing: .fail), source: source, destination: destination, journal: journal,
            options: options, logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        let writers = try scalar("SELECT group_concat(id || ':' || name, ' ') FROM (SELECT * FROM writer ORDER BY id)", on: destination)
        #expect(writers == .text("100:existing 101:ada 102:bob 103:cy"))
        #expect(
            try scalar(
                """
                SELECT group_concat(a.headline || '=' || ifnull(w.name, '-'), ' ') FROM article a LEFT JOIN writer w ON w.id = a.writer_id
                """, on: destination) == .text("negative keys work=bob first=ada second=ada third=cy dangling=bob anonymous=- last=bob"))
        let map = try JournalReader(directory: journal.path).idMap()
        #expect(try map.destination(of: -3, entity: 0) == 1)
        #expect(try map.source(ofDestination: 103, entity: 1) == 9)
    }

    @Test("a cycle between two entities is broken and set by the fix-up pass")
    func cycle() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute(
            """
            CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, team INTEGER);
            CREATE TABLE team (id INTEGER PRIMARY KEY, name TEXT, captain INTEGER);
            INSERT INTO team VALUES (1, 'red', 12), (2, 'blue', 11), (3, 'none', NULL);
            INSERT INTO person VALUES (10, 'ann', 1), (11, 'ben', 2), (12, 'cat', 1), (13, 'dan', NULL);
            """, on: source)
        let plan = MigrationPlan(entities: [
            EntityMapping(
                name: "Person", source: .init(table: "person"), destination: .init(table: "person"),
                columns: ["name": "name"], relationships: ["team_id": .init(from: "team", to: "Team")]),
            EntityMapping(
                name: "Team", source: .init(table: "team"), destination: .init(table: "team"),
                columns: ["name": "name"], relationships: ["captain_id": .init(from: "captain", to: "Person")]),
        ])
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            schema: "CREATE TABLE person (name TEXT, team_id INTEGER); CREATE TABLE team (name TEXT, captain_id INTEGER);",
            options: MigrationOptions(batchSize: 2), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        #expect(
            try scalar(
                """
                SELECT group_concat(p.name || '>' || ifnull(t.name, '-') || '>' || ifnull(c.name, '-'), ' ')
                FROM person p LEFT JOIN team t ON t.rowid = p.team_id LEFT JOIN person c ON c.rowid = t.captain_id
                """, on: destination) == .text("ann>red>cat ben>blue>ben cat>red>cat dan>->-"))
        #expect(try !JournalReader(directory: folder.path("journal").path).fixups.isEmpty)
    }

    @Test(
        "a self-reference: backward references resolve as rows are copied, the fix-up pass writes only the forward ones, and a backward reference to a row left out fails at once under missing: fail"
    )
    func selfReference() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        // 2, 7 and 10 refer backward, 3 and 5 forward, 4 to itself, 9 back to a row the filter
        // leaves out (8), 11 back to a key that does not exist.
        try execute(
            """
            CREATE TABLE note (id INTEGER PRIMARY KEY, parent INTEGER, hidden INTEGER NOT NULL DEFAULT 0);
            INSERT INTO note (id, parent) VALUES (1, NULL), (2, 1), (3, 6), (4, 4), (5, 10), (6, NULL), (7, 2), (9, 8), (10, 1), (11, -5);
            INSERT INTO note (id, parent, hidden) VALUES (8, NULL, 1);
            """, on: source)
        func plan(_ missing: EntityMapping.MissingPolicy) -> MigrationPlan {
            MigrationPlan(entities: [
                EntityMapping(
                    name: "Note", source: .init(table: "note", where: "hidden = 0"), destination: .init(table: "note"),
                    keys: .allocate, relationships: ["parent_id": .init(from: "parent", to: "Note", missing: missing)])
            ])
        }
        let schema = "CREATE TABLE note (id INTEGER PRIMARY KEY, parent_id INTEGER);"
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: plan(.null), source: source, destination: destination,
            journal: folder.path("journal"), schema: schema,
            options: MigrationOptions(batchSize: 3), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        // Destination keys 1...10 follow source keys 1...11 without 8; parents through the same map.
        #expect(
            try scalar("SELECT group_concat(id || '>' || ifnull(parent_id, '-'), ' ') FROM note ORDER BY id", on: destination)
                == .text("1>- 2>1 3>6 4>4 5>9 6>- 7>2 8>- 9>1 10>-"))
        let journal = try JournalReader(directory: folder.path("journal").path)
        // Only the two forward references wait for the fix-up pass; the two that can never
        // resolve (a row left out, a missing key) are nulled as their rows are copied.
        #expect(journal.batches.reduce(0) { $0 + Int($1.relationshipsDeferred) } == 2)
        #expect(journal.batches.reduce(0) { $0 + Int($1.relationshipsNulled) } == 2)
        #expect(journal.fixups.reduce(0) { $0 + Int($1.rowsUpdated) } == 2)
        #expect(journal.fixups.reduce(0) { $0 + Int($1.rowsNulled) } == 0)

        // Under missing: fail, the reference to the row left out fails its copy batch, naming it.
        let failing = try MigrationJob.start(
            plan: plan(.fail), source: source, destination: folder.path("fail.sqlite"),
            journal: folder.path("fail.journal"), schema: schema,
            options: MigrationOptions(batchSize: 3), logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try failing.runBlocking() }
        #expect(error.code == .missingMapping)
        #expect(error.sourceKey == 9 && error.column == "parent_id" && error.batch == 3)
        #expect(try JournalReader(directory: folder.path("fail.journal").path).fixups.isEmpty)
    }

    @Test("a function registered from Swift transforms a column")
    func swiftFunction() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try makeBlogSource(at: source, danglingAuthor: false)
        let shout = SQLFunction(name: "shout", argumentCount: 1) { arguments in
            guard case let .text(text) = arguments[0] else { return .null }
            return .text(text.uppercased() + "!")
        }
        var options = MigrationOptions(batchSize: 4)
        options.functions = [shout]
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: blogPlan(missing: .fail, headline: "shout(title)"), source: source,
            destination: destination, journal: folder.path("journal"), schema: blogSchema,
            options: options, logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        #expect(try scalar("SELECT headline FROM article WHERE id = 2", on: destination) == .text("FIRST!"))

        // Resuming without registering the function the plan calls is refused before any batch.
        let other = try TemporaryFolder()
        let otherDestination = other.path("new.sqlite")
        _ = try MigrationJob.start(
            plan: blogPlan(missing: .fail, headline: "shout(title)"), source: source,
            destination: otherDestination, journal: other.path("journal"), schema: blogSchema,
            options: options, logger: quietLogger)
        let resumed = try MigrationJob.resume(at: other.path("journal"), logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try resumed.runBlocking() }
        #expect(error.code == .invalidPlan)
        #expect(error.description.contains("shout"))
        #expect(try scalar("SELECT count(*) FROM article", on: otherDestination) == .integer(0))
    }

    @Test("a Swift function that throws fails the batch naming its row, in an entity with a relationship too")
    func throwingFunctionNamesRow() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try makeBlogSource(at: source, danglingAuthor: false)
        struct Refused: Error {}
        let strict = SQLFunction(name: "strict", argumentCount: 1) { arguments in
            if arguments[0] == .text("third") { throw Refused() }
            return arguments[0]
        }
        var options = MigrationOptions(batchSize: 100)
        options.functions = [strict]
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: blogPlan(missing: .fail, headline: "strict(title)"), source: source,
            destination: destination, journal: folder.path("journal"), schema: blogSchema,
            options: options, logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.entity == "Article")
        // Post 4 is "third"; the rows before it in the batch (-3, 1, 2) were computed already.
        #expect(error.sourceKey == 4)
        #expect(try scalar("SELECT count(*) FROM article", on: destination) == .integer(0))
    }

    @Test("preserve: a key that collides with a destination row fails naming the source key and column, and resumes once the row is gone")
    func preserveCollision() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try makeBlogSource(at: source, danglingAuthor: false)
        let destination = folder.path("new.sqlite")
        try execute(blogSchema + "INSERT INTO writer VALUES (7, 'squatter', NULL);", on: destination)
        var plan = blogPlan(missing: .fail)
        plan.entities[1].keys = .preserve
        let journal = folder.path("journal")
        var options = MigrationOptions(batchSize: 10)
        options.appendToExistingRows = true
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: journal,
            options: options, logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.code == .batch)
        #expect(error.entity == "Writer")
        #expect(error.sourceKey == 7)
        #expect(error.column == "id")
        #expect(error.description.contains("UNIQUE"))
        #expect(try scalar("SELECT count(*) FROM writer", on: destination) == .integer(1))

        try execute("DELETE FROM writer WHERE id = 7", on: destination)
        let resumed = try MigrationJob.resume(at: journal, options: MigrationOptions(batchSize: 10), logger: quietLogger)
        #expect(try resumed.runBlocking() == .complete)
        #expect(
            try scalar("SELECT group_concat(id || ':' || name, ' ') FROM (SELECT * FROM writer ORDER BY id)", on: destination)
                == .text("5:ada 7:bob 9:cy"))
    }

    @Test("a NOT NULL violation names the source row and the column")
    func notNullViolation() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try makeBlogSource(at: source, danglingAuthor: false)
        let job = try MigrationJob.start(
            plan: blogPlan(missing: .fail, headline: "CASE WHEN id = 4 THEN NULL ELSE title END"),
            source: source, destination: folder.path("new.sqlite"), journal: folder.path("journal"),
            schema: blogSchema, options: MigrationOptions(batchSize: 100), logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.entity == "Article")
        #expect(error.sourceKey == 4)
        #expect(error.column == "headline")
        #expect(error.description.contains("NOT NULL"))
        // SQLite's own error, with its result code, is kept as the cause.
        let cause = try #require(error.cause as? SQLiteError)
        #expect(cause.resultCode == .notNullConstraint)
        #expect(cause.isConstraint)
    }
}

@Suite("Refusals")
struct RefusalTests {
    @Test("a plan naming an unknown entity is refused with its path and the near name")
    func unknownTarget() throws {
        var plan = blogPlan(missing: .fail)
        plan.entities[0].relationships["writer_id"]?.to = "Writr"
        let error = try #require(throws: MigrationError.self) { try plan.validate() }
        #expect(error.code == .invalidPlan)
        #expect(error.message.contains("entities[0].relationships.writer_id.to"))
        #expect(error.message.contains("did you mean \"Writer\""))
    }

    @Test("malformed plan JSON names the path of what is wrong")
    func malformedJSON() throws {
        let json = #"{"entities": [{"name": "A", "source": {"table": "a"}, "destination": {"table": "b"}, "keys": "shuffle"}]}"#
        let error = try #require(throws: MigrationError.self) { try MigrationPlan.decode(json: Data(json.utf8), file: "plan.json") }
        #expect(error.code == .invalidPlan)
        #expect(error.description.contains("entities[0].keys"))
        #expect(error.description.contains("plan.json"))
    }

    @Test("an expression SQLite rejects is refused before anything is written, and nothing is left behind")
    func badExpression() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try makeBlogSource(at: source)
        let destination = folder.path("new.sqlite")
        let journal = folder.path("journal")
        let error = try #require(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: blogPlan(missing: .fail, headline: "titel"), source: source, destination: destination,
                journal: journal, schema: blogSchema, logger: quietLogger)
        }
        #expect(error.code == .invalidPlan)
        #expect(error.entity == "Article")
        #expect(error.description.contains("titel"))
        #expect(!FileManager.default.fileExists(atPath: journal.path))
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test("resume refuses another source, another plan, and a destination of another job")
    func mismatches() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 2_000)
        let other = try DemoStore.generate(in: folder.path("other"), messages: 3_000)
        let destination = folder.path("new.sqlite")
        let journal = folder.path("journal")
        let job = try MigrationJob.start(
            plan: DemoStore.plan, source: files.source, destination: destination, journal: journal,
            schema: DemoStore.destinationSchema, options: MigrationOptions(batchSize: 100),
            logger: quietLogger)
        #expect(try job.runBlocking(for: .zero) == .paused)

        let wrongSource = try #require(throws: MigrationError.self) {
            try MigrationJob.resume(at: journal, source: other.source, logger: quietLogger)
        }
        #expect(wrongSource.code == .mismatch)
        #expect(wrongSource.file == other.source.path)

        var changed = DemoStore.plan
        changed.entities[0].columns["title"] = "upper(title)"
        let wrongPlan = try #require(throws: MigrationError.self) {
            try MigrationJob.resume(at: journal, plan: changed, logger: quietLogger)
        }
        #expect(wrongPlan.code == .mismatch)
        #expect(wrongPlan.message.contains("plan differs"))

        // A second job cannot start on a destination that holds the first job's checkpoint.
        let second = try #require(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: DemoStore.plan, source: files.source, destination: destination,
                journal: folder.path("journal2"), logger: quietLogger)
        }
        #expect(second.code == .mismatch)
        #expect(!FileManager.default.fileExists(atPath: folder.path("journal2").path))

        // The job itself still resumes to the end.
        let resumed = try MigrationJob.resume(at: journal, logger: quietLogger)
        #expect(try resumed.runBlocking() == .complete)
        #expect(try DemoStore.check(source: files.source, destination: destination) == [])
    }

    @Test("the demo check notices a wrong relationship")
    func checkCatchesDamage() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 1_000)
        let destination = folder.path("new.sqlite")
        try migrateDemo(files, into: destination, journal: folder.path("journal"))
        try execute(
            "UPDATE message SET reply_to_id = 3 WHERE id = (SELECT max(id) FROM message WHERE reply_to_id IS NOT NULL)", on: destination)
        try execute("UPDATE message SET conversation_id = conversation_id + 1 WHERE id = 5", on: destination)
        let problems = try DemoStore.check(source: files.source, destination: destination)
        #expect(problems.count == 2)
    }
}

@Suite("Checksums")
struct ChecksumTests {
    @Test("with checksums on, the demo migrates to the same destination")
    func demoWithChecksums() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 2_000)
        try migrateDemo(files, into: folder.path("reference.sqlite"), journal: folder.path("reference.journal"), batchSize: 150)
        var options = MigrationOptions(batchSize: 150)
        options.verifyChecksums = true
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: DemoStore.plan, source: files.source, destination: destination,
            journal: folder.path("journal"), schema: DemoStore.destinationSchema,
            options: options, logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        #expect(try dump(destination) == dump(folder.path("reference.sqlite")))
    }

    @Test("a value the destination's type affinity changes fails the batch, naming it")
    func affinityChange() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute(
            "CREATE TABLE part (id INTEGER PRIMARY KEY, code TEXT); INSERT INTO part VALUES (1, 'A1'), (2, '007'), (3, 'B2');", on: source)
        // An expression (not a bare column, which the plan check refuses before any batch).
        let plan = MigrationPlan(entities: [
            EntityMapping(name: "Part", source: .init(table: "part"), destination: .init(table: "part"), columns: ["code": "trim(code)"])
        ])
        var options = MigrationOptions(batchSize: 2)
        options.verifyChecksums = true
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            schema: "CREATE TABLE part (code INTEGER);", options: options, logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.code == .batch)
        #expect(error.entity == "Part")
        #expect(error.batch == 1)
        #expect(error.message.contains("checksum"))
        #expect(try scalar("SELECT count(*) FROM part", on: destination) == .integer(0))

        // Without checksums SQLite's conversion goes through: that is what the option is for.
        let unchecked = try TemporaryFolder()
        let plain = try MigrationJob.start(
            plan: plan, source: source, destination: unchecked.path("new.sqlite"),
            journal: unchecked.path("journal"), schema: "CREATE TABLE part (code INTEGER);",
            options: MigrationOptions(batchSize: 2), logger: quietLogger)
        #expect(try plain.runBlocking() == .complete)
        #expect(
            try scalar("SELECT typeof(code) || ':' || code FROM part WHERE rowid = 2", on: unchecked.path("new.sqlite"))
                == .text("integer:7"))
    }
}

@Suite("Plan checks against the stores")
struct PlanCheckTests {
    private func refusal(_ plan: MigrationPlan, schema: String) throws -> MigrationError {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute(
            """
            CREATE TABLE node (id INTEGER PRIMARY KEY, title TEXT, parent INTEGER);
            INSERT INTO node VALUES (1, 'root', NULL), (2, 'leaf', 1);
            """, on: source)
        let error = try #require(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: plan, source: source, destination: folder.path("new.sqlite"),
                journal: folder.path("journal"), schema: schema, logger: quietLogger)
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path("journal").path))
        #expect(!FileManager.default.fileExists(atPath: folder.path("new.sqlite").path))
        return error
    }

    private func node(
        columns: [String: String] = ["title": "title"], parent: EntityMapping.Relationship? = nil,
        where condition: String? = nil
    ) -> MigrationPlan {
        MigrationPlan(entities: [
            EntityMapping(
                name: "Node", source: .init(table: "node", where: condition), destination: .init(table: "node"),
                columns: columns, relationships: parent.map { ["parent_id": $0] } ?? [:])
        ])
    }

    @Test("a misspelt source column in an expression is named with its plan path and the near name")
    func expressionColumn() throws {
        let error = try refusal(node(columns: ["title": "upper(titel)"]), schema: "CREATE TABLE node (title TEXT);")
        #expect(error.code == .invalidPlan)
        #expect(error.message.contains("entities[0].columns.title"))
        #expect(error.message.contains("did you mean \"title\""))
    }

    @Test("a destination column that does not exist")
    func destinationColumn() throws {
        let error = try refusal(node(columns: ["titel": "title"]), schema: "CREATE TABLE node (title TEXT);")
        #expect(error.message.contains("entities[0].columns.titel"))
        #expect(error.message.contains("did you mean \"title\""))
    }

    @Test("a relationship's source column that does not exist")
    func relationshipSource() throws {
        let error = try refusal(
            node(parent: .init(from: "parnt", to: "Node", missing: .null)),
            schema: "CREATE TABLE node (title TEXT, parent_id INTEGER);")
        #expect(error.message.contains("entities[0].relationships.parent_id.from"))
        #expect(error.message.contains("did you mean \"parent\""))
    }

    @Test("a self-reference into a NOT NULL column cannot be broken by the fix-up pass")
    func deferredNotNull() throws {
        let error = try refusal(
            node(parent: .init(from: "parent", to: "Node", missing: .null)),
            schema: "CREATE TABLE node (title TEXT, parent_id INTEGER NOT NULL DEFAULT 0);")
        #expect(error.message.contains("entities[0].relationships.parent_id"))
        #expect(error.message.contains("NOT NULL"))
    }

    @Test("a NOT NULL destination column without default that the plan does not map")
    func unmappedNotNull() throws {
        let error = try refusal(node(), schema: "CREATE TABLE node (title TEXT, kind TEXT NOT NULL);")
        #expect(error.message.contains("entities[0].columns"))
        #expect(error.message.contains("\"kind\""))
    }

    @Test("a bare column copied into a column whose affinity would convert it")
    func affinity() throws {
        let error = try refusal(node(), schema: "CREATE TABLE node (title INTEGER);")
        #expect(error.message.contains("entities[0].columns.title"))
        #expect(error.message.contains("TEXT affinity"))
        #expect(error.message.contains("CAST(title AS INTEGER)"))
    }

    @Test("a column mapped onto the destination key, under any of its names, is refused", arguments: ["id", "ID", "rowid"])
    func keyOverwrite(name: String) throws {
        let error = try refusal(
            node(columns: ["title": "title", name: "id"]),
            schema: "CREATE TABLE node (id INTEGER PRIMARY KEY, title TEXT);")
        #expect(error.message.contains("entities[0].columns.\(name)"))
        #expect(error.message.contains("destination's key"))
    }

    @Test("an expression that reads a table without naming its store is refused; src. and main. are accepted")
    func unqualifiedTable() throws {
        let error = try refusal(
            node(columns: ["title": "(SELECT max(title) FROM node)"]),
            schema: "CREATE TABLE node (title TEXT);")
        #expect(error.message.contains("entities[0].columns.title"))
        #expect(error.message.contains("src."))

        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute(
            """
            CREATE TABLE node (id INTEGER PRIMARY KEY, title TEXT, parent INTEGER);
            CREATE TABLE tag (node INTEGER, name TEXT, rank INTEGER);
            INSERT INTO node VALUES (1, 'root', NULL), (2, 'leaf', 1);
            INSERT INTO tag VALUES (1, 'b', 2), (1, 'a', 1), (2, 'c', 1);
            """, on: source)
        // A correlated subquery that sorts does not make the outer query sort.
        let plan = node(columns: ["title": "(SELECT t.name FROM src.tag t WHERE t.node = s.id ORDER BY t.rank LIMIT 1)"])
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            schema: "CREATE TABLE node (title TEXT);", logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        #expect(try scalar("SELECT group_concat(title) FROM node", on: destination) == .text("a,c"))
    }

    @Test("a wide table, and a destination key that is unique but nullable")
    func wideTable() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        let names = (1...140).map { "c\($0)" }
        try execute(
            "CREATE TABLE wide (id INTEGER PRIMARY KEY, \(names.map { "\($0) INTEGER" }.joined(separator: ", ")));"
                + "INSERT INTO wide VALUES (1, \(names.indices.map(String.init).joined(separator: ", ")));"
                + "INSERT INTO wide VALUES (2, \(names.indices.map { String($0 * 2) }.joined(separator: ", ")));", on: source)
        let plan = MigrationPlan(entities: [
            EntityMapping(
                name: "Wide", source: .init(table: "wide"), destination: .init(table: "wide", key: "id"),
                columns: Dictionary(uniqueKeysWithValues: names.map { ($0, $0) }))
        ])
        var options = MigrationOptions(batchSize: 1)
        options.verifyChecksums = true
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            schema: "CREATE TABLE wide (id INT PRIMARY KEY, \(names.map { "\($0) INTEGER" }.joined(separator: ", ")));",
            options: options, logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        #expect(try scalar("SELECT c140 FROM wide WHERE id = 2", on: destination) == .integer(278))
    }

    @Test("a filter SQLite rejects")
    func badFilter() throws {
        let error = try refusal(node(where: "titel = 'root'"), schema: "CREATE TABLE node (title TEXT);")
        #expect(error.message.contains("entities[0].source.where"))
        #expect(error.message.contains("did you mean \"title\""))
    }
}
