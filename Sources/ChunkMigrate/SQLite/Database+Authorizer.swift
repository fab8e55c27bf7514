import CSQLite

/// What an authorizer (`sqlite3_set_authorizer`) calls for each column a statement being
/// prepared reads: the schema, the table, and the column (empty for a table read for its rows
/// alone, `count(*)`).
private final class ReadHandler {
    let body: (_ schema: String, _ table: String, _ column: String) -> Void
    init(_ body: @escaping (String, String, String) -> Void) { self.body = body }
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
    func recordingReads<T, Failure: Error>(in schema: String, _ body: () throws(Failure) -> T) throws(Failure) -> (
        value: T, columns: [String: Set<String>]
    ) {
        var columns: [String: Set<String>] = [:]
        let handler = ReadHandler { database, table, column in
            guard database == schema else { return }
            columns[table, default: []].formUnion(column.isEmpty ? [] : [column])
        }
        authorizeReads(handler)
        defer { sqlite3_set_authorizer(handle, nil, nil) }
        let value = try withExtendedLifetime(handler) { () throws(Failure) in try body() }
        return (value, columns)
    }

    /// Calls `body` with the table each time a statement prepared on this connection reads one,
    /// for as long as the connection is open (tests act on the store while one is prepared).
    func onRead(_ body: @escaping @Sendable (_ table: String) -> Void) {
        let handler = ReadHandler { _, table, _ in body(table) }
        retain(handler)
        authorizeReads(handler)
    }

    /// Sets an authorizer that allows everything and passes each read to `handler`, which the
    /// caller keeps alive while it is set.
    private func authorizeReads(_ handler: ReadHandler) {
        sqlite3_set_authorizer(
            handle,
            { context, action, table, column, database, _ in
                guard action == SQLITE_READ, let context, let table, let database else { return SQLITE_OK }
                let handler = Unmanaged<ReadHandler>.fromOpaque(context).takeUnretainedValue()
                handler.body(String(cString: database), String(cString: table), column.map { String(cString: $0) } ?? "")
                return SQLITE_OK
            }, Unmanaged.passUnretained(handler).toOpaque())
    }
}
