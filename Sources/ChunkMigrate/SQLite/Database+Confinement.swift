import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// In debug builds, the thread inside a connection: a connection is opened `SQLITE_OPEN_NOMUTEX`
/// and used by one thread at a time, and a second thread that uses it while the first is inside
/// stops the program with a message that names the file, where SQLite would corrupt its state
/// without a word. Entering again from the same thread is allowed: a SQL function a statement
/// calls may use the connection. One thread after another is allowed too: a job opened on the
/// caller's thread runs on its own.
///
/// Release builds check nothing and pay nothing: the calls are compiled in debug builds only (a
/// statement reaches its connection through an `unowned` reference, whose load costs atomic
/// operations even to call an empty method).
final class ThreadConfinement: @unchecked Sendable {
    private let lock = NSLock()
    private var owner: pthread_t?
    private var depth = 0

    func enter(_ path: String) {
        let me = pthread_self()
        lock.lock()
        defer { lock.unlock() }
        if let owner, pthread_equal(owner, me) == 0 {
            preconditionFailure(
                "the connection to \(path) is used from two threads at once: a connection is used by one thread at a time; open another for another thread"
            )
        }
        owner = me
        depth += 1
    }

    func leave() {
        lock.lock()
        defer { lock.unlock() }
        depth -= 1
        if depth == 0 { owner = nil }
    }
}

extension Database {
    /// Marks the calling thread as inside the connection until ``leave()``; see ``ThreadConfinement``.
    @inline(__always)
    func enter() {
        #if DEBUG
            confinement.enter(path)
        #endif
    }

    @inline(__always)
    func leave() {
        #if DEBUG
            confinement.leave()
        #endif
    }
}
