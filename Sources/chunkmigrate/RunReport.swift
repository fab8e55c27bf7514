import ChunkMigrate

/// What `run`, `resume` and `demo` print with `--json`: the job's status, and what this run did.
struct RunReport: Encodable {
    /// This run's numbers.
    struct Run: Encodable {
        /// Source rows read by this run.
        var sourceRows: Int64
        /// Wall time of this run.
        var seconds: Double
        /// The most memory the process had resident (`getrusage`), in bytes.
        var peakResidentBytes: Int64
        /// Where the run's time went, phase by phase (copy, fix-up, indexes, finishing,
        /// completion, the store check); together they are `seconds` but for opening the job.
        var phases: RunPhases?
    }

    var status: JobStatus
    var run: Run

    private enum CodingKeys: String, CodingKey { case run }

    /// The status's fields at the top level (as `status --json` prints them), plus `run`.
    func encode(to encoder: any Encoder) throws {
        try status.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(run, forKey: .run)
    }
}
