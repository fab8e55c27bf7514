import MigrationJournal

/// How a job runs: batch sizes, memory, validation and the functions its plan calls.
public struct MigrationOptions: Sendable {
    /// A fixed number of source rows per batch; when `nil`, the size adapts to ``batchTimeTarget``.
    /// A batch holds at most `IDMapSegment.maximumKeyCount` (4,194,304) rows, whatever the size.
    public var batchSize: Int?
    /// How long one batch should take when the size adapts. Checkpoints are this far apart.
    public var batchTimeTarget: Duration = .milliseconds(500)
    /// The bounds of an adaptive batch size, and where it starts.
    public var minimumBatchSize = 100
    /// The largest batch an adaptive size grows to. Its source keys are held in memory until it
    /// commits, 8 bytes each (4 MB at this size), and released once the rows are all in
    /// (`Resolver.releaseBatchMemory()`), before the index builds, which use as much.
    public var maximumBatchSize = 500_000
    /// The size of the first adaptive batch.
    public var initialBatchSize = 2_000
    /// The bytes of ID-map keys the cache holds at first (packed: about 2 bytes a key).
    public var idMapCacheBytes = IDMap.defaultCacheBudget
    /// The most the ID-map cache grows to when lookups keep reading segments it evicted; equal
    /// to ``idMapCacheBytes`` for a fixed cache.
    public var idMapCacheLimitBytes = IDMap.defaultCacheLimit
    /// SQLite's page cache per connection, in KiB (`PRAGMA cache_size = -N`).
    public var sqliteCacheKiB = 2_048
    /// Turns on `PRAGMA foreign_keys` in the destination so declared foreign keys are checked on
    /// every row a batch writes.
    public var checkForeignKeys = true
    /// Before each batch commits, compares a checksum of the rows as written with one of the
    /// source values the plan maps them from, storage class included, so that a value SQLite
    /// converted on the way (type affinity turning `'007'` into `7`, say) fails the batch. Reads
    /// each batch twice more. The source side evaluates the plan's expressions a second time, so
    /// every expression must be deterministic (no `random()`, `julianday('now')`, or Swift
    /// function with `isDeterministic: false`), or the checksums differ on correct rows.
    public var verifyChecksums = false
    /// Keeps the `_chunkmigrate_*` checkpoint tables in the destination after the job completes.
    public var keepCheckpointTables = false
    /// Whether a new job may write into destination tables that already hold rows (allocated keys
    /// then follow them). Off by default, so that a second job into the store a finished job
    /// wrote is refused instead of adding a second copy; never allowed for a Core Data plan.
    public var appendToExistingRows = false
    /// Whether a new job drops the secondary indexes (not unique) of the destination tables it
    /// writes and builds them again at the end, by sorting, instead of keeping them batch by
    /// batch. On by default; a plan whose expressions read the destination (`main.`) keeps them.
    public var defersIndexes = true
    /// Whether a Core Data job checks the store it wrote (``CoreDataStoreCheck``) before it
    /// counts as complete... once the rows are in, on a connection and a thread of its own, while
    /// the job builds the indexes and finishes the store; the report is
    /// ``MigrationJob/storeCheck``. On by default.
    public var checksStore = true
    /// Functions the plan's column expressions call.
    public var functions: [SQLFunction] = []
    /// Whether a new job works out the disk it needs (``SpaceEstimate``) and refuses to start,
    /// before writing anything, where the destination's file system has too little free.
    public var checksFreeSpace = true
    /// Whether a new job walks the source's pages for its estimate even where the volume has
    /// room for the bound (``SpaceEstimate/isUpperBound``); off by default, the walk being a few
    /// percent of the copy's time.
    public var estimatesSpaceExactly = false
    /// The most self-references a batch records for the fix-up pass (``Resolver/deferralLimit``);
    /// a test sets it to 0 so that every fix-up scans the source.
    var deferralLimit = Resolver.defaultDeferralLimit
    /// The free bytes of the file system holding a folder, where a test stands in for the real
    /// file system.
    var freeSpace: (@Sendable (String) -> Int64)?

    /// Creates options with the defaults.
    public init(batchSize: Int? = nil, functions: [SQLFunction] = []) {
        self.batchSize = batchSize
        self.functions = functions
    }
}
