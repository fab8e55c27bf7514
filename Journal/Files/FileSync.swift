#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation

/// Makes what was written to a file (or a directory's entries) durable: the one place that
/// chooses how, for every durability point of the journal (a whole-file write before its rename,
/// the directory after it, a log append, a log truncation).
///
/// On Apple platforms `fsync` moves the data to the drive but "the drive itself may not physically
/// write the data to the platters for quite some time and it may be written in an out-of-order
/// sequence"; the `F_FULLFSYNC` fcntl "asks the drive to flush all buffered data to permanent
/// storage", for "applications, such as databases, that require a strict ordering of writes"
/// (fsync(2)). Where the file system does not support it, `fcntl` fails and `fsync` is used instead,
/// as SQLite's own unix VFS does.
/// https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/fsync.2.html
/// https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/fcntl.2.html
///
/// On Linux `fsync` (or `fdatasync` for a log append, whose file size changes are metadata
/// `fdatasync` still writes) reaches the drive's cache flush itself.
enum FileSync {
    /// What a durability point synced, as tests see it.
    struct Event: Equatable, Sendable, CustomStringConvertible {
        /// The path the descriptor was opened with.
        var path: String
        /// `fsync`-like (file data and metadata) or `fdatasync`-like (data, and the size).
        var dataOnly: Bool

        var description: String { "\(dataOnly ? "data" : "full") \(path)" }
    }

    /// Collects the durability points reached by the task it is bound to (``$recorder``), so
    /// that a test can check each write is made durable, without mocking the file system.
    final class Recorder: @unchecked Sendable {
        private var recorded: [Event] = []
        private let lock = NSLock()

        var events: [Event] { lock.withLock { recorded } }

        func record(_ event: Event) { lock.withLock { recorded.append(event) } }
    }

    /// The recorder of the current task, if a test bound one; `nil` in production.
    @TaskLocal static var recorder: Recorder?

    /// Makes `fd`'s writes durable. Returns `nil` on success, or the name of the call that failed
    /// (with `errno` set) for the caller's error message.
    static func fullSync(_ fd: Int32, path: String, dataOnly: Bool = false) -> String? {
        recorder?.record(Event(path: path, dataOnly: dataOnly))
        #if canImport(Darwin)
            // fcntl(2): "F_FULLFSYNC: Does the same thing as fsync(2) then asks the drive to flush all
            // buffered data to the permanent storage device (arg is ignored)."
            if fcntl(fd, F_FULLFSYNC) != -1 { return nil }
            return fsync(fd) == 0 ? nil : "fsync"
        #else
            if dataOnly { return fdatasync(fd) == 0 ? nil : "fdatasync" }
            return fsync(fd) == 0 ? nil : "fsync"
        #endif
    }
}
