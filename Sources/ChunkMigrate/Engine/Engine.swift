import Foundation
import Logging
import MigrationJournal

/// Runs a job on the calling thread: entities in dependency order, batch by batch, then the
/// fix-up pass, each batch committed with its checkpoint and then logged.
///
/// Not `Sendable`: it owns the destination connection (with the source attached read-only as
/// `src`), the journal writer and the ID map. ``MigrationJob`` confines it to one thread.
final class Engine {
    /// What the log and the checkpoint say of one entity.
    struct EntityState {
        var batch: UInt64 = 0
        var cursor: Int64?
        var rowsRead: Int64 = 0
        var rowsWritten: Int64 = 0
        var rowsSkipped: Int64 = 0
        var complete = false
        /// The source's smallest and largest key, when it has rows.
        var keyRange: ClosedRange<Int64>?
        /// Rows of the entity in all: exact once it is complete, estimated from the key range and
        /// the density of keys read so far before that.
        var estimatedTotal: Int64 {
            if complete { return rowsRead }
            guard let keyRange else { return rowsRead }
            let span = Double(keyRange.upperBound) - Double(keyRange.lowerBound) + 1
            let ceiling = Double(Int64.max / 1024)
            guard let cursor, rowsRead > 0 else { return Int64(min(span, ceiling)) }
            let done = Double(cursor) - Double(keyRange.lowerBound) + 1
            let left = Double(keyRange.upperBound) - Double(cursor)
            return rowsRead + Int64(min(ceiling, max(0, left * Double(rowsRead) / max(1, done))))
        }
        /// Fix-ups: column -> last fix-up batch.
        var fixupBatch: [String: UInt64] = [:]
        /// The rows the last batch read and how long it took, from which a resumed run sizes its
        /// first batch.
        var lastBatch: (rows: Int, duration: Duration)?

        /// Counts a committed batch.
        mutating func apply(_ record: BatchRecord) {
            batch = record.batch
            cursor = record.lastSourceKey
            rowsRead += Int64(record.rowsRead)
            rowsWritten += Int64(record.rowsWritten)
            rowsSkipped += Int64(record.rowsSkipped)
            lastBatch = (Int(record.rowsRead), .microseconds(record.durationMicros))
        }
    }

    let plan: MigrationPlan
    let order: ExecutionOrder
    let options: MigrationOptions
    let logger: Logger
    /// The destination with the source attached, and what each store's schema says.
    let stores: Stores
    let database: Database
    let journal: JournalWriter
    let idMap: IDMap
    let resolver: Resolver
    /// Core Data's bookkeeping, when the plan migrates a Core Data store.
    let coreData: CoreDataBookkeeping?
    private let checkpoints: CheckpointStore
    /// The source store's file.
    private let sourcePath: String
    private var copiers: [Int: EntityCopier] = [:]
    /// The copy batches, by entity and batch number, whose deferred self-references this run
    /// recorded in ``CopierSQL/deferralTable`` as it committed them: their fix-up reads those instead of
    /// scanning the source. A batch an earlier run committed, or one that recorded none because
    /// it deferred too many (``Resolver/deferralLimit``), is fixed up from the source.
    private var recordedDeferrals: Set<[UInt64]> = []
    /// The fix-up batches of this run that read recorded references rather than the source.
    private(set) var fixupsFromRecords = 0
    private var recordDeferral: Statement?

    private var relationshipIndexes: [[String: Int]] = []
    private(set) var states: [EntityState]
    private(set) var batchSize: Int
    /// Whether some relationship refers to the entity, by entity index.
    private var isRelationshipTarget: [Bool] = []
    private let clock = ContinuousClock()
    /// The check of a Core Data store, started in this run once the rows are in.
    private var storeCheck: CoreDataStoreCheck.Overlapped?
    /// The check's report, once a run completed the job with ``MigrationOptions/checksStore`` on.
    private(set) var checkReport: CoreDataStoreCheck.Report?
    /// Where this run's time went, phase by phase.
    private(set) var phases = RunPhases()
    /// The job's work, phase by phase, for its fraction and the time left.
    private var work = JobWork()
    /// The units of the index builds and finishing steps this run did.
    private var indexUnitsDone = 0.0, finishingUnitsDone = 0.0
    /// The deferred indexes left at the start of this run, with the rows of their tables'
    /// entities: the index builds' work.
    private var indexesLeft: [(name: String, table: String)] = []
    /// The entities writing each destination table, by its name in capitals: each progress
    /// report sums their rows for every index left, so this is looked up, not searched.
    private lazy var writers: [String: [Int]] = Dictionary(grouping: plan.entities.indices, by: { plan.entities[$0].destination.table.uppercased() })

    init(plan: MigrationPlan, options: MigrationOptions, logger: Logger, stores: Stores,
         journal: JournalWriter, idMap: IDMap, sourcePath: String) throws {
        let database = stores.database
        self.plan = plan
        self.options = options
        self.logger = logger
        self.stores = stores
        self.database = database
        self.journal = journal
        self.idMap = idMap
        self.sourcePath = sourcePath
        let resolver = Resolver(idMap: idMap)
        resolver.deferralLimit = options.deferralLimit
        self.resolver = resolver
        // Every function first: the resolver's read their relationships when called, and the order
        // below prepares the plan's expressions, which may call any of them.
        try resolver.register(on: database)
        try ValueFunctions(resolver: resolver).register(on: database)
        for function in options.functions {
            let body = function.body
            // One arguments array per function, emptied and refilled for each row, so its storage
            // is allocated once rather than per call.
            var arguments: [SQLiteValue] = []
            try database.createFunction(function.name, argumentCount: function.argumentCount,
                                        deterministic: function.isDeterministic) { call in
                arguments.removeAll(keepingCapacity: true)
                for index in 0..<call.count { arguments.append(call.value(index)) }
                call.result(try body(arguments))
            }
        }
        coreData = try plan.coreData.map { mapping in
            try CoreDataBookkeeping(database: database, plan: plan, mapping: mapping, resolver: resolver,
                                    sourcePath: sourcePath, destinationPath: database.path)
        }
        coreData?.logger = { [logger] message in logger.warning("\(message)") }
        // An expression reading another entity's destination table makes that entity a dependency.
        self.order = plan.executionOrder(reads: try Self.destinationReads(of: plan, database: database))
        if let conflict = order.conflicts.first {
            let reader = plan.entities[conflict[0]], writer = plan.entities[conflict[1]]
            throw MigrationError(.invalidPlan,
                "entities[\(conflict[0])]: an expression reads the destination table \(writer.destination.table), which entity \(writer.name) writes, but \(writer.name) depends on \(reader.name), so it cannot run first; resolve the value through a relationship instead",
                entity: reader.name)
        }
        self.checkpoints = try CheckpointStore(database: database)
        self.states = Array(repeating: EntityState(), count: plan.entities.count)
        self.batchSize = min(options.batchSize ?? options.initialBatchSize, IDMapSegment.maximumKeyCount)

        let names = Dictionary(plan.entities.enumerated().map { ($1.name, UInt32($0)) }, uniquingKeysWith: { a, _ in a })
        for (entityIndex, entity) in plan.entities.enumerated() {
            var indexes: [String: Int] = [:]
            for (column, relationship) in entity.sortedRelationships {
                indexes[column] = resolver.relationships.count
                resolver.relationships.append(.init(
                    owner: UInt32(entityIndex), entity: entity.name, column: column, sourceColumn: relationship.from,
                    target: names[relationship.to] ?? 0, targetName: relationship.to,
                    policy: relationship.missing,
                    deferred: order.isDeferred(entity: entityIndex, column: column)))
            }
            relationshipIndexes.append(indexes)
        }
        // A de-duplicated entity is looked up by value, never through its ID map.
        isRelationshipTarget = plan.entities.indices.map { entity in
            plan.entities[entity].distinct == nil && resolver.relationships.contains { Int($0.target) == entity }
        }
    }

    /// For each entity, the other entities whose destination tables its expressions and filter
    /// read (`main.<table>`): they must run before it, or it would read them empty, so the order
    /// takes them as dependencies. An expression SQLite rejects is left to the plan check.
    static func destinationReads(of plan: MigrationPlan, database: Database) throws -> [Int: Set<Int>] {
        var writers: [String: Set<Int>] = [:]
        for (index, entity) in plan.entities.enumerated() { writers[entity.destination.table.lowercased(), default: []].insert(index) }
        var reads: [Int: Set<Int>] = [:]
        for (index, entity) in plan.entities.enumerated() {
            let from = "src.\(SQL.quote(entity.source.table)) AS s"
            var statements = entity.columns.values.filter { $0.range(of: "main.", options: .caseInsensitive) != nil }
                .map { "SELECT (\($0)) FROM \(from)" }
            if let condition = entity.source.where, condition.range(of: "main.", options: .caseInsensitive) != nil {
                statements.append("SELECT 1 FROM \(from) WHERE (\(condition))")
            }
            for sql in statements {
                guard let tables = try? database.tablesRead(in: "main", preparing: sql) else { continue }
                for table in tables { reads[index, default: []].formUnion((writers[table.lowercased()] ?? []).subtracting([index])) }
            }
        }
        return reads
    }

    /// Prepares every entity's statements; a plan error (unknown table or column, an expression
    /// SQLite rejects, a missing function) surfaces here, before any batch is written.
    func prepare() throws {
        let check = PlanCheck(plan: plan, order: order, stores: stores)
        try database.execute("""
            CREATE TEMP TABLE IF NOT EXISTS \(CopierSQL.deferralTable) (
              entity INTEGER NOT NULL, relationship INTEGER NOT NULL, batch INTEGER NOT NULL,
              own INTEGER NOT NULL, foreign_key INTEGER NOT NULL,
              PRIMARY KEY (entity, relationship, batch, own)) WITHOUT ROWID;
            PRAGMA temp.cache_size = -256;
            """)
        recordDeferral = try database.prepare("INSERT OR IGNORE INTO temp.\(CopierSQL.deferralTable) VALUES (?1, ?2, ?3, ?4, ?5)")
        for (index, entity) in plan.entities.enumerated() {
            let access = try check.check(entity: index)
            do {
                if let distinct = entity.distinct {
                    resolver.naturalKeys[UInt32(index)] = try database.prepare(
                        "SELECT \(SQL.key(entity.destination.key)) FROM main.\(SQL.quote(entity.destination.table)) "
                        + "WHERE \(SQL.quote(distinct.destination)) = ?1 LIMIT 1")
                }
                let copier = try EntityCopier(database: database, entity: entity, index: UInt32(index),
                                              relationshipIndexes: relationshipIndexes[index],
                                              byValue: Set(entity.sortedRelationships.filter { plan.isDistinct($0.relationship.to) }.map(\.column)),
                                              sourceAccess: access.source,
                                              destinationAccess: access.destination,
                                              assignsNextRowid: try stores.destination.table(entity.destination.table)?
                                                  .assignsNextRowid(forKey: entity.destination.key) ?? true,
                                              verifyChecksums: options.verifyChecksums)
                try copier.prepareFixups(database: database, deferred: order.deferred[index] ?? [],
                                         relationshipIndexes: relationshipIndexes[index],
                                         selfReferences: Set(entity.sortedRelationships.filter { $0.relationship.to == entity.name }.map(\.column)))
                try check.checkWalksInKeyOrder(copier)
                copiers[index] = copier
            } catch let error as SQLiteError {
                throw MigrationError(.invalidPlan, "SQLite rejects the statements of this entity: \(error.message)",
                                     entity: entity.name, file: nil, sql: error.sql, cause: error)
            }
        }
    }

    // MARK: Resume

    /// Makes the log agree with the destination's checkpoint, which is the truth: rebuilds the
    /// record of a batch that committed but was not logged, deletes segments of batches that
    /// never committed, and refuses a destination that is behind the log.
    func reconcile() throws {
        for (index, entity) in plan.entities.enumerated() {
            let entityIndex = UInt32(index)
            let logged = journal.log.entities[index]
            let checkpoint = try checkpoints.copyBatch(entity: entityIndex)
            let committed = checkpoint?.batch ?? 0
            if logged.lastBatch + 1 == committed, let checkpoint {
                if checkpoint.rowsWritten > 0 {
                    guard try journal.segmentCRC(entity: entityIndex, batch: committed) == checkpoint.segmentCRC else {
                        throw MigrationError(.journal,
                            "batch \(committed) is committed in the destination but its ID-map segment is missing or damaged; the journal cannot be repaired",
                            entity: entity.name, batch: committed,
                            file: journal.layout.segment(entity: entityIndex, batch: committed))
                    }
                }
                logger.info("rebuilding the log record of a committed batch", metadata: ["entity": "\(entity.name)", "batch": "\(committed)"])
                try journal.append(.batch(checkpoint))
            } else if logged.lastBatch > committed {
                throw MigrationError(.mismatch,
                    "the journal records \(logged.lastBatch) batches but the destination's checkpoint only \(committed): this destination is not the one the job wrote (restored from a copy?)",
                    entity: entity.name, file: database.path)
            } else if logged.lastBatch != committed {
                throw MigrationError(.journal,
                    "the destination has committed batch \(committed) but the log ends at batch \(logged.lastBatch); the journal has lost records",
                    entity: entity.name, file: journal.layout.log)
            }
            try journal.removeSegments(entity: entityIndex, after: committed)

            for column in (order.deferred[index] ?? []).sorted() {
                let fixup = try checkpoints.fixupBatch(entity: entityIndex, column: column)
                let done = fixup?.batch ?? 0
                let inLog = logged.fixupBatches[column] ?? 0
                if inLog + 1 == done, let fixup {
                    try journal.append(.fixup(fixup))
                } else if inLog != done {
                    throw MigrationError(.mismatch,
                        "the journal records \(inLog) fix-up batches of \(column) but the destination \(done)",
                        entity: entity.name, column: column, file: database.path)
                }
            }
        }
        loadStates()
        for case let .batch(batch) in journal.log.records {
            try idMap.add(batch)
            // A lost segment is a lost piece of the ID map: refuse rather than resolve around it.
            if try batch.rowsWritten > 0 && !journal.hasSegment(entity: batch.entity, batch: batch.batch) {
                throw MigrationError(.journal,
                    "the ID-map segment of this batch is missing: the destination keys of its rows are lost, so relationships to them cannot be resolved. Restore the journal directory from a backup, or start the job again into a fresh destination (`chunkjournal verify` lists what else is damaged)",
                    entity: plan.entities[Int(batch.entity)].name, batch: batch.batch,
                    file: journal.layout.segment(entity: batch.entity, batch: batch.batch))
            }
        }
    }

    /// Rebuilds per-entity progress from the log.
    private func loadStates() {
        states = journal.log.entities.map { logged in
            var state = EntityState()
            state.batch = logged.lastBatch
            state.cursor = logged.cursor
            state.rowsRead = Int64(logged.rowsRead)
            state.rowsWritten = Int64(logged.rowsWritten)
            state.rowsSkipped = Int64(logged.rowsSkipped)
            state.complete = logged.isComplete
            state.fixupBatch = logged.fixupBatches
            state.lastBatch = logged.lastBatchRecord.map { (Int($0.rowsRead), .microseconds($0.durationMicros)) }
            return state
        }
    }

    // MARK: Running

    /// Runs until the job is complete, `shouldStop` returns true, or `deadline` passes; checks
    /// both between batches only.
    func run(deadline: ContinuousClock.Instant?, shouldStop: @escaping () -> Bool,
             report: (MigrationProgress) -> Void) throws -> RunOutcome {
        if journal.log.recordsCompletion {
            try CheckpointStore.finish(in: database, keepTables: options.keepCheckpointTables)
            return .complete
        }
        try journal.append(.started(atMillis: Self.nowMillis(), processID: ProcessInfo.processInfo.processIdentifier))
        try readKeyRanges()
        indexesLeft = try CheckpointStore.deferredIndexes(in: database).compactMap { index in
            CoreDataStoreCheck.Overlapped.leadingColumn(index.sql)?.split(separator: ".").first.map { (index.name, String($0)) }
        }
        // The copy's pace so far, from the batches the log records: a resumed job's fraction
        // and time left go on from where the runs before left them.
        var logged = (rows: 0.0, seconds: 0.0)
        for case let .batch(batch) in journal.log.records {
            logged.rows += Double(batch.rowsRead)
            logged.seconds += Double(batch.durationMicros) / 1e6
        }
        work.did(logged.rows, of: .copy, in: logged.seconds)
        var run = PhaseLoop(deadline: deadline, shouldStop: shouldStop)
        sizeFirstBatchFromLastRun()
        // Each batch's commit waits for its pages to reach the disk: most are on their way by then.
        let writeback = database.startWriteback()
        // A run that stops or fails before the end stops the check it started.
        defer {
            writeback?.stop()
            storeCheck?.cancel()
            storeCheck = nil
            database.waitWhenBusy()
        }
        do {
            try startStoreCheckDuringCopy()
            guard try timed(\.copy, try copyEntities(&run, report: report)) == .complete else { return .paused }
            // The batches' keys serve the copy only (a batch of 500,000 rows keeps 4 MB of them),
            // the ID map's cache the fix-up pass as well: the memory goes to each in turn.
            resolver.releaseBatchMemory()
            guard try timed(\.fixup, try fixUpDeferredRelationships(&run, report: report)) == .complete
            else { return .paused }
            if let missing = coreData?.missingExternalFiles.withLock({ $0 }), missing > 0 {
                logger.warning("\(missing) values named an external file the source does not have, in an attribute that no longer keeps values in files: written as no value, as Core Data reads none there",
                               metadata: ["file": "\(CoreDataFinishing.externalDataFolder(of: sourcePath).path)"])
            }
            // The ID map's cache serves the copy and the fix-up pass only: its memory, and the
            // batches' keys', goes to the index builds' sorter (useSorterHelper).
            idMap.emptyCache()
            try startStoreCheck()
            guard try timed(\.indexes, try buildDeferredIndexes(&run, report: report)) == .complete else { return .paused }
            storeCheck?.indexesBuilt()
            guard try timed(\.finishing, try finishCoreDataStore(&run, report: report)) == .complete
            else { return .paused }
            storeCheck?.storeFinished()
            // The check's part over the rows done (and its connection closed) before the job's
            // end changes the journal mode back; the rest once the job is complete.
            let check = storeCheck
            storeCheck = nil
            if check != nil { report(progress(run, entity: entity(writing: nil), phase: .check, batch: 0)) }
            let checkStarted = clock.now
            let rows = check.map { check in timed(\.check, check.rows()) }
            database.waitWhenBusy()
            try journal.append(.complete(atMillis: Self.nowMillis()))
            CrashPoint.check(.afterComplete, entity: "job", batch: 0)
            try timed(\.completion, try CheckpointStore.finish(in: database, keepTables: options.keepCheckpointTables))
            if let check, let rows {
                checkReport = timed(\.check, separatingCarried(rows.report.merged(with: check.rest())))
                phases.checkAlongside = rows.seconds
                phases.checkDuringCopy = rows.duringCopy
                if let failure = rows.earlyFailure {
                    logger.warning("the store check could not check the finished tables while the job copied; it checked them after the copy instead",
                                   metadata: ["cause": "\(failure)", "file": "\(database.path)"])
                }
            }
            work.did(work[total: .check], of: .check, in: (clock.now - checkStarted) / .seconds(1))
            work[done: .check] = work[total: .check]
            var last = progress(run, entity: entity(writing: nil), phase: .complete, batch: 0)
            last.fraction = work.fraction(complete: true)
            last.estimatedRemaining = .zero
            report(last)
            return .complete
        } catch {
            try? journal.append(.failed(atMillis: Self.nowMillis(), message: "\(error)"))
            throw error
        }
    }

    /// Runs `body`, adding the time it took to a phase of ``phases``.
    private func timed<T>(_ phase: WritableKeyPath<RunPhases, Double>, _ body: @autoclosure () throws -> T) rethrows -> T {
        let started = clock.now
        defer { phases[keyPath: phase] += (clock.now - started) / .seconds(1) }
        return try body()
    }

    /// The check's report with what the source already had carried: the source is checked
    /// where the migrated store breaks an invariant (``CoreDataStoreCheck/separatingCarried(_:source:model:names:tables:)``).
    private func separatingCarried(_ report: CoreDataStoreCheck.Report) -> CoreDataStoreCheck.Report {
        guard !report.findings.isEmpty else { return report }
        let model = (try? CoreDataModel.read(store: URL(fileURLWithPath: database.path))) ?? nil
        let result = CoreDataStoreCheck.separatingCarried(report, source: URL(fileURLWithPath: sourcePath),
                                                          names: .init(plan: plan, destination: model))
        for line in result.carried {
            logger.notice("carried as the source had it: \(line)")
        }
        return result
    }

    /// Once the rows are in: the check of a Core Data store (started with the copy, or now) goes
    /// on on a connection and thread of its own while this thread builds the indexes and finishes
    /// the store (``CoreDataStoreCheck/Overlapped``). The destination stays in the job's rollback
    /// journal; where a read of the check holds up a write of the job, the check gives way.
    private func startStoreCheck() throws {
        guard coreData != nil, options.checksStore else { return }
        if storeCheck == nil {
            storeCheck = CoreDataStoreCheck.Overlapped(path: database.path, cacheKiB: options.sqliteCacheKiB,
                                                       indexes: try CheckpointStore.deferredIndexes(in: database), entities: nil,
                                                       scratch: URL(fileURLWithPath: journal.layout.check, isDirectory: true))
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
            return count < Self.busyPolls
        }
        try storeCheck?.rowsIn()
        // The derived values the check computes alongside, the finishing steps write.
        coreData?.finishing.precomputed = { [weak self] value in self?.storeCheck?.expectedValues(for: value) }
    }

    /// While rows are still to be copied: the check started already, to check each table the
    /// job finishes while it copies the others (``CoreDataStoreCheck/Overlapped``). It reads
    /// those tables without locks, which holds because nothing writes them again before the
    /// copy is over: a table is finished once every entity writing it is complete and none has
    /// a relationship the fix-up pass sets.
    private func startStoreCheckDuringCopy() throws {
        guard coreData != nil, options.checksStore, storeCheck == nil, states.contains(where: { !$0.complete }) else { return }
        // Reads without locks hold only in a rollback journal (they ignore a WAL) and where no
        // commit moves pages (auto_vacuum FULL moves pages of any table into freed ones).
        let mode = try database.scalar("PRAGMA main.journal_mode").text?.lowercased()
        let vacuum = try database.scalar("PRAGMA main.auto_vacuum").integer
        let entities = mode != "wal" && vacuum != 1 ? try? CoreDataEntities.read(database, file: database.path) : nil
        storeCheck = CoreDataStoreCheck.Overlapped(path: database.path, cacheKiB: options.sqliteCacheKiB,
                                                   indexes: try CheckpointStore.deferredIndexes(in: database), entities: entities,
                                                   scratch: URL(fileURLWithPath: journal.layout.check, isDirectory: true))
        storeCheck?.tablesFinished(finishedTables())
    }

    /// The destination tables (in capitals) whose every writing entity is complete with no
    /// relationship left to the fix-up pass.
    private func finishedTables() -> Set<String> {
        var finished: [String: Bool] = [:]
        for (index, entity) in plan.entities.enumerated() {
            let table = entity.destination.table.uppercased()
            finished[table] = (finished[table] ?? true) && states[index].complete && (order.deferred[index] ?? []).isEmpty
        }
        return Set(finished.filter(\.value).keys)
    }

    /// A resumed run sizes its first batch from the pace of the entity's last one instead of
    /// starting over: a job killed again and again would spend its runs growing it back. Only
    /// where a batch's size is its rows: a filtered entity's batch covers keys it may not keep.
    private func sizeFirstBatchFromLastRun() {
        if let entity = order.entities.first(where: { !states[$0].complete }), copiers[entity]?.isBounded == false,
           let last = states[entity].lastBatch, last.duration > .zero,
           let proposed = Self.adaptedBatchSize(rows: last.rows, elapsed: last.duration, options: options) {
            batchSize = Self.bounded(proposed, around: last.rows, options: options)
        }
    }

    /// Copies every unfinished entity batch by batch, in dependency order, and logs each one
    /// complete; `.paused` when the run stops first.
    private func copyEntities(_ run: inout PhaseLoop, report: (MigrationProgress) -> Void) throws -> RunOutcome {
        var entities = order.entities.filter { !states[$0].complete }[...]
        return try run.run({ () throws -> (entity: Int, rows: Int)? in
            while let entity = entities.first {
                if let read = try copyBatch(entity: entity) { return (entity, read) }
                try journal.append(.entityComplete(
                    entity: UInt32(entity), batches: states[entity].batch, rowsWritten: UInt64(states[entity].rowsWritten)))
                states[entity].complete = true
                storeCheck?.tablesFinished(finishedTables())
                entities.removeFirst()
            }
            return nil
        }, done: { batch, run in
            work.did(Double(batch.rows), of: .copy, in: run.lastUnit / .seconds(1))
            report(progress(run, entity: batch.entity, phase: .copy, batch: states[batch.entity].batch))
        }, rows: { Int64($0.rows) })
    }

    /// The fix-up pass: sets each deferred relationship, one ID-map segment of its entity per
    /// batch; `.paused` when the run stops first.
    private func fixUpDeferredRelationships(_ run: inout PhaseLoop, report: (MigrationProgress) -> Void) throws -> RunOutcome {
        var columns = order.entities.flatMap { entity in (order.deferred[entity] ?? []).sorted().map { (entity, $0) } }[...]
        // The columns whose every segment is fixed up leave the front of the list.
        func dropFinished() {
            while let (entity, column) = columns.first,
                  Int(states[entity].fixupBatch[column] ?? 0) >= idMap.segments(entity: UInt32(entity)).count {
                columns.removeFirst()
            }
        }
        return try run.run(until: {
            dropFinished()
            return columns.isEmpty
        }, { () throws -> (entity: Int, column: String, rows: Int)? in
            dropFinished()
            guard let (entity, column) = columns.first else { return nil }
            let ref = idMap.segments(entity: UInt32(entity))[Int(states[entity].fixupBatch[column] ?? 0)]
            try fixupBatch(entity: entity, column: column, ref: ref)
            return (entity, column, Int(ref.count))
        }, done: { batch, run in
            work.did(Double(batch.rows), of: .fixup, in: run.lastUnit / .seconds(1))
            report(progress(run, entity: batch.entity, phase: .fixup(column: batch.column), batch: states[batch.entity].fixupBatch[batch.column] ?? 0))
        })
    }

    /// The secondary indexes the job deferred, built once the rows are in; `.paused` when the
    /// run stops first.
    private func buildDeferredIndexes(_ run: inout PhaseLoop, report: (MigrationProgress) -> Void) throws -> RunOutcome {
        defer { try? useSorterHelper(false) }
        // Those that sort without the helper first, while the check's part over the rows, if
        // any, still takes the second core; then those a derived value reads, whose values the
        // check can then compute while the job builds the rest.
        let indexes = try CheckpointStore.deferredIndexes(in: database)
        let derivations = storeCheck == nil ? [] : derivationReads()
        func readByDerivation(_ sql: String) -> Bool {
            CoreDataStoreCheck.Overlapped.leadingColumn(sql).map(derivations.contains) ?? false
        }
        let withoutHelper = indexes.filter { !Self.sortsWithHelper($0.sql) }
        let read = indexes.filter { Self.sortsWithHelper($0.sql) && readByDerivation($0.sql) }
        let others = indexes.filter { Self.sortsWithHelper($0.sql) && !readByDerivation($0.sql) }
        var left = (withoutHelper + read + others)[...]
        return try run.run(until: { left.isEmpty }, { () throws -> (name: String, sql: String)? in
            guard let index = left.popFirst() else { return nil }
            // The second core sorts too once the check, if any, has done most of its work.
            try useSorterHelper(Self.sortsWithHelper(index.sql) && storeCheck?.isPastRows ?? true)
            try CheckpointStore.rebuild(index: index.name, sql: index.sql, in: database)
            storeCheck?.indexBuilt(index.name)
            CrashPoint.check(.afterIndex, entity: index.name, batch: 0)
            return index
        }, done: { index, run in
            let table = CoreDataStoreCheck.Overlapped.leadingColumn(index.sql)?.split(separator: ".").first.map(String.init)
            let units = table.map { JobWork.indexUnits(rows: rows(ofTable: $0)) } ?? 0
            indexUnitsDone += units
            work.did(units, of: .index, in: run.lastUnit / .seconds(1))
            report(progress(run, entity: entity(writing: table), phase: .index(name: index.name), batch: 0, table: table))
        })
    }

    /// How many times, 0.1 ms apart, the job tries again for a lock the check holds (a minute)
    /// before it fails with `SQLITE_BUSY`: the check gives way within milliseconds.
    static let busyPolls = 600_000

    /// The columns the plan's derived values read, `TABLE.COLUMN` in capitals.
    private func derivationReads() -> Set<String> {
        (plan.coreData?.derived ?? []).reduce(into: []) { columns, value in
            columns.formUnion((try? CoreDataDerivation.columnsRead(by: value.value, of: value.table, in: database)) ?? [])
        }
    }

    /// Whether an index sorts faster with a helper thread: all but Core Data's index on `Z_ENT`,
    /// whose keys take a handful of values and come mostly in order, and which took a third
    /// longer with it (Tools/BENCHMARKS.md, "The check during the copy").
    static func sortsWithHelper(_ sql: String) -> Bool {
        CoreDataStoreCheck.Overlapped.leadingColumn(sql)?.hasSuffix(".Z_ENT") != true
    }

    /// Whether an index build sorts with a helper thread (`PRAGMA threads = 1`), which on two
    /// cores shortens the largest builds by a fifth or more (Tools/BENCHMARKS.md). The helper
    /// sorts one run of keys while the job's thread fills the next, each run the size of the
    /// page cache (the sorter sizes its runs by it): two runs in memory instead of one, where
    /// the batches' keys were until the copy ended (``Resolver/releaseBatchMemory()``), so that
    /// peak memory stays where it was.
    private func useSorterHelper(_ helper: Bool) throws(SQLiteError) {
        try database.execute("PRAGMA threads = \(helper ? 1 : 0)")
    }

    /// A Core Data store's steps after the rows and indexes (``CoreDataFinishing``): derived
    /// values, external files, R-tree indexes, then the triggers back; `.paused` when the run
    /// stops first.
    private func finishCoreDataStore(_ run: inout PhaseLoop, report: (MigrationProgress) -> Void) throws -> RunOutcome {
        guard let finishing = coreData?.finishing else { return .complete }
        var steps = try finishing.steps()[...]
        var batch: UInt64 = 0
        return try run.run(until: { steps.isEmpty }, { () throws -> (step: CoreDataFinishing.Step, batch: UInt64)? in
            while let step = steps.first {
                if batch == 0, try finishing.isDone(step) {
                    steps.removeFirst()
                    continue
                }
                let done = try finishing.runBatch(step, size: batchSize)
                batch += 1
                CrashPoint.check(.afterStep, entity: step.name, batch: batch)
                let unit = (step, batch)
                if done {
                    steps.removeFirst()
                    batch = 0
                }
                return unit
            }
            return nil
        }, done: { unit, run in
            let units = unit.step.table == nil ? 0 : Double(batchSize)
            finishingUnitsDone += units
            work.did(units, of: .finishing, in: run.lastUnit / .seconds(1))
            // Reported as a step of the entity writing the table it works on.
            report(progress(run, entity: entity(writing: unit.step.table), phase: .finishing(step: unit.step.name), batch: unit.batch,
                            table: unit.step.table))
        })
    }

    /// The last entity in the job's order that writes `table`; the last entity where none does.
    private func entity(writing table: String?) -> Int {
        table.flatMap { table in
            order.entities.last { plan.entities[$0].destination.table.caseInsensitiveCompare(table) == .orderedSame }
        } ?? order.entities.last ?? 0
    }

    /// The progress report after a unit of work of `entity` (for a step after the copy, the
    /// entity writing its table): its rows and the job's, the job's fraction, the run's pace, and
    /// the time left.
    private func progress(_ run: PhaseLoop, entity: Int, phase: MigrationProgress.Phase, batch: UInt64,
                          table: String? = nil) -> MigrationProgress {
        let seconds = (clock.now - run.started) / .seconds(1)
        let rate = seconds > 0 ? Double(run.rows) / seconds : 0
        let done = states.reduce(0) { $0 + $1.rowsRead }
        let total = states.reduce(Int64(0)) { $0.addingReportingOverflow($1.estimatedTotal).overflow ? .max : $0 + $1.estimatedTotal }
        countWork()
        let table = table ?? (phase == .copy || phase.isFixup ? plan.entities[entity].destination.table : nil)
        return MigrationProgress(
            entity: plan.entities[entity].name, phase: phase, table: table, fraction: work.fraction(), batch: batch,
            rowsDone: states[entity].rowsRead, rowsTotal: states[entity].estimatedTotal,
            jobRowsDone: done, jobRowsTotal: total, rowsPerSecond: rate,
            estimatedRemaining: run.units > 0 ? .seconds(work.secondsLeft) : nil, batchSize: batchSize)
    }

    /// The rows of the entities that write `table`, as far as the copy knows them.
    private func rows(ofTable table: String) -> Double {
        (writers[table.uppercased()] ?? []).reduce(0) { $0 + Double(states[$1].estimatedTotal) }
    }

    /// Counts the job's work in all and done, phase by phase (``JobWork``): the copy's rows,
    /// the fix-ups' by the segments done, the index builds and finishing steps this run has left
    /// and done, the check's end.
    private func countWork() {
        work[total: .copy] = states.reduce(0) { $0 + Double($1.estimatedTotal) }
        work[done: .copy] = states.reduce(0) { $0 + Double($1.rowsRead) }
        var fixups = 0.0, fixed = 0.0
        for (entity, columns) in order.deferred {
            let rows = Double(states[entity].estimatedTotal)
            let segments = idMap.segments(entity: UInt32(entity)).count
            for column in columns {
                fixups += rows
                if states[entity].complete, segments > 0 {
                    fixed += rows * min(1, Double(states[entity].fixupBatch[column] ?? 0) / Double(segments))
                }
            }
        }
        work[total: .fixup] = fixups
        work[done: .fixup] = fixed
        work[total: .index] = indexesLeft.reduce(0) { $0 + JobWork.indexUnits(rows: rows(ofTable: $1.table)) }
        work[done: .index] = indexUnitsDone
        let derived = (plan.coreData?.derived ?? []).reduce(0) { $0 + rows(ofTable: $1.table) }
        work[total: .finishing] = max(derived, finishingUnitsDone)
        work[done: .finishing] = finishingUnitsDone
        work[total: .check] = coreData != nil && options.checksStore ? work[total: .copy] : 0
    }

    /// Reads each unfinished entity's key range, from which the totals progress reports are
    /// estimated: counting rows would read the whole table before the first batch.
    private func readKeyRanges() throws {
        for (index, entity) in plan.entities.enumerated() where !states[index].complete {
            states[index].keyRange = try stores.keyRange(table: entity.source.table, key: entity.source.key)
        }
    }

    /// Copies the next batch of an entity; returns the rows read, or `nil` when the entity has no
    /// rows left.
    ///
    /// One transaction: the `INSERT ... SELECT` writes the next rows after the cursor (recording
    /// their source keys as they pass), the batch is validated, its ID-map segment is written and
    /// made durable, the checkpoint is updated, and the transaction commits. The log record follows
    /// the commit.
    private func copyBatch(entity index: Int) throws -> Int? {
        guard let copier = copiers[index] else { throw MigrationError(.invalidPlan, "entity \(index) was not prepared") }
        let entity = plan.entities[index]
        let entityIndex = UInt32(index)
        let state = states[index]
        let batch = state.batch + 1
        let started = clock.now
        // The source rows the batch covers: its rows read, or, for a bounded entity, every key of
        // its range, left out or not (what its time is spent on, and what sizes the next batch).
        var covered = 0
        var recorded = false

        let committed: BatchRecord?
        do {
            // A batch that finds no rows left returns nil and commits nothing.
            committed = try database.inTransaction(.immediate) { () throws -> BatchRecord? in
                let base = try allocationBase(copier: copier, batch: batch)
                resolver.beginBatch(entity: entityIndex, base: base, mapping: copier.mapping, capacity: batchSize)
                guard let (range, count) = try copyRows(copier: copier, after: state.cursor, batch: batch) else { return nil }
                covered = count
                let kept = resolver.batchKeys
                let read = copier.hasSkipRelationships ? resolver.scanned : kept.count
                guard read > 0 || range != nil else { return nil }
                let skipped = copier.hasSkipRelationships ? resolver.skipped : 0
                try validateCounts(copier: copier, batch: batch, base: base, kept: kept, read: read, skipped: skipped)
                // A bounded batch covers its whole key range, rows left out included.
                let first = range?.lowerBound ?? kept[0]
                let last = range?.upperBound ?? kept[kept.count - 1]
                if options.verifyChecksums {
                    try compareChecksums(copier: copier, batch: batch, base: base, kept: kept)
                }
                recorded = try recordDeferrals(entity: entityIndex, batch: batch)
                return try recordBatch(entity: index, copier: copier, batch: batch, base: base, kept: kept, keys: first...last,
                                       read: read, skipped: skipped, started: started)
            }
        } catch {
            idMap.truncate(entity: entityIndex, after: state.batch)
            // A device that failed (or filled up) may have failed the COMMIT after its commit
            // point (a sync of the rollback journal once it was truncated): the batch may be in
            // the destination. Its segment stays for the next run, whose reconcile rebuilds the
            // batch's record where the destination holds it and removes the segment where not.
            let wrapped = MigrationError.wrapping(error, entity: entity.name, batch: batch)
            if wrapped.code != .deviceError, wrapped.code != .diskFull {
                try? journal.removeSegments(entity: entityIndex, after: state.batch)
            }
            throw wrapped
        }
        guard let record = committed else { return nil }
        if recorded { recordedDeferrals.insert([UInt64(index), batch]) }
        CrashPoint.check(.afterCommit, entity: entity.name, batch: batch)
        if CrashPoint.isArmed(.midRecord, entity: entity.name, batch: batch) {
            try journal.appendTorn(.batch(record), keepingBytes: 20)
            CrashPoint.killNow()
        }
        try journal.append(.batch(record))

        states[index].apply(record)
        adaptBatchSize(elapsed: clock.now - started, rows: max(covered, Int(record.rowsRead)))
        return Int(record.rowsRead)
    }

    /// The rows of one batch written, inside its transaction: the next range of a bounded entity
    /// (`nil` when none is left, with how many source keys it covers), or the next `batchSize`
    /// rows after `cursor`. An SQLite error is diagnosed to name the row at fault.
    private func copyRows(copier: EntityCopier, after cursor: Int64?, batch: UInt64) throws -> (range: ClosedRange<Int64>?, covered: Int)? {
        var range: ClosedRange<Int64>?
        var covered = 0
        if copier.isBounded {
            guard let next = try copier.nextRange(after: cursor, limit: batchSize) else { return nil }
            range = next.keys
            covered = next.count
        }
        do throws(SQLiteError) {
            if let range {
                try copier.copy(range: range)
            } else {
                try copier.copy(after: cursor, limit: batchSize)
            }
        } catch {
            throw diagnose(error, copier: copier, batch: batch)
        }
        return (range, covered)
    }

    /// The end of a batch's transaction, once its rows are written and validated: its ID-map
    /// segment, its record (added to the ID map, and to the destination's checkpoint), and Core
    /// Data's bookkeeping. `keys` is the source-key range the batch covers.
    private func recordBatch(entity index: Int, copier: EntityCopier, batch: UInt64, base: Int64, kept: [Int64],
                             keys: ClosedRange<Int64>, read: Int, skipped: Int, started: ContinuousClock.Instant) throws -> BatchRecord {
        let entityIndex = UInt32(index)
        let name = plan.entities[index].name
        // Preserved keys map to themselves: the run "starts" at the first key.
        let destinationBase = copier.mapping == .allocate ? base : (kept.first ?? keys.lowerBound)
        var crc: UInt32 = 0
        if !kept.isEmpty {
            crc = try journal.write(IDMapSegment(entity: entityIndex, batch: batch, mapping: copier.mapping,
                                                 destinationBase: destinationBase, sourceKeys: kept))
        }
        CrashPoint.check(.afterSegment, entity: name, batch: batch)
        var record = BatchRecord(
            entity: entityIndex, batch: batch, firstSourceKey: keys.lowerBound, lastSourceKey: keys.upperBound,
            rowsRead: UInt32(read), rowsWritten: UInt32(kept.count), rowsSkipped: UInt32(skipped),
            relationshipsNulled: UInt32(resolver.nulled), relationshipsDeferred: UInt32(resolver.deferred),
            mapping: copier.mapping, destinationBase: destinationBase,
            segmentFirstKey: kept.first ?? keys.lowerBound, segmentLastKey: kept.last ?? keys.upperBound, segmentCRC: crc)
        // Keep the keys in the cache only when a relationship will look them up.
        try idMap.add(record, keys: isRelationshipTarget[index] ? kept : nil)
        try coreData?.afterBatch(entity: index)
        record.durationMicros = UInt64(max(0, (clock.now - started).microseconds))
        record.committedAtMillis = Self.nowMillis()
        try checkpoints.save(record)
        CrashPoint.check(.beforeCommit, entity: name, batch: batch)
        return record
    }

    /// Where a batch's allocated keys start: after the destination's largest (from 1 in an empty
    /// table); 0 for preserved keys.
    private func allocationBase(copier: EntityCopier, batch: UInt64) throws -> Int64 {
        guard copier.mapping == .allocate else { return 0 }
        let largest = try copier.largestDestinationKey() ?? 0
        guard largest <= Int64.max - Int64(batchSize) else {
            throw MigrationError(.batch,
                "the destination's largest key is \(largest): allocating \(batchSize) more keys would pass the largest 64-bit integer",
                entity: copier.entity.name, batch: batch)
        }
        return largest + 1
    }

    /// Checks a batch's counts: the rows read are those written plus those skipped, and every row
    /// taken was written. Where SQLite assigned the keys, they must be the ones the ID map will
    /// record: the rows arrived one past the largest key each, so the largest is now the last.
    private func validateCounts(copier: EntityCopier, batch: UInt64, base: Int64, kept: [Int64], read: Int,
                                skipped: Int) throws {
        let written = database.changes
        guard written == kept.count, read == kept.count + skipped else {
            throw MigrationError(.batch,
                "validation failed: \(read) rows read and \(skipped) skipped, so \(read - skipped) should be written, but \(written) were",
                entity: copier.entity.name, batch: batch, sourceKey: kept.first)
        }
        if copier.assignsKeys, written > 0 {
            let largest = try copier.largestDestinationKey()
            guard largest == base + Int64(written) - 1 else {
                throw MigrationError(.batch,
                    "validation failed: the destination's largest key is \(largest ?? 0) after the batch, but the batch's keys run from \(base) to \(base + Int64(written) - 1) (a trigger inserting into the table?)",
                    entity: copier.entity.name, batch: batch, sourceKey: kept.last)
            }
        }
    }

    /// Compares the checksum of the batch's rows as written with that of the source values the
    /// plan maps them from (``MigrationOptions/verifyChecksums``).
    private func compareChecksums(copier: EntityCopier, batch: UInt64, base: Int64, kept: [Int64]) throws {
        guard let firstKept = kept.first, let lastKept = kept.last else { return }
        let destinationRange = copier.mapping == .allocate ? base...(base + Int64(kept.count) - 1) : firstKept...lastKept
        let digests = try copier.digests(resolver: resolver, destinationRange: destinationRange, sourceRange: firstKept...lastKept)
        guard digests.written == digests.mapped else {
            throw MigrationError(.batch,
                "validation failed: the rows written differ from the source values mapped by the plan (a destination column's type affinity changed a value?); checksum \(String(digests.written, radix: 16)) written, \(String(digests.mapped, radix: 16)) mapped",
                entity: copier.entity.name, batch: batch, sourceKey: firstKept)
        }
    }

    /// Writes the self-references the batch deferred into ``CopierSQL/deferralTable``, in its transaction;
    /// whether it did (it does not where the batch deferred too many to keep).
    private func recordDeferrals(entity: UInt32, batch: UInt64) throws -> Bool {
        guard !resolver.deferralsOverflowed, let statement = recordDeferral else { return false }
        for deferral in resolver.deferrals {
            try statement.bind([.integer(Int64(entity)), .integer(Int64(deferral.relationship)), .integer(Int64(batch)),
                                .integer(deferral.own), .integer(deferral.foreignKey)])
            defer { statement.reset() }
            try statement.step()
        }
        return true
    }

    private func fixupBatch(entity index: Int, column: String, ref: IDMap.SegmentRef) throws {
        guard let copier = copiers[index] else { throw MigrationError(.invalidPlan, "entity \(index) was not prepared") }
        let entity = plan.entities[index]
        let batch = (states[index].fixupBatch[column] ?? 0) + 1
        let first = ref.mapping == .allocate ? ref.destinationBase : ref.firstKey
        let last = ref.mapping == .allocate ? ref.destinationBase + Int64(ref.count) - 1 : ref.lastKey
        do {
            let record = try database.inTransaction(.immediate) {
                resolver.resetCounters()
                let recorded = recordedDeferrals.contains([UInt64(index), ref.batch]) && copier.fixesFromRecords(column: column)
                try copier.fix(column: column, destination: first...last, source: ref.firstKey...ref.lastKey,
                               recordedBatch: recorded ? ref.batch : nil)
                if recorded { fixupsFromRecords += 1 }
                let record = FixupRecord(entity: UInt32(index), column: column, batch: batch,
                                         firstDestinationKey: first, lastDestinationKey: last,
                                         rowsUpdated: UInt32(resolver.updated), rowsNulled: UInt32(resolver.nulled),
                                         committedAtMillis: Self.nowMillis())
                try checkpoints.save(record)
                return record
            }
            CrashPoint.check(.afterFixupCommit, entity: entity.name, batch: batch)
            try journal.append(.fixup(record))
            states[index].fixupBatch[column] = batch
        } catch {
            throw MigrationError.wrapping(error, entity: entity.name, batch: batch, column: column)
        }
    }

    /// Names the row behind a failed batch insert. Rows flow through the INSERT in key order and
    /// `cm_take` records a row just before SQLite writes it, so the row a constraint rejected is the
    /// last one taken.
    private func diagnose(_ error: SQLiteError, copier: EntityCopier, batch: UInt64) -> MigrationError {
        let entity = copier.entity.name
        if error.cause is MigrationError { return MigrationError.wrapping(error, entity: entity, batch: batch) }
        guard error.isConstraint else {
            return MigrationError.wrapping(error, entity: entity, batch: batch, sourceKey: resolver.batchKeys.last)
        }
        // SQLite checks immediate foreign keys at the end of the statement, not at the row, so the
        // last row taken is not the culprit: name the batch's key range instead.
        if error.isForeignKeyViolation {
            let range = resolver.batchKeys.first.map { "rows with source keys \($0) to \(resolver.batchKeys.last ?? $0)" } ?? "the batch"
            return MigrationError(.batch, "validation failed: \(error.message) for one of the \(range); a foreign key points at a row that does not exist in the destination",
                                  entity: entity, batch: batch, file: error.file, cause: error)
        }
        return MigrationError(.batch, "validation failed: \(error.message)", entity: entity, batch: batch,
                              sourceKey: resolver.batchKeys.last,
                              column: Self.column(fromConstraintMessage: error.message), file: error.file, cause: error)
    }

    /// `message.text` from "NOT NULL constraint failed: message.text".
    static func column(fromConstraintMessage message: String) -> String? {
        guard let range = message.range(of: "constraint failed: ") else { return nil }
        let names = message[range.upperBound...].split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) }
        return names.map { name in name.split(separator: ".").last.map(String.init) ?? name }
    }

    private func adaptBatchSize(elapsed: Duration, rows: Int) {
        guard rows >= batchSize / 2, let proposed = Self.adaptedBatchSize(rows: batchSize, elapsed: elapsed, options: options) else {
            return
        }
        batchSize = Self.bounded(proposed, around: batchSize, options: options)
    }

    /// `proposed` within a factor of four of `size` (one odd batch cannot swing the size), then
    /// within the options' bounds.
    static func bounded(_ proposed: Int, around size: Int, options: MigrationOptions) -> Int {
        min(options.maximumBatchSize, IDMapSegment.maximumKeyCount,
            max(options.minimumBatchSize, min(size * 4, max(size / 4, proposed))))
    }

    /// The batch size that would take ``MigrationOptions/batchTimeTarget`` at the pace of a batch
    /// of `rows` rows that took `elapsed`, within the options' bounds; `nil` when the size is fixed.
    static func adaptedBatchSize(rows: Int, elapsed: Duration, options: MigrationOptions) -> Int? {
        guard options.batchSize == nil, rows > 0 else { return nil }
        let proposed = Double(rows) * (options.batchTimeTarget / max(elapsed, .microseconds(100)))
        return Int(min(Double(options.maximumBatchSize), max(Double(options.minimumBatchSize), proposed)))
    }

    static func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
