/// What an app or a tool does with a job, of either kind: a ``MigrationJob`` (the copy path) or
/// an ``InPlaceMigration``. Both run one run at a time, on a thread of their own with
/// ``run(for:)`` or on the caller's with ``runBlocking(for:)``, stop at a batch boundary when
/// paused, cancelled or out of time, and report their progress the same way.
///
/// ```swift
/// func migrate(_ job: some MigrationRun) async throws -> Bool {
///     let updates = job.progressUpdates()
///     let watcher = Task { for await step in updates { print(step.phase, step.fraction) } }
///     let outcome = try await job.run(for: .seconds(5))
///     await watcher.value
///     return outcome == .complete
/// }
/// ```
public protocol MigrationRun: AnyObject, Sendable {
    /// Runs the job until it is complete, or until `budget` has passed, ``pause()`` is called or
    /// the task is cancelled; it stops only at a batch boundary.
    func run(for budget: Duration?) async throws -> RunOutcome
    /// ``run(for:)`` on the calling thread.
    func runBlocking(for budget: Duration?) throws -> RunOutcome
    /// Asks the job to stop at the next batch boundary. Safe from any thread.
    func pause()
    /// A stream of progress reports, one after each batch; it finishes when the run that follows
    /// ends. Ask for a new stream before each run.
    func progressUpdates() -> AsyncStream<MigrationProgress>
    /// Whether the job is complete.
    var isComplete: Bool { get }
}
