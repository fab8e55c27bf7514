/// What the job reports after each batch.
public struct MigrationProgress: Sendable, Equatable {
    /// The entity being migrated.
    public var entity: String
    /// What the job is doing: copying rows, the fix-up pass of a deferred relationship, or
    /// building a deferred index.
    public var phase: Phase
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

    /// What a job is doing when it reports progress. Its description is the word a person reads:
    /// `copy`, `fixup <column>`, `index <name>`, and a Core Data store's finishing steps
    /// (`derive List.itemCount`, `rtree Z_RT_Asset_boundedByRect`, `triggers`).
    public enum Phase: Sendable, Equatable, CustomStringConvertible {
        /// Copying the entity's rows, batch by batch.
        case copy
        /// The fix-up pass that sets a deferred relationship (a self-reference or one that closes
        /// a cycle) in the destination column `column`.
        case fixup(column: String)
        /// Building a secondary index the job deferred until the rows were in.
        case index(name: String)
        /// A Core Data store's step after the rows are in: `derive <Entity.attribute>`,
        /// `files <Entity.attribute>`, `rtree <index>`, `triggers`.
        case finishing(step: String)

        public var description: String {
            switch self {
            case .copy: "copy"
            case let .fixup(column): "fixup \(column)"
            case let .index(name): "index \(name)"
            case let .finishing(step): step
            }
        }
    }
}
