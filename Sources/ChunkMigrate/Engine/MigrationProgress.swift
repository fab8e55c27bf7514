/// What the job reports after each batch.
public struct MigrationProgress: Sendable, Equatable {
    /// The entity being migrated.
    public var entity: String
    /// `copy`, or `fixup <column>` for the fix-up pass of a deferred relationship.
    public var phase: String
    /// The entity's batch number.
    public var batch: UInt64
    /// Source rows of the entity read so far, and in all. The total is estimated from the
    /// source's key range and the density of the keys read so far (counting would read the whole
    /// table first); it is exact once the entity is complete.
    public var rowsDone: Int64
    /// Source rows of the entity in all (estimated until it is complete).
    public var rowsTotal: Int64
    /// Rows of every entity read so far, and in all.
    public var jobRowsDone: Int64
    /// Source rows of every entity in all (estimated).
    public var jobRowsTotal: Int64
    /// Source rows read per second in this run.
    public var rowsPerSecond: Double
    /// Time to the end of the job at the current rate, when it can be estimated.
    public var estimatedRemaining: Duration?
    /// The batch size the next batch will use.
    public var batchSize: Int
}
