import CSQLite

/// A SQLite result code (https://sqlite.org/rescode.html): a primary code in the low byte, and
/// in an extended code the detail above it (`SQLITE_IOERR_FSYNC` is `SQLITE_IOERR | 4 << 8`).
public struct SQLiteResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The primary code of an extended one (itself for a primary code).
    public var primary: SQLiteResultCode { SQLiteResultCode(rawValue & 0xFF) }

    public static let error = SQLiteResultCode(SQLITE_ERROR)
    public static let busy = SQLiteResultCode(SQLITE_BUSY)
    public static let locked = SQLiteResultCode(SQLITE_LOCKED)
    public static let interrupt = SQLiteResultCode(SQLITE_INTERRUPT)
    public static let ioError = SQLiteResultCode(SQLITE_IOERR)
    public static let corrupt = SQLiteResultCode(SQLITE_CORRUPT)
    public static let full = SQLiteResultCode(SQLITE_FULL)
    public static let cannotOpen = SQLiteResultCode(SQLITE_CANTOPEN)
    public static let schema = SQLiteResultCode(SQLITE_SCHEMA)
    public static let constraint = SQLiteResultCode(SQLITE_CONSTRAINT)
    public static let readOnly = SQLiteResultCode(SQLITE_READONLY)
    public static let notADatabase = SQLiteResultCode(SQLITE_NOTADB)
    /// `SQLITE_CONSTRAINT_FOREIGNKEY` and `SQLITE_CONSTRAINT_NOTNULL`, macros that Swift does not import.
    public static let foreignKeyConstraint = SQLiteResultCode(SQLITE_CONSTRAINT | 3 << 8)
    public static let notNullConstraint = SQLiteResultCode(SQLITE_CONSTRAINT | 5 << 8)
    /// `SQLITE_IOERR_FSYNC`: a sync of the file failed.
    public static let syncFailed = SQLiteResultCode(SQLITE_IOERR | 4 << 8)

    /// SQLite's English for the code (`sqlite3_errstr`), and the number.
    public var description: String { "\(String(cString: sqlite3_errstr(rawValue))) (\(rawValue))" }
}

/// An error SQLite returned, with its result code, its message and the SQL that failed.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The extended result code (``SQLiteResultCode/notNullConstraint``, ...).
    public var resultCode: SQLiteResultCode
    /// SQLite's message (`sqlite3_errmsg`).
    public var message: String
    /// The SQL being prepared or run, when there is one.
    public var sql: String?
    /// The database file, when known.
    public var file: String?
    /// What an application-defined SQL function threw, where the statement failed because of
    /// it: the function's own error, with what it names (the entity, the source key).
    public var cause: (any Error)?

    public init(_ resultCode: SQLiteResultCode, message: String, sql: String? = nil, file: String? = nil, cause: (any Error)? = nil) {
        self.resultCode = resultCode
        self.message = message
        self.sql = sql
        self.file = file
        self.cause = cause
    }

    /// The primary result code (``SQLiteResultCode/constraint``, ...).
    public var code: SQLiteResultCode { resultCode.primary }

    /// Whether the error is a constraint violation (NOT NULL, UNIQUE, CHECK, FOREIGN KEY, ...).
    public var isConstraint: Bool { code == .constraint }
    /// Whether a FOREIGN KEY constraint failed (reported at the end of the statement, not at a row).
    public var isForeignKeyViolation: Bool { resultCode == .foreignKeyConstraint }
    /// Whether the disk or the file system is full.
    public var isDiskFull: Bool { code == .full }
    /// Whether the device failed a read, write or sync (`SQLITE_IOERR` and its extended codes).
    public var isDeviceError: Bool { code == .ioError }
    /// Whether another connection kept changing the schema while a statement was prepared again
    /// for it (SQLite gives up after a number of tries): the statement may simply run again.
    public var isSchemaChanged: Bool { code == .schema }

    /// Whether `error` is, or reports (``MigrationError/cause``), a schema that kept changing.
    static func isSchemaChanged(_ error: any Error) -> Bool {
        switch error {
        case let error as SQLiteError: error.isSchemaChanged
        case let error as MigrationError: error.cause.map(isSchemaChanged) ?? false
        default: false
        }
    }
    /// Whether the statement was interrupted.
    public var isInterrupt: Bool { code == .interrupt }

    public var description: String {
        var text = message
        if let file { text = "\(file): " + text }
        if let sql { text += " (in: \(sql.count > 400 ? String(sql.prefix(400)) + "..." : sql))" }
        return text
    }
}
