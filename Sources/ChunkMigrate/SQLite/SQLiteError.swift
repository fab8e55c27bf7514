import CSQLite

/// An error SQLite returned, with its result code, its message and the SQL that failed.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The extended result code (`SQLITE_CONSTRAINT_NOTNULL`, ...).
    public var extendedCode: Int32
    /// SQLite's message (`sqlite3_errmsg`).
    public var message: String
    /// The SQL being prepared or run, when there is one.
    public var sql: String?
    /// The database file, when known.
    public var file: String?
    /// What an application-defined SQL function threw, where the statement failed because of
    /// it: the function's own error, with what it names (the entity, the source key).
    public var cause: (any Error)?

    /// The primary result code (`SQLITE_CONSTRAINT`, ...).
    public var code: Int32 { extendedCode & 0xFF }

    /// Whether the error is a constraint violation (NOT NULL, UNIQUE, CHECK, FOREIGN KEY, ...).
    public var isConstraint: Bool { code == SQLITE_CONSTRAINT }
    /// Whether a FOREIGN KEY constraint failed (reported at the end of the statement, not at a row).
    public var isForeignKeyViolation: Bool { extendedCode == SQLITE_CONSTRAINT | (3 << 8) }  // SQLITE_CONSTRAINT_FOREIGNKEY, a macro
    /// Whether the disk or the file system is full.
    public var isDiskFull: Bool { code == SQLITE_FULL }
    /// Whether the device failed a read, write or sync (`SQLITE_IOERR` and its extended codes).
    public var isDeviceError: Bool { code == SQLITE_IOERR }
    /// Whether another connection kept changing the schema while a statement was prepared again
    /// for it (SQLite gives up after a number of tries): the statement may simply run again.
    public var isSchemaChanged: Bool { code == SQLITE_SCHEMA }

    /// Whether `error` is, or reports (``MigrationError/cause``), a schema that kept changing.
    static func isSchemaChanged(_ error: any Error) -> Bool {
        switch error {
        case let error as SQLiteError: error.isSchemaChanged
        case let error as MigrationError: error.cause.map(isSchemaChanged) ?? false
        default: false
        }
    }
    /// Whether the statement was interrupted.
    public var isInterrupt: Bool { code == SQLITE_INTERRUPT }

    public var description: String {
        var text = message
        if let file { text = "\(file): " + text }
        if let sql { text += " (in: \(sql.count > 400 ? String(sql.prefix(400)) + "..." : sql))" }
        return text
    }
}
