import MigrationJournal

/// A scalar SQL function implemented in Swift, callable from a plan's column expressions, for
/// transforms SQL cannot express (decoding a binary property list, say).
///
/// ```swift
/// let upper = SQLFunction(name: "shout", argumentCount: 1) { arguments in
///     guard case let .text(text) = arguments[0] else { return .null }
///     return .text(text.uppercased())
/// }
/// // plan: "columns": { "title": "shout(title)" }
/// ```
public struct SQLFunction: Sendable {
    /// The name column expressions call it by.
    public var name: String
    /// The number of arguments, or -1 for any.
    public var argumentCount: Int
    /// Whether the same arguments always give the same result (lets SQLite optimize; required
    /// for the output to be deterministic).
    public var isDeterministic: Bool
    /// The function. A thrown error fails the batch, and its description is the message.
    public var body: @Sendable ([SQLiteValue]) throws -> SQLiteValue

    public init(name: String, argumentCount: Int, isDeterministic: Bool = true,
                body: @escaping @Sendable ([SQLiteValue]) throws -> SQLiteValue) {
        self.name = name
        self.argumentCount = argumentCount
        self.isDeterministic = isDeterministic
        self.body = body
    }
}

/// How a job runs: batch sizes, memory, validation and the functions its plan calls.
public struct MigrationOptions: Sendable {
    /// A fixed number of source rows per batch; when `nil`, the size adapts to ``batchTimeTarget``.
    public var batchSize: Int?
    /// How long one batch should take when the size adapts. Checkpoints are this far apart.
    public var batchTimeTarget: Duration = .milliseconds(500)
    /// The bounds of an adaptive batch size, and where it starts.
    public var minimumBatchSize = 100
    public var maximumBatchSize = 250_000
    public var initialBatchSize = 2_000
    /// The most bytes of decoded ID-map segments kept in memory.
    public var idMapCacheBytes = IDMap.defaultCacheBudget
    /// SQLite's page cache per connection, in KiB (`PRAGMA cache_size = -N`).
    public var sqliteCacheKiB = 8_192
    /// Turns on `PRAGMA foreign_keys` in the destination so declared foreign keys are checked on
    /// every row a batch writes.
    public var checkForeignKeys = true
    /// Keeps the `_chunkmigrate_*` checkpoint tables in the destination after the job completes.
    public var keepCheckpointTables = false
    /// Functions the plan's column expressions call.
    public var functions: [SQLFunction] = []

    /// Creates options with the defaults.
    public init(batchSize: Int? = nil, functions: [SQLFunction] = []) {
        self.batchSize = batchSize
        self.functions = functions
    }
}

/// Where a job stands after a call to ``MigrationJob/run(for:)``.
public enum RunOutcome: Sendable, Equatable {
    /// Every entity and fix-up is done.
    case complete
    /// The job stopped at a batch boundary: its time budget ran out, it was paused or its task was
    /// cancelled. Resume it later.
    case paused
}

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
    public var rowsTotal: Int64
    /// Rows of every entity read so far, and in all.
    public var jobRowsDone: Int64
    public var jobRowsTotal: Int64
    /// Source rows read per second in this run.
    public var rowsPerSecond: Double
    /// Time to the end of the job at the current rate, when it can be estimated.
    public var estimatedRemaining: Duration?
    /// The batch size the next batch will use.
    public var batchSize: Int
}
