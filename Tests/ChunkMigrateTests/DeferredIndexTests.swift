import Foundation
import Testing
@testable import ChunkMigrate

/// The destination's secondary indexes are dropped when a job starts and built again, by sorting,
/// once the rows are in: a batch then appends rows without updating an index in another order.
@Suite("Deferred indexes")
struct DeferredIndexTests {
    static let schema = """
        CREATE TABLE item (id INTEGER PRIMARY KEY, tag INTEGER, code TEXT);
        CREATE INDEX item_tag ON item (tag);
        CREATE INDEX item_code_partial ON item (code) WHERE code IS NOT NULL;
        CREATE UNIQUE INDEX item_code_unique ON item (code, id);
        """
    static let plan = MigrationPlan(entities: [
        EntityMapping(
            name: "Item", source: .init(table: "item", key: "id"), destination: .init(table: "item", key: "id"),
            keys: .preserve, columns: ["tag": "tag", "code": "code"])
    ])

    static func source(in folder: TemporaryFolder) throws -> URL {
        let source = folder.path("source.sqlite")
        try execute(
            """
            CREATE TABLE item (id INTEGER PRIMARY KEY, tag INTEGER, code TEXT);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
            INSERT INTO item SELECT i * 2, (i * 7919) % 13, CASE WHEN i % 3 = 0 THEN NULL ELSE 'c' || i END FROM n;
            """, on: source)
        return source
    }

    static func indexes(_ store: URL) throws -> [[SQLiteValue]] {
        try Database(path: store.path, mode: .readOnly).rows(
            "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'item' ORDER BY name")
    }

    /// The source, the destination (the schema, empty), the destination's indexes as the schema
    /// makes them, and a job between the two in batches of 100, started.
    static func startJob(in folder: TemporaryFolder) throws -> (source: URL, destination: URL, expected: [[SQLiteValue]], job: MigrationJob)
    {
        let source = try Self.source(in: folder)
        let reference = folder.path("reference.sqlite")
        try execute(Self.schema, on: reference)
        let destination = folder.path("new.sqlite")
        try execute(Self.schema, on: destination)
        let job = try MigrationJob.start(
            plan: Self.plan, source: source, destination: destination, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 100), logger: quietLogger)
        return (source, destination, try Self.indexes(reference), job)
    }

    @Test(
        "an index build sorts with the helper thread and the page cache as it is, but where the read buffers of the merge (one a sorted run) would take more than the helper's second run: then alone, in runs as large as the buffers they leave, at most twice the cache"
    )
    func sortingFlatInTheRows() {
        #expect(SQL.termCount(ofIndex: "CREATE INDEX i ON t (a)") == 1)
        #expect(SQL.termCount(ofIndex: "CREATE INDEX Z_3TAGS_Z_6TAGS_INDEX ON \"Z_3TAGS\" (Z_6TAGS, Z_3ITEMS)") == 2)
        #expect(SQL.termCount(ofIndex: "CREATE UNIQUE INDEX i ON t(a COLLATE NOCASE, lower(b, 'x,y'), \"c,d\" DESC) WHERE a > 0") == 3)
        #expect(SQL.termCount(ofIndex: "CREATE INDEX i") == nil)
        // Core Data's demo at 1M, 10M and 50M items: the join table's index (1.9M, 19M, 95M rows,
        // two terms), Item's (1M, 10M, 50M, one).
        for (rows, terms) in [(1_900_000.0, 2), (19_000_000, 2), (50_000_000, 1), (1_000_000, 1)] {
            let sorting = CheckpointStore.sorting(rows: rows, terms: terms, cacheKiB: 2000, helper: true)
            #expect(sorting.helper && sorting.cacheKiB == 2000, "\(rows) rows: \(sorting)")
        }
        let largest = CheckpointStore.sorting(rows: 95_000_000, terms: 2, cacheKiB: 2000, helper: true)
        #expect(!largest.helper && largest.cacheKiB > 3000 && largest.cacheKiB <= 4000, "\(largest)")
        // Runs the size of the cache leave buffers under the cache: as they are.
        #expect(CheckpointStore.sorting(rows: 1_000_000, terms: 1, cacheKiB: 2000, helper: false) == (false, 2000))
        #expect(CheckpointStore.sorting(rows: 1e10, terms: 4, cacheKiB: 2000, helper: true) == (false, 4000))
        #expect(CheckpointStore.sorting(rows: 0, terms: 1, cacheKiB: 2000, helper: true) == (true, 2000))
    }

    @Test("non-unique indexes are dropped while the job runs and built again at the end, the same SQL; unique ones stay")
    func droppedAndRebuilt() throws {
        let folder = try TemporaryFolder()
        let (source, destination, expected, job) = try Self.startJob(in: folder)
        // Between batches: only the unique index is there, and the other two are recorded.
        #expect(try job.runBlocking(for: .zero) == .paused)
        #expect(try Self.indexes(destination).map { $0[0] } == [.text("item_code_unique")])
        #expect(
            try scalar(
                "SELECT group_concat(name, ' ') FROM (SELECT name FROM _chunkmigrate_step WHERE done = 0 AND sql IS NOT NULL ORDER BY name)",
                on: destination) == .text("index:item_code_partial index:item_tag"))

        #expect(try job.runBlocking() == .complete)
        #expect(try Self.indexes(destination) == expected)
        #expect(try scalar("SELECT count(*) FROM sqlite_schema WHERE name LIKE '_chunkmigrate%'", on: destination) == .integer(0))
        #expect(try Database(path: destination.path, mode: .readOnly).rows("PRAGMA integrity_check") == [[.text("ok")]])
        #expect(
            try scalar("SELECT count(*) FROM item INDEXED BY item_tag WHERE tag = 3", on: destination)
                == (try scalar("SELECT count(*) FROM item WHERE tag = 3", on: source)))
    }

    @Test("stopped between two index builds, the job builds the rest when resumed")
    func stoppedBetweenIndexBuilds() throws {
        let folder = try TemporaryFolder()
        let source = try Self.source(in: folder)
        let destination = folder.path("new.sqlite")
        try execute(Self.schema, on: destination)
        _ = try MigrationJob.start(
            plan: Self.plan, source: source, destination: destination, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 1000), logger: quietLogger)
        var runs = 0
        var sawOneBuilt = false
        while true {
            let job = try MigrationJob.resume(at: folder.path("journal"), options: MigrationOptions(batchSize: 1000), logger: quietLogger)
            let outcome = try job.runBlocking(for: .zero)
            runs += 1
            if outcome == .complete { break }
            if try Self.indexes(destination).count == 2 { sawOneBuilt = true }
        }
        #expect(runs == 3)  // the batch; the end of the rows and the first index; the second index
        #expect(sawOneBuilt)
        #expect(try Self.indexes(destination).count == 3)
    }

    @Test(
        "a job an earlier version started, its indexes in a table of their own and its step ledger without their SQL, resumes to the same indexes, the ledger brought to this version's form; one build done before the stop stays done"
    )
    func formerLedgerUpgraded() throws {
        let folder = try TemporaryFolder()
        let (_, destination, expected, job) = try Self.startJob(in: folder)
        #expect(try job.runBlocking(for: .zero) == .paused)
        // The ledger as the earlier version kept it: item_code_partial built already (so gone
        // from its table), item_tag still to build.
        try execute(
            """
            CREATE TABLE _chunkmigrate_index (name TEXT PRIMARY KEY, sql TEXT NOT NULL, drop_at_end INTEGER NOT NULL);
            INSERT INTO _chunkmigrate_index SELECT substr(name, 7), sql, 0 FROM _chunkmigrate_step WHERE name = 'index:item_tag';
            CREATE INDEX item_code_partial ON item (code) WHERE code IS NOT NULL;
            CREATE TABLE former_step (name TEXT PRIMARY KEY, cursor INTEGER, done INTEGER NOT NULL);
            INSERT INTO former_step SELECT name, cursor, done FROM _chunkmigrate_step WHERE sql IS NULL;
            DROP TABLE _chunkmigrate_step;
            ALTER TABLE former_step RENAME TO _chunkmigrate_step;
            """, on: destination)
        let resumed = try MigrationJob.resume(at: folder.path("journal"), logger: quietLogger)
        #expect(try resumed.runBlocking(for: .zero) == .paused)
        #expect(try scalar("SELECT count(*) FROM sqlite_schema WHERE name = '_chunkmigrate_index'", on: destination) == .integer(0))
        #expect(
            try scalar("SELECT group_concat(name || '=' || done, ' ') FROM _chunkmigrate_step WHERE sql IS NOT NULL", on: destination)
                == .text("index:item_tag=0"))
        #expect(try resumed.runBlocking() == .complete)
        #expect(try Self.indexes(destination) == expected)
        #expect(try scalar("SELECT count(*) FROM sqlite_schema WHERE name LIKE '_chunkmigrate%'", on: destination) == .integer(0))
        #expect(try Database(path: destination.path, mode: .readOnly).rows("PRAGMA integrity_check") == [[.text("ok")]])
    }

    @Test("a plan whose expressions read the destination keeps its indexes; so does a job asked to")
    func keptWhenNeeded() throws {
        let folder = try TemporaryFolder()
        let source = try Self.source(in: folder)
        var reading = Self.plan
        reading.entities[0].columns["code"] = "(SELECT max(code) FROM main.item) || code"
        let destination = folder.path("reading.sqlite")
        try execute(Self.schema, on: destination)
        let job = try MigrationJob.start(
            plan: reading, source: source, destination: destination, journal: folder.path("reading"),
            options: MigrationOptions(batchSize: 100), logger: quietLogger)
        #expect(try job.runBlocking(for: .zero) == .paused)
        #expect(try Self.indexes(destination).count == 3)

        var options = MigrationOptions(batchSize: 100)
        options.defersIndexes = false
        let other = folder.path("kept.sqlite")
        try execute(Self.schema, on: other)
        let kept = try MigrationJob.start(
            plan: Self.plan, source: source, destination: other, journal: folder.path("kept"),
            options: options, logger: quietLogger)
        #expect(try kept.runBlocking(for: .zero) == .paused)
        #expect(try Self.indexes(other).count == 3)
    }
}
