import Foundation
import MigrationJournal
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// Stores whose shape could make a batch lose, double or misplace rows: the engine either
/// migrates them right or refuses them before the first batch.
@Suite("Store shapes")
struct StoreShapeTests {
    private func plan(
        source: EntityMapping.Source, destination: EntityMapping.Destination = .init(table: "person"),
        columns: [String: String] = ["email": "email"]
    ) -> MigrationPlan {
        MigrationPlan(entities: [EntityMapping(name: "Person", source: source, destination: destination, columns: columns)])
    }

    /// A source of 10 parents (keys 7, 14, ...) and 100 children (keys 3, 6, ...), each child
    /// referring to a parent and to the child before it; the destination gets `childSchema`.
    private func makeFamily(in folder: TemporaryFolder, childSchema: String) throws {
        try execute(
            """
            CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER, previous INTEGER, name TEXT);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10)
            INSERT INTO parent SELECT i * 7, 'p' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
            INSERT INTO child SELECT i * 3, (i % 10 + 1) * 7, CASE WHEN i > 1 THEN (i - 1) * 3 END, 'c' || i FROM n;
            """, on: folder.path("source.sqlite"))
        try execute("CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT);" + childSchema, on: folder.path("new.sqlite"))
    }

    private let familyPlan = MigrationPlan(entities: [
        EntityMapping(
            name: "Parent", source: .init(table: "parent", key: "id"), destination: .init(table: "parent", key: "id"),
            columns: ["name": "name"]),
        EntityMapping(
            name: "Child", source: .init(table: "child", key: "id"), destination: .init(table: "child", key: "id"),
            columns: ["name": "name"],
            relationships: [
                "parent_id": .init(from: "parent", to: "Parent"),
                "previous_id": .init(from: "previous", to: "Child"),
            ]),
    ])

    @Test("a destination table with ON CONFLICT REPLACE fails on the duplicate instead of deleting a row")
    func onConflictReplace() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute(
            "CREATE TABLE person (id INTEGER PRIMARY KEY, email TEXT); INSERT INTO person VALUES (1, 'a'), (2, 'b'), (3, 'a');", on: source)
        let job = try MigrationJob.start(
            plan: plan(source: .init(table: "person", key: "id")), source: source,
            destination: folder.path("new.sqlite"), journal: folder.path("journal"),
            schema: "CREATE TABLE person (email TEXT UNIQUE ON CONFLICT REPLACE);",
            options: MigrationOptions(batchSize: 2), logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.sourceKey == 3)
        #expect(error.column == "email")
        #expect(try scalar("SELECT group_concat(email) FROM person", on: folder.path("new.sqlite")) == .text("a,b"))
    }

    @Test(
        "a source key that is neither the rowid nor unique is refused, naming the plan path",
        arguments: [
            "CREATE TABLE person (id INTEGER, email TEXT); CREATE INDEX person_id ON person (id);",
            "CREATE TABLE person (id INTEGER UNIQUE, email TEXT);",
        ])
    func nonUniqueKey(schema: String) throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute(schema + "INSERT INTO person VALUES (1, 'a'), (2, 'b');", on: source)
        let error = try #require(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: plan(source: .init(table: "person", key: "id")), source: source,
                destination: folder.path("new.sqlite"), journal: folder.path("journal"),
                schema: "CREATE TABLE person (email TEXT);", logger: quietLogger)
        }
        #expect(error.code == .invalidPlan)
        #expect(error.message.contains("entities[0].source.key"))
        #expect(!FileManager.default.fileExists(atPath: folder.path("journal").path))
    }

    @Test("a unique key and a filter on an indexed column are still read in key order")
    func indexedFilter() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute(
            """
            CREATE TABLE person (pk INTEGER PRIMARY KEY, code INTEGER NOT NULL UNIQUE, kind INTEGER, email TEXT);
            CREATE INDEX person_kind ON person (kind);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
            INSERT INTO person SELECT i, 10000 - i, i % 3, 'p' || i FROM n;
            ANALYZE;
            """, on: source)
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: plan(source: .init(table: "person", key: "code", where: "kind = 1")),
            source: source, destination: destination, journal: folder.path("journal"),
            schema: "CREATE TABLE person (email TEXT);",
            options: MigrationOptions(batchSize: 100), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        #expect(try scalar("SELECT count(*) FROM person", on: destination) == .integer(1000))
        // Rows arrive in the order of the key (code), which is the reverse of pk.
        #expect(try scalar("SELECT email FROM person WHERE rowid = 1", on: destination) == .text("p2998"))
        #expect(try scalar("SELECT email FROM person ORDER BY rowid DESC LIMIT 1", on: destination) == .text("p1"))
    }

    @Test("a long run of skipped rows does not make one batch unbounded")
    func boundedSkip() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute(
            """
            CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER, name TEXT);
            INSERT INTO parent VALUES (1, 'only');
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
            INSERT INTO child SELECT i, CASE WHEN i > 1990 THEN 1 ELSE 99 END, 'c' || i FROM n;
            """, on: source)
        let plan = MigrationPlan(entities: [
            EntityMapping(name: "Parent", source: .init(table: "parent"), destination: .init(table: "parent"), columns: ["name": "name"]),
            EntityMapping(
                name: "Child", source: .init(table: "child"), destination: .init(table: "child"), columns: ["name": "name"],
                relationships: ["parent_id": .init(from: "parent", to: "Parent", missing: .skip)]),
        ])
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            schema: "CREATE TABLE parent (name TEXT); CREATE TABLE child (name TEXT, parent_id INTEGER NOT NULL);",
            options: MigrationOptions(batchSize: 50), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        let batches = try JournalReader(directory: folder.path("journal").path).batches(entity: 1)
        #expect(batches.allSatisfy { $0.rowsRead <= 50 })
        #expect(batches.reduce(0) { $0 + $1.rowsSkipped } == 1990)
        #expect(batches.count == 40)
        #expect(
            try scalar("SELECT group_concat(name) FROM child", on: destination)
                == .text((1991...2000).map { "c\($0)" }.joined(separator: ",")))
    }

    @Test("a WAL destination gets its journal mode back, and a refused start leaves it untouched")
    func journalModeRestored() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 500)
        let destination = folder.path("new.sqlite")
        try execute(DemoStore.destinationSchema + "PRAGMA journal_mode = WAL;", on: destination)

        var broken = DemoStore.plan
        broken.entities[0].columns["title"] = "no_such_column"
        #expect(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: broken, source: files.source, destination: destination,
                journal: folder.path("broken.journal"), logger: quietLogger)
        }
        #expect(try scalar("PRAGMA journal_mode", on: destination) == .text("wal"))

        let job = try MigrationJob.start(
            plan: DemoStore.plan, source: files.source, destination: destination,
            journal: folder.path("journal"), options: MigrationOptions(batchSize: 100),
            logger: quietLogger)
        #expect(try job.runBlocking(for: .zero) == .paused)
        // During the job the store uses a rollback journal (a new connection reports "delete").
        #expect(try scalar("PRAGMA journal_mode", on: destination) == .text("delete"))
        #expect(try MigrationJob.resume(at: folder.path("journal"), logger: quietLogger).runBlocking() == .complete)
        #expect(try scalar("PRAGMA journal_mode", on: destination) == .text("wal"))
        #expect(try DemoStore.check(source: files.source, destination: destination) == [])
    }

    @Test(
        "the destination is synced with fullfsync and synchronous=EXTRA during a job (F_FULLFSYNC on Apple platforms; the directory synced after a rollback journal is unlinked, the last commit in DELETE mode durable)"
    )
    func destinationSyncSettings() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 10)
        let destination = folder.path("new.sqlite")
        let database = try Stores.open(
            source: files.source.path, destination: destination.path,
            schema: DemoStore.destinationSchema, options: MigrationOptions()
        ).database
        // fullfsync is a per-connection flag: a new connection would report the default, 0.
        #expect(try database.scalar("PRAGMA fullfsync") == .integer(1))
        #expect(try database.scalar("PRAGMA main.synchronous") == .integer(3))
        #expect(try scalar("PRAGMA fullfsync", on: destination) == .integer(0))
    }

    @Test("a source whose path is not ASCII")
    func unicodePath() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("données é #1"), messages: 300)
        let destination = folder.path("новый.sqlite")
        try migrateDemo(files, into: destination, journal: folder.path("journal ü"))
        #expect(try DemoStore.check(source: files.source, destination: destination) == [])
    }

    /// Destination tables whose next rowid is, or is not, one past the largest: SQLite assigns
    /// allocated keys only where it is, and the ID map must agree with the rows either way.
    @Test(
        "allocated keys match the ID map whoever assigns them",
        arguments: [
            // SQLite assigns: a rowid table.
            "CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER, previous_id INTEGER, name TEXT);",
            // The engine writes them: AUTOINCREMENT, whose sequence is ahead of the largest rowid
            // (a row inserted and deleted), and WITHOUT ROWID, which has no next rowid at all.
            """
            CREATE TABLE child (id INTEGER PRIMARY KEY AUTOINCREMENT, parent_id INTEGER, previous_id INTEGER, name TEXT);
            INSERT INTO child (id, name) VALUES (500, 'gone'); DELETE FROM child;
            """,
            "CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER, previous_id INTEGER, name TEXT) WITHOUT ROWID;",
            // INTEGER PRIMARY KEY DESC is not an alias of the rowid: left out, it would be NULL.
            "CREATE TABLE child (id INTEGER PRIMARY KEY DESC, parent_id INTEGER, previous_id INTEGER, name TEXT);",
            // A key column that is not the rowid.
            "CREATE TABLE child (id INTEGER NOT NULL UNIQUE, parent_id INTEGER, previous_id INTEGER, name TEXT);",
        ])
    func allocatedKeys(childSchema: String) throws {
        let folder = try TemporaryFolder()
        try makeFamily(in: folder, childSchema: childSchema)
        let destination = folder.path("new.sqlite")
        let journal = folder.path("journal")
        var options = MigrationOptions(batchSize: 7)
        options.verifyChecksums = true
        let job = try MigrationJob.start(
            plan: familyPlan, source: folder.path("source.sqlite"), destination: destination,
            journal: journal, options: options, logger: quietLogger)
        #expect(try job.runBlocking() == .complete)

        // Rows arrive in source-key order and are numbered from 1; every reference follows its row.
        let rows = try Database(path: destination.path, mode: .readOnly).rows(
            """
            SELECT c.id, c.name, p.name, q.name FROM child c JOIN parent p ON p.id = c.parent_id
            LEFT JOIN child q ON q.id = c.previous_id ORDER BY c.id
            """)
        #expect(rows.count == 100)
        for (offset, row) in rows.enumerated() {
            let i = offset + 1
            #expect(row == [.integer(Int64(i)), .text("c\(i)"), .text("p\(i % 10 + 1)"), i > 1 ? .text("c\(i - 1)") : .null])
        }
        let map = try JournalReader(directory: journal.path).idMap()
        #expect(try map.destination(of: 150, entity: 1) == 50)
        #expect(try map.source(ofDestination: 100, entity: 1) == 300)
    }

    @Test(
        "SQLite assigns allocated keys only where the next rowid is the key, one past the largest",
        arguments: [
            ("CREATE TABLE t (id INTEGER PRIMARY KEY, x);", true),
            ("CREATE TABLE t (id INTEGER, x, PRIMARY KEY (id DESC));", true),
            ("CREATE TABLE t (x);", true),
            ("CREATE TABLE t (id INTEGER PRIMARY KEY DESC, x);", false),
            ("CREATE TABLE t (id INTEGER PRIMARY KEY, x) WITHOUT ROWID;", false),
            ("CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, x);", false),
            ("CREATE TABLE t (id integer primary key autoincrement, x);", false),
        ])
    func assignsNextRowid(schema: String, assigns: Bool) throws {
        let folder = try TemporaryFolder()
        let store = folder.path("store.sqlite")
        try execute(schema, on: store)
        #expect(try Database(path: store.path, mode: .readOnly).tableSchema("t", in: "main")?.assignsNextRowid == assigns)
    }

    @Test("a trigger that inserts into the destination table stops the batch before it commits")
    func triggerShiftsKeys() throws {
        let folder = try TemporaryFolder()
        try makeFamily(
            in: folder,
            childSchema: """
                CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER, previous_id INTEGER, name TEXT);
                CREATE TRIGGER shadow AFTER INSERT ON child WHEN NEW.name NOT LIKE 'shadow%'
                BEGIN INSERT INTO child (name) VALUES ('shadow ' || NEW.name); END;
                """)
        let destination = folder.path("new.sqlite")
        let job = try MigrationJob.start(
            plan: familyPlan, source: folder.path("source.sqlite"), destination: destination,
            journal: folder.path("journal"), options: MigrationOptions(batchSize: 7),
            logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.entity == "Child")
        #expect(error.batch == 1)
        // Seven rows and their seven shadows: the batch's keys should have ended at 7.
        #expect(error.message.contains("largest key is 14"))
        #expect(try scalar("SELECT count(*) FROM child", on: destination) == .integer(0))
    }

    @Test("allocating past the largest 64-bit key is refused with the reason, not a crash")
    func keySpaceExhausted() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute(
            "CREATE TABLE person (id INTEGER PRIMARY KEY, email TEXT); INSERT INTO person VALUES (1, 'a'), (2, 'b');",
            on: source)
        let destination = folder.path("new.sqlite")
        try execute(
            "CREATE TABLE person (id INTEGER PRIMARY KEY, email TEXT); INSERT INTO person VALUES (9223372036854775806, 'last');",
            on: destination)
        var options = MigrationOptions(batchSize: 10)
        options.appendToExistingRows = true
        let job = try MigrationJob.start(
            plan: plan(source: .init(table: "person", key: "id"), destination: .init(table: "person", key: "id")),
            source: source, destination: destination, journal: folder.path("journal"),
            options: options, logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.entity == "Person")
        #expect(error.message.contains("largest 64-bit integer"))
        #expect(try scalar("SELECT count(*) FROM person", on: destination) == .integer(1))
    }
}
