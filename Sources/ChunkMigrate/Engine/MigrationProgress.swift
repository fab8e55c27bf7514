/// What the job reports after each batch, and once more when it is complete.
///
/// ``fraction`` is the whole job's progress, the one to show: from 0 to 1, it never goes back,
/// and it is 1 only in the report that says the job is complete. It is a fraction of time, each
/// phase weighted by what it costs on this machine as the job measures it (index builds grow as
/// `n log n`, faster than the copy), so that it does not reach its end with the index builds
/// still to come. ``phase`` and ``table`` say what the job is on, for a view that names it.
public struct MigrationProgress: Sendable, Equatable {
    /// The entity being migrated, or for a step after the copy, the entity that writes the table
    /// it works on; for an in-place job, the step's label.
    public var entity: String
    /// What the job is doing: copying rows, the fix-up pass of a deferred relationship,
    /// building a deferred index, a Core Data store's finishing steps, the store check's end.
    public var phase: Phase
    /// The destination table the phase works on (the entity's, the index's, the step's); `nil`
    /// for a step of the whole store (triggers, the check).
    public var table: String? = nil
    /// The whole job's fraction done, from 0 to 1: monotone over the job (a resumed job starts
    /// from where it stands), and 1 only once it is complete.
    public var fraction: Double = 0
    /// The entity's batch number (in place: the step's, in this run).
    public var batch: UInt64
    /// Source rows of the entity read so far, and in all. The total is estimated from the
    /// source's key range and the density of the keys read so far (counting would read the whole
    /// table first); it is exact once the entity is complete. In place, these and ``jobRowsDone``
    /// and ``jobRowsTotal`` are the step's table's rowids: the last done and the largest.
    public var rowsDone: Int64
    /// Source rows of the entity in all (estimated until it is complete).
    public var rowsTotal: Int64
    /// Rows of every entity read so far, and in all.
    public var jobRowsDone: Int64
    /// Source rows of every entity in all (estimated).
    public var jobRowsTotal: Int64
    /// Source rows read per second in this run.
    public var rowsPerSecond: Double
    /// Time to the end of the job: the work left in every phase, at what each costs on this
    /// machine as the job measures it; `nil` before the first batch.
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
        /// The end of the store check: the part that ran beside the job, then the rest.
        case check
        /// A step of an in-place job (``InPlaceMigration``): `step` is its label (`update ZITEM`,
        /// `rebuild ZNOTE`, `index ZITEM_ZFOLDER_INDEX`). Its rows are counted by rowid: the
        /// last rowid done and the table's largest.
        case inPlace(step: String)
        /// The job is complete: the last report, whose fraction is 1.
        case complete

        /// Whether this is a fix-up pass.
        var isFixup: Bool {
            if case .fixup = self { return true }
            return false
        }

        public var description: String {
            switch self {
            case .copy: "copy"
            case let .fixup(column): "fixup \(column)"
            case let .index(name): "index \(name)"
            case let .finishing(step): step
            case .check: "check"
            case let .inPlace(step): "in place \(step)"
            case .complete: "complete"
            }
        }
    }
}
