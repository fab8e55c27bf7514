import CSQLite

/// A prepared statement, reused across batches: bind, step, reset.
package final class Statement {
    let handle: OpaquePointer
    let sql: String
    private unowned let database: Database

    init(handle: OpaquePointer, database: Database, sql: String) {
        self.handle = handle
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and binds `values` to parameters 1, 2, ...
    package func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        #if DEBUG
            database.enter()
            defer { database.leave() }
        #endif
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() { try bind(value, at: Int32(offset + 1)) }
    }

    func bind(_ value: SQLiteValue, at index: Int32) throws(SQLiteError) {
        let result: Int32
        switch value {
        case .null: result = sqlite3_bind_null(handle, index)
        case let .integer(integer): result = sqlite3_bind_int64(handle, index, integer)
        case let .real(real): result = sqlite3_bind_double(handle, index, real)
        case let .text(text): result = sqlite3_bind_text(handle, index, text, -1, csqlite_transient())
        case let .blob(bytes):
            result = bytes.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), csqlite_transient()) }
        }
        guard result == SQLITE_OK else { throw database.error(result, sql: sql) }
    }

    func bind(_ value: Int64, at index: Int32) throws(SQLiteError) {
        let result = sqlite3_bind_int64(handle, index, value)
        guard result == SQLITE_OK else { throw database.error(result, sql: sql) }
    }

    /// Steps once: `true` when a row is available, `false` when done.
    @discardableResult
    package func step() throws(SQLiteError) -> Bool {
        #if DEBUG
            database.enter()
            defer { database.leave() }
        #endif
        let result = sqlite3_step(handle)
        switch result {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = database.error(result, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Resets the statement so it can run again (bindings are kept).
    package func reset() { sqlite3_reset(handle) }

    var columnCount: Int { Int(sqlite3_column_count(handle)) }
    /// The number of parameters (`?1`, `?2`, ...) the statement takes.
    var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    /// The name of a result column (`AS` name, or the column's own).
    func columnName(at column: Int) -> String { sqlite3_column_name(handle, Int32(column)).map { String(cString: $0) } ?? "" }

    func int64(at column: Int) -> Int64 { sqlite3_column_int64(handle, Int32(column)) }

    func isNull(at column: Int) -> Bool { sqlite3_column_type(handle, Int32(column)) == SQLITE_NULL }

    func value(at column: Int) -> SQLiteValue {
        let index = Int32(column)
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT: return .text(String(cString: sqlite3_column_text(handle, index)))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, index))
            guard count > 0, let pointer = sqlite3_column_blob(handle, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: pointer, count: count)))
        default: return .null
        }
    }
}
