import CSQLite

/// Collects what a statement reads, for ``Database/columnsRead(in:preparing:)``.
private final class ReadLog {
    let schema: String
    var columns: [String: Set<String>] = [:]
    init(schema: String) { self.schema = schema }
}

extension Database {
    /// The tables of `schema` (`main`, `src`) that `sql` reads (``columnsRead(in:preparing:)``).
    func tablesRead(in schema: String, preparing sql: String) throws(SQLiteError) -> Set<String> {
        Set(try columnsRead(in: schema, preparing: sql).keys)
    }

    /// The columns of `schema` that `sql` reads, by table, found by preparing it with an
    /// authorizer (`sqlite3_set_authorizer`) that records every read. The statement is not run.
    /// A table read for its rows alone (`count(*)`) is there with no column.
    func columnsRead(in schema: String, preparing sql: String) throws(SQLiteError) -> [String: Set<String>] {
        try recordingReads(in: schema) { () throws(SQLiteError) in _ = try prepare(sql) }.columns
    }

    /// Runs `body`, recording the columns of `schema` that every statement prepared meanwhile
    /// reads, by table (an authorizer, `sqlite3_set_authorizer`, that records every read).
    func recordingReads<T, Failure: Error>(in schema: String, _ body: () throws(Failure) -> T) throws(Failure) -> (value: T, columns: [String: Set<String>]) {
        let log = ReadLog(schema: schema)
        let pointer = Unmanaged.passRetained(log).toOpaque()
        defer {
            sqlite3_set_authorizer(handle, nil, nil)
            Unmanaged<ReadLog>.fromOpaque(pointer).release()
        }
        sqlite3_set_authorizer(handle, { userData, action, table, column, database, _ in
            guard action == SQLITE_READ, let userData, let table, let database else { return SQLITE_OK }
            let log = Unmanaged<ReadLog>.fromOpaque(userData).takeUnretainedValue()
            guard String(cString: database) == log.schema else { return SQLITE_OK }
            let name = String(cString: table)
            if let column, column.pointee != 0 {
                log.columns[name, default: []].insert(String(cString: column))
            } else {
                log.columns[name, default: []].formUnion([])
            }
            return SQLITE_OK
        }, pointer)
        let value = try body()
        return (value, log.columns)
    }
}
