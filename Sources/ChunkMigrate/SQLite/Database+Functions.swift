import CSQLite

/// The arguments of one call of an application-defined SQL function, and its result.
struct FunctionCall {
    let context: OpaquePointer
    let arguments: UnsafeMutablePointer<OpaquePointer?>
    let count: Int

    @inline(__always) func isNull(_ index: Int) -> Bool { sqlite3_value_type(arguments[index]) == SQLITE_NULL }
    @inline(__always) func int64(_ index: Int) -> Int64 { sqlite3_value_int64(arguments[index]) }
    @inline(__always) func isInteger(_ index: Int) -> Bool { sqlite3_value_type(arguments[index]) == SQLITE_INTEGER }

    func value(_ index: Int) -> SQLiteValue {
        let value = arguments[index]
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            // The length SQLite already knows, instead of a strlen.
            let bytes = Int(sqlite3_value_bytes(value))
            guard let text = sqlite3_value_text(value) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: bytes), as: UTF8.self))
        case SQLITE_BLOB:
            let bytes = Int(sqlite3_value_bytes(value))
            guard bytes > 0, let pointer = sqlite3_value_blob(value) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: pointer, count: bytes)))
        default: return .null
        }
    }

    /// The bytes of a BLOB (or TEXT) argument, read in place: valid only inside `body`.
    func withBytes<T>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let value = arguments[index]
        let count = Int(sqlite3_value_bytes(value))
        guard count > 0, let pointer = sqlite3_value_blob(value) else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    @inline(__always) func result(_ integer: Int64) { sqlite3_result_int64(context, integer) }
    @inline(__always) func resultNull() { sqlite3_result_null(context) }

    func result(_ value: SQLiteValue) {
        switch value {
        case .null: sqlite3_result_null(context)
        case let .integer(integer): sqlite3_result_int64(context, integer)
        case let .real(real): sqlite3_result_double(context, real)
        case var .text(text):
            text.withUTF8 { bytes in
                sqlite3_result_text64(
                    context, bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                    UInt64(bytes.count), csqlite_transient(), UInt8(SQLITE_UTF8))
            }
        case let .blob(bytes):
            bytes.withUnsafeBytes { sqlite3_result_blob(context, $0.baseAddress, Int32($0.count), csqlite_transient()) }
        }
    }

    func fail(_ message: String) { sqlite3_result_error(context, message, -1) }
}

/// The arguments of a call without arguments, where SQLite may pass none at all.
nonisolated(unsafe) private let noArguments = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: 1)

/// Holds a Swift closure for SQLite's `pUserData`, and the connection that keeps it, which
/// takes what the closure throws as the cause of the statement's error.
private final class FunctionBox {
    let body: (FunctionCall) throws -> Void
    unowned let database: Database
    init(_ body: @escaping (FunctionCall) throws -> Void, database: Database) {
        self.body = body
        self.database = database
    }
}

extension Database {
    /// Registers a scalar SQL function implemented by `body`. An error thrown by `body` fails
    /// the statement: its ``SQLiteError`` has the error's description as its message and the
    /// error itself as its ``SQLiteError/cause``.
    func createFunction(
        _ name: String, argumentCount: Int, deterministic: Bool,
        _ body: @escaping (FunctionCall) throws -> Void
    ) throws(SQLiteError) {
        let box = FunctionBox(body, database: self)
        retain(box)
        var flags = SQLITE_UTF8
        if deterministic { flags |= SQLITE_DETERMINISTIC }
        let result = sqlite3_create_function_v2(
            handle, name, Int32(argumentCount), flags, Unmanaged.passUnretained(box).toOpaque(),
            { context, count, arguments in
                guard let context else { return }
                let arguments = arguments ?? noArguments
                // The connection keeps the box alive while it can call the function: borrow it
                // without retaining it, as this runs once per row.
                let call = FunctionCall(context: context, arguments: arguments, count: Int(count))
                let failure: (any Error)? = Unmanaged<FunctionBox>.fromOpaque(sqlite3_user_data(context))
                    ._withUnsafeGuaranteedRef { box in
                        do {
                            try box.body(call)
                            return nil
                        } catch {
                            box.database.functionFailure = error
                            return error
                        }
                    }
                if let failure {
                    sqlite3_result_error(context, "\(failure)", -1)
                    // A full disk or a failing device met by the function stays one for the
                    // statement, so that the job reports it as such.
                    switch MigrationError.deviceCode(of: failure) {
                    case .diskFull?: sqlite3_result_error_code(context, SQLiteResultCode.full.rawValue)
                    case .deviceError?: sqlite3_result_error_code(context, SQLiteResultCode.ioError.rawValue)
                    default: break
                    }
                }
            }, nil, nil, nil)
        guard result == SQLITE_OK else { throw self.error(result, sql: "create function \(name)") }
    }
}
