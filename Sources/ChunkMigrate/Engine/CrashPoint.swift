#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Named instants inside a batch where the kill-and-resume tests stop the process with SIGKILL,
/// chosen with the environment variable `CHUNKMIGRATE_KILL_AT=POINT:ENTITY:BATCH`
/// (for example `after-commit:Message:3`). Unset, it costs one comparison per batch. The kill
/// tests go through ``allCases``: a point no test kills at fails them.
package enum CrashPoint: String, CaseIterable, Sendable {
    /// A new job's journal exists; the transaction that records the job in the destination is
    /// not committed yet (`before-start-commit:job:0`).
    case beforeStartCommit = "before-start-commit"
    /// The segment is durable, the transaction not yet committed.
    case afterSegment = "after-segment"
    /// Rows and checkpoint are written, the transaction not yet committed.
    case beforeCommit = "before-commit"
    /// The transaction is committed, the log record not yet written.
    case afterCommit = "after-commit"
    /// Half of the log record is written.
    case midRecord = "mid-record"
    /// A fix-up batch is committed, its log record not yet written.
    case afterFixupCommit = "after-fixup-commit"
    /// A deferred index is built again and committed (`after-index:INDEX:0`).
    case afterIndex = "after-index"
    /// A batch of a Core Data store's step after the rows is committed (`after-step:derive
    /// Tag.itemCount:1`, `after-step:triggers:1`).
    case afterStep = "after-step"
    /// The log records the job as complete; the destination still has its checkpoint tables and
    /// the job's journal mode (`after-complete:job:0`).
    case afterComplete = "after-complete"

    private struct Target {
        var point: CrashPoint
        var entity: String
        var batch: UInt64
    }

    private static let target: Target? = {
        guard let value = getenv("CHUNKMIGRATE_KILL_AT").map({ String(cString: $0) }) else { return nil }
        let parts = value.split(separator: ":").map(String.init)
        guard parts.count == 3, let point = CrashPoint(rawValue: parts[0]), let batch = UInt64(parts[2]) else { return nil }
        return Target(point: point, entity: parts[1], batch: batch)
    }()

    /// Whether the process should stop here.
    static func isArmed(_ point: CrashPoint, entity: String, batch: UInt64) -> Bool {
        guard let target else { return false }
        return target.point == point && target.entity == entity && target.batch == batch
    }

    /// Kills the process with SIGKILL when armed here: no cleanup, no flush, as the OS would.
    static func check(_ point: CrashPoint, entity: String, batch: UInt64) {
        if isArmed(point, entity: entity, batch: batch) { kill(getpid(), SIGKILL) }
    }

    /// Kills the process now.
    static func killNow() -> Never {
        kill(getpid(), SIGKILL)
        fatalError("SIGKILL did not stop the process")
    }
}
