import Foundation

/// What the runs of a job share, for both kinds of job (``MigrationJob``, ``InPlaceMigration``):
/// one run at a time, a run on a thread of its own where a cancelled task becomes a pause, the
/// pause itself, and the progress streams. The kind of job gives the work of one run, which the
/// shell calls with the run's deadline on the run's thread.
///
/// The job's connections are used inside a run only, so that one run at a time is one thread at
/// a time for them.
final class JobShell: Sendable {
    private struct State {
        var pauseRequested = false
        var running = false
        var complete: Bool
        var observers: [Int: AsyncStream<MigrationProgress>.Continuation] = [:]
        var nextObserver = 0
    }

    private let state: Locked<State>
    /// The name of a run's thread, and the file a refused second run names.
    private let threadName: String
    private let file: String
    private let alreadyRunning: String

    /// - Parameters:
    ///   - complete: whether the job is complete already (its streams then end at once).
    ///   - alreadyRunning: the message of a second run refused while one goes.
    init(complete: Bool, threadName: String, file: String, alreadyRunning: String) {
        state = Locked(State(complete: complete))
        self.threadName = threadName
        self.file = file
        self.alreadyRunning = alreadyRunning
    }

    /// Whether the job is complete.
    var isComplete: Bool { state.withLock { $0.complete } }

    /// Whether a pause was asked for since the run began; what a run's loop asks between units.
    var pauseRequested: Bool { state.withLock { $0.pauseRequested } }

    /// Asks the run to stop at its next unit boundary. Safe from any thread.
    func pause() {
        state.withLock { $0.pauseRequested = true }
    }

    /// Runs `work` on a thread of its own, with the deadline `budget` gives; a cancelled task
    /// pauses it. One run at a time: another is refused (``MigrationError`` `busy`).
    func run(for budget: Duration?, _ work: @escaping @Sendable (ContinuousClock.Instant?) throws -> RunOutcome) async throws -> RunOutcome
    {
        try claim()
        defer { endRun() }
        let deadline = budget.map { ContinuousClock.now + $0 }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<RunOutcome, any Error>) in
                let thread = Thread {
                    do {
                        continuation.resume(returning: try work(deadline))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
                thread.name = threadName
                thread.stackSize = 4 << 20
                thread.start()
            }
        } onCancel: {
            pause()
        }
    }

    /// Runs `work` on the calling thread; the same as ``run(for:_:)`` otherwise.
    func runBlocking(for budget: Duration?, _ work: (ContinuousClock.Instant?) throws -> RunOutcome) throws -> RunOutcome {
        try claim()
        defer { endRun() }
        return try work(budget.map { ContinuousClock.now + $0 })
    }

    /// A stream of progress reports, one after each unit of work. It finishes when the run that
    /// follows ends: complete, paused or failed.
    func progressUpdates() -> AsyncStream<MigrationProgress> {
        let (stream, continuation) = AsyncStream<MigrationProgress>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let finished = state.withLock { state in
            if state.complete { return true }
            let id = state.nextObserver
            state.nextObserver += 1
            state.observers[id] = continuation
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
            }
            return false
        }
        if finished { continuation.finish() }
        return stream
    }

    /// Gives `step` to every open stream.
    func publish(_ step: MigrationProgress) {
        let observers = state.withLock { Array($0.observers.values) }
        for observer in observers { observer.yield(step) }
    }

    /// Ends every stream and clears the pause: a run is over (complete, paused or failed).
    func runEnded(complete: Bool) {
        let observers = state.withLock { state in
            if complete { state.complete = true }
            state.pauseRequested = false
            defer { state.observers = [:] }
            return Array(state.observers.values)
        }
        for observer in observers { observer.finish() }
    }

    private func claim() throws {
        let busy = state.withLock { state in
            defer { state.running = true }
            return state.running
        }
        guard !busy else { throw MigrationError(.busy, alreadyRunning, file: file) }
    }

    private func endRun() {
        state.withLock { $0.running = false }
    }
}
