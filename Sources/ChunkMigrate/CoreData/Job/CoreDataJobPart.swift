import Foundation
import Logging

/// What a job into a Core Data store adds to the engine's (``StoreHooks``): the store's
/// bookkeeping (``CoreDataBookkeeping``: entity numbers, `Z_PRIMARYKEY`, history and mirroring
/// tables), the check of the store the job writes, alongside it
/// (``CoreDataStoreCheck/Overlapped``), the order of the index builds that check reads, and the
/// steps after the indexes (``CoreDataFinishing``).
///
/// Lives on the job's thread, as the engine does; the check it starts runs on a thread of its own.
final class CoreDataJobPart: StoreHooks {
    let bookkeeping: CoreDataBookkeeping
    private let plan: MigrationPlan
    private let options: MigrationOptions
    private let logger: Logger
    private let database: Database
    private let sourcePath: String
    /// The folder, in the job's journal, of the file of derived values the check computes.
    private let checkScratch: URL
    /// The check of the store, started in this run while it copies or once the rows are in.
    private var storeCheck: CoreDataStoreCheck.Overlapped?
    /// The check once its part over the rows is done, waiting for the job's completion.
    private var ending:
        (
            check: CoreDataStoreCheck.Overlapped, waited: Double,
            rows: (report: CoreDataStoreCheck.Report, seconds: Double, duringCopy: Double, earlyFailure: String?)
        )?
    /// The check's report, once a run completed the job with ``MigrationOptions/checksStore`` on.
    private(set) var checkReport: CoreDataStoreCheck.Report?

    /// Registers the store's SQL functions on `database` (the plan's expressions call them).
    init(
        database: Database, plan: MigrationPlan, mapping: CoreDataMapping, resolver: Resolver, options: MigrationOptions,
        logger: Logger, sourcePath: String, checkScratch: URL
    ) throws {
        bookkeeping = try CoreDataBookkeeping(
            database: database, plan: plan, mapping: mapping, resolver: resolver,
            sourcePath: sourcePath, destinationPath: database.path)
        bookkeeping.logger = { [logger] message in logger.warning("\(message)") }
        self.plan = plan
        self.options = options
        self.logger = logger
        self.database = database
        self.sourcePath = sourcePath
        self.checkScratch = checkScratch
    }

    var tablesWrittenAtStart: Set<String> { bookkeeping.systemTables }

    func jobStarts() throws { try bookkeeping.start() }

    func afterBatch(entity: Int) throws { try bookkeeping.afterBatch(entity: entity) }

    /// While rows are still to be copied: the check started already, to check each table the
    /// job finishes while it copies the others (``CoreDataStoreCheck/Overlapped``). It reads
    /// those tables without locks, which holds because nothing writes them again before the
    /// copy is over: a table is finished once every entity writing it is complete and none has
    /// a relationship the fix-up pass sets.
    func copyStarts(finished: Set<String>) throws {
        guard options.checksStore, storeCheck == nil else { return }
        // Reads without locks hold only in a rollback journal (they ignore a WAL) and where no
        // commit moves pages (auto_vacuum FULL moves pages of any table into freed ones).
        let mode = try database.scalar("PRAGMA main.journal_mode").text?.lowercased()
        let vacuum = try database.scalar("PRAGMA main.auto_vacuum").integer
        let entities = mode != "wal" && vacuum != 1 ? try? CoreDataEntities.read(database, file: database.path) : nil
        storeCheck = CoreDataStoreCheck.Overlapped(
            path: database.path, cacheKiB: options.sqliteCacheKiB,
            indexes: try CheckpointStore.deferredIndexes(in: database), entities: entities,
            scratch: checkScratch)
        storeCheck?.tablesFinished(finished)
    }

    func tablesFinished(_ finished: Set<String>) { storeCheck?.tablesFinished(finished) }

    /// Once the rows are in: the check of the store (started with the copy, or now) goes on on a
    /// connection and thread of its own while the job builds the indexes and finishes the store.
    /// The destination stays in the job's rollback journal; where a read of the check holds up a
    /// write of the job, the check gives way.
    func rowsIn() throws {
        let missing = bookkeeping.missingExternalFiles.withLock { $0 }
        if missing > 0 {
            logger.warning(
                "\(missing) values named an external file the source does not have, in an attribute that no longer keeps values in files: written as no value, as Core Data reads none there",
                metadata: ["file": "\(CoreDataFinishing.externalDataFolder(of: sourcePath).path)"])
        }
        guard options.checksStore else { return }
        if storeCheck == nil {
            storeCheck = CoreDataStoreCheck.Overlapped(
                path: database.path, cacheKiB: options.sqliteCacheKiB,
                indexes: try CheckpointStore.deferredIndexes(in: database), entities: nil,
                scratch: checkScratch)
        }
        // Nothing reads the store without locks from here on.
        storeCheck?.copyOver()
        // The store stays in its rollback journal, where each page the index builds write is
        // written once (WAL writes it twice: about 0.13 s of 1.4 s at 1M items). A read of the
        // check holds the job's writes up, so the job asks it to give way, and it reads again
        // after the job's commit.
        let check = storeCheck
        database.onBusy { count in
            check?.yieldToJob()
            usleep(100)
            return count < CoreDataStoreCheck.Overlapped.busyPolls
        }
        try storeCheck?.rowsIn()
        // The derived values the check computes alongside, the finishing steps write.
        bookkeeping.finishing.precomputed = { [weak self] value in self?.storeCheck?.expectedValues(for: value) }
    }

    /// Core Data's indexes on `Z_ENT` first, while the check's part over the rows, if any, may
    /// still read the tables; then those a derived value reads, whose values the check can then
    /// compute while the job builds the rest.
    func buildOrder(_ indexes: [(name: String, sql: String)]) -> [(name: String, sql: String)] {
        let derivations = storeCheck == nil ? [] : derivationReads()
        func readByDerivation(_ sql: String) -> Bool {
            SQL.leadingColumn(ofIndex: sql).map(derivations.contains) ?? false
        }
        let withoutHelper = indexes.filter { !CheckpointStore.sortsWithHelper($0.sql) }
        let read = indexes.filter { CheckpointStore.sortsWithHelper($0.sql) && readByDerivation($0.sql) }
        let others = indexes.filter { CheckpointStore.sortsWithHelper($0.sql) && !readByDerivation($0.sql) }
        return withoutHelper + read + others
    }

    /// The columns the plan's derived values read, `TABLE.COLUMN` in capitals.
    private func derivationReads() -> Set<String> {
        (plan.coreData?.derived ?? []).reduce(into: []) { columns, value in
            columns.formUnion((try? CoreDataDerivation.columnsRead(by: value.value, of: value.table, in: database)) ?? [])
        }
    }

    /// The second core sorts too where no check runs beside the job: with the check on it, the
    /// builds took as long with the helper as without, and 8% (1M items) to 19% (10M) more of
    /// the job's CPU (Tools/BENCHMARKS.md, "The second core: the check's or the sorter's"). A
    /// check whose thread has ended (it failed early) leaves the core free.
    func sortsWithHelper(_ sql: String) -> Bool {
        CheckpointStore.sortsWithHelper(sql) && storeCheck?.hasEnded ?? true
    }

    func indexBuilt(_ name: String) { storeCheck?.indexBuilt(name) }

    func indexesBuilt() { storeCheck?.indexesBuilt() }

    /// A Core Data store's steps after the rows and indexes (``CoreDataFinishing``): derived
    /// values, external files, R-tree indexes, then the triggers back.
    func finishingSteps() throws -> [FinishingStep] {
        let finishing = bookkeeping.finishing
        return try finishing.steps().map { step in
            FinishingStep(
                name: step.name, table: step.table, isDone: { try finishing.isDone(step) },
                runBatch: { size in try finishing.runBatch(step, size: size) })
        }
    }

    var finishingTables: [String] { (plan.coreData?.derived ?? []).map(\.table) }

    func storeFinished() { storeCheck?.storeFinished() }

    var checksStore: Bool { options.checksStore }

    var checksAtEnd: Bool { storeCheck != nil }

    /// The check's part over the rows done (and its connection closed) before the job's end
    /// changes the journal mode back; the rest once the job is complete.
    func endBeforeCompletion() {
        guard let check = storeCheck else { return }
        storeCheck = nil
        let started = ContinuousClock.now
        let rows = check.rows()
        ending = (check, (ContinuousClock.now - started) / .seconds(1), rows)
    }

    func endAfterCompletion(phases: inout RunPhases) {
        guard let (check, waited, rows) = ending else { return }
        ending = nil
        phases.check += waited
        let started = ContinuousClock.now
        checkReport = separatingCarried(rows.report.merged(with: check.rest()))
        phases.check += (ContinuousClock.now - started) / .seconds(1)
        phases.checkAlongside = rows.seconds
        phases.checkDuringCopy = rows.duringCopy
        if let failure = rows.earlyFailure {
            logger.warning(
                "the store check could not check the finished tables while the job copied; it checked them after the copy instead",
                metadata: ["cause": "\(failure)", "file": "\(database.path)"])
        }
    }

    func stop() {
        storeCheck?.cancel()
        storeCheck = nil
        ending?.check.cancel()
        ending = nil
    }

    /// The check's violations the source already had, carried as the source had them: the source
    /// is checked, under its own model, only where the migrated store breaks an invariant
    /// (``CoreDataStoreCheck/separatingCarried(_:source:model:names:tables:)``).
    private func separatingCarried(_ report: CoreDataStoreCheck.Report) -> CoreDataStoreCheck.Report {
        guard !report.findings.isEmpty else { return report }
        let model = (try? CoreDataModel.read(store: URL(fileURLWithPath: database.path))) ?? nil
        let result = CoreDataStoreCheck.separatingCarried(
            report, source: URL(fileURLWithPath: sourcePath),
            names: .init(plan: plan, destination: model))
        for line in result.carried {
            logger.notice("carried as the source had it: \(line)")
        }
        return result
    }
}
