extension Database {
    /// How a transaction takes its locks (`BEGIN DEFERRED`, `IMMEDIATE`, `EXCLUSIVE`).
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/lang_transaction.html>
    package enum TransactionKind: String {
        /// Takes locks when the transaction first reads or writes.
        case deferred = "DEFERRED"
        /// Takes the write lock at once, so that no other writer can slip in before the first write.
        case immediate = "IMMEDIATE"
        /// Takes the write lock at once and, outside WAL mode, keeps readers out.
        case exclusive = "EXCLUSIVE"
    }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws (or when
    /// the commit fails) and rethrows its error.
    ///
    /// ```swift
    /// try database.inTransaction(.immediate) {
    ///     try database.execute("INSERT INTO t (x) VALUES (1)")
    ///     try checkpoints.save(record)        // both commit, or neither does
    /// }
    /// ```
    ///
    /// A rollback after an error is only attempted while a transaction is open: SQLite rolls
    /// back by itself on some errors (a full disk, an interrupt).
    ///
    /// A body that throws only ``SQLiteError`` makes a transaction that throws only
    /// ``SQLiteError``, for functions whose own errors are typed.
    @discardableResult
    package func inTransaction<T>(_ kind: TransactionKind = .deferred, _ body: () throws -> T) throws -> T {
        try transaction(kind, body, sqliteError: { $0 })
    }

    @discardableResult
    package func inTransaction<T>(_ kind: TransactionKind = .deferred, _ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try transaction(kind, body, sqliteError: { $0 })
    }

    /// Both ``inTransaction(_:_:)``: `sqliteError` gives BEGIN's and COMMIT's errors the body's
    /// error type.
    private func transaction<T, Failure: Error>(
        _ kind: TransactionKind, _ body: () throws(Failure) -> T,
        sqliteError: (SQLiteError) -> Failure
    ) throws(Failure) -> T {
        do { try execute("BEGIN \(kind.rawValue)") } catch { throw sqliteError(error) }
        do throws(Failure) {
            let result = try body()
            do { try execute("COMMIT") } catch { throw sqliteError(error) }
            return result
        } catch {
            if inTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }
}
