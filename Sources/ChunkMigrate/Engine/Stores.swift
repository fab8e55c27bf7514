import Foundation
import MigrationJournal

/// The two stores of a job through one connection: the destination (`main`), read-write, with the
/// source attached read-only as `src`; and what each store's schema says, read once.
///
/// Not `Sendable`: it owns the connection, which the engine's thread uses.
final class Stores {
    /// The connection: the destination as `main`, the source as `src`.
    let database: Database
    /// The source's tables.
    let source: StoreSchema
    /// The destination's tables.
    let destination: StoreSchema

    private init(database: Database) {
        self.database = database
        source = StoreSchema(database: database, name: "src")
        destination = StoreSchema(database: database, name: "main")
    }

    /// Opens the destination read-write (creating it from `schema` when it does not exist, or
    /// exists with no table because a creation was interrupted), sets the pragmas a job relies on,
    /// and attaches the source read-only as `src`. The destination's journal mode is left as it is:
    /// ``useRollbackJournal()`` changes it once the original is recorded.
    static func open(source: String, destination: String, schema: String?, options: MigrationOptions) throws -> Stores {
        try checkSource(source)
        let exists = try Self.exists(destination)
        if !exists && schema == nil {
            throw MigrationError(
                .store, "the destination does not exist; create it first or pass a schema (--schema FILE.sql) to create it",
                file: destination)
        }
        let database: Database
        var isEmpty = !exists
        do {
            database = try Database(path: destination, mode: exists ? .readWrite : .readWriteCreate)
            let tables = try database.scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'table'")
            isEmpty = tables.integer == 0
        } catch {
            throw MigrationError(.store, "cannot open the destination: \(error.message)", file: destination, cause: error)
        }
        do {
            if isEmpty, let schema {
                try database.inTransaction { try database.execute(schema) }
            }
            // fullfsync: SQLite syncs with F_FULLFSYNC where the OS has it (Apple platforms, where
            // fsync leaves data in the drive's cache), and ignores it elsewhere. It covers every
            // file of the connection; the attached source is never written.
            // https://sqlite.org/pragma.html#pragma_fullfsync
            // https://developer.apple.com/documentation/coredata/nssqlitepragmasoption
            // synchronous EXTRA is FULL and, in DELETE journal mode, a sync of the directory after
            // the rollback journal is unlinked to commit: the job's last transaction, in the store's
            // own mode, would otherwise come back rolled back after a power cut, the journal's
            // unlink lost, while the job's journal says it is complete. In TRUNCATE mode, the
            // job's own, it costs nothing more. https://sqlite.org/pragma.html#pragma_synchronous
            try database.execute(
                """
                PRAGMA synchronous = EXTRA;
                PRAGMA fullfsync = ON;
                PRAGMA cache_size = -\(options.sqliteCacheKiB);
                PRAGMA foreign_keys = \(options.checkForeignKeys ? "ON" : "OFF");
                """)
            try database.attach(Database.sourceURI(source), as: "src")
            try database.execute("PRAGMA src.cache_size = -\(options.sqliteCacheKiB);")
        } catch let error as SQLiteError {
            throw MigrationError(
                .store,
                error.sql?.hasPrefix("ATTACH") == true
                    ? "cannot attach the source read-only: \(error.message)" : "cannot prepare the destination: \(error.message)",
                file: error.sql?.hasPrefix("ATTACH") == true ? source : destination, sql: error.sql, cause: error)
        }
        return Stores(database: database)
    }

    /// Whether a store's file exists; a failing device is an error, not an absence.
    private static func exists(_ path: String) throws(MigrationError) -> Bool {
        do { return try FileIO.exists(path) } catch {
            throw MigrationError(.store, "cannot look for the file: \(error.message)", file: path, cause: error)
        }
    }

    /// Fails with a clear message when `source` is missing or not an SQLite database.
    static func checkSource(_ source: String) throws {
        guard try exists(source) else {
            throw MigrationError(.store, "the source store does not exist", file: source)
        }
        do {
            let database = try Database(path: source, mode: .source)
            _ = try database.scalar("SELECT count(*) FROM sqlite_schema")
        } catch {
            throw MigrationError(.store, "the source is not a readable SQLite store: \(error.message)", file: source, cause: error)
        }
        if InPlaceMigration.isHalfMigrated(URL(fileURLWithPath: source), recovering: false) {
            throw MigrationError(.store, InPlaceMigration.halfMigratedMessage(source), file: source)
        }
    }

    /// The destination's journal mode (`delete`, `wal`, ...).
    func journalMode() throws -> String {
        try database.scalar("PRAGMA main.journal_mode").text ?? "delete"
    }

    /// Switches the destination to a rollback journal (`journal_mode=TRUNCATE`) with
    /// `synchronous=EXTRA` (FULL, and the directory synced where a journal is unlinked) for the run: every commit (a batch and its checkpoint) is durable against
    /// power loss once `COMMIT` returns, which the "checkpoint is the truth" rule needs. A rollback
    /// journal holds only the pages a batch changes that existed before it (a batch mostly appends
    /// new pages), so each row is written once, where WAL writes it twice. The store's own mode is
    /// recorded in the checkpoint before this is called, and restored when the job completes.
    func useRollbackJournal() throws {
        try database.execute("PRAGMA main.journal_mode = TRUNCATE")
    }

    /// The smallest and largest key of a source table, or `nil` when it is empty. Two subqueries:
    /// SQLite answers a lone min() or max() from the edge of the b-tree, but scans the whole table
    /// for both in one SELECT.
    func keyRange(table: String, key: String?) throws -> ClosedRange<Int64>? {
        let table = "src." + SQL.quote(table)
        let key = SQL.key(key)
        let row = try database.rows("SELECT (SELECT min(\(key)) FROM \(table)), (SELECT max(\(key)) FROM \(table))")
        guard let low = row.first?[0].integer, let high = row.first?[1].integer else { return nil }
        return low...high
    }

    /// A fingerprint of the source as the plan sees it, cheap enough for every start: SHA-256 of
    /// each planned table's name and `CREATE` statement and its smallest and largest rowid. It
    /// catches the wrong file, a changed schema and rows added or removed at either end; it is
    /// not a hash of the content.
    func sourceFingerprint(plan: MigrationPlan) throws -> String {
        var hash = JournalSHA256()
        for table in Set(plan.entities.map(\.source.table)).sorted() {
            hash.update(field: table)
            let sql = try database.scalar("SELECT sql FROM src.sqlite_schema WHERE type = 'table' AND name = ?1", .text(table))
            hash.update(field: sql.text ?? "-")
            // A WITHOUT ROWID table has no rowid range; its schema is hashed all the same.
            let range: String
            do { range = try keyRange(table: table, key: nil).map { "\($0.lowerBound) \($0.upperBound)" } ?? "empty" } catch {
                range = "-"
            }
            hash.update(field: range)
        }
        return hash.finalizeHex()
    }
}
