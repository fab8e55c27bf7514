import CSQLite
import Foundation

/// One SQLite connection. Every `sqlite3_*` call of the library is in this folder.
///
/// Not `Sendable` (and marked so): a connection is used by one thread at a time, the engine's; debug
/// builds stop a second thread that uses it while another is inside (``ThreadConfinement``).
package final class Database {
    /// How to open a connection.
    package enum Mode {
        /// Read and write, creating the file if it does not exist.
        case readWriteCreate
        /// Read and write an existing file.
        case readWrite
        /// Read only; the file is never written.
        case readOnly
        /// A migration's source: read only, and ``sourceURI(_:)``'s rule for WAL stores.
        case source
        /// Read only, but a file it attaches (`ATTACH`) is read and written: a connection that
        /// reads a store and keeps what it computes in a file of its own.
        case readOnlyAttachingWritable
        /// Read only without locks (`immutable=1`), beside a connection that writes the file:
        /// only for tables whose pages the writer no longer changes, which read as they are, and
        /// only while the writer keeps a rollback journal (such a connection ignores a WAL) and
        /// its commits move no pages (no `auto_vacuum = FULL`). The file's header is read without
        /// a lock too, so a read that meets one of the writer's commits can fail (a page count
        /// past the file's end reads as a damaged file).
        case unlocked
    }

    let handle: OpaquePointer
    /// The file this connection opened.
    let path: String
    private var functionBoxes: [AnyObject] = []
    #if DEBUG
        /// The thread inside the connection, checked in debug builds (``enter()``).
        let confinement = ThreadConfinement()
    #endif
    /// The error an application-defined function last threw, until the statement's error takes
    /// it as its cause (``SQLiteError/cause``).
    var functionFailure: (any Error)?

    package init(path: String, mode: Mode) throws(SQLiteError) {
        var flags = SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX
        switch mode {
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readOnly, .source, .unlocked: flags |= SQLITE_OPEN_READONLY
        // The URI's mode=ro makes the file read-only; the connection's flags are those of what
        // it attaches.
        case .readOnlyAttachingWritable: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        }
        var connection: OpaquePointer?
        let uri =
            switch mode {
            case .readOnly, .readOnlyAttachingWritable: Database.readOnlyURI(path)
            case .source: Database.sourceURI(path)
            case .unlocked: Database.readOnlyURI(path) + "&immutable=1"
            default: path
            }
        let result = sqlite3_open_v2(uri, &connection, flags, nil)
        guard result == SQLITE_OK, let connection else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let connection { sqlite3_close_v2(connection) }
            throw SQLiteError(SQLiteResultCode(result), message: message, sql: nil, file: path)
        }
        handle = connection
        self.path = path
        sqlite3_extended_result_codes(handle, 1)
        waitWhenBusy()
        if Database.profileLength != nil { Database.profile(handle) }
    }

    /// `CHUNKMIGRATE_PROFILE_SQL=1`: every statement that takes 5 ms or more, with its time and
    /// its first 300 characters, on stderr (SQLite's profile callback), for finding where a job's
    /// time goes; `=full`: the whole statement.
    fileprivate static let profileLength: Int? =
        switch ProcessInfo.processInfo.environment["CHUNKMIGRATE_PROFILE_SQL"] {
        case "1": 300
        case "full": Int.max
        default: nil
        }

    private static func profile(_ handle: OpaquePointer) {
        sqlite3_trace_v2(
            handle, UInt32(SQLITE_TRACE_PROFILE),
            { _, _, statement, nanoseconds in
                guard let statement, let nanoseconds else { return 0 }
                let elapsed = nanoseconds.assumingMemoryBound(to: Int64.self).pointee
                guard elapsed >= 5_000_000, let sql = sqlite3_sql(OpaquePointer(statement)) else { return 0 }
                let text = String(cString: sql).split(whereSeparator: \.isNewline).joined(separator: " ")
                FileHandle.standardError.write(
                    Data(
                        String(format: "sql %8.1f ms  %@\n", Double(elapsed) / 1e6, String(text.prefix(Database.profileLength ?? 300))).utf8
                    ))
                return 0
            }, nil)
    }

    private var isClosed = false
    /// The descriptor ``startWriteback(every:)`` opened, closed after the connection.
    var writebackDescriptor: Int32?

    deinit {
        if !isClosed { closeConnection() }
    }

    /// Closes the connection, then the writeback's descriptor, unless statements still alive
    /// keep the connection open inside SQLite (``startWriteback(every:)``).
    private func closeConnection() {
        let lingers = sqlite3_next_stmt(handle, nil) != nil
        sqlite3_close_v2(handle)
        if let writebackDescriptor, !lingers { _ = Foundation.close(writebackDescriptor) }
        writebackDescriptor = nil
    }

    /// Stops the connection's statements once `stopped` answers true, the running one within a
    /// thousand of SQLite's steps and every later one at its first (SQLite's progress handler):
    /// for a connection another thread must be able to halt. Unlike `sqlite3_interrupt`, a stop
    /// asked for between two statements is not lost. `stopped` is called on the connection's
    /// thread.
    func stopStatements(when stopped: @escaping @Sendable () -> Bool) {
        final class Check {
            let stopped: @Sendable () -> Bool
            init(_ stopped: @escaping @Sendable () -> Bool) { self.stopped = stopped }
        }
        let check = Check(stopped)
        retain(check)
        sqlite3_progress_handler(
            handle, 1_000,
            { context in
                guard let context else { return 0 }
                return Unmanaged<Check>.fromOpaque(context).takeUnretainedValue().stopped() ? 1 : 0
            }, Unmanaged.passUnretained(check).toOpaque())
    }

    /// Gives `main` back a journal mode recorded before a job changed it; a recorded text that
    /// is none of SQLite's modes gives DELETE, SQLite's default.
    func restoreJournalMode(_ mode: String) throws(SQLiteError) {
        let modes = ["delete", "truncate", "persist", "memory", "wal", "off"]
        try execute("PRAGMA main.journal_mode = \(modes.contains(mode.lowercased()) ? mode : "delete")")
    }

    /// Writes the dirty pages of the open transaction to the file (`sqlite3_db_cacheflush`).
    func flushCache() {
        sqlite3_db_cacheflush(handle)
    }

    /// Closes the connection now rather than when the object goes (another connection may need
    /// the file to itself: a change of journal mode).
    func close() {
        guard !isClosed else { return }
        closeConnection()
        isClosed = true
    }

    /// The URI a migration opens its source with. A store in WAL mode gets `-wal` and `-shm` files
    /// next to it as soon as it is opened, even read-only, and a read-only connection cannot remove
    /// them; so a WAL store that no process has open (it has no `-wal` file) is opened
    /// `immutable=1`: no locks, no files created. Such a source must not be written while a job
    /// runs, nor between its runs: the fingerprint checked at each start covers the planned tables'
    /// schema and key range, so it notices rows added or removed at either end and a changed schema,
    /// not rows updated in place. Any other store is opened `mode=ro`, sharing locks as usual.
    package static func sourceURI(_ path: String) -> String {
        let uri = readOnlyURI(path)
        guard isWALStore(path), !FileManager.default.fileExists(atPath: path + "-wal") else { return uri }
        return uri + "&immutable=1"
    }

    /// Whether the file's header says WAL mode (bytes 18 and 19 are 2).
    static func isWALStore(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 20), header.count == 20 else { return false }
        return header[18] == 2 && header[19] == 2
    }

    /// A `file:` URI that opens `path` read-only, percent-encoding what a URI reserves.
    static func readOnlyURI(_ path: String) -> String {
        var encoded = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: " "), 0x80...0xFF, 0..<0x20:
                encoded += "%" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            default:
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return "file:\(encoded)?mode=ro"
    }

    func error(_ result: Int32, sql: String? = nil) -> SQLiteError {
        var error = SQLiteError(
            SQLiteResultCode(sqlite3_extended_errcode(handle)), message: String(cString: sqlite3_errmsg(handle)),
            sql: sql, file: path)
        error.cause = takeFunctionFailure(message: error.message)
        return error
    }

    /// The error a function threw, when `message` is the one it gave SQLite (a statement that
    /// failed because of it); cleared either way.
    private func takeFunctionFailure(message: String) -> (any Error)? {
        defer { functionFailure = nil }
        return functionFailure.flatMap { "\($0)" == message ? $0 : nil }
    }

    /// Runs one or more statements that return no rows.
    package func execute(_ sql: String) throws(SQLiteError) {
        enter()
        defer { leave() }
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        if result != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            var error = SQLiteError(SQLiteResultCode(sqlite3_extended_errcode(handle)), message: text, sql: sql, file: path)
            error.cause = takeFunctionFailure(message: text)
            throw error
        }
    }

    /// Prepares one statement.
    package func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        enter()
        defer { leave() }
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard result == SQLITE_OK, let statement else { throw error(result, sql: sql) }
        return Statement(handle: statement, database: self, sql: sql)
    }

    /// The first column of the first row of a query, or `.null` when it returns no row.
    package func scalar(_ sql: String, _ arguments: SQLiteValue...) throws(SQLiteError) -> SQLiteValue {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        guard try statement.step() else { return .null }
        return statement.value(at: 0)
    }

    /// Every row of a query, as values.
    package func rows(_ sql: String, _ arguments: SQLiteValue...) throws(SQLiteError) -> [[SQLiteValue]] {
        try rows(sql, arguments: arguments)
    }

    /// Every row of a query, as values.
    package func rows(_ sql: String, arguments: [SQLiteValue]) throws(SQLiteError) -> [[SQLiteValue]] {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        var rows: [[SQLiteValue]] = []
        while try statement.step() {
            rows.append((0..<statement.columnCount).map { statement.value(at: $0) })
        }
        return rows
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Whether a transaction is open.
    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Calls `body` with the number of calls so far each time a statement finds the file locked by
    /// another connection, instead of waiting up to the busy timeout: true to try again, false to
    /// fail with `SQLITE_BUSY`. ``waitWhenBusy()`` sets the timeout back.
    func onBusy(_ body: @escaping @Sendable (Int) -> Bool) {
        final class Handler {
            let body: @Sendable (Int) -> Bool
            init(_ body: @escaping @Sendable (Int) -> Bool) { self.body = body }
        }
        let handler = Handler(body)
        retain(handler)
        sqlite3_busy_handler(
            handle,
            { context, count in
                guard let context else { return 0 }
                return Unmanaged<Handler>.fromOpaque(context).takeUnretainedValue().body(Int(count)) ? 1 : 0
            }, Unmanaged.passUnretained(handler).toOpaque())
    }

    /// A statement that finds the file locked waits up to five seconds for it (the default).
    func waitWhenBusy() {
        sqlite3_busy_timeout(handle, 5_000)
    }

    /// Attaches the database at `uri` (a path, or a URI such as ``readOnlyURI(_:)``'s) as `schema`.
    package func attach(_ uri: String, as schema: String) throws(SQLiteError) {
        let attach = try prepare("ATTACH DATABASE ?1 AS \(schema)")
        try attach.bind([.text(uri)])
        _ = try attach.step()
    }

    /// Keeps an object alive as long as the connection (function boxes registered with SQLite).
    func retain(_ object: AnyObject) { functionBoxes.append(object) }
}

extension Database {
    /// Whether SQLite reserves `word` as a keyword (`ORDER`, `GROUP`, ...), so that an identifier
    /// spelled like it must be quoted. The corresponding C function is `sqlite3_keyword_check`.
    static func isKeyword(_ word: String) -> Bool {
        sqlite3_keyword_check(word, Int32(word.utf8.count)) != 0
    }
}

@available(*, unavailable, message: "a connection is used by one thread: open another for another thread")
extension Database: Sendable {}
