import Foundation
import Logging
import MigrationJournal

/// A migration job: one run of a plan from a source store to a destination store, recorded in a
/// journal directory so that it can stop at any instant and continue where it stopped.
///
/// From an app's startup path:
///
/// ```swift
/// let job = try MigrationJob.resume(at: journalURL, options: options, logger: logger)
/// let outcome = try await job.run(for: .seconds(10))   // .complete or .paused
/// ```
///
/// Starting a job, and following its progress:
///
/// ```swift
/// let job = try MigrationJob.start(plan: plan, source: old, destination: new, journal: journalURL,
///                                  schema: newSchemaSQL, logger: logger)
/// let updates = job.progressUpdates()              // ends when the run below ends
/// let printer = Task { for await step in updates { print(step.entity, step.rowsDone, step.rowsTotal) } }
/// _ = try await job.run()
/// await printer.value                              // every report printed
/// ```
public final class MigrationJob: MigrationRun, Sendable {
    /// The journal directory.
    public let journalURL: URL
    /// The job's identifier, recorded in the journal and the destination.
    public let jobID: String
    /// The plan, as frozen in the journal.
    public let plan: MigrationPlan
    /// The source store (opened read-only, never written).
    public let sourceURL: URL
    /// The destination store.
    public let destinationURL: URL
    /// The whole job's fraction done (``MigrationProgress/fraction``) in ten-thousandths, for a
    /// progress bar or a `ProgressView`.
    public let progress: Progress
    static let progressUnits: Int64 = 10_000
    /// Whether this object started the job (``start(plan:source:destination:journal:schema:options:logger:)``,
    /// or ``startOrResume(plan:source:destination:journal:schema:options:logger:)`` where the
    /// journal had no job yet) rather than opened a job recorded in its journal.
    public let isNew: Bool
    /// For a job this object started: the disk it was worked out to need at its peak, and the
    /// free space then (``SpaceEstimate``); `nil` for a job opened from its journal, or started
    /// with ``MigrationOptions/checksFreeSpace`` off.
    public let spaceEstimate: SpaceEstimate?

    private let options: MigrationOptions
    private let logger: Logger
    private let control = Locked(Control())
    /// One run at a time on a thread of its own, the pause and the progress streams.
    private let shell: JobShell

    /// What the last run leaves for the job's callers.
    private struct Control {
        var phases: RunPhases?
        var fixupsFromRecords = 0
        var storeCheck: CoreDataStoreCheck.Report?
    }

    /// Where the last run of this object spent its time, phase by phase; `nil` before a run.
    public var lastRunPhases: RunPhases? { control.withLock { $0.phases } }
    /// The fix-up batches of the last run that read the references its copy recorded.
    var lastRunFixupsFromRecords: Int { control.withLock { $0.fixupsFromRecords } }

    /// The check of the Core Data store the job wrote (``MigrationOptions/checksStore``), made by
    /// the run that completed the job, partly alongside its index builds; `nil` for a plain
    /// store, before that run, or with the option off. A store whose report is not
    /// ``CoreDataStoreCheck/Report/isValid`` must not replace the app's store.
    public var storeCheck: CoreDataStoreCheck.Report? { control.withLock { $0.storeCheck } }

    private init(
        journalURL: URL, header: JournalHeader, plan: MigrationPlan, source: URL, destination: URL,
        options: MigrationOptions, logger: Logger, complete: Bool, isNew: Bool = false, spaceEstimate: SpaceEstimate? = nil
    ) {
        self.journalURL = journalURL
        self.spaceEstimate = spaceEstimate
        self.jobID = header.jobID
        self.plan = plan
        self.sourceURL = source
        self.destinationURL = destination
        self.options = options
        self.logger = logger
        self.progress = Progress(totalUnitCount: 0)
        self.isNew = isNew
        self.shell = JobShell(
            complete: complete, threadName: "chunkmigrate \(header.jobID.prefix(8))", file: journalURL.path,
            alreadyRunning: "this job is already running")
    }

    /// Whether every entity and fix-up is done.
    public var isComplete: Bool { shell.isComplete }

    // MARK: Starting and resuming

    /// Starts a new job: validates the plan against both stores (every statement is prepared
    /// before anything is written), creates the journal and records the job in the destination.
    ///
    /// - Parameters:
    ///   - plan: what to copy and how; frozen into the journal.
    ///   - source: the store to migrate, opened read-only.
    ///   - destination: the store to write.
    ///   - journal: the journal's folder, which must not hold a job yet.
    ///   - schema: SQL that creates the destination when it does not exist.
    ///   - options: batch sizes, memory, validation and the plan's functions.
    ///   - logger: where the job logs.
    /// - Throws: ``MigrationError`` naming the plan path, entity, table or file at fault; nothing
    ///   is left behind when it throws.
    public static func start(
        plan: MigrationPlan, source: URL, destination: URL, journal: URL, schema: String? = nil,
        options: MigrationOptions = MigrationOptions(),
        logger: Logger
    ) throws -> MigrationJob {
        try plan.validate()
        let layout = JournalLayout(directory: journal.path)
        if hasJournal(at: journal) {
            throw MigrationError(.journal, "a journal already exists here; resume it, or choose another directory", file: journal.path)
        }
        let planBytes: [UInt8]
        do { planBytes = Array(try plan.encodedJSON()) } catch {
            throw MigrationError(.invalidPlan, "the plan cannot be encoded: \(error)", cause: error)
        }
        let journalExisted = FileManager.default.fileExists(atPath: journal.path)
        let destinationExisted = FileManager.default.fileExists(atPath: destination.path)
        var writer: JournalWriter?
        do {
            let stores = try Stores.open(source: source.path, destination: destination.path, schema: schema, options: options)
            let journalMode = try stores.journalMode()
            try refuseAnotherJob(stores, file: destination.path)
            var space: SpaceEstimate?
            if options.checksFreeSpace {
                let estimate = try SpaceEstimate.of(
                    plan: plan, stores: stores, options: options, boundWhereItFits: !options.estimatesSpaceExactly)
                space = estimate
                guard estimate.fits else {
                    throw MigrationError(
                        .diskFull,
                        "not enough free space for the job: it \(estimate); free some space, or put the destination on another volume",
                        file: destination.path)
                }
            }
            let header = try Self.header(plan: plan, planBytes: planBytes, stores: stores, source: source, destination: destination)
            let created = try JournalWriter.create(directory: journal.path, header: header, plan: planBytes)
            writer = created
            try stores.database.inTransaction(.immediate) {
                _ = try recordJob(
                    header, journalMode: journalMode, stores: stores, options: options, file: destination.path,
                    defersTriggers: plan.coreData != nil
                ) {
                    let engine = try Engine(
                        plan: plan, options: options, logger: logger, stores: stores, journal: created,
                        idMap: IDMap(layout: layout, entityCount: plan.entities.count), sourcePath: source.path,
                        hooks: storeHooks(
                            plan: plan, options: options, logger: logger, sourcePath: source.path,
                            checkScratch: created.layout.check))
                    try engine.prepare()
                    return engine
                }
                CrashPoint.check(.beforeStartCommit, entity: "job", batch: 0)
            }
            created.close()
            logger.info("started job", metadata: ["job": "\(header.jobID)", "journal": "\(journal.path)"])
            return MigrationJob(
                journalURL: journal, header: header, plan: plan, source: source, destination: destination,
                options: options, logger: logger, complete: false, isNew: true, spaceEstimate: space)
        } catch {
            writer?.close()
            removeWhatStartCreated(
                journal: journal, journalExisted: journalExisted, wroteJournal: writer != nil,
                destination: destination, destinationExisted: destinationExisted)
            throw MigrationError.wrapping(error)
        }
    }

    /// Whether a job's journal is at `journal`: the directory holds a journal header (a start
    /// killed before it wrote one left no job to resume, and starting again is safe).
    public static func hasJournal(at journal: URL) -> Bool {
        FileManager.default.fileExists(atPath: JournalLayout(directory: journal.path).header)
    }

    /// Refuses a destination that already holds another job's checkpoint.
    private static func refuseAnotherJob(_ stores: Stores, file: String) throws {
        if let other = try CheckpointStore.jobIDs(in: stores.database).first {
            throw MigrationError(
                .mismatch,
                "the destination already holds the checkpoint of job \(other); resume that job's journal, or use a fresh destination",
                file: file)
        }
    }

    /// The header of a new job's journal: a new job ID, and the fingerprints of the plan and the
    /// source that every later run checks.
    private static func header(plan: MigrationPlan, planBytes: [UInt8], stores: Stores, source: URL, destination: URL) throws
        -> JournalHeader
    {
        let jobID = UUID().uuidString.lowercased()
        return JournalHeader(
            jobID: jobID, createdAt: ISO8601DateFormatter().string(from: Date()),
            writer: "chunkmigrate \(ChunkMigrateVersion.string)", planFingerprint: JournalSHA256.hex(planBytes),
            sourceFingerprint: try stores.sourceFingerprint(plan: plan),
            destinationFingerprint: "job:\(jobID)",
            sourcePath: source.standardizedFileURL.path, destinationPath: destination.standardizedFileURL.path,
            entities: plan.entities.map { entity in
                JournalHeader.Entity(
                    name: entity.name, sourceTable: entity.source.table, destinationTable: entity.destination.table,
                    keys: entity.keys,
                    relationships: entity.relationships.mapValues(\.to))
            })
    }

    /// After a start that failed, leaves nothing behind: the journal this start created (only its
    /// files, when the directory was there before), and the destination when it created it.
    private static func removeWhatStartCreated(
        journal: URL, journalExisted: Bool, wroteJournal: Bool,
        destination: URL, destinationExisted: Bool
    ) {
        if wroteJournal {
            if journalExisted {
                for name in JournalLayout.names {
                    try? FileManager.default.removeItem(atPath: journal.path + "/" + name)
                }
            } else {
                try? FileManager.default.removeItem(at: journal)
            }
        }
        if !destinationExisted {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                try? FileManager.default.removeItem(atPath: destination.path + suffix)
            }
        }
    }

    /// Inside the transaction that records a new job in the destination (at its start, or on
    /// the first run after a start killed before it committed): the checkpoint tables, then the
    /// engine `makeEngine` creates, which checks the plan against the stores and prepares every
    /// statement, then the destination made ready (``prepareDestination(_:options:file:)``).
    private static func recordJob(
        _ header: JournalHeader, journalMode: String, stores: Stores, options: MigrationOptions,
        file: String, defersTriggers: Bool, engine makeEngine: () throws -> Engine
    ) throws -> Engine {
        try CheckpointStore.create(
            in: stores.database, jobID: header.jobID, planFingerprint: header.planFingerprint,
            journalMode: journalMode)
        // A Core Data store's triggers call functions only Core Data's connections have: they go
        // before the engine prepares its statements (CoreDataFinishing brings them back).
        if defersTriggers { try CheckpointStore.deferTriggers(in: stores.database) }
        let engine = try makeEngine()
        try prepareDestination(engine, options: options, file: file)
        return engine
    }

    /// What the plan's kind of store adds to the engine (``StoreHooks``): for a Core Data store,
    /// its bookkeeping, check and finishing steps (``CoreDataJobPart``).
    private static func storeHooks(
        plan: MigrationPlan, options: MigrationOptions, logger: Logger, sourcePath: String,
        checkScratch: String
    ) -> (Database, Resolver) throws -> (any StoreHooks)? {
        { database, resolver in
            try plan.coreData.map { mapping in
                try CoreDataJobPart(
                    database: database, plan: plan, mapping: mapping, resolver: resolver, options: options, logger: logger,
                    sourcePath: sourcePath, checkScratch: URL(fileURLWithPath: checkScratch, isDirectory: true))
            }
        }
    }

    /// Refuses a destination whose tables the plan writes already hold rows: the store a finished
    /// job wrote, say, which a new job would otherwise fill with a second copy.
    private static func refuseExistingRows(_ database: Database, plan: MigrationPlan, except: Set<String>, file: String) throws {
        for entity in plan.entities where !except.contains(entity.destination.table.uppercased()) {
            let table = entity.destination.table
            guard
                try database.scalar(
                    "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name = ?1 COLLATE NOCASE",
                    .text(table)
                ).integer == 1,
                try database.scalar("SELECT EXISTS (SELECT 1 FROM main.\(SQL.quote(table)))").integer == 1
            else { continue }
            let advice =
                plan.coreData != nil
                ? "a Core Data migration writes into the empty store Core Data created with the new model"
                : "a new job writes into empty tables unless asked to append after the rows there (--append, MigrationOptions.appendToExistingRows)"
            throw MigrationError(
                .store, "the destination already holds rows in \(table) (the store of a finished job?): \(advice)",
                entity: entity.name, file: file)
        }
    }

    /// Opens the job recorded in a journal: cheap when the job is complete (it reads the journal
    /// only), and otherwise checks that the plan, the source and the destination are those the job
    /// started with.
    ///
    /// - Parameters:
    ///   - journal: the journal's folder.
    ///   - source: where the source is now, when it moved since the start.
    ///   - destination: where the destination is now, when it moved since the start.
    ///   - expected: the plan the caller expects; refused when it differs from the journal's as a
    ///     plan (how either is spelled in JSON does not matter).
    ///   - options: batch sizes, memory, validation and the plan's functions for this run.
    ///   - logger: where the job logs.
    /// - Throws: ``MigrationError`` with code `.mismatch` when a fingerprint differs, `.journal`
    ///   when the journal cannot be read.
    public static func resume(
        at journal: URL, source: URL? = nil, destination: URL? = nil, plan expected: MigrationPlan? = nil,
        options: MigrationOptions = MigrationOptions(),
        logger: Logger
    ) throws -> MigrationJob {
        let reader = try readJournal(at: journal)
        guard JournalSHA256.hex(reader.plan) == reader.header.planFingerprint else {
            throw MigrationError(.journal, "plan.json does not match the plan fingerprint in the journal header", file: reader.layout.plan)
        }
        let plan = try MigrationPlan.decode(json: Data(reader.plan), file: reader.layout.plan)
        if let expected {
            // Equal as plans, not as bytes: the frozen plan.json may have been written by another
            // version, or spell out defaults the caller's plan leaves out.
            guard expected == plan else {
                throw MigrationError(
                    .mismatch,
                    "the plan differs from the one this job started with (see \(reader.layout.plan)); finish or discard this job, or use its plan",
                    file: journal.path)
            }
        }
        let sourceURL = source ?? URL(fileURLWithPath: reader.header.sourcePath)
        let destinationURL = destination ?? URL(fileURLWithPath: reader.header.destinationPath)
        let job = MigrationJob(
            journalURL: journal, header: reader.header, plan: plan, source: sourceURL,
            destination: destinationURL, options: options, logger: logger,
            complete: reader.state == .complete)
        if job.isComplete { job.finishDestination() }
        if !job.isComplete {
            // Check the stores now, so a mismatch is refused at startup rather than at run.
            let stores = try Stores.open(source: sourceURL.path, destination: destinationURL.path, schema: nil, options: options)
            try job.checkStores(stores, header: reader.header, log: reader.log)
        }
        return job
    }

    /// Continues the job recorded in `journal`, or starts it there when the journal records no job
    /// yet: the one call an app's startup path or a command line needs, run after run.
    ///
    /// ```swift
    /// let job = try MigrationJob.startOrResume(plan: plan, source: oldStoreURL, destination: newStoreURL,
    ///                                          journal: journalURL, schema: newSchemaSQL, logger: logger)
    /// if !job.isComplete { _ = try await job.run(for: .seconds(5)) }
    /// ```
    ///
    /// - Parameters:
    ///   - plan: the plan; a recorded job must have started with this same plan.
    ///   - source: the store to migrate; a recorded job checks that it is its own.
    ///   - destination: the store to write; a recorded job checks that it is its own.
    ///   - journal: the journal's folder.
    ///   - schema: SQL that creates the destination when it does not exist; evaluated only when
    ///     the job starts.
    ///   - options: batch sizes, memory, validation and the plan's functions.
    ///   - logger: where the job logs.
    /// - Throws: ``MigrationError``, as ``start(plan:source:destination:journal:schema:options:logger:)``
    ///   or ``resume(at:source:destination:plan:options:logger:)`` would.
    public static func startOrResume(
        plan: MigrationPlan, source: URL, destination: URL, journal: URL,
        schema: @autoclosure () throws -> String? = nil,
        options: MigrationOptions = MigrationOptions(),
        logger: Logger
    ) throws -> MigrationJob {
        if hasJournal(at: journal) {
            return try resume(at: journal, source: source, destination: destination, plan: plan, options: options, logger: logger)
        }
        return try start(
            plan: plan, source: source, destination: destination, journal: journal, schema: try schema(),
            options: options, logger: logger)
    }

    /// Where the job recorded in a journal stands, from the journal alone.
    public static func status(at journal: URL) throws -> JobStatus {
        JobStatus(reader: try readJournal(at: journal))
    }

    // MARK: Running

    /// Runs the job until it is complete, or until `budget` has passed, ``pause()`` is called or
    /// the task is cancelled, whichever comes first; it stops only at a batch boundary.
    ///
    /// The work runs on a thread of its own; progress is published to ``progressUpdates()`` and
    /// ``progress`` after every batch.
    public func run(for budget: Duration? = nil) async throws -> RunOutcome {
        try await shell.run(for: budget) { [self] deadline in try runHere(deadline: deadline) }
    }

    /// Runs the job on the calling thread (for command-line tools and tests that have no
    /// concurrency of their own); the same as ``run(for:)`` otherwise.
    public func runBlocking(for budget: Duration? = nil) throws -> RunOutcome {
        try shell.runBlocking(for: budget, runHere)
    }

    /// Asks the job to stop at the next batch boundary: a running run stops there, and a run
    /// that has not started yet returns ``RunOutcome/paused`` before its first batch. Each run
    /// clears the request when it ends. Safe from any thread.
    public func pause() {
        shell.pause()
    }

    /// A stream of progress reports, one after each batch. It finishes when the run that follows
    /// ends: complete, paused or failed. Ask for a new stream before each run.
    public func progressUpdates() -> AsyncStream<MigrationProgress> {
        shell.progressUpdates()
    }

    private func runHere(deadline: ContinuousClock.Instant?) throws -> RunOutcome {
        if isComplete {
            finishDestination()
            return .complete
        }
        do {
            let outcome = try withEngine { engine in
                defer {
                    control.withLock { control in
                        control.phases = engine.phases
                        control.fixupsFromRecords = engine.fixupsFromRecords
                        if let report = (engine.hooks as? CoreDataJobPart)?.checkReport { control.storeCheck = report }
                    }
                }
                return try engine.run(
                    deadline: deadline,
                    shouldStop: { [shell] in shell.pauseRequested },
                    report: publish)
            }
            shell.runEnded(complete: outcome == .complete)
            return outcome
        } catch {
            shell.runEnded(complete: false)
            throw MigrationError.wrapping(error)
        }
    }

    /// When the job completed but was stopped before it removed its checkpoint tables from the
    /// destination (or gave the destination back its journal mode), does it now. A destination that
    /// is gone or belongs to no job is left alone.
    /// With ``MigrationOptions/keepCheckpointTables``, the tables stay but the journal mode comes
    /// back all the same.
    private func finishDestination() {
        guard FileManager.default.fileExists(atPath: destinationURL.path) else { return }
        do {
            let database = try Database(path: destinationURL.path, mode: .readWrite)
            guard try CheckpointStore.jobIDs(in: database).contains(jobID) else { return }
            try CheckpointStore.finish(in: database, keepTables: options.keepCheckpointTables)
        } catch {
            logger.warning(
                "cannot remove the checkpoint tables of a completed job",
                metadata: [
                    "destination": "\(destinationURL.path)", "error": "\(error)",
                ])
        }
    }

    private func publish(_ step: MigrationProgress) {
        progress.totalUnitCount = Self.progressUnits
        progress.completedUnitCount = Int64(step.fraction * Double(Self.progressUnits))
        shell.publish(step)
        logger.debug(
            "batch committed",
            metadata: [
                "entity": "\(step.entity)", "phase": "\(step.phase)", "batch": "\(step.batch)",
                "rows": "\(step.rowsDone)/\(step.rowsTotal)",
            ])
    }

    /// Checks that the destination and the source are this job's: the destination holds this
    /// job's checkpoint (or, when the job never committed a batch, none at all), and the source's
    /// fingerprint is the one recorded at the start.
    private func checkStores(_ stores: Stores, header: JournalHeader, log: JournalLog) throws {
        let jobs = try CheckpointStore.jobIDs(in: stores.database)
        if jobs.isEmpty && !log.recordsCompletion {
            guard !log.recordsBatches else {
                throw MigrationError(
                    .mismatch,
                    "the destination has no checkpoint of job \(jobID), but the journal records batches: this is not the destination the job wrote",
                    file: destinationURL.path)
            }
        } else if !jobs.isEmpty && !jobs.contains(jobID) {
            throw MigrationError(
                .mismatch,
                "the destination belongs to job \(jobs[0]), not to this journal's job \(jobID)", file: destinationURL.path)
        }
        let fingerprint = try stores.sourceFingerprint(plan: plan)
        guard fingerprint == header.sourceFingerprint else {
            throw MigrationError(
                .mismatch,
                "the source is not the store this job started with (its schema or key range changed, or it is another file)",
                file: sourceURL.path)
        }
    }

    /// Opens the journal (taking its lock), the destination and the source, checks that they are
    /// this job's, repairs the journal from the checkpoint, and hands the engine to `body`.
    private func withEngine<T>(_ body: (Engine) throws -> T) throws -> T {
        let writer: JournalWriter
        do { writer = try JournalWriter.open(directory: journalURL.path) } catch {
            throw MigrationError(error.code == .locked ? .busy : .journal, error.message, file: error.file ?? journalURL.path)
        }
        defer { writer.close() }
        let stores = try Stores.open(source: sourceURL.path, destination: destinationURL.path, schema: nil, options: options)
        let database = stores.database
        try checkStores(stores, header: writer.header, log: writer.log)
        let idMap = IDMap(
            layout: writer.layout, entityCount: plan.entities.count, cacheBudget: options.idMapCacheBytes,
            cacheLimit: options.idMapCacheLimitBytes)
        func makeEngine() throws -> Engine {
            let engine = try Engine(
                plan: plan, options: options, logger: logger, stores: stores, journal: writer, idMap: idMap,
                sourcePath: sourceURL.path,
                hooks: Self.storeHooks(
                    plan: plan, options: options, logger: logger, sourcePath: sourceURL.path,
                    checkScratch: writer.layout.check))
            try engine.prepare()
            return engine
        }
        let engine: Engine
        if !writer.log.recordsCompletion, try CheckpointStore.jobIDs(in: database).isEmpty {
            // Created, but stopped before the transaction that records the job in the destination
            // committed: do all of it now (the journal mode is still the store's own).
            let journalMode = try stores.journalMode()
            engine = try database.inTransaction(.immediate) {
                try Self.recordJob(
                    writer.header, journalMode: journalMode, stores: stores, options: options,
                    file: destinationURL.path, defersTriggers: plan.coreData != nil, engine: makeEngine)
            }
            try stores.useRollbackJournal()
        } else {
            if !writer.log.recordsCompletion { try stores.useRollbackJournal() }
            engine = try makeEngine()
        }
        try engine.reconcile()
        return try body(engine)
    }

    /// Inside the transaction that records a new job in the destination, after its checkpoint
    /// tables: refuses tables that already hold rows (unless asked to append), does Core Data's
    /// start-of-job bookkeeping, creates the unique indexes de-duplicated entities look values up
    /// in, and defers the secondary indexes. A job whose start was killed before this committed
    /// does it all on its next run.
    private static func prepareDestination(_ engine: Engine, options: MigrationOptions, file: String) throws {
        let plan = engine.plan, database = engine.database
        if !options.appendToExistingRows || plan.coreData != nil {
            // A Core Data store's history and CloudKit tables take the source's rows in place of
            // what the new store's container wrote when it created them (CoreDataBookkeeping.start).
            try refuseExistingRows(database, plan: plan, except: engine.hooks?.tablesWrittenAtStart ?? [], file: file)
        }
        try engine.hooks?.jobStarts()
        for (index, entity) in plan.entities.enumerated() {
            guard let distinct = entity.distinct else { continue }
            do {
                try CheckpointStore.ensureUniqueIndex(table: entity.destination.table, column: distinct.destination, in: database)
            } catch {
                throw MigrationError(
                    .invalidPlan,
                    "entities[\(index)].distinct.destination: the natural key \(distinct.destination) must be unique in \(entity.destination.table), but \(error.message)",
                    entity: entity.name, column: distinct.destination, file: file)
            }
        }
        if options.defersIndexes && !plan.readsDestination {
            try CheckpointStore.deferIndexes(in: database, tables: plan.entities.map(\.destination.table))
        }
    }

    /// Reads a journal, or throws naming what is wrong with it.
    private static func readJournal(at journal: URL) throws -> JournalReader {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: journal.path, isDirectory: &isDirectory), !isDirectory.boolValue,
            InPlaceMigration.isHalfMigrated(journal)
        {
            // A store given where a journal goes: an in-place job keeps its state in the store.
            throw MigrationError(
                .journal, "this is a store, not a journal: \(InPlaceMigration.halfMigratedMessage(journal.path))", file: journal.path)
        }
        do { return try JournalReader(directory: journal.path) } catch {
            throw MigrationError(.journal, "cannot read the journal: \(error.message)", file: error.file ?? journal.path, cause: error)
        }
    }
}
