import CSQLite

/// Collects the tables a statement reads, for ``Database/tablesRead(in:preparing:)``.
private final class ReadLog {
    let schema: String
    var tables: Set<String> = []
    init(schema: String) { self.schema = schema }
}

extension Database {
    /// The tables of `schema` (`main`, `src`) that `sql` reads, found by preparing it with an
    /// authorizer (`sqlite3_set_authorizer`) that records every read. The statement is not run.
    func tablesRead(in schema: String, preparing sql: String) throws(SQLiteError) -> Set<String> {
        let log = ReadLog(schema: schema)
        let pointer = Unmanaged.passRetained(log).toOpaque()
        defer {
            sqlite3_set_authorizer(handle, nil, nil)
            Unmanaged<ReadLog>.fromOpaque(pointer).release()
        }
        sqlite3_set_authorizer(handle, { userData, action, table, _, database, _ in
            guard action == SQLITE_READ, let userData, let table, let database else { return SQLITE_OK }
            let log = Unmanaged<ReadLog>.fromOpaque(userData).takeUnretainedValue()
            if String(cString: database) == log.schema { log.tables.insert(String(cString: table)) }
            return SQLITE_OK
        }, pointer)
        _ = try prepare(sql)
        return log.tables
    }
}
