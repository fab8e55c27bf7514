import Foundation
import MigrationJournal

/// Why a job could not start, continue or finish, naming what failed in the user's words: the
/// entity, the batch, the source key, the column, the file.
///
/// ```swift
/// do { try await job.run() }
/// catch let error as MigrationError { print(error) }
/// // entity Message, batch 12, source key 100387, column conversation_id:
/// //   source conversation_id 77 has no mapping in Conversation (missing: fail)
/// ```
public struct MigrationError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this is; stable, for scripts, tests and exit codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as a stable string.
        public var rawValue: String
        /// Creates a code from its string.
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The plan is malformed or inconsistent with itself or the stores.
        public static let invalidPlan = Code(rawValue: "invalid-plan")
        /// A store cannot be opened or read, or is not what the plan expects.
        public static let store = Code(rawValue: "store")
        /// The journal cannot be read or written, or belongs to another job.
        public static let journal = Code(rawValue: "journal")
        /// The journal, the source or the destination differ from those the job started with.
        public static let mismatch = Code(rawValue: "mismatch")
        /// A batch failed validation or a constraint; it was rolled back.
        public static let batch = Code(rawValue: "batch")
        /// A relationship's target key has no mapping and its policy is `fail`.
        public static let missingMapping = Code(rawValue: "missing-mapping")
        /// The disk or file system is full.
        public static let diskFull = Code(rawValue: "disk-full")
        /// The device failed a read, write or sync (`EIO`, SQLite's disk I/O error): the batch was
        /// not committed; the job resumes from its last checkpoint once the device works.
        public static let deviceError = Code(rawValue: "device-error")
        /// Another process is running this job.
        public static let busy = Code(rawValue: "busy")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, as a sentence.
    public var message: String
    /// The entity being migrated, when the failure concerns one.
    public var entity: String?
    /// The entity's batch that failed; it was rolled back.
    public var batch: UInt64?
    /// The source key of the row at fault, when one is known.
    public var sourceKey: Int64?
    /// The destination column at fault, when one is known.
    public var column: String?
    /// The file concerned: a store, the plan, the journal or one of its files.
    public var file: String?
    /// The SQL that failed, when SQLite reported the error.
    public var sql: String?
    /// The error this one reports, when it comes from another: a ``SQLiteError`` (with SQLite's
    /// result code), a `JournalError`, or an error a Swift function of the plan threw.
    ///
    /// ```swift
    /// catch let error as MigrationError {
    ///     if let sqlite = error.cause as? SQLiteError, sqlite.isConstraint { ... }
    /// }
    /// ```
    public var cause: (any Error)?

    /// Creates an error. Where `cause` is a full disk or a failing device, whichever layer
    /// raised it (SQLite, the journal, a file read or copied), the code is
    /// ``Code-swift.struct/diskFull`` or ``Code-swift.struct/deviceError`` instead of `code`:
    /// what went wrong is then the disk's doing, not the step's that met it.
    public init(
        _ code: Code, _ message: String, entity: String? = nil, batch: UInt64? = nil,
        sourceKey: Int64? = nil, column: String? = nil, file: String? = nil, sql: String? = nil,
        cause: (any Error)? = nil
    ) {
        self.code = Self.deviceCode(of: cause) ?? code
        self.message = message
        self.entity = entity
        self.batch = batch
        self.sourceKey = sourceKey
        self.column = column
        self.file = file
        self.sql = sql
        self.cause = cause
    }

    public var description: String {
        var context: [String] = []
        if let file { context.append(file) }
        if let entity { context.append("entity \(entity)") }
        if let batch { context.append("batch \(batch)") }
        if let sourceKey { context.append("source key \(sourceKey)") }
        if let column { context.append("column \(column)") }
        return context.isEmpty ? message : context.joined(separator: ", ") + ": " + message
    }

    static func plan(_ error: DecodingError, file: String?) -> MigrationError {
        func path(_ codingPath: [any CodingKey]) -> String {
            var text = ""
            for key in codingPath {
                if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
            }
            return text.isEmpty ? "the plan" : text
        }
        switch error {
        case let .keyNotFound(key, context):
            let where_ = path(context.codingPath + [key])
            return MigrationError(.invalidPlan, "\(where_) is missing", file: file)
        case let .typeMismatch(_, context), let .valueNotFound(_, context):
            return MigrationError(.invalidPlan, "\(path(context.codingPath)): \(context.debugDescription)", file: file)
        case let .dataCorrupted(context):
            let detail = (context.underlyingError.map { "\($0)" } ?? context.debugDescription)
            return MigrationError(.invalidPlan, "\(path(context.codingPath)): \(detail)", file: file)
        @unknown default:
            return MigrationError(.invalidPlan, "\(error)", file: file)
        }
    }

    /// ``Code-swift.struct/diskFull`` or ``Code-swift.struct/deviceError`` when `error`, or the
    /// error it reports, is a full disk or a failing device; `nil` for any other error.
    static func deviceCode(of error: (any Error)?, depth: Int = 0) -> Code? {
        guard let error, depth < 8 else { return nil }
        switch error {
        case let error as MigrationError:
            return error.code == .diskFull || error.code == .deviceError ? error.code : deviceCode(of: error.cause, depth: depth + 1)
        case let error as SQLiteError:
            return error.isDiskFull ? .diskFull : error.isDeviceError ? .deviceError : nil
        case let error as JournalError:
            return error.code == .diskFull ? .diskFull : error.code == .deviceError ? .deviceError : nil
        default:
            // Foundation's file errors: POSIX's own, or Cocoa's with the POSIX error beneath.
            let error = error as NSError
            if error.domain == NSPOSIXErrorDomain {
                switch Int32(error.code) {
                case ENOSPC, EDQUOT: return .diskFull
                case EIO: return .deviceError
                default: return nil
                }
            }
            if error.domain == NSCocoaErrorDomain, error.code == CocoaError.fileWriteOutOfSpace.rawValue { return .diskFull }
            return deviceCode(of: error.userInfo[NSUnderlyingErrorKey] as? any Error, depth: depth + 1)
        }
    }

    /// The whole file at `path`, or an error of `code` naming the file and saying why it cannot
    /// read (a full disk or a failing device keeps its own code), `what` naming the file for
    /// the user: "cannot read the plan file: open failed: No such file or directory".
    package static func contents(of path: String, what: String, code: Code = .store) throws(MigrationError) -> Data {
        do { return Data(try FileIO.read(path)) } catch {
            throw MigrationError(code, "cannot read \(what): \(error.message)", file: path, cause: error)
        }
    }

    /// Any error the engine meets, as a `MigrationError`: SQLite's and the journal's keep their
    /// message and file, a full disk or a failing device takes its code (``init(_:_:entity:batch:sourceKey:column:file:sql:cause:)``);
    /// the error itself is kept as ``cause``.
    static func wrapping(_ error: any Error) -> MigrationError {
        switch error {
        case let error as MigrationError:
            return error
        case let error as SQLiteError:
            // A statement failed by what a function of the job threw: that error, which names
            // the row.
            if let cause = error.cause as? MigrationError { return cause }
            return MigrationError(.store, error.message, file: error.file, sql: error.sql, cause: error)
        case let error as JournalError:
            return MigrationError(.journal, error.message, file: error.file, cause: error)
        default:
            return MigrationError(.batch, "\(error)", cause: error)
        }
    }

    /// ``wrapping(_:)``, with the entity, batch, source key and column filled in where the error
    /// did not name them.
    static func wrapping(
        _ error: any Error, entity: String, batch: UInt64? = nil, sourceKey: Int64? = nil,
        column: String? = nil
    ) -> MigrationError {
        var wrapped = wrapping(error)
        wrapped.entity = wrapped.entity ?? entity
        wrapped.batch = wrapped.batch ?? batch
        wrapped.sourceKey = wrapped.sourceKey ?? sourceKey
        wrapped.column = wrapped.column ?? column
        return wrapped
    }
}
