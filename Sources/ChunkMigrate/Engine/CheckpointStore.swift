import MigrationJournal

/// The destination's record of the job: which job it belongs to, and for each entity (and each
/// fix-up) the last committed batch. Written in the same transaction as the batch, so it is the
/// truth the journal follows.
struct CheckpointStore {
    static let jobTable = "_chunkmigrate_job"
    static let checkpointTable = "_chunkmigrate_checkpoint"
    /// Where a job of an earlier version recorded the indexes it dropped; read once into the
    /// ledger (``upgradeLedger(in:)``).
    static let formerIndexTable = "_chunkmigrate_index"
    /// The destination's triggers the job dropped, to create again, exactly as they were, at the end.
    static let triggerTable = "_chunkmigrate_trigger"
    /// The ledger of the steps after the copy: each index build (`index:NAME`, its SQL) and each
    /// finishing step (derived values, external files, R-tree indexes, triggers), with how far it
    /// has come (`cursor`) and whether it is done. A row is written in the transaction of the work
    /// it records, so the ledger is the truth a resumed run starts from, as the checkpoint table
    /// is for the copy and the fix-ups.
    static let stepTable = "_chunkmigrate_step"
    /// The name of an index build in the ledger.
    static let indexStepPrefix = "index:"

    let database: Database
    private let upsert: Statement
    private let select: Statement

    static func create(in database: Database, jobID: String, planFingerprint: String, journalMode: String) throws(SQLiteError) {
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS main.\(jobTable) (job TEXT PRIMARY KEY, plan_fingerprint TEXT NOT NULL,
                                                            journal_mode TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS main.\(checkpointTable) (
                entity INTEGER NOT NULL, phase TEXT NOT NULL, batch INTEGER NOT NULL,
                first_key INTEGER NOT NULL, last_key INTEGER NOT NULL,
                rows_read INTEGER NOT NULL, rows_written INTEGER NOT NULL, rows_skipped INTEGER NOT NULL,
                nulled INTEGER NOT NULL, deferred INTEGER NOT NULL, mapping INTEGER NOT NULL,
                destination_base INTEGER NOT NULL, segment_first INTEGER NOT NULL, segment_last INTEGER NOT NULL,
                segment_crc INTEGER NOT NULL, duration_us INTEGER NOT NULL, committed_ms INTEGER NOT NULL,
                PRIMARY KEY (entity, phase));
            """)
        let insert = try database.prepare(
            "INSERT OR IGNORE INTO main.\(jobTable)(job, plan_fingerprint, journal_mode) VALUES (?1, ?2, ?3)")
        try insert.bind([.text(jobID), .text(planFingerprint), .text(journalMode)])
        try insert.step()
    }

    /// The job IDs recorded in the destination; empty when it has no checkpoint tables.
    static func jobIDs(in database: Database) throws(SQLiteError) -> [String] {
        let exists = try database.scalar(
            "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name = ?1", .text(jobTable))
        guard exists.integer == 1 else { return [] }
        return try database.rows("SELECT job FROM main.\(jobTable) ORDER BY job").compactMap { $0[0].text }
    }

    /// Ends the job in the destination: gives it back the journal mode it had before the job,
    /// then removes the checkpoint tables in one transaction (unless `keepTables`). Safe to repeat
    /// after a kill at any point: the mode stays recorded until the tables are gone.
    static func finish(in database: Database, keepTables: Bool) throws(SQLiteError) {
        guard try !jobIDs(in: database).isEmpty else { return }
        let mode = try database.scalar("SELECT journal_mode FROM main.\(jobTable) LIMIT 1").text ?? "delete"
        try database.restoreJournalMode(mode)
        guard !keepTables else { return }
        try database.inTransaction(.immediate) { () throws(SQLiteError) in
            try database.execute(
                """
                DROP TABLE IF EXISTS main.\(checkpointTable);
                DROP TABLE IF EXISTS main.\(formerIndexTable);
                DROP TABLE IF EXISTS main.\(triggerTable);
                DROP TABLE IF EXISTS main.\(stepTable);
                DROP TABLE IF EXISTS main.\(jobTable);
                """)
        }
    }

    /// Inside the transaction that records a new job: drops the secondary indexes of `tables`
    /// (not unique, made by `CREATE INDEX`), recording each one's SQL. A batch then writes rows
    /// without keeping an index in another order than the rows arrive in, where a random insert
    /// into a large index touches, and journals, pages all over it in every batch; the indexes
    /// are built once at the end (``deferredIndexes(in:)``), by sorting.
    static func deferIndexes(in database: Database, tables: [String]) throws(SQLiteError) {
        var deferred: [(name: String, sql: String)] = []
        for table in Set(tables.map { $0.lowercased() }).sorted() {
            for index in try database.tableSchema(table, in: "main")?.indexes ?? [] where !index.isUnique && index.origin == .createIndex {
                guard
                    let sql = try database.scalar(
                        "SELECT sql FROM main.sqlite_schema WHERE type = 'index' AND name = ?1",
                        .text(index.name)
                    ).text
                else { continue }
                deferred.append((index.name, sql))
            }
        }
        for index in deferred {
            try record(index: index.name, sql: index.sql, dropAtEnd: false, in: database)
            try database.execute("DROP INDEX main.\(SQL.quote(index.name))")
        }
    }

    /// Inside the transaction that records a new job: a unique index on `column` of `table` for a
    /// de-duplicated entity's lookups by value, unless one exists; an index the job creates is
    /// removed at the end. Fails when the rows already there repeat a value.
    static func ensureUniqueIndex(table: String, column: String, in database: Database) throws(SQLiteError) {
        let indexes = try database.tableSchema(table, in: "main")?.indexes ?? []
        if indexes.contains(where: { $0.isUnique && $0.covers(only: column) }) { return }
        let name = "_chunkmigrate_distinct_\(table)_\(column)"
        try database.execute("CREATE UNIQUE INDEX main.\(SQL.quote(name)) ON \(SQL.quote(table)) (\(SQL.quote(column)))")
        try record(index: name, sql: "DROP INDEX IF EXISTS main.\(SQL.quote(name))", dropAtEnd: true, in: database)
    }

    /// Records an index to build (or, `dropAtEnd`, one of the job's own to remove) in the ledger.
    private static func record(index name: String, sql: String, dropAtEnd: Bool, in database: Database) throws(SQLiteError) {
        try createLedger(in: database)
        let insert = try database.prepare("INSERT OR IGNORE INTO main.\(stepTable) (name, cursor, done, sql) VALUES (?1, NULL, 0, ?2)")
        try insert.bind([.text(indexStepPrefix + name), .text(sql)])
        _ = try insert.step()
    }

    private static func createLedger(in database: Database) throws(SQLiteError) {
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS main.\(stepTable) (name TEXT PRIMARY KEY, cursor INTEGER, done INTEGER NOT NULL, sql TEXT)
            """)
    }

    /// Brings the ledger of a job an earlier version started to this one's, in one transaction:
    /// its step table gains the `sql` column, and the indexes it recorded in a table of their
    /// own become the ledger's index builds. Nothing to do for a job this version started.
    static func upgradeLedger(in database: Database) throws(SQLiteError) {
        func exists(_ table: String) throws(SQLiteError) -> Bool {
            try database.scalar("SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name = ?1", .text(table)).integer == 1
        }
        let former = try exists(formerIndexTable)
        var withoutSQL = false
        if try exists(stepTable) {
            withoutSQL = try database.tableSchema(stepTable, in: "main")?.columns.contains { $0.name == "sql" } == false
        }
        guard former || withoutSQL else { return }
        try database.inTransaction(.immediate) { () throws(SQLiteError) in
            if withoutSQL { try database.execute("ALTER TABLE main.\(stepTable) ADD COLUMN sql TEXT") }
            try createLedger(in: database)
            if former {
                try database.execute(
                    """
                    INSERT OR IGNORE INTO main.\(stepTable) (name, cursor, done, sql)
                        SELECT '\(indexStepPrefix)' || name, NULL, 0, sql FROM main.\(formerIndexTable);
                    DROP TABLE main.\(formerIndexTable);
                    """)
            }
        }
    }

    /// Every index build of the ledger, by name, done or not: those ``deferIndexes(in:tables:)``
    /// dropped, built again from `sql`, and those ``ensureUniqueIndex(table:column:in:)`` created,
    /// removed by it.
    static func indexBuilds(in database: Database) throws(SQLiteError) -> [(name: String, sql: String, done: Bool)] {
        guard
            try database.scalar(
                "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name = ?1",
                .text(stepTable)
            ).integer == 1
        else { return [] }
        let prefix = indexStepPrefix.count
        return try database.rows(
            "SELECT name, sql, done FROM main.\(stepTable) WHERE substr(name, 1, \(prefix)) = ?1 AND sql IS NOT NULL ORDER BY name",
            .text(indexStepPrefix)
        ).compactMap { row in
            guard let name = row[0].text, let sql = row[1].text else { return nil }
            return (String(name.dropFirst(prefix)), sql, row[2].integer != 0)
        }
    }

    /// The index builds of the ledger not done yet, by name.
    static func deferredIndexes(in database: Database) throws(SQLiteError) -> [(name: String, sql: String)] {
        try indexBuilds(in: database).filter { !$0.done }.map { ($0.name, $0.sql) }
    }

    /// Whether an index sorts faster with a helper thread: all but Core Data's index on `Z_ENT`,
    /// whose keys take a handful of values and come mostly in order, and which took a third
    /// longer with it (Tools/BENCHMARKS.md, "The check during the copy").
    static func sortsWithHelper(_ sql: String) -> Bool {
        SQL.leadingColumn(ofIndex: sql)?.hasSuffix(".Z_ENT") != true
    }

    /// How an index build of `rows` rows and `terms` terms sorts: with the helper thread or not
    /// (`helper`, where ``sortsWithHelper(_:)`` allows it), and the page cache, in KiB, that
    /// sizes its sorted runs. SQLite's sorter writes runs the size of the page cache, then
    /// merges them all at once with a page-size read buffer each: about 4.8 KB a run with its
    /// share of the merge tree (95M join rows in runs of 2 MB: 7 MB of buffers). The helper
    /// keeps a second run in memory while the job's thread fills the next. Where the buffers
    /// would take more than that second run and the cache together (sorts of over about 1.7
    /// GB), the build sorts alone, its runs as large as the buffers they leave, at most twice
    /// the cache: the sorter's peak is then flat in the rows (Tools/BENCHMARKS.md, "Flat to 50M
    /// items").
    static func sorting(rows: Double, terms: Int, cacheKiB: Int, helper allowed: Bool) -> (helper: Bool, cacheKiB: Int) {
        // A record in the sorter: its header (16 bytes), the record's header, the terms and
        // the rowid (about 5 bytes each for keys).
        let bytes = max(rows, 0) * Double(18 + 5 * (terms + 1))
        let run = Double(max(cacheKiB, 1)) * 1024, buffer = 4.8 * 1024
        if allowed, bytes / run * buffer <= 2 * run { return (true, cacheKiB) }
        let balanced = (bytes * buffer).squareRoot()
        return (false, Int(min(max(balanced, run), 2 * run) / 1024))
    }

    /// Builds one deferred index again (or removes the job's own) and marks it done in the
    /// ledger, in one transaction: a kill while it is built leaves it to build again.
    static func rebuild(index name: String, sql: String, in database: Database) throws(SQLiteError) {
        try database.inTransaction(.immediate) { () throws(SQLiteError) in
            let exists = try database.scalar("SELECT count(*) FROM main.sqlite_schema WHERE type = 'index' AND name = ?1", .text(name))
            if exists.integer == 0 || sql.hasPrefix("DROP") { try database.execute(sql) }
            let done = try database.prepare("UPDATE main.\(stepTable) SET done = 1 WHERE name = ?1")
            try done.bind([.text(indexStepPrefix + name)])
            _ = try done.step()
        }
    }

    /// Inside the transaction that records a new job: drops every trigger of the destination,
    /// recording each one's SQL. A Core Data store's triggers (derived attributes, counts, R-tree
    /// indexes) call functions only Core Data's own connections have, and would count from
    /// tables that are half copied; the values they keep are copied or computed instead, and
    /// the triggers come back at the end (``restoreTriggers(in:)``).
    static func deferTriggers(in database: Database) throws(SQLiteError) {
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS main.\(triggerTable) (name TEXT PRIMARY KEY, tbl_name TEXT NOT NULL, sql TEXT NOT NULL)
            """)
        let triggers = try database.rows("SELECT name, tbl_name, sql FROM main.sqlite_schema WHERE type = 'trigger' ORDER BY name")
        let insert = try database.prepare("INSERT OR IGNORE INTO main.\(triggerTable) (name, tbl_name, sql) VALUES (?1, ?2, ?3)")
        for trigger in triggers {
            guard let name = trigger[0].text, let sql = trigger[2].text else { continue }
            try insert.bind([.text(name), trigger[1], .text(sql)])
            _ = try insert.step()
            insert.reset()
            try database.execute("DROP TRIGGER main.\(SQL.quote(name))")
        }
    }

    /// The triggers ``deferTriggers(in:)`` dropped that are not created again yet: name, table, SQL.
    static func deferredTriggers(in database: Database) throws(SQLiteError) -> [(name: String, table: String, sql: String)] {
        guard
            try database.scalar(
                "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name = ?1",
                .text(triggerTable)
            ).integer == 1
        else { return [] }
        return try database.rows("SELECT name, tbl_name, sql FROM main.\(triggerTable) ORDER BY name").compactMap { row in
            guard let name = row[0].text, let table = row[1].text, let sql = row[2].text else { return nil }
            return (name, table, sql)
        }
    }

    /// Creates every deferred trigger again, as it was, and forgets them, in one transaction.
    static func restoreTriggers(in database: Database) throws(SQLiteError) {
        try database.inTransaction(.immediate) { () throws(SQLiteError) in
            for trigger in try deferredTriggers(in: database) {
                let exists = try database.scalar(
                    "SELECT count(*) FROM main.sqlite_schema WHERE type = 'trigger' AND name = ?1",
                    .text(trigger.name))
                if exists.integer == 0 { try database.execute(trigger.sql) }
            }
            try database.execute("DELETE FROM main.\(triggerTable)")
        }
    }

    /// Where a step after the copy stands: the last key it covered, and whether it is done.
    static func step(_ name: String, in database: Database) throws(SQLiteError) -> (cursor: Int64?, done: Bool) {
        try createLedger(in: database)
        let select = try database.prepare("SELECT cursor, done FROM main.\(stepTable) WHERE name = ?1")
        try select.bind([.text(name)])
        guard try select.step() else { return (nil, false) }
        return (select.isNull(at: 0) ? nil : select.int64(at: 0), select.int64(at: 1) != 0)
    }

    /// Records a step's progress; inside the transaction of the batch it covers.
    static func saveStep(_ name: String, cursor: Int64?, done: Bool, in database: Database) throws(SQLiteError) {
        let upsert = try database.prepare("INSERT OR REPLACE INTO main.\(stepTable) (name, cursor, done) VALUES (?1, ?2, ?3)")
        try upsert.bind([.text(name), cursor.map(SQLiteValue.integer) ?? .null, .integer(done ? 1 : 0)])
        _ = try upsert.step()
    }

    init(database: Database) throws(SQLiteError) {
        self.database = database
        upsert = try database.prepare(
            """
            INSERT OR REPLACE INTO main.\(Self.checkpointTable) (entity, phase, batch, first_key, last_key,
                rows_read, rows_written, rows_skipped, nulled, deferred, mapping, destination_base,
                segment_first, segment_last, segment_crc, duration_us, committed_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
            """)
        select = try database.prepare(
            """
            SELECT batch, first_key, last_key, rows_read, rows_written, rows_skipped, nulled, deferred, mapping,
                   destination_base, segment_first, segment_last, segment_crc, duration_us, committed_ms
            FROM main.\(Self.checkpointTable) WHERE entity = ?1 AND phase = ?2
            """)
    }

    /// Records a copy batch.
    func save(_ record: BatchRecord) throws(SQLiteError) {
        try upsert.bind([
            .integer(Int64(record.entity)), .text("copy"), .integer(Int64(record.batch)),
            .integer(record.firstSourceKey), .integer(record.lastSourceKey),
            .integer(Int64(record.rowsRead)), .integer(Int64(record.rowsWritten)), .integer(Int64(record.rowsSkipped)),
            .integer(Int64(record.relationshipsNulled)), .integer(Int64(record.relationshipsDeferred)),
            .integer(Int64(record.mapping.rawValue)), .integer(record.destinationBase),
            .integer(record.segmentFirstKey), .integer(record.segmentLastKey), .integer(Int64(record.segmentCRC)),
            .integer(Int64(record.durationMicros)), .integer(record.committedAtMillis),
        ])
        try upsert.step()
    }

    /// Records a fix-up batch.
    func save(_ record: FixupRecord) throws(SQLiteError) {
        try upsert.bind([
            .integer(Int64(record.entity)), .text("fixup:" + record.column), .integer(Int64(record.batch)),
            .integer(record.firstDestinationKey), .integer(record.lastDestinationKey),
            .integer(0), .integer(Int64(record.rowsUpdated)), .integer(0), .integer(Int64(record.rowsNulled)),
            .integer(0), .integer(0), .integer(0), .integer(0), .integer(0), .integer(0), .integer(0),
            .integer(record.committedAtMillis),
        ])
        try upsert.step()
    }

    /// The last committed copy batch of an entity.
    func copyBatch(entity: UInt32) throws(SQLiteError) -> BatchRecord? {
        try select.bind([.integer(Int64(entity)), .text("copy")])
        defer { select.reset() }
        guard try select.step() else { return nil }
        return BatchRecord(
            entity: entity, batch: UInt64(select.int64(at: 0)), firstSourceKey: select.int64(at: 1),
            lastSourceKey: select.int64(at: 2), rowsRead: UInt32(select.int64(at: 3)),
            rowsWritten: UInt32(select.int64(at: 4)), rowsSkipped: UInt32(select.int64(at: 5)),
            relationshipsNulled: UInt32(select.int64(at: 6)), relationshipsDeferred: UInt32(select.int64(at: 7)),
            mapping: IDMapSegment.Mapping(rawValue: UInt8(select.int64(at: 8))) ?? .allocate,
            destinationBase: select.int64(at: 9), segmentFirstKey: select.int64(at: 10),
            segmentLastKey: select.int64(at: 11), segmentCRC: UInt32(truncatingIfNeeded: select.int64(at: 12)),
            durationMicros: UInt64(select.int64(at: 13)), committedAtMillis: select.int64(at: 14))
    }

    /// The last committed fix-up batch of an entity's deferred column.
    func fixupBatch(entity: UInt32, column: String) throws(SQLiteError) -> FixupRecord? {
        try select.bind([.integer(Int64(entity)), .text("fixup:" + column)])
        defer { select.reset() }
        guard try select.step() else { return nil }
        return FixupRecord(
            entity: entity, column: column, batch: UInt64(select.int64(at: 0)),
            firstDestinationKey: select.int64(at: 1), lastDestinationKey: select.int64(at: 2),
            rowsUpdated: UInt32(select.int64(at: 4)), rowsNulled: UInt32(select.int64(at: 6)),
            committedAtMillis: select.int64(at: 14))
    }
}
