/// Where one run of a job spent its time, phase by phase, in seconds of wall time on the job's
/// thread; together they are the run.
public struct RunPhases: Sendable, Codable, Equatable {
    /// Rows copied, batch by batch.
    public var copy: Double = 0
    /// Deferred relationships set (self-references, cycles).
    public var fixup: Double = 0
    /// The deferred secondary indexes built.
    public var indexes: Double = 0
    /// A Core Data store's steps after the rows: derived values, external files, R-tree
    /// indexes, triggers.
    public var finishing: Double = 0
    /// The checkpoint tables removed and the journal mode given back.
    public var completion: Double = 0
    /// The store check's time on the job's thread: waiting for the part that ran alongside,
    /// then the rest.
    public var check: Double = 0
    /// The store check's part over the rows, on its own thread, alongside the indexes and the
    /// finishing steps (not counted in the run's time).
    public var checkAlongside: Double = 0
    /// The store check's part over the tables the job had finished, on its own thread while the
    /// job copied the others (not counted in the run's time).
    public var checkDuringCopy: Double = 0

    public init() {}
}
