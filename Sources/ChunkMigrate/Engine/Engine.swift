import Foundation
import Logging
import MigrationJournal

/// Runs a job on the calling thread, one phase after another through one loop (``PhaseLoop``):
/// the copy, entities in dependency order, batch by batch, each batch committed with its
/// checkpoint and then logged (`Engine+Batches.swift`); the fix-up pass; the deferred index
/// builds; the store's own finishing steps (``StoreHooks``). Where a run starts from
/// (`Engine+Resume.swift`) and what it reports (`Engine+Progress.swift`) are beside it.
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
    /// What the kind of store adds to the job (``StoreHooks``); `nil` for a plain SQLite store.
    let hooks: (any StoreHooks)?
    let checkpoints: CheckpointStore
    /// The source store's file.
    let sourcePath: String
    var copiers: [Int: EntityCopier] = [:]
    /// The copy batches, by entity and batch number, whose deferred self-references this run
    /// recorded in ``CopierSQL/deferralTable`` as it committed them: their fix-up reads those instead of
    /// scanning the source. A batch an earlier run committed, or one that recorded none because
    /// it deferred too many (``Resolver/deferralLimit``), is fixed up from the source.
    var recordedDeferrals: Set<[UInt64]> = []
    /// The fix-up batches of this run that read recorded references rather than the source.
    var fixupsFromRecords = 0
    var recordDeferral: Statement?

    var relationshipIndexes: [[String: Int]] = []
    var states: [EntityState]
    var batchSize: Int
    /// Whether some relationship refers to the entity, by entity index.
    var isRelationshipTarget: [Bool] = []
    let clock = ContinuousClock()
    /// Where this run's time went, phase by phase.
    var phases = RunPhases()
    /// The job's work, phase by phase, for its fraction and the time left.
    var work = JobWork()
    /// The units of the index builds and finishing steps this run did.
    var indexUnitsDone = 0.0, finishingUnitsDone = 0.0
    /// Every index build of the job, with its table, and whether a run before this one did it.
    var indexBuilds: [(name: String, table: String, doneBefore: Bool)] = []
    /// The entities writing each destination table, by its name in capitals: each progress
    /// report sums their rows for every index left, so this is looked up, not searched.
    lazy var writers: [String: [Int]] = Dictionary(
        grouping: plan.entities.indices, by: { plan.entities[$0].destination.table.uppercased() })

    /// - Parameter hooks: what the kind of store adds (``StoreHooks``), made once the engine's SQL
    ///   functions are registered and before the plan's expressions are prepared, which may call
    ///   the functions it registers.
    init(
        plan: MigrationPlan, options: MigrationOptions, logger: Logger, stores: Stores,
        journal: JournalWriter, idMap: IDMap, sourcePath: String,
        hooks: (_ database: Database, _ resolver: Resolver) throws -> (any StoreHooks)? = { _, _ in nil }
    ) throws {
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
            try database.createFunction(
                function.name, argumentCount: function.argumentCount,
                deterministic: function.isDeterministic
            ) { call in
                arguments.removeAll(keepingCapacity: true)
                for index in 0..<call.count { arguments.append(call.value(index)) }
                call.result(try body(arguments))
            }
        }
        self.hooks = try hooks(database, resolver)
        // An expression reading another entity's destination table makes that entity a dependency.
        self.order = plan.executionOrder(reads: try Self.destinationReads(of: plan, database: database))
        if let conflict = order.conflicts.first {
            let reader = plan.entities[conflict[0]], writer = plan.entities[conflict[1]]
            throw MigrationError(
                .invalidPlan,
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
                resolver.relationships.append(
                    .init(
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
        try database.execute(
            """
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
                let copier = try EntityCopier(
                    database: database, entity: entity, index: UInt32(index),
                    relationshipIndexes: relationshipIndexes[index],
                    byValue: Set(entity.sortedRelationships.filter { plan.isDistinct($0.relationship.to) }.map(\.column)),
                    sourceAccess: access.source,
                    destinationAccess: access.destination,
                    assignsNextRowid: try stores.destination.table(entity.destination.table)?
                        .assignsNextRowid(forKey: entity.destination.key) ?? true,
                    verifyChecksums: options.verifyChecksums)
                try copier.prepareFixups(
                    database: database, deferred: order.deferred[index] ?? [],
                    relationshipIndexes: relationshipIndexes[index],
                    selfReferences: Set(entity.sortedRelationships.filter { $0.relationship.to == entity.name }.map(\.column)))
                try check.checkWalksInKeyOrder(copier)
                copiers[index] = copier
            } catch let error as SQLiteError {
                throw MigrationError(
                    .invalidPlan, "SQLite rejects the statements of this entity: \(error.message)",
                    entity: entity.name, file: nil, sql: error.sql, cause: error)
            }
        }
    }

    /// Runs until the job is complete, `shouldStop` returns true, or `deadline` passes; checks
    /// both between batches only.
    func run(
        deadline: ContinuousClock.Instant?, shouldStop: @escaping () -> Bool,
        report: (MigrationProgress) -> Void
    ) throws -> RunOutcome {
        if journal.log.recordsCompletion {
            try CheckpointStore.finish(in: database, keepTables: options.keepCheckpointTables)
            return .complete
        }
        try journal.append(.started(atMillis: Self.nowMillis(), processID: ProcessInfo.processInfo.processIdentifier))
        try readKeyRanges()
        indexBuilds = try CheckpointStore.indexBuilds(in: database).compactMap { index in
            SQL.leadingColumn(ofIndex: index.sql)?.split(separator: ".").first.map { (index.name, String($0), index.done) }
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
            hooks?.stop()
            database.waitWhenBusy()
        }
        do {
            if states.contains(where: { !$0.complete }) { try hooks?.copyStarts(finished: finishedTables()) }
            guard try timed(\.copy, try copyEntities(&run, report: report)) == .complete else { return .paused }
            // The batches' keys serve the copy only (a batch of 500,000 rows keeps 4 MB of them),
            // the ID map's cache the fix-up pass as well: the memory goes to each in turn.
            resolver.releaseBatchMemory()
            guard try timed(\.fixup, try fixUpDeferredRelationships(&run, report: report)) == .complete
            else { return .paused }
            // The ID map's cache serves the copy and the fix-up pass only: its memory, and the
            // batches' keys', goes to the index builds' sorter (sort(_:)).
            idMap.emptyCache()
            try hooks?.rowsIn()
            guard try timed(\.indexes, try buildDeferredIndexes(&run, report: report)) == .complete else { return .paused }
            hooks?.indexesBuilt()
            guard try timed(\.finishing, try finish(&run, report: report)) == .complete else { return .paused }
            hooks?.storeFinished()
            if hooks?.checksAtEnd == true { report(progress(run, entity: entity(writing: nil), phase: .check, batch: 0)) }
            let checkStarted = clock.now
            hooks?.endBeforeCompletion()
            database.waitWhenBusy()
            try journal.append(.complete(atMillis: Self.nowMillis()))
            CrashPoint.check(.afterComplete, entity: "job", batch: 0)
            try timed(\.completion, try CheckpointStore.finish(in: database, keepTables: options.keepCheckpointTables))
            hooks?.endAfterCompletion(phases: &phases)
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
    func timed<T>(_ phase: WritableKeyPath<RunPhases, Double>, _ body: @autoclosure () throws -> T) rethrows -> T {
        let started = clock.now
        defer { phases[keyPath: phase] += (clock.now - started) / .seconds(1) }
        return try body()
    }

    /// The destination tables (in capitals) whose every writing entity is complete with no
    /// relationship left to the fix-up pass.
    func finishedTables() -> Set<String> {
        var finished: [String: Bool] = [:]
        for (index, entity) in plan.entities.enumerated() {
            let table = entity.destination.table.uppercased()
            finished[table] = (finished[table] ?? true) && states[index].complete && (order.deferred[index] ?? []).isEmpty
        }
        return Set(finished.filter(\.value).keys)
    }

    /// Copies every unfinished entity batch by batch, in dependency order, and logs each one
    /// complete; `.paused` when the run stops first.
    func copyEntities(_ run: inout PhaseLoop, report: (MigrationProgress) -> Void) throws -> RunOutcome {
        var entities = order.entities.filter { !states[$0].complete }[...]
        return try run.run(
            { () throws -> (entity: Int, rows: Int)? in
                while let entity = entities.first {
                    if let read = try copyBatch(entity: entity) { return (entity, read) }
                    try journal.append(
                        .entityComplete(
                            entity: UInt32(entity), batches: states[entity].batch, rowsWritten: UInt64(states[entity].rowsWritten)))
                    states[entity].complete = true
                    hooks?.tablesFinished(finishedTables())
                    entities.removeFirst()
                }
                return nil
            },
            done: { batch, run in
                work.did(Double(batch.rows), of: .copy, in: run.lastUnit / .seconds(1))
                report(progress(run, entity: batch.entity, phase: .copy, batch: states[batch.entity].batch))
            }, rows: { Int64($0.rows) })
    }

    /// The fix-up pass: sets each deferred relationship, one ID-map segment of its entity per
    /// batch; `.paused` when the run stops first.
    func fixUpDeferredRelationships(_ run: inout PhaseLoop, report: (MigrationProgress) -> Void) throws -> RunOutcome {
        var columns = order.entities.flatMap { entity in (order.deferred[entity] ?? []).sorted().map { (entity, $0) } }[...]
        // The columns whose every segment is fixed up leave the front of the list.
        func dropFinished() {
            while let (entity, column) = columns.first,
                Int(states[entity].fixupBatch[column] ?? 0) >= idMap.segments(entity: UInt32(entity)).count
            {
                columns.removeFirst()
            }
        }
        return try run.run(
            until: {
                dropFinished()
                return columns.isEmpty
            },
            { () throws -> (entity: Int, column: String, rows: Int)? in
                dropFinished()
                guard let (entity, column) = columns.first else { return nil }
                let ref = idMap.segments(entity: UInt32(entity))[Int(states[entity].fixupBatch[column] ?? 0)]
                try fixupBatch(entity: entity, column: column, ref: ref)
                return (entity, column, Int(ref.count))
            },
            done: { batch, run in
                work.did(Double(batch.rows), of: .fixup, in: run.lastUnit / .seconds(1))
                report(
                    progress(
                        run, entity: batch.entity, phase: .fixup(column: batch.column),
                        batch: states[batch.entity].fixupBatch[batch.column] ?? 0))
            })
    }

    /// The secondary indexes the job deferred, built once the rows are in; `.paused` when the
    /// run stops first.
    func buildDeferredIndexes(_ run: inout PhaseLoop, report: (MigrationProgress) -> Void) throws -> RunOutcome {
        defer { try? sort((false, options.sqliteCacheKiB)) }
        let indexes = try CheckpointStore.deferredIndexes(in: database)
        var left = (hooks?.buildOrder(indexes) ?? indexes)[...]
        return try run.run(
            until: { left.isEmpty },
            { () throws -> (name: String, sql: String)? in
                guard let index = left.popFirst() else { return nil }
                let table = SQL.leadingColumn(ofIndex: index.sql)?.split(separator: ".").first.map(String.init)
                try sort(
                    CheckpointStore.sorting(
                        rows: table.map { rows(ofTable: $0) } ?? 0, terms: SQL.termCount(ofIndex: index.sql) ?? 1,
                        cacheKiB: options.sqliteCacheKiB, helper: hooks?.sortsWithHelper(index.sql) ?? true))
                try CheckpointStore.rebuild(index: index.name, sql: index.sql, in: database)
                hooks?.indexBuilt(index.name)
                CrashPoint.check(.afterIndex, entity: index.name, batch: 0)
                return index
            },
            done: { index, run in
                let table = SQL.leadingColumn(ofIndex: index.sql)?.split(separator: ".").first.map(String.init)
                let units = table.map { JobWork.indexUnits(rows: rows(ofTable: $0)) } ?? 0
                indexUnitsDone += units
                work.did(units, of: .index, in: run.lastUnit / .seconds(1))
                report(progress(run, entity: entity(writing: table), phase: .index(name: index.name), batch: 0, table: table))
            })
    }

    /// How an index build sorts: with a helper thread (`PRAGMA threads = 1`) where the second
    /// core is free (no check beside the job, ``StoreHooks/sortsWithHelper(_:)``), which there
    /// shortens the largest builds by a fifth or more (Tools/BENCHMARKS.md). The helper
    /// sorts one run of keys while the job's thread fills the next, each run the size of the
    /// page cache (the sorter sizes its runs by it): two runs in memory instead of one, where
    /// the batches' keys were until the copy ended (``Resolver/releaseBatchMemory()``), so that
    /// peak memory stays where it was.
    ///
    /// The page cache sizes the sorter's runs (``CheckpointStore/sorting(rows:terms:cacheKiB:helper:)``):
    /// the largest builds sort alone in larger runs, so that the read buffers of their merge,
    /// one a run, stay flat in the rows. The cache they take beyond the job's comes from the
    /// source's, which no build reads: the job's caches together stay what the options say.
    func sort(_ sorting: (helper: Bool, cacheKiB: Int)) throws(SQLiteError) {
        let lent = max(0, min(sorting.cacheKiB - options.sqliteCacheKiB, options.sqliteCacheKiB - 64))
        try database.execute(
            "PRAGMA threads = \(sorting.helper ? 1 : 0); PRAGMA main.cache_size = -\(sorting.cacheKiB); "
                + "PRAGMA src.cache_size = -\(options.sqliteCacheKiB - lent)")
    }

    /// The store's steps after the rows and indexes (``StoreHooks/finishingSteps()``), each in
    /// batches; `.paused` when the run stops first.
    func finish(_ run: inout PhaseLoop, report: (MigrationProgress) -> Void) throws -> RunOutcome {
        guard let hooks else { return .complete }
        var steps = try hooks.finishingSteps()[...]
        var batch: UInt64 = 0
        return try run.run(
            until: { steps.isEmpty },
            { () throws -> (step: FinishingStep, batch: UInt64)? in
                while let step = steps.first {
                    if batch == 0, try step.isDone() {
                        steps.removeFirst()
                        continue
                    }
                    let done = try step.runBatch(batchSize)
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
            },
            done: { unit, run in
                let units = unit.step.table == nil ? 0 : Double(batchSize)
                finishingUnitsDone += units
                work.did(units, of: .finishing, in: run.lastUnit / .seconds(1))
                // Reported as a step of the entity writing the table it works on.
                report(
                    progress(
                        run, entity: entity(writing: unit.step.table), phase: .finishing(step: unit.step.name), batch: unit.batch,
                        table: unit.step.table))
            })
    }

    static func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
