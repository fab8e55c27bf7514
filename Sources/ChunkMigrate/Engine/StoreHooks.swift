import Foundation

/// What a kind of store adds to a job beyond its rows, at the points of the job where the engine
/// calls it; the engine knows nothing else of it.
///
/// A Core Data store's (``CoreDataJobPart``) keeps the store's bookkeeping in each batch, checks
/// the store alongside the job, builds its indexes in the order its check reads them, and runs
/// its steps after the indexes (derived values, external files, R-tree indexes, triggers). A
/// plain SQLite store has none. Every call comes from the job's thread.
protocol StoreHooks: AnyObject {
    /// Destination tables (in capitals) that hold the new store's own rows before the job, which
    /// ``jobStarts()`` replaces: a job into a store with rows elsewhere is refused.
    var tablesWrittenAtStart: Set<String> { get }
    /// The job's start, in the transaction that records it in the destination.
    func jobStarts() throws
    /// In each copy batch's transaction, after its rows are written.
    func afterBatch(entity: Int) throws
    /// A run's copy starts, with entities left to copy; `finished` are the destination tables (in
    /// capitals) no batch of the job writes again.
    func copyStarts(finished: Set<String>) throws
    /// More destination tables are finished while the copy goes on (all of them so far).
    func tablesFinished(_ finished: Set<String>)
    /// The rows are in and the relationships fixed up, before the index builds.
    func rowsIn() throws
    /// The deferred indexes in the order to build them.
    func buildOrder(_ indexes: [(name: String, sql: String)]) -> [(name: String, sql: String)]
    /// Whether an index build sorts with SQLite's helper thread: where it is faster with it and
    /// the second core is free.
    func sortsWithHelper(_ sql: String) -> Bool
    /// An index is built, and committed.
    func indexBuilt(_ name: String)
    /// Every index is built.
    func indexesBuilt()
    /// The steps after the indexes, each run in batches; those done before are left out by
    /// ``FinishingStep/isDone`` at their first batch.
    func finishingSteps() throws -> [FinishingStep]
    /// The tables whose every row a finishing step goes over (the job's work, for progress).
    var finishingTables: [String] { get }
    /// The finishing steps are done: the store is as the job leaves it.
    func storeFinished()
    /// Whether the job checks the store it writes: the check's end on the job's thread is work
    /// of the job (as much as a copied row's in fifty, ``JobWork``).
    var checksStore: Bool { get }
    /// Whether this run ends with a check on its own thread (``MigrationProgress/Phase/check``).
    var checksAtEnd: Bool { get }
    /// The job's end, before its completion record, while its connection still writes.
    func endBeforeCompletion()
    /// The job's end, once it is complete: where its time went goes into `phases`.
    func endAfterCompletion(phases: inout RunPhases)
    /// The run stops or fails before the end: what it started alongside stops.
    func stop()
}

/// A step after the index builds, run in batches, each committed with its progress
/// (``StoreHooks/finishingSteps()``).
struct FinishingStep {
    /// What the step is, as progress names it (`derive Tag.itemCount`, `triggers`).
    var name: String
    /// The table it works on; `nil` for one that spans the store.
    var table: String?
    /// Whether an earlier run did it all.
    var isDone: () throws -> Bool
    /// Runs its next batch of at most `size` rows; true once the step is done.
    var runBatch: (_ size: Int) throws -> Bool
}
