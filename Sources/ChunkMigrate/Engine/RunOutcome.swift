/// Where a job stands after a call to ``MigrationJob/run(for:)``.
public enum RunOutcome: Sendable, Equatable {
    /// Every entity and fix-up is done.
    case complete
    /// The job stopped at a batch boundary: its time budget ran out, it was paused or its task was
    /// cancelled. Resume it later.
    case paused
}
