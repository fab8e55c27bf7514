import Foundation

/// A value guarded by a lock, for state shared between a job's callers and its run: `Sendable`
/// where its value is, since a value taken out of the lock leaves it.
///
/// `Synchronization.Mutex` would do, but it needs macOS 15 and iOS 18; this package supports
/// macOS 13 and iOS 16 (https://developer.apple.com/documentation/synchronization/mutex).
/// `NSLock` is in Foundation on every platform the package builds for.
package final class Locked<Value> {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value while holding the lock.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

extension Locked: @unchecked Sendable where Value: Sendable {}
