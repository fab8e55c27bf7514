import Foundation
import MigrationJournal

extension Engine {
    /// Opens the destination read-write (creating it from `schema` when it does not exist and a
    /// schema is given), sets the pragmas a job relies on, and attaches the source read-only as `src`.
    ///
    /// While a job runs, the destination uses a rollback journal (`journal_mode=TRUNCATE`) with
    /// `synchronous=FULL`: every commit (a batch and its checkpoint) is durable against power loss
    /// once `COMMIT` returns, which the journal's "the checkpoint is the truth" rule needs. A
    /// rollback journal holds only the pages a batch changes that existed before it (a batch mostly
    /// appends new pages), so each row is written once, where WAL writes it twice. The store's
    /// own journal mode is recorded in the checkpoint and restored when the job completes.
    static func openStores(source: String, destination: String, schema: String?, options: MigrationOptions) throws -> Database {
        try openStoresReportingJournalMode(source: source, destination: destination, schema: schema, options: options).database
    }

    /// ``openStores(source:destination:schema:options:)``, also returning the destination's journal
    /// mode as it was before the job changed it.
    static func openStoresReportingJournalMode(source: String, destination: String, schema: String?,
                                               options: MigrationOptions) throws -> (database: Database, journalMode: String) {
        try checkSource(source)
        let exists = FileManager.default.fileExists(atPath: destination)
        if !exists && schema == nil {
            throw MigrationError(.store, "the destination does not exist; create it first or pass a schema (--schema FILE.sql) to create it",
                                 file: destination)
        }
        let database: Database
        var journalMode = "delete"
        do {
            database = try Database(path: destination, mode: exists ? .readWrite : .readWriteCreate)
            try database.execute("SELECT count(*) FROM sqlite_schema")
        } catch {
            throw MigrationError(.store, "cannot open the destination: \(error.message)", file: destination)
        }
        do {
            if !exists, let schema {
                try database.execute("BEGIN")
                try database.execute(schema)
                try database.execute("COMMIT")
            }
            journalMode = try database.scalar("PRAGMA main.journal_mode").text ?? "delete"
            try database.execute("""
                PRAGMA journal_mode = TRUNCATE;
                PRAGMA synchronous = FULL;
                PRAGMA cache_size = -\(options.sqliteCacheKiB);
                PRAGMA foreign_keys = \(options.checkForeignKeys ? "ON" : "OFF");
                """)
            let attach = try database.prepare("ATTACH DATABASE ?1 AS src")
            try attach.bind([.text(Database.readOnlyURI(source))])
            try attach.step()
            try database.execute("PRAGMA src.cache_size = -\(options.sqliteCacheKiB);")
        } catch {
            if !exists { try? FileManager.default.removeItem(atPath: destination) }
            throw MigrationError(.store, error.sql?.hasPrefix("ATTACH") == true
                ? "cannot attach the source read-only: \(error.message)" : "cannot prepare the destination: \(error.message)",
                file: error.sql?.hasPrefix("ATTACH") == true ? source : destination, sql: error.sql)
        }
        return (database, journalMode)
    }

    /// Fails with a clear message when `source` is missing or not an SQLite database.
    static func checkSource(_ source: String) throws {
        guard FileManager.default.fileExists(atPath: source) else {
            throw MigrationError(.store, "the source store does not exist", file: source)
        }
        do {
            let database = try Database(path: source, mode: .readOnly)
            _ = try database.scalar("SELECT count(*) FROM sqlite_schema")
        } catch {
            throw MigrationError(.store, "the source is not a readable SQLite store: \(error.message)", file: source)
        }
    }

    /// A fingerprint of the source as the plan sees it, cheap enough for every start: SHA-256 of
    /// each planned table's name and `CREATE` statement and its smallest and largest rowid. It
    /// catches the wrong file, a changed schema and rows added or removed at either end; it is
    /// not a hash of the content.
    static func sourceFingerprint(_ database: Database, plan: MigrationPlan) throws -> String {
        var hash = SHA256()
        for table in Set(plan.entities.map(\.source.table)).sorted() {
            hash.update(field: table)
            let sql = try database.scalar("SELECT sql FROM src.sqlite_schema WHERE type = 'table' AND name = ?1", .text(table))
            hash.update(field: sql.text ?? "-")
            // Two subqueries: SQLite answers a lone min() or max() from the b-tree's edge, but
            // scans the whole table for both in one SELECT.
            let quoted = "src." + SQL.quote(table)
            if let range = try? database.rows("SELECT (SELECT min(rowid) FROM \(quoted)), (SELECT max(rowid) FROM \(quoted))").first {
                hash.update(field: "\(range[0]) \(range[1])")
            }
        }
        return hash.finalizeHex()
    }
}
