import Foundation
import MigrationJournal

/// A Core Data store migrated inside its own file: only what the model change touches, in
/// checkpointed batches, with no second copy of the store.
///
/// The plan is the one the copy path runs (``MigrationPlan/infer(source:destination:options:)``);
/// the target is the empty store Core Data created for the new model, read for its schema and
/// bookkeeping only. Per table, the least that reaches the target:
///
/// - nothing for a table that does not change;
/// - `ALTER TABLE ... ADD COLUMN` for a new column, `RENAME COLUMN` for one that takes another's
///   values unchanged, then one `UPDATE` per batch of keys for every value that changes (defaults
///   written into existing rows, entity numbers, polymorphic columns, values moved between
///   columns: all read from the row as it was, in one statement);
/// - a `DELETE` per batch for rows the plan leaves out (a removed sub-entity's);
/// - where a column goes away or changes its declared type, a rebuild into a new table of the
///   same file, batch by batch, each batch's rows deleted from the old table as they are copied,
///   so that the pages they free are used again and the file does not grow by a second copy;
/// - tables renamed, removed tables dropped, new ones created, indexes as the target has them;
/// - derived attributes the plan computes, in batches;
/// - at the end, in one transaction: the target's `Z_PRIMARYKEY` (with `Z_MAX` kept ahead of the
///   keys), `Z_METADATA` (the target's, with the store's own UUID and the app's metadata keys),
///   `Z_MODELCACHE` and triggers (a plain store's views and triggers); then the store's journal
///   mode back, and last the job's state tables dropped.
///
/// The steps are worked out once, at the start, and kept in the store with how far each has come
/// (`_chunkmigrate_inplace_step`), each batch committed with its cursor: a kill at any instant
/// resumes to the same store. Between the first change and the last step the store is neither the
/// old model's nor the new one's (``isHalfMigrated(_:)``): Core Data must not open it, the copy
/// path refuses it as a source, and `check-coredata` says so; running the same job again finishes
/// it.
///
/// A plan that needs the copy path is refused with the reason: keys allocated anew, a
/// de-duplicated entity, relationships through the ID map, two entities reading one table, R-tree
/// indexes.
///
/// It runs as a ``MigrationJob`` runs (``MigrationRun``): ``run(for:)`` on a thread of its own,
/// where a cancelled task becomes a pause, ``runBlocking(for:)`` on the caller's, one run at a
/// time, ``pause()`` and ``progressUpdates()``.
///
/// `@unchecked Sendable`: what it knows of the job is set before it is returned and not changed
/// after; its connection is used inside a run only, one at a time (the job shell), and where it
/// stands (``status``) is kept behind a lock.
public final class InPlaceMigration: MigrationRun, @unchecked Sendable {
    /// The store being migrated, and the target store (the new model's empty store).
    public let storeURL: URL
    public let targetURL: URL

    /// The tables of the migrated store the job changes or makes: what the check at the end
    /// covers, since the others are as they were.
    public private(set) var touchedTables: [String] = []
    /// Of ``touchedTables``, those whose rows, keys and values the job keeps, with the columns it
    /// writes into them (in capitals): the check at the end reads only those columns of them.
    private(set) var keptTables: [String: Set<String>] = [:]

    /// Whether the store is a Core Data store (checked with ``CoreDataStoreCheck`` at the end),
    /// rather than a plain SQLite one.
    public private(set) var isCoreData = false

    private let database: Database
    private let options: MigrationOptions
    /// One run at a time on a thread of its own, the pause and the progress streams.
    private let shell: JobShell
    /// Where the job stands, as the last run left it (or as it was opened); `nil` once done.
    private let current = Locked<Status?>(nil)
    /// What the job writes, to tell what the store already was from what the job brought about
    /// (``checkStore()``).
    private var writes: Writes?
    /// The check of the store beside the job, in a run that has reached the steps after the
    /// rows (``Step/afterRows``): on a connection and thread of its own, while the job builds
    /// indexes, derives values and writes the bookkeeping (``CoreDataStoreCheck/Overlapped``).
    private var besideCheck: CoreDataStoreCheck.Overlapped?
    /// What the check beside the run that completed the job found, and the checks it ran, which
    /// the check at the end (``checkStore()``) leaves out.
    var checkedBeside: (report: CoreDataStoreCheck.Report, ran: Set<String>)? { besideResult.withLock { $0 } }
    private let besideResult = Locked<(report: CoreDataStoreCheck.Report, ran: Set<String>)?>(nil)

    /// The columns a job writes (`TABLE.COLUMN`, in capitals: a value other than a column's as it
    /// was), and the tables it leaves rows out of.
    struct Writes: Codable, Equatable {
        var columns: Set<String>
        var leavesRowsOut: Set<String>

        /// What `plan` writes: every column whose expression is not a column as it is (renamed or
        /// not), and every table an entity mapping filters.
        init(plan: MigrationPlan) {
            var columns: Set<String> = [], leavesRowsOut: Set<String> = []
            for entity in plan.entities {
                let table = entity.destination.table.uppercased()
                for (column, expression) in entity.columns {
                    let bare = expression.trimmingCharacters(in: CharacterSet(charactersIn: "() "))
                    if bare.range(of: #"^("[^"]+"|[A-Za-z_][A-Za-z0-9_]*)$"#, options: .regularExpression) == nil {
                        columns.insert("\(table).\(column.uppercased())")
                    }
                }
                if entity.source.where != nil { leavesRowsOut.insert(table) }
            }
            self.columns = columns
            self.leavesRowsOut = leavesRowsOut
        }

        /// Why a finding of the migrated store is the store's own, or nil where the job may have
        /// brought it about: a value the job did not write is the store's as it was; a key that
        /// points nowhere is the store's where the job left no row out of the table it points into.
        func carried(_ finding: CoreDataStoreCheck.Finding) -> String? {
            guard let table = finding.table?.uppercased(), let column = finding.column?.uppercased(),
                !columns.contains("\(table).\(column)")
            else { return nil }
            switch finding.kind {
            case .required, .entityWithoutKey, .orderWithoutKey, .entityOutsideTree, .externalFile, .joinWithoutOrder:
                return "as the store was: the job does not write \(finding.column!)"
            case .dangling, .danglingJoin:
                guard let target = finding.targetTable?.uppercased(), !leavesRowsOut.contains(target) else { return nil }
                return "as the store was: the job does not write \(finding.column!) and leaves no row of \(finding.targetTable!) out"
            default:
                return nil
            }
        }
    }
    static let stateTable = "_chunkmigrate_inplace"
    static let stepTable = "_chunkmigrate_inplace_step"

    /// One step: statements run in one transaction, or per batch of `table`'s rowids (`?1` the
    /// last rowid done, `?2` the last of the batch).
    struct Step: Codable, Equatable {
        var label: String
        var table: String?
        var statements: [String]
        /// Whether the rows are in when the step runs: it builds an index, derives values or
        /// writes the new model's bookkeeping. From the first such step on, the check of the
        /// store reads it beside the job (``CoreDataStoreCheck/Overlapped``). Absent from a job an
        /// earlier version recorded, whose store is checked after it.
        var afterRows: Bool? = nil
        /// The index the step builds, by name.
        var index: String? = nil
        /// The store's index that is already ``index`` under another name (a join table renamed
        /// with its columns): the step renames it rather than build the target's. Where the
        /// store's schema cannot be written, it drops it and builds the target's.
        var takes: String? = nil
    }

    private init(store: URL, target: URL, database: Database, options: MigrationOptions) {
        storeURL = store
        targetURL = target
        self.database = database
        self.options = options
        shell = JobShell(
            complete: false, threadName: "chunkmigrate in place", file: store.path,
            alreadyRunning: "this in-place job is already running")
    }

    /// The file beside `store` that an in-place job holds locked (`flock`, which the kernel drops
    /// with the process that holds it) while it records its steps and while it runs: one job of
    /// a store at a time, in this process or another. It stays while the store is part-way
    /// through a job, and goes when the job ends: `STORE-chunkmigrate-lock`.
    public static func lockPath(of store: URL) -> String {
        store.path + "-chunkmigrate-lock"
    }

    /// The store's job lock, or ``MigrationError`` (`busy`) naming it where another job holds it.
    private static func takeLock(of store: URL) throws -> FileIO.Lock {
        let path = lockPath(of: store)
        let lock: FileIO.Lock?
        do { lock = try FileIO.Lock(path: path) } catch {
            throw MigrationError(.store, "cannot lock the store for an in-place job: \(error.message)", file: path, cause: error)
        }
        guard let lock else {
            throw MigrationError(
                .busy, "another in-place job has this store (it holds \(path)); let it finish, or pause it, and run again", file: store.path
            )
        }
        return lock
    }

    /// Whether the store is part-way through an in-place migration: its tables are neither the
    /// old model's nor the new one's until the job finishes.
    ///
    /// A job killed in the middle of a batch leaves a rollback journal that a read-only
    /// connection cannot roll back; then the store is opened for writing, which rolls the batch
    /// back as any writer of the store would, and asked again.
    public static func isHalfMigrated(_ store: URL) -> Bool {
        isHalfMigrated(store, recovering: true)
    }

    /// ``isHalfMigrated(_:)``; without `recovering`, a store that cannot be read without rolling
    /// back a journal counts as not part-way through (a source the copy path then refuses itself).
    static func isHalfMigrated(_ store: URL, recovering: Bool) -> Bool {
        func ask(_ mode: Database.Mode) -> Bool? {
            guard let database = try? Database(path: store.path, mode: mode) else { return nil }
            return
                (try? database.scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1", .text(stateTable)).integer)
                .map { $0 == 1 }
        }
        if let answer = ask(.source) { return answer }
        guard recovering, FileManager.default.fileExists(atPath: store.path + "-journal") else { return false }
        return ask(.readWrite) ?? false
    }

    /// The message every entry point gives for a half-migrated store.
    static func halfMigratedMessage(_ store: String) -> String {
        "the store is part-way through an in-place migration (\(stateTable)): it is neither the old model's nor the new one's and Core Data must not open it; finish it with `chunkmigrate resume \(store)` (or the same `run --in-place` again; InPlaceMigration.resume(store:) in an app)"
    }

    /// Where an in-place job stands, read from the store alone.
    public struct Status: Codable, Sendable, Equatable {
        /// The store being migrated, and the target it is migrated to (the new model's empty store).
        public var store: String
        public var target: String
        /// The job's steps, and how many are done.
        public var steps: Int
        public var stepsDone: Int
        /// The step under way or next, and the last rowid of its table done when it runs in batches.
        public var currentStep: String?
        public var cursor: Int64?
    }

    /// Where the in-place job `store` is part-way through stands, or `nil` when the store is not
    /// part-way through one (never started, or finished).
    ///
    /// - Throws: ``MigrationError`` when the store cannot be read.
    public static func status(of store: URL) throws -> Status? {
        guard isHalfMigrated(store) else { return nil }
        do {
            let database = try Database(path: store.path, mode: .source)
            return try status(in: database, store: store.path)
        } catch {
            throw MigrationError(
                .store, "cannot read the in-place job's state: \(error.message)", file: store.path, sql: error.sql, cause: error)
        }
    }

    private static func status(in database: Database, store: String) throws(SQLiteError) -> Status {
        let target = try database.scalar("SELECT value FROM main.\(stateTable) WHERE key = 'target'").text ?? ""
        let counts = try database.rows("SELECT count(*), coalesce(sum(done), 0) FROM main.\(stepTable)").first ?? []
        let current = try database.rows("SELECT step, cursor FROM main.\(stepTable) WHERE done = 0 ORDER BY idx LIMIT 1").first
        let label = current?[0].text.flatMap { try? JSONDecoder().decode(Step.self, from: Data($0.utf8)).label }
        return Status(
            store: store, target: target, steps: Int(counts.first?.integer ?? 0), stepsDone: Int(counts.last?.integer ?? 0),
            currentStep: label, cursor: current?[1].integer)
    }

    /// Where this job stands now, or `nil` once it is done: as it was opened, then as each batch
    /// of a run leaves it. Safe from any thread while a run goes.
    public var status: Status? {
        current.withLock { $0 }
    }

    /// Whether the job is done.
    public var isComplete: Bool { status == nil }

    /// Continues the in-place job `store` is part-way through, with the target it started with;
    /// `nil` when there is none, so that an app's startup path returns at once:
    ///
    /// ```swift
    /// if let job = try InPlaceMigration.resume(store: storeURL) { _ = try job.runBlocking(for: .seconds(5)) }
    /// ```
    ///
    /// - Throws: ``MigrationError`` when the store or the target recorded in it cannot be opened.
    public static func resume(store: URL, options: MigrationOptions = MigrationOptions()) throws -> InPlaceMigration? {
        guard let status = try status(of: store) else { return nil }
        guard FileManager.default.fileExists(atPath: status.target) else {
            throw MigrationError(
                .store, "the target this in-place job started with is gone: \(status.target); put the new model's empty store back there",
                file: store.path)
        }
        return try open(store: store, target: URL(fileURLWithPath: status.target), options: options)
    }

    /// Asks the job to stop at the next batch boundary: a running run stops there, and a run
    /// that has not started yet returns ``RunOutcome/paused`` before its first batch. Each run
    /// clears the request when it ends. Safe from any thread (a signal handler's queue, a UI
    /// action).
    public func pause() {
        shell.pause()
    }

    /// A stream of progress reports (``MigrationProgress/Phase/inPlace(step:)``), one after each
    /// batch, and the last, complete, at the end. It finishes when the run that follows ends.
    /// Ask for a new stream before each run.
    public func progressUpdates() -> AsyncStream<MigrationProgress> {
        shell.progressUpdates()
    }

    /// Starts an in-place migration of `store` to the model of `target`, or continues the one the
    /// store is part-way through.
    ///
    /// - Throws: ``MigrationError`` naming what needs the copy path, or the file that cannot be used.
    public static func startOrResume(plan: MigrationPlan, store: URL, target: URL, options: MigrationOptions = MigrationOptions()) throws
        -> InPlaceMigration
    {
        return try open(store: store, target: target, options: options, plan: plan)
    }

    /// Opens the store with the target attached, and records the job's steps when it is not
    /// recorded yet (`plan` given) and the store is not already at the target's model.
    private static func open(store: URL, target: URL, options: MigrationOptions, plan: MigrationPlan? = nil) throws -> InPlaceMigration {
        let lock = try takeLock(of: store)
        var recorded = false
        defer {
            if !recorded { try? FileManager.default.removeItem(atPath: lockPath(of: store)) }
            lock.release()
        }
        let database: Database
        do {
            database = try Database(path: store.path, mode: .readWrite)
            // Tables renamed leave the references of others as they are: a table whose
            // definition changes is rebuilt from the target's own statement.
            // EXTRA: FULL, and the directory synced after a rollback journal is unlinked (see
            // Stores.open), so that the last commit, in the store's own mode, survives a power cut.
            try database.execute(
                "PRAGMA synchronous = EXTRA; PRAGMA fullfsync = ON; PRAGMA legacy_alter_table = ON; PRAGMA cache_size = -\(options.sqliteCacheKiB);"
            )
            try database.attach(Database.sourceURI(target.path), as: "tgt")
        } catch {
            throw MigrationError(.store, "cannot open the store to migrate in place: \(error.message)", file: store.path, cause: error)
        }
        let migration = InPlaceMigration(store: store, target: target, database: database, options: options)
        do {
            // Core Data's derivation functions, for the derived values' steps.
            try CoreDataBookkeeping.registerDerivationFunctions(on: database)
        } catch {
            throw MigrationError(.store, error.message, file: store.path)
        }
        // The target's model, as a text to compare: a job part-way through continues only towards
        // the model it started with, wherever its target is now.
        let targetCoreDataModel = (try? CoreDataModel.read(database, schema: "tgt", file: target.path)).flatMap { $0 }
            .map { CoreDataModelBundle.signature($0).joined(separator: "\n") }
        let targetModel =
            targetCoreDataModel
            ?? (try? InPlacePlanner.tables("tgt", in: database))
            .map { $0.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "\n") }
        // Asked of the connection already open (the read-write one rolled back a batch a kill left).
        let halfMigrated =
            (try? database.scalar(
                "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name = ?1",
                .text(stateTable)
            ).integer) == 1
        if halfMigrated {
            let recorded = (try? database.scalar("SELECT value FROM main.\(stateTable) WHERE key = 'target_model'").text) ?? nil
            if let recorded, recorded != targetModel {
                throw MigrationError(
                    .mismatch,
                    "the store is part-way through an in-place migration to another model than \(target.path)'s (it started with \((try? database.scalar("SELECT value FROM main.\(stateTable) WHERE key = 'target'").text) ?? nil ?? "?")); finish that one first with its target",
                    file: store.path)
            }
        }
        // A store already at the target's model (a job that finished, run again): nothing to do.
        let already: Bool
        if halfMigrated {
            already = false
        } else if let hashes = storeHashes(database, schema: "main", file: store.path),
            hashes == storeHashes(database, schema: "tgt", file: target.path)
        {
            // Equal entity version hashes: the same model, as Core Data tells it, with or without
            // a model cache.
            already = true
        } else if targetCoreDataModel == nil, (try? CoreDataModel.read(database, schema: "main", file: store.path)) == nil,
            ["main", "tgt"].allSatisfy({ (try? CoreDataEntities.isCoreData(database, schema: $0)) == true }),
            storeHashes(database, schema: "main", file: store.path) == nil, storeHashes(database, schema: "tgt", file: target.path) == nil
        {
            // Core Data stores that carry no model and record no hashes: the same model where
            // their tables are the same (the plan between them copies every table as it is).
            already = (try? InPlacePlanner.tables("main", in: database)) == (try? InPlacePlanner.tables("tgt", in: database))
        } else if targetCoreDataModel == nil {
            already = try plainStoreIsDone(database, plan: plan, file: store.path)
        } else {
            already =
                (try? CoreDataModel.read(database, schema: "main", file: store.path))
                .flatMap { $0 }.map { CoreDataModelBundle.signature($0).joined(separator: "\n") } == targetModel
        }
        if !already && !halfMigrated, let plan {
            let (steps, touched, kept) = try InPlacePlanner(
                database: database, plan: plan, storePath: store.path, targetPath: target.path
            ).steps()
            // The tables whose rows it keeps, with the columns it writes, on a key of their own
            // (an earlier version resuming the job reads `touched` as it wrote it).
            let keptLines = kept.keys.sorted().map { table in ([table] + kept[table]!.sorted()).joined(separator: "\t") }
            let encoder = JSONEncoder()
            var encoded: [String] = []
            for step in steps {
                do { encoded.append(String(decoding: try encoder.encode(step), as: UTF8.self)) } catch {
                    throw MigrationError(.store, "cannot encode the in-place step \(step.label): \(error)", file: store.path, cause: error)
                }
            }
            // The rollback journal first, so that a store the job cannot have to itself is not
            // marked part-way through; the mode it had is recorded with the steps.
            let mode = (try? database.scalar("PRAGMA main.journal_mode").text) ?? nil ?? "delete"
            // What the job writes: a finding of the check at the end elsewhere is what the store
            // already was, which Core Data migrates as it is.
            var extra: [(String, String)] = []
            if let writes = try? JSONEncoder().encode(Writes(plan: plan)) { extra = [("writes", String(decoding: writes, as: UTF8.self))] }
            extra.append(("kept", keptLines.joined(separator: "\n")))
            try useRollbackJournal(database, file: store.path)
            do {
                try record(
                    encoded, target: target.path, targetModel: targetModel ?? "", mode: mode, touched: touched, extra: extra, in: database)
            } catch {
                try? database.execute("PRAGMA main.journal_mode = \(mode)")
                throw MigrationError(
                    .store, "cannot record the in-place job in the store: \(error.message)", file: store.path, sql: error.sql, cause: error)
            }
        } else if halfMigrated {
            try useRollbackJournal(database, file: store.path)
        }
        migration.isCoreData = migration.isCoreDataStore
        if let writes = ((try? database.scalar("SELECT value FROM main.\(stateTable) WHERE key = 'writes'").text) ?? nil) {
            migration.writes = try? JSONDecoder().decode(Writes.self, from: Data(writes.utf8))
        } else if let plan {
            migration.writes = Writes(plan: plan)
        }
        migration.touchedTables =
            ((try? database.scalar("SELECT value FROM main.\(stateTable) WHERE key = 'touched'").text) ?? nil)?
            .split(separator: "\n").map(String.init) ?? []
        // A table whose rows the job keeps per line, with the columns it writes:
        // `TABLE<tab>COLUMN<tab>COLUMN`; none where an earlier version started the job.
        let kept =
            ((try? database.scalar("SELECT value FROM main.\(stateTable) WHERE key = 'kept'").text) ?? nil)?
            .split(separator: "\n").map { $0.split(separator: "\t").map(String.init) } ?? []
        migration.keptTables = Dictionary(
            kept.filter { $0.count > 1 }.map { ($0[0].uppercased(), Set($0.dropFirst().map { $0.uppercased() })) },
            uniquingKeysWith: { $0.union($1) })
        migration.current.withLock { $0 = try? status(in: database, store: store.path) }
        recorded = migration.status != nil
        return migration
    }

    /// Whether the store open as `main` is a Core Data store.
    private var isCoreDataStore: Bool {
        (try? database.scalar("SELECT count(*) FROM main.sqlite_schema WHERE name = 'Z_PRIMARYKEY'").integer) == 1
    }

    /// The check of the tables the job touched, once it is complete, with what the store already
    /// was carried (``CoreDataStoreCheck/Report/carried``), as Core Data's own migration carries
    /// it: a finding in a column the job does not write (a required value left NULL, a key that
    /// points into a table the job leaves no row out of) is the store's. Nothing is checked
    /// before the job starts; a job completed by an earlier run, whose plan is gone with its
    /// state, reports every finding.
    ///
    /// Where the run of this instance that completed the job checked the rows beside its last
    /// steps (with ``MigrationOptions/checksStore`` on), that report is merged here and only
    /// what is left is checked now: `Z_MAX`, the metadata, system tables, derived values and
    /// the conditions of the tables they are derived into, triggers, external files.
    ///
    /// - Throws: ``MigrationError`` naming the file when the store cannot be read.
    public func checkStore() throws -> CoreDataStoreCheck.Report {
        let beside = checkedBeside
        let rest = try CoreDataStoreCheck.run(
            store: storeURL, model: nil, tables: Set(touchedTables), kept: keptTables, done: beside?.ran ?? [])
        let report = beside.map { $0.report.merged(with: rest) } ?? rest
        guard let writes else { return report }
        return report.carryingOver(writes.carried)
    }

    /// The entity version hashes the metadata of the Core Data store open as `schema` records;
    /// `nil` for a store that records none or is not a Core Data store.
    private static func storeHashes(_ database: Database, schema: String, file: String) -> CoreDataVersionHashes? {
        guard (try? CoreDataEntities.isCoreData(database, schema: schema)) == true else { return nil }
        return ((try? CoreDataMetadata.read(database, schema: schema, file: file))?.plist).flatMap { CoreDataVersionHashes(metadata: $0) }
    }

    /// Every batch commits through a rollback journal (`TRUNCATE`), which writes each row once.
    private static func useRollbackJournal(_ database: Database, file: String) throws {
        do { try database.execute("PRAGMA main.journal_mode = TRUNCATE") } catch {
            throw MigrationError(
                .store, "cannot set the store's journal (does another process have it open?): \(error.message)", file: file, cause: error)
        }
    }

    /// Whether a plain store is at the target's schema already, so that a job has nothing to
    /// do: its tables are the target's, and the plan cannot be read against them (a table or a
    /// column it reads is gone: the job ran). Where it can, and changes rows (a filter, a value
    /// rewritten) but no table, a finished job cannot be told from one to do: refused, it takes
    /// the copy path.
    private static func plainStoreIsDone(_ database: Database, plan: MigrationPlan?, file: String) throws -> Bool {
        guard let tables = try? InPlacePlanner.tables("main", in: database), tables == (try? InPlacePlanner.tables("tgt", in: database))
        else {
            return false
        }
        guard let plan else { return true }
        for entity in plan.entities {
            let values = entity.columns.values.map { "(\($0))" }.joined(separator: ", ")
            let query =
                "SELECT \(values.isEmpty ? "1" : values) FROM main.\(SQL.quote(entity.source.table)) AS s WHERE \(entity.source.where ?? "1")"
            let readable =
                (try? database.prepare(
                    query.replacingOccurrences(of: #"\bsrc\."#, with: "main.", options: [.regularExpression, .caseInsensitive]))) != nil
            if !readable { return true }
        }
        for entity in plan.entities {
            let rewrites = entity.columns.contains { column, expression in
                expression.trimmingCharacters(in: CharacterSet(charactersIn: "\"() ")).caseInsensitiveCompare(column) != .orderedSame
            }
            if entity.source.where != nil || rewrites {
                throw MigrationError(
                    .invalidPlan,
                    "this migration needs the copy path (run without --in-place): the store's tables are the target's already, and \(entity.name) changes rows of \(entity.source.table) but no table, so a run that did it cannot be told from one to do",
                    entity: entity.name, file: file)
            }
        }
        return true
    }

    /// Creates a plain store's target, the empty store of the new schema, from its SQL.
    ///
    /// - Throws: ``MigrationError`` naming the file and the statement SQLite rejects.
    public static func createTarget(at url: URL, schema: String) throws {
        do { try Database(path: url.path, mode: .readWriteCreate).execute(schema) } catch {
            throw MigrationError(
                .store, "cannot create the target from the schema: \(error.message)", file: url.path, sql: error.sql, cause: error)
        }
    }

    /// Records the job and its steps in the store, in one transaction, with the journal mode the
    /// store had (every batch commits through a rollback journal; the mode comes back at the end).
    private static func record(
        _ steps: [String], target: String, targetModel: String, mode: String, touched: [String],
        extra: [(String, String)], in database: Database
    ) throws(SQLiteError) {
        try database.inTransaction(.immediate) { () throws(SQLiteError) in
            try database.execute(
                """
                CREATE TABLE main.\(stateTable) (key TEXT PRIMARY KEY, value TEXT);
                CREATE TABLE main.\(stepTable) (idx INTEGER PRIMARY KEY, step TEXT NOT NULL, cursor INTEGER, done INTEGER NOT NULL);
                """)
            let state = try database.prepare("INSERT INTO main.\(stateTable) (key, value) VALUES (?1, ?2)")
            for (key, value) in [
                ("target", target), ("target_model", targetModel), ("journal_mode", mode), ("touched", touched.joined(separator: "\n")),
            ] + extra {
                try state.bind([.text(key), .text(value)])
                _ = try state.step()
                state.reset()
            }
            let insert = try database.prepare("INSERT INTO main.\(stepTable) (idx, step, cursor, done) VALUES (?1, ?2, NULL, 0)")
            for (index, step) in steps.enumerated() {
                try insert.bind([.integer(Int64(index)), .text(step)])
                _ = try insert.step()
                insert.reset()
            }
        }
    }

    /// Runs the steps left until they are done, or until `budget` passes, ``pause()`` is called
    /// or the task is cancelled (between batches), on a thread of its own. One run at a time:
    /// another while one goes is refused (``MigrationError`` `busy`), as is another job of the
    /// store while this one runs (``lockPath(of:)``).
    public func run(for budget: Duration? = nil) async throws -> RunOutcome {
        try await shell.run(for: budget) { [self] deadline in try runHere(deadline: deadline, progress: { _ in }) }
    }

    /// ``run(for:)`` on the calling thread.
    public func runBlocking(for budget: Duration? = nil) throws -> RunOutcome {
        try shell.runBlocking(for: budget) { try runHere(deadline: $0, progress: { _ in }) }
    }

    /// ``runBlocking(for:)``, calling `progress` on the run's thread after each batch, before the
    /// next: what a tool that acts between batches needs (the reports also go to
    /// ``progressUpdates()``).
    public func runBlocking(for budget: Duration? = nil, progress: (MigrationProgress) -> Void) throws -> RunOutcome {
        try shell.runBlocking(for: budget) { try runHere(deadline: $0, progress: progress) }
    }

    private func runHere(deadline: ContinuousClock.Instant?, progress: (MigrationProgress) -> Void) throws -> RunOutcome {
        do {
            let outcome = try runSteps(deadline: deadline, progress: progress)
            shell.runEnded(complete: outcome == .complete)
            return outcome
        } catch {
            shell.runEnded(complete: false)
            throw error
        }
    }

    private func runSteps(deadline: ContinuousClock.Instant?, progress: (MigrationProgress) -> Void) throws -> RunOutcome {
        let lock = try Self.takeLock(of: storeURL)
        defer { lock.release() }
        // A run that pauses or fails stops the check beside it; the next run starts it again.
        defer {
            endCheckBeside(completed: false)
            try? database.execute("PRAGMA threads = 0; PRAGMA main.cache_size = -\(options.sqliteCacheKiB)")
        }
        besideResult.withLock { $0 = nil }
        // The check beside the job is started once a run, at the first step after the rows.
        var besideTried = false
        let decoder = JSONDecoder()
        var report = Report(status: status, batchSize: batchSize)
        // Batches of each step in this run, for the crash points (`after-step:update ZITEM:3`).
        var stepBatches: [String: UInt64] = [:]
        // The largest rowid of each chunked step's table, read at its first batch in this run.
        var extents: [Int64: Int64] = [:]
        // The rowids of each chunked step's next batch, in this run (``adapt(_:took:)``).
        var sizes: [Int64: Int] = [:]
        var noJob = false
        // The next step not done, read ahead so that the run that does the last step finishes
        // the job rather than stopping before it finds none left.
        var pending: (index: Int64, step: Step, cursor: Int64?)??
        func nextStep() throws -> (index: Int64, step: Step, cursor: Int64?)? {
            if let pending { return pending }
            let row: [SQLiteValue]?
            do throws(SQLiteError) {
                row = try database.rows("SELECT idx, step, cursor FROM main.\(Self.stepTable) WHERE done = 0 ORDER BY idx LIMIT 1").first
            } catch {
                // No state tables: the job is done.
                if error.message.contains("no such table") {
                    noJob = true
                    pending = .some(nil)
                    return nil
                }
                throw MigrationError(.store, error.message, file: storeURL.path, sql: error.sql)
            }
            guard let row else {
                pending = .some(nil)
                return nil
            }
            guard let index = row[0].integer, let text = row[1].text, let step = try? decoder.decode(Step.self, from: Data(text.utf8))
            else {
                throw MigrationError(
                    .store,
                    "the in-place step \(row[0].integer.map(String.init) ?? "?") recorded in \(Self.stepTable) cannot be read: the job's state is damaged",
                    file: storeURL.path)
            }
            pending = (index, step, row[2].integer)
            return pending!
        }
        var loop = PhaseLoop(deadline: deadline, shouldStop: { [shell] in shell.pauseRequested })
        let outcome = try loop.run(
            until: { try nextStep() == nil },
            { () throws -> (Step, Batch, Int64?)? in
                guard let (index, step, cursor) = try nextStep() else { return nil }
                pending = nil
                if step.afterRows == true, !besideTried {
                    besideTried = true
                    startCheckBeside()
                }
                if step.index != nil, let sql = step.statements.first { try useSorterHelper(for: sql) }
                stepBatches[step.label, default: 0] += 1
                let size = sizes[index] ?? batchSize
                let started = ContinuousClock.now
                let batch = try run(
                    step, index: index, cursor: cursor, batch: stepBatches[step.label]!, extent: extents[index], size: size)
                sizes[index] = min(
                    adapt(size, took: ContinuousClock.now - started), Self.ceiling(first: batchSize, extent: batch.lastRowid))
                report.batchSize = sizes[index]!
                extents[index] = batch.lastRowid
                if batch.finished, let name = step.index { besideCheck?.indexBuilt(name) }
                CrashPoint.check(.afterStep, entity: step.label, batch: stepBatches[step.label]!)
                return (step, batch, cursor)
            },
            done: { unit, _ in
                let (step, batch, cursor) = unit
                let reported = report.after(
                    step, batch, before: cursor, number: stepBatches[step.label]!,
                    next: try nextStep().map { ($0.step, $0.cursor) })
                current.withLock { $0 = report.status }
                progress(reported)
                shell.publish(reported)
            })
        guard outcome == .complete else { return .paused }
        // Its connection closed before the store's journal mode comes back.
        endCheckBeside(completed: true)
        if !noJob { try finish() }
        current.withLock { $0 = nil }
        let last = report.complete()
        progress(last)
        shell.publish(last)
        return .complete
    }

    /// Starts the check of the store beside the job, as the first step after the rows starts:
    /// of the tables the job touched, every row's conditions but `Z_MAX` and every key, read
    /// against the target's model and entities (the store holds the old model's until the last
    /// step). Where it cannot start (no model in the target, a connection refused), the check
    /// at the end does it all.
    private func startCheckBeside() {
        guard isCoreData, options.checksStore,
            let model = (try? CoreDataModel.read(database, schema: "tgt", file: targetURL.path)) ?? nil,
            let entities = try? CoreDataEntities.read(database, schema: "tgt", file: targetURL.path),
            let rows = try? database.rows("SELECT step FROM main.\(Self.stepTable) WHERE done = 0 ORDER BY idx")
        else { return }
        let decoder = JSONDecoder()
        let steps = rows.compactMap { row in row[0].text.flatMap { try? decoder.decode(Step.self, from: Data($0.utf8)) } }
        let indexes = steps.compactMap { step -> (name: String, sql: String)? in
            guard let name = step.index, let sql = step.statements.first else { return nil }
            return (name, sql)
        }
        // The tables of the steps after the rows that write rows: derived values.
        let derivedInto = Set(steps.filter { $0.afterRows == true && $0.index == nil }.compactMap { $0.table?.uppercased() })
        let check = CoreDataStoreCheck.Overlapped(
            path: storeURL.path, cacheKiB: options.sqliteCacheKiB, indexes: indexes, entities: nil,
            given: .init(
                model: model, entities: entities, tables: Set(touchedTables.map { $0.uppercased() }), kept: keptTables,
                derivedInto: derivedInto))
        // A read of the check holds up the job's commits (a rollback journal): the job asks it to
        // give way, and it reads again after the commit.
        database.onBusy { count in
            check.yieldToJob()
            usleep(100)
            return count < CoreDataStoreCheck.Overlapped.busyPolls
        }
        do {
            try check.rowsIn()
        } catch {
            check.cancel()
            database.waitWhenBusy()
            return
        }
        besideCheck = check
    }

    /// How the index `sql` builds sorts, as the copy path's builds sort
    /// (``CheckpointStore/sorting(rows:terms:cacheKiB:helper:)``): with a helper thread
    /// (`PRAGMA threads = 1`) where no check runs beside the job (none, or its thread ended
    /// early), and not for Core Data's index on `Z_ENT`; the largest alone, in larger runs. The
    /// table's rows are taken as its largest rowid.
    private func useSorterHelper(for sql: String) throws {
        do throws(SQLiteError) {
            var rows: Int64 = 0
            if let table = SQL.leadingColumn(ofIndex: sql)?.split(separator: ".").first {
                // None where it has no rowid (a WITHOUT ROWID table): sorted as a small one.
                rows = (try? database.scalar("SELECT max(rowid) FROM main.\(SQL.quote(String(table)))").integer) ?? 0
            }
            let sorting = CheckpointStore.sorting(
                rows: Double(rows), terms: SQL.termCount(ofIndex: sql) ?? 1, cacheKiB: options.sqliteCacheKiB,
                helper: CheckpointStore.sortsWithHelper(sql) && besideCheck?.hasEnded ?? true)
            try database.execute("PRAGMA threads = \(sorting.helper ? 1 : 0); PRAGMA main.cache_size = -\(sorting.cacheKiB)")
        } catch {
            throw MigrationError(.store, error.message, file: storeURL.path, sql: error.sql, cause: error)
        }
    }

    /// Ends the check beside the job: once the job's last step is done (`completed`), waits for
    /// it and keeps what it found for ``checkStore()``; otherwise stops it.
    private func endCheckBeside(completed: Bool) {
        guard let check = besideCheck else { return }
        besideCheck = nil
        defer { database.waitWhenBusy() }
        guard completed else { return check.cancel() }
        check.indexesBuilt()
        check.storeFinished()
        let rows = check.rowsAndRan()
        besideResult.withLock { $0 = rows.ran.map { (rows.report, $0) } }
    }

    /// Once every step is done: the store's own journal mode back, then the job's tables gone,
    /// in that order, so that a kill between the two leaves a store that is still part-way
    /// through, whose next run does both.
    private func finish() throws {
        let mode = (try? database.scalar("SELECT value FROM main.\(Self.stateTable) WHERE key = 'journal_mode'").text) ?? nil
        do {
            if let mode { try database.restoreJournalMode(mode) }
            CrashPoint.check(.afterStep, entity: "journal mode", batch: 1)
            try database.inTransaction(.immediate) { () throws(SQLiteError) in
                try database.execute("DROP TABLE main.\(Self.stepTable); DROP TABLE main.\(Self.stateTable);")
            }
            // The job is over: its lock file goes, while this job still holds it.
            try? FileManager.default.removeItem(atPath: Self.lockPath(of: storeURL))
        } catch {
            throw MigrationError(.store, "cannot end the in-place job: \(error.message)", file: storeURL.path, sql: error.sql, cause: error)
        }
    }

    /// What one batch did: whether its step is done, the last rowid of the step's table it
    /// reached, and the table's largest rowid (the step's extent, for its progress).
    struct Batch {
        var finished: Bool
        var cursor: Int64?
        var lastRowid: Int64?
    }

    /// The rowids of the first batch of a chunked step.
    private var batchSize: Int { max(1, options.batchSize ?? options.initialBatchSize * 5) }

    /// The rowids of a chunked step's next batch, after one of `size` that took `elapsed`: the
    /// size given (``MigrationOptions/batchSize``), or one that doubles while a batch takes less
    /// than half of ``batchTarget`` and halves while it takes more than twice, within the
    /// options' bounds. A batch's commit syncs the store a few times, which costs about as much
    /// as 3,000 rows of a rebuild: at 10,000 rowids a batch, a quarter of a large change.
    private func adapt(_ size: Int, took elapsed: Duration) -> Int { Self.adapt(size, took: elapsed, options: options) }

    static func adapt(_ size: Int, took elapsed: Duration, options: MigrationOptions) -> Int {
        guard options.batchSize == nil else { return size }
        let target = batchTarget(options)
        if elapsed < target / 2 { return min(size * 2, max(options.maximumBatchSize, 1)) }
        if elapsed > target * 2 { return max(size / 2, max(options.minimumBatchSize, 1)) }
        return size
    }

    /// The most rowids a batch of a chunked step takes, whatever its time: a twentieth of its
    /// table's (`extent`, the largest rowid), since what a batch changes waits in the rollback
    /// journal beside the store until it commits; never fewer than the first batch's.
    static func ceiling(first: Int, extent: Int64?) -> Int { max(first, Int((extent ?? 0) / 20)) }

    /// How long a batch of a chunked step should take: the options' target, at most 0.2 s. What
    /// a batch changes waits in the store's rollback journal until its commit, the disk beside the
    /// store: at 0.2 s, about 17 MB of a table rebuilt (4% of a 1.7M-item store).
    static func batchTarget(_ options: MigrationOptions) -> Duration { min(options.batchTimeTarget, .milliseconds(200)) }

    /// Within the step's transaction, renames the store's index `old` to the target's `name`, which
    /// indexes the same columns of the same rows the same way (``InPlacePlanner``): its entry of
    /// `sqlite_schema` takes the target's name and declaration (its `tbl_name` stays as the
    /// table's rename wrote it, the table's own spelling, which `DROP TABLE` matches), and the
    /// schema's version goes one up so that every connection reads the schema again, as SQLite's
    /// documentation has schema changes that leave the table's content as it is made (`PRAGMA
    /// writable_schema`). SQLite then reads the entry back, and its terms must be the target's.
    /// False, with nothing
    /// changed, where the connection may not write its schema (`SQLITE_DBCONFIG_DEFENSIVE`) or the
    /// store's index is not as the plan found it: the step drops it and builds the target's.
    private func take(_ old: String, as name: String) throws(SQLiteError) -> Bool {
        try database.execute("SAVEPOINT chunkmigrate_take_index")
        do throws(SQLiteError) {
            guard let signature = try InPlacePlanner.indexSignature(name, in: "tgt", of: database),
                try InPlacePlanner.indexSignature(old, in: "main", of: database) == signature
            else { throw SQLiteError(.error, message: "the store's index \(old) is not the target's \(name)") }
            let version = try database.scalar("PRAGMA main.schema_version").integer ?? 0
            try database.execute("PRAGMA writable_schema = ON")
            do throws(SQLiteError) {
                let edit = try database.prepare(
                    """
                    UPDATE main.sqlite_schema SET name = ?1, sql = (SELECT sql FROM tgt.sqlite_schema WHERE type = 'index' AND name = ?1)
                    WHERE type = 'index' AND name = ?2
                    """)
                try edit.bind([.text(name), .text(old)])
                _ = try edit.step()
                guard database.changes == 1 else { throw SQLiteError(.error, message: "no index \(old) to rename") }
                try database.execute("PRAGMA main.schema_version = \(version + 1)")
            } catch {
                try? database.execute("PRAGMA writable_schema = OFF")
                throw error
            }
            try database.execute("PRAGMA writable_schema = OFF")
            // Read back as SQLite parses it, the old name gone.
            guard try InPlacePlanner.indexSignature(name, in: "main", of: database) == signature,
                try database.scalar("SELECT count(*) FROM main.sqlite_schema WHERE name IN (?1, ?2)", .text(old), .text(name)).integer == 1
            else { throw SQLiteError(.error, message: "the renamed index \(name) is not the target's") }
            try database.execute("RELEASE chunkmigrate_take_index")
            return true
        } catch {
            try database.execute("ROLLBACK TO chunkmigrate_take_index; RELEASE chunkmigrate_take_index")
            return false
        }
    }

    /// One batch of a chunked step, or the whole of another, with its progress.
    /// `extent`: the largest rowid of the step's table, where an earlier batch of this run read it.
    private func run(_ step: Step, index: Int64, cursor: Int64?, batch: UInt64, extent: Int64?, size batchSize: Int) throws -> Batch {
        var sql: String?
        do {
            return try database.inTransaction(.immediate) { () throws(SQLiteError) -> Batch in
                guard let table = step.table else {
                    let done = try database.prepare("UPDATE main.\(Self.stepTable) SET done = 1 WHERE idx = ?1")
                    try done.bind([.integer(index)])
                    _ = try done.step()
                    if let old = step.takes, let name = step.index {
                        if try take(old, as: name) { return Batch(finished: true, cursor: nil, lastRowid: nil) }
                        sql = "DROP INDEX IF EXISTS main.\(SQL.quote(old))"
                        try database.execute(sql!)
                    }
                    for statement in step.statements {
                        sql = statement
                        try database.execute(statement)
                    }
                    return Batch(finished: true, cursor: nil, lastRowid: nil)
                }
                let after = cursor ?? Int64.min
                let size = Int64(batchSize)
                let quoted = "main.\(SQL.quote(table))"
                var last = try database.scalar(
                    "SELECT rowid FROM \(quoted) WHERE rowid > ?1 ORDER BY rowid LIMIT 1 OFFSET ?2",
                    .integer(after), .integer(size - 1)
                ).integer
                let finished = last == nil
                // The table's largest rowid, for the step's progress: read once a run from the
                // rowid's b-tree (no scan), the last of this batch when it ends the table.
                var largest = extent
                if finished {
                    largest = nil
                } else if largest == nil {
                    largest = try database.scalar("SELECT max(rowid) FROM \(quoted)").integer
                }
                if last == nil { last = try database.scalar("SELECT max(rowid) FROM \(quoted) WHERE rowid > ?1", .integer(after)).integer }
                if let last {
                    for statement in step.statements {
                        sql = statement
                        let prepared = try database.prepare(statement)
                        let count = prepared.parameterCount
                        try prepared.bind(Array([SQLiteValue.integer(after), .integer(last)].prefix(count)))
                        while try prepared.step() {}
                    }
                }
                let progress = try database.prepare("UPDATE main.\(Self.stepTable) SET cursor = ?1, done = ?2 WHERE idx = ?3")
                try progress.bind([last.map(SQLiteValue.integer) ?? .null, .integer(finished ? 1 : 0), .integer(index)])
                _ = try progress.step()
                if CrashPoint.isArmed(.beforeCommit, entity: step.label, batch: batch) {
                    // The batch's pages written to the file before the kill, as when the cache
                    // spills: the store is left with a rollback journal to undo.
                    database.flushCache()
                    CrashPoint.killNow()
                }
                return Batch(finished: finished, cursor: last, lastRowid: largest ?? last)
            }
        } catch {
            throw MigrationError(
                .batch, "in-place step \(step.label) failed: \(error.message)", file: storeURL.path, sql: sql ?? error.sql, cause: error)
        }
    }
}
