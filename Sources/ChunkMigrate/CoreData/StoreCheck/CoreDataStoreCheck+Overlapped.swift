import Foundation

extension CoreDataStoreCheck {
    /// The check of a store a job is writing, run by the job itself on a connection of its own
    /// and another thread:
    ///
    /// 0. while the job copies, what of the part over the rows reads only the tables it has
    ///    finished (``Part/early``): their pages no longer change until its last steps, so they
    ///    are read without locks (``Database/Mode/unlocked``), which the job's rollback journal
    ///    needs (a reader's lock would hold up every commit);
    /// 1. the rest of the part over the rows (``Part/rows``) as soon as the rows are in, while
    ///    the job builds its indexes;
    /// 2. each key lookup that reads an index the job builds (``Part/postponed``) once that index
    ///    is built (``indexBuilt(_:)``), and each derived attribute's values
    ///    (``ExpectedValues``) once the indexes on the columns its derivation reads are, into a
    ///    file of their own: while the job builds the other indexes. The job writes them from
    ///    there where its plan derives them as the model does (``expectedValues(for:)``);
    /// 3. once the job has finished the store (``storeFinished()``), the values it wrote
    ///    compared with those, which is cheap;
    ///
    /// and the rest (``Part/rest``) on the job's thread when the job is complete.
    ///
    /// From step 1 on the store stays in the job's rollback journal, where the index builds write
    /// each page once (WAL writes it twice), and the check reads it with locks: a read that holds
    /// up one of the job's writes gives way (``yieldToJob()``) and runs again after the job's commit.
    ///
    /// A job in place (``InPlaceMigration``) gives the model and entities it migrates to
    /// (``Given``): its store holds the old model's until its last step. Then step 1 is the part
    /// over the rows but `Z_MAX` (``Part/early`` over every table), step 2 the lookups alone, and
    /// the rest, with what these ran left out (``ran``), is the check after the job.
    final class Overlapped: @unchecked Sendable {
        /// What a job in place knows of the store before its last step writes it: the model and
        /// entities it migrates to, and what of the store the check covers.
        struct Given {
            var model: CoreDataModel
            var entities: CoreDataEntities
            /// The tables the job touched (in capitals), and of those, the ones whose rows it kept
            /// with the columns it writes (``CoreDataStoreCheck/run(store:model:tables:kept:)``).
            var tables: Set<String>
            var kept: [String: Set<String>]
            /// The tables the job derives values into after the rows are in (in capitals): their
            /// own conditions are left to the check after the job, since a condition may read a
            /// derived column.
            var derivedInto: Set<String>
        }
        private let given: Given?
        private let path: String
        private let connect: @Sendable (String, Database.Mode) throws(SQLiteError) -> Database
        private let cacheKiB: Int
        /// The store's entities, read by the job before its copy: `Z_PRIMARYKEY` is a table it
        /// writes meanwhile. Only their numbers and tree serve the early part.
        private let entities: CoreDataEntities?
        /// The indexes the job builds: by name, the table and `TABLE.COLUMN` of the first column.
        private let indexes: [String: (table: String, leading: String?)]
        /// Key lookups that wait for an index the job builds.
        private let postponed: Set<String>
        /// What the job has done that the check waits for, and whether it stopped the check.
        private struct Signals {
            var built: Set<String> = []
            var allBuilt = false
            var finished = false
            var cancelled = false
            /// The tables (in capitals) the job has finished writing while it copies the others.
            var finishedTables: Set<String> = []
            /// Whether the copy is over: the early part stops, its statement under way too.
            var copyOver = false
            /// Whether ``connection`` is open for the rows part.
            var rowsIn = false
            /// The job waits for the lock the check's read holds (``yieldToJob()``): the
            /// statement under way stops, and runs again once the job has written.
            var yield = false
            /// Whether the step under way has given way often enough, and runs to its end.
            var holding = false
            /// How many statements of the check have stopped to let the job write.
            var interrupts = 0
            /// How many of those ran again on their own (``rerunning(_:)``), not as part of the
            /// step around them (``givingWay(_:)``).
            var absorbed = 0
            /// The stops a step runs again for.
            var unabsorbed: Int { interrupts - absorbed }
        }
        private let signals = Locked(Signals())
        /// Signalled with each change of ``signals``.
        private let wake = DispatchSemaphore(value: 0)
        private let done = DispatchGroup()
        /// Left by the check's thread once it reads no more without locks.
        private let pastEarly = DispatchGroup()
        /// The connection of the rows part and after, set by ``rowsIn()`` before it signals.
        private var connection: Database?
        /// The folder of the file of derived values (in the job's journal), which the job's
        /// thread removes once the check is done (``rows()``, ``cancel()``): the job may read the
        /// file until then.
        private let scratch: URL?
        /// What the check's thread found, and the time it took: `seconds` after the copy, `duringCopy`
        /// while the job copied.
        private struct Outcome {
            var report: Report
            var seconds: Double
            var duringCopy: Double
            var derivedDone: Set<String>
            /// The checks it ran, named as ``CoreDataStoreCheck/check(_:model:file:tables:kept:part:postponed:derivedDone:readable:entities:done:attempt:)`` names them.
            var ran: Set<String>
            /// Why a round during the copy failed, other than the copy being over: the last
            /// such error.
            var earlyFailure: String?
        }
        private let result = Locked<Result<Outcome, MigrationError>?>(nil)
        /// The derived attributes whose values were compared, which the rest leaves out.
        private var derivedDone: Set<String> = []
        /// The derived values computed so far, which the job may write (``expectedValues(for:)``),
        /// and the file holding them.
        private let published = Locked<(file: String?, values: [ExpectedValues])>((nil, []))

        /// Starts the check on another thread. It waits for the job: ``tablesFinished(_:)`` while
        /// it copies, then ``rowsIn()``.
        ///
        /// - Parameters:
        ///   - indexes: the indexes the job will build: a key lookup on the first column of one,
        ///     or a derivation reading its table, waits for it.
        ///   - entities: the store's entities, read before the copy; without them, nothing is
        ///     checked while the job copies.
        ///   - scratch: the folder for the file of derived values the job writes from
        ///     (``expectedValues(for:)``); without it, the check keeps them to itself.
        ///   - given: for a job in place, what it migrates to (``Given``): nothing is checked
        ///     while it copies, and no derived value is computed alongside.
        ///   - connect: opens a connection to `path` in a mode; tests make it fail.
        init(
            path: String, cacheKiB: Int, indexes: [(name: String, sql: String)], entities: CoreDataEntities?, scratch: URL? = nil,
            given: Given? = nil,
            connect: @escaping @Sendable (String, Database.Mode) throws(SQLiteError) -> Database = { try Database(path: $0, mode: $1) }
        ) {
            self.path = path
            self.given = given
            self.connect = connect
            self.scratch = scratch
            self.cacheKiB = cacheKiB
            self.entities = entities
            var byName: [String: (table: String, leading: String?)] = [:]
            for index in indexes {
                let leading = SQL.leadingColumn(ofIndex: index.sql)
                guard let table = leading.map({ String($0.prefix { $0 != "." }) }) else { continue }
                byName[index.name] = (table, leading)
            }
            self.indexes = byName
            postponed = Set(byName.values.compactMap(\.leading))
            done.enter()
            pastEarly.enter()
            DispatchQueue.global(qos: .utility).async { [self] in
                let outcome = Result { () throws(MigrationError) in try work() }
                // Closed here, so that the job may change the journal mode once this part is done.
                connection?.close()
                result.withLock { $0 = outcome }
                done.leave()
            }
        }

        /// Opens a read-only connection with small caches: the check reads each table in order,
        /// from the file system's cache, and its memory adds to the job's.
        private func open(_ mode: Database.Mode) throws(SQLiteError) -> Database {
            let connection = try connect(path, mode)
            try connection.execute("PRAGMA cache_size = -\(max(256, cacheKiB / 4)); PRAGMA temp.cache_size = -\(max(256, cacheKiB / 4))")
            return connection
        }

        /// While the job copies: the early part each time the job has finished more tables, until
        /// the copy is over. Each round runs the checks of the finished tables that no round has
        /// run yet. A round that fails (a read of the file's header page as one of the job's
        /// commits rewrote it, say) is tried again a few times; what none of them runs is left
        /// to the rows part, and why the last one failed is returned, unless a later round ran
        /// it all. Returns what it found and which checks it ran.
        private func early(_ timed: (() -> Void) -> Void) -> (report: Report, ran: Set<String>, model: CoreDataModel??, failure: String?) {
            defer { pastEarly.leave() }
            var report = Report(violations: [], checked: 0, unchecked: [])
            var ran: Set<String> = []
            var model: CoreDataModel?? = nil
            var tried: Set<String> = []
            var failure: String?
            /// The failed rounds in a row over the same tables.
            var failures = 0
            guard let entities, given == nil else { return (report, ran, model, failure) }
            while true {
                let now = signals.withLock { $0 }
                if now.cancelled || now.copyOver { return (report, ran, model, failure) }
                let again = failure != nil && failures < Self.earlyAttempts && now.finishedTables == tried
                guard now.finishedTables != tried || again else {
                    wake.wait()
                    continue
                }
                if again {
                    // A commit takes milliseconds: the next attempt most likely reads after it.
                    Thread.sleep(forTimeInterval: 0.005)
                } else {
                    failures = 0
                }
                tried = now.finishedTables
                timed {
                    do {
                        let database = try open(.unlocked)
                        defer { database.close() }
                        let signals = self.signals
                        database.stopStatements { signals.withLock { $0.cancelled || $0.copyOver } }
                        let known = try model ?? CoreDataModel.read(database, schema: "main", file: path)
                        model = known
                        let part = try CoreDataStoreCheck.check(
                            database, model: known, file: path, part: .early, postponed: postponed,
                            readable: tried, entities: entities, done: ran)
                        report = report.merged(with: part.report)
                        ran.formUnion(part.ran)
                        // This round ran what the failed ones left.
                        failure = nil
                    } catch {
                        if !signals.withLock({ $0.cancelled || $0.copyOver }) {
                            failure = "\(error)"
                            failures += 1
                        }
                    }
                }
            }
        }

        /// How many times in a row a round of the early part over the same tables is tried.
        static let earlyAttempts = 3

        /// The check's thread: the early part while the job copies, the rest of the rows part once
        /// the rows are in, then each lookup and derived value as the indexes they read are built,
        /// then the comparison of the values once the job has written its own.
        private func work() throws(MigrationError) -> Outcome {
            var seconds = 0.0, duringCopy = 0.0
            func timed<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
                let started = ContinuousClock.now
                defer { seconds += (ContinuousClock.now - started) / .seconds(1) }
                return try body()
            }
            let early = early { body in
                let started = ContinuousClock.now
                body()
                duringCopy += (ContinuousClock.now - started) / .seconds(1)
            }
            while !signals.withLock({ $0.rowsIn || $0.cancelled }) { wake.wait() }
            guard let database = connection, !signals.withLock({ $0.cancelled }) else {
                return Outcome(
                    report: early.report, seconds: seconds, duringCopy: duringCopy, derivedDone: [], ran: [], earlyFailure: early.failure)
            }
            // The store's model, read once for every part this thread runs.
            let model = try timed { () throws(MigrationError) -> CoreDataModel? in
                if let given { return given.model }
                if let model = early.model { return model }
                return try givingWay { () throws(MigrationError) in
                    try Self.sqlite(file: path) { try CoreDataModel.read(database, schema: "main", file: path) }
                }
            }
            var ran: Set<String> = []
            var report = try timed { () throws(MigrationError) in
                let part = try givingWay { () throws(MigrationError) in try rowsPart(database, model: model, done: early.ran) }
                ran = part.ran
                return early.report.merged(with: part.report)
            }
            var lookups = postponed
            // Computing the derived values here is a head start, never a condition: a value this
            // thread cannot compute (a store whose layout the rows part found wrong, a full
            // temporary folder) is left to the rest of the check, which checks it as before.
            var expected = timed { () -> [ExpectedValues] in
                do {
                    guard let model, given == nil else { return [] }
                    return try givingWay {
                        let layout = try CoreDataLayout(model: model).resolved(against: database, schema: "main", file: path).0
                        return try ExpectedValues.all(in: database, layout: layout)
                    }
                } catch {
                    return []
                }
            }
            // The values go into a file of their own, which the job reads too; where it cannot be
            // made, into the check's temporary tables, for the check alone.
            let file =
                expected.isEmpty
                ? nil
                : scratch.flatMap { scratch in
                    try? givingWay { try ExpectedValuesFile(in: scratch, attachedTo: database, cacheKiB: max(256, cacheKiB / 4)) }
                }
            let schema = file == nil ? "temp" : ExpectedValuesFile.schema
            defer {
                // The job takes no more values from here; the file stays for a read under way,
                // until the job's thread removes it.
                published.withLock { $0 = (nil, []) }
                file?.detach(from: database)
            }
            var computed: [ExpectedValues] = []
            while true {
                let now = signals.withLock { $0 }
                if now.cancelled {
                    return Outcome(
                        report: report, seconds: seconds, duringCopy: duringCopy, derivedDone: [], ran: ran, earlyFailure: early.failure)
                }
                // An index is waited for while the job has yet to build it.
                let unbuilt: [(table: String, leading: String?)] =
                    now.allBuilt ? [] : indexes.filter { !now.built.contains($0.key) }.map(\.value)
                let readyLookups = lookups.filter { column in !unbuilt.contains { $0.leading == column } }
                let readyValues = expected.filter { values in !unbuilt.contains { $0.leading.map(values.columns.contains) ?? false } }
                if readyLookups.isEmpty && readyValues.isEmpty {
                    if lookups.isEmpty && expected.isEmpty && now.finished { break }
                    wake.wait()
                    continue
                }
                try timed { () throws(MigrationError) in
                    if !readyLookups.isEmpty {
                        let part = try givingWay { () throws(MigrationError) in
                            try Self.run(
                                database, model: model, file: path, part: .postponed, postponed: readyLookups, given: given,
                                attempt: rerunning)
                        }
                        report = report.merged(with: part.report)
                        ran.formUnion(part.ran)
                        lookups.subtract(readyLookups)
                    }
                    for derived in readyValues {
                        do {
                            try givingWay { try derived.compute(in: database, values: schema) }
                            computed.append(derived)
                            if let file { published.withLock { $0 = (file.path, computed) } }
                        } catch {}
                    }
                    expected.removeAll { values in readyValues.contains { $0.key == values.key } }
                }
            }
            var compared: Set<String> = []
            timed {
                for derived in computed {
                    let line: String?
                    do { line = try givingWay { try derived.compare(in: database, values: schema) } } catch { continue }
                    report.checked += 1
                    if let line {
                        report.add(
                            CoreDataStoreCheck.Finding(
                                .derivedValues, entity: derived.entity, property: String(derived.key.dropFirst(derived.entity.count + 1)),
                                count: 1, line: line))
                    }
                    compared.insert(derived.key)
                }
            }
            let cancelled = signals.withLock { $0.cancelled }
            return Outcome(
                report: report, seconds: seconds, duringCopy: duringCopy, derivedDone: cancelled ? [] : compared,
                ran: cancelled ? [] : ran, earlyFailure: early.failure)
        }

        /// The part over the rows: all of it, but what the early part ran (`done`); for a job in
        /// place (``given``), every table's but `Z_MAX`, which its last step writes.
        private func rowsPart(_ database: Database, model: CoreDataModel?, done: Set<String>) throws(MigrationError) -> (
            report: Report, ran: Set<String>
        ) {
            guard given != nil else {
                return try Self.run(database, model: model, file: path, part: .rows, postponed: postponed, done: done, attempt: rerunning)
            }
            let tables = try Self.sqlite(file: path) {
                Set(try database.rows("SELECT upper(name) FROM main.sqlite_schema WHERE type = 'table'").compactMap { $0[0].text })
            }
            return try Self.run(
                database, model: model, file: path, part: .early, postponed: postponed, readable: tables, given: given, attempt: rerunning)
        }

        /// The job has finished writing `tables` (in capitals, with those it finished before):
        /// the early part may read them.
        func tablesFinished(_ tables: Set<String>) {
            signals.withLock { $0.finishedTables = tables }
            wake.signal()
        }

        /// The job's copy is over: the early part stops, and this returns once it reads no more
        /// (a statement under way stops at SQLite's next call of its progress handler, every
        /// thousand steps; a short one, or the decoding of the model, runs to its end). The job
        /// may then change the store's schema and journal mode.
        func copyOver() {
            signals.withLock { $0.copyOver = true }
            wake.signal()
            pastEarly.wait()
        }

        /// The rows are in: opens the check's connection for the
        /// part over the rows and after.
        ///
        /// - Throws: ``MigrationError`` naming the file when it cannot be opened.
        func rowsIn() throws(MigrationError) {
            copyOver()
            do {
                // Read-only, but for the file of derived values it attaches.
                let connection = try open(.readOnlyAttachingWritable)
                let signals = self.signals
                connection.stopStatements {
                    signals.withLock { signals in
                        if signals.cancelled { return true }
                        guard signals.yield && !signals.holding else { return false }
                        signals.interrupts += 1
                        return true
                    }
                }
                // A read waits for the job's writes, however long an index takes to write out.
                connection.onBusy { _ in
                    if signals.withLock({ $0.cancelled }) { return false }
                    usleep(200)
                    return true
                }
                self.connection = connection
            } catch {
                throw MigrationError(.store, "cannot open the destination to check it: \(error.message)", file: path, cause: error)
            }
            signals.withLock { $0.rowsIn = true }
            wake.signal()
        }

        /// The file and table of the values of `value` when the check has computed them with the
        /// same derivation, for the job to write them instead of computing them again; nil
        /// otherwise (not computed yet, another derivation, a check that stopped), and the job
        /// computes them. The file stays until the job's thread ends the check (``rows()``,
        /// ``cancel()``).
        func expectedValues(for value: CoreDataMapping.DerivedValue) -> (file: String, table: String)? {
            published.withLock { published in
                guard let file = published.file, let values = published.values.first(where: { $0.matches(value) }) else { return nil }
                return (file, values.table)
            }
        }

        /// The job has built the index `name`: the lookups and values waiting for it may run.
        func indexBuilt(_ name: String) {
            signals.withLock { signals in
                _ = signals.built.insert(name)
                signals.yield = false
            }
            wake.signal()
        }

        /// The job waits for the lock of a read of the check (the store is in a rollback journal,
        /// where a reader holds the writer up): the read stops at SQLite's next call of its
        /// progress handler and runs again after the job's commit, unless its step has given way
        /// ``yieldsPerStep`` times already.
        func yieldToJob() {
            signals.withLock { $0.yield = true }
        }

        /// How many times, 0.1 ms apart, the job tries again for a lock the check holds (a minute)
        /// before it fails with `SQLITE_BUSY`: the check gives way within milliseconds.
        static let busyPolls = 600_000

        /// How many times one step of the check, or one statement of it over a range of keys
        /// (``rerunning(_:)``), gives way to the job before it runs to its end.
        static let yieldsPerStep = 3

        /// How many times a step of the check has stopped to let the job write.
        var timesGivenWay: Int { gaveWay.withLock { $0 } }
        private let gaveWay = Locked(0)

        /// Runs `body`, a step of the check over the store, again where it stopped to let the job
        /// write (``yieldToJob()``), up to ``yieldsPerStep`` times; the last time it runs to its end.
        ///
        /// A step also runs again where SQLite gave up preparing a statement of it because the
        /// schema kept changing: the job changes it with each index it builds, and builds the
        /// indexes of many small tables one after another. The step only reads, so it may; it
        /// does so as long as the job writes, whose changes are finite, then up to
        /// ``schemaTriesOnceFinished`` times.
        private func givingWay<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
            defer { signals.withLock { $0.holding = false } }
            // Reruns for a changed schema count from the job's end: those before it may be many.
            var yields = 0, schemaTriesFinished = 0
            while true {
                // A step that stopped for the job runs again, whether the stop reached it as an
                // error or the check turned it into a finding of its own (an unreadable layout).
                let before = signals.withLock { $0.unabsorbed }
                do {
                    let result = try body()
                    if signals.withLock({ $0.unabsorbed == before }) { return result }
                } catch {
                    let now = signals.withLock { $0 }
                    if now.cancelled { throw error }
                    if now.unabsorbed == before {
                        guard SQLiteError.isSchemaChanged(error) else { throw error }
                        if now.finished {
                            guard schemaTriesFinished < Self.schemaTriesOnceFinished else { throw error }
                            schemaTriesFinished += 1
                        }
                        // The read has ended: a stop the job asked of it meanwhile is answered.
                        signals.withLock { $0.yield = false }
                        schemaRereads.withLock { $0 += 1 }
                        continue
                    }
                }
                gaveWayOnce(&yields, absorbing: 0)
            }
        }

        /// A step, or a statement of it (`absorbing` the stops it answered on its own), has
        /// given way once more: the job's request is answered, and after ``yieldsPerStep`` times
        /// it runs to its end.
        private func gaveWayOnce(_ yields: inout Int, absorbing: Int) {
            yields += 1
            gaveWay.withLock { $0 += 1 }
            let holds = yields >= Self.yieldsPerStep
            signals.withLock { signals in
                signals.yield = false
                signals.absorbed += absorbing
                if holds { signals.holding = true }
            }
        }

        /// Runs `statement`, one statement of a step over a range of rows, again where it stopped to
        /// let the job write, up to ``yieldsPerStep`` times, the last time to its end: the step
        /// around it (``givingWay(_:)``) goes on with the next statement rather than running
        /// again from its start.
        private func rerunning(_ statement: () throws -> [[SQLiteValue]]) throws -> [[SQLiteValue]] {
            var yields = 0
            defer { if yields >= Self.yieldsPerStep { signals.withLock { $0.holding = false } } }
            while true {
                let before = signals.withLock { $0.interrupts }
                do {
                    let rows = try statement()
                    if signals.withLock({ $0.interrupts == before }) { return rows }
                } catch {
                    let now = signals.withLock { $0 }
                    if now.cancelled || now.interrupts == before { throw error }
                }
                gaveWayOnce(&yields, absorbing: signals.withLock { $0.interrupts } - before)
            }
        }

        /// How many times a step whose schema changed runs again once the job no longer writes.
        static let schemaTriesOnceFinished = 5

        /// How many times a step of the check ran again because the job changed the schema under it.
        var timesSchemaChanged: Int { schemaRereads.withLock { $0 } }
        private let schemaRereads = Locked(0)

        /// Whether the check's thread has ended: at the end of a job, or early where it failed
        /// (its error waits for ``rows()``); the job's index builds may then use the second core.
        var hasEnded: Bool { result.withLock { $0 != nil } }

        /// The job has built its indexes: the lookups that wait for them may run.
        func indexesBuilt() {
            signals.withLock { $0.allBuilt = true }
            wake.signal()
        }

        /// The job has written its derived values (and finished the store): they may be compared.
        func storeFinished() {
            signals.withLock { $0.finished = true }
            wake.signal()
        }

        /// Waits for the check's thread: its report, how long it took after the copy and during
        /// it, and why a round during the copy failed (its checks then ran after the copy). A
        /// check that cannot run does not fail the job, whose rows are all in: its report says
        /// so, as a violation, so that the store is not taken for checked (``failed(_:)``).
        func rows() -> (report: Report, seconds: Double, duringCopy: Double, earlyFailure: String?) {
            let rows = rowsAndRan()
            return (rows.report, rows.seconds, rows.duringCopy, rows.earlyFailure)
        }

        /// ``rows()``, and the checks it ran, which the check after a job in place leaves out;
        /// nil where it could not run.
        func rowsAndRan() -> (report: Report, seconds: Double, duringCopy: Double, earlyFailure: String?, ran: Set<String>?) {
            done.wait()
            removeScratch()
            switch result.withLock({ $0! }) {
            case let .success(part):
                derivedDone = part.derivedDone
                return (part.report, part.seconds, part.duringCopy, part.earlyFailure, part.ran)
            case let .failure(error): return (Self.failed(error), 0, 0, nil, nil)
            }
        }

        /// The rest of the check, on a new connection, after the job is complete.
        func rest() -> Report {
            do {
                let database = try Database(path: path, mode: .readOnly)
                let model = try Self.sqlite(file: path) { try CoreDataModel.read(database, schema: "main", file: path) }
                return try Self.run(database, model: model, file: path, part: .rest, postponed: postponed, derivedDone: derivedDone).report
            } catch {
                return Self.failed(error)
            }
        }

        /// The report of a check that could not run.
        static func failed(_ error: any Error) -> Report {
            Report(violations: ["the store check could not run (\(error)); check the store with check-coredata"], checked: 0, unchecked: [])
        }

        /// Stops the rows part (a run paused or failed before the end) and waits for its thread.
        func cancel() {
            signals.withLock { $0.cancelled = true }
            wake.signal()
            done.wait()
            removeScratch()
        }

        /// Removes the folder of the file of derived values, once the check's thread is done.
        private func removeScratch() {
            if let scratch { try? FileManager.default.removeItem(at: scratch) }
        }

        /// One part of the check (``givingWay(_:)`` runs it again where the job changed the schema
        /// under it).
        private static func run(
            _ database: Database, model: CoreDataModel?, file: String, part: Part, postponed: Set<String>,
            derivedDone: Set<String> = [], done: Set<String> = [], readable: Set<String> = [], given: Given? = nil,
            attempt: ((() throws -> [[SQLiteValue]]) throws -> [[SQLiteValue]])? = nil
        ) throws(MigrationError) -> (report: Report, ran: Set<String>) {
            try sqlite(file: file) {
                try check(
                    database, model: model, file: file, tables: given?.tables, kept: given?.kept ?? [:], part: part, postponed: postponed,
                    derivedDone: derivedDone, readable: readable, entities: given?.entities, done: done,
                    unfinished: given?.derivedInto ?? [], attempt: attempt)
            }
        }

        /// `body`'s errors as the check's.
        private static func sqlite<T>(file: String, _ body: () throws -> T) throws(MigrationError) -> T {
            do {
                return try body()
            } catch let error as MigrationError {
                throw error
            } catch let error as SQLiteError {
                throw MigrationError(
                    .store, "cannot check the destination as a Core Data store: \(error.message)", file: file, sql: error.sql,
                    cause: error)
            } catch {
                throw MigrationError(.store, "cannot check the destination: \(error)", file: file, cause: error)
            }
        }
    }
}

extension CoreDataStoreCheck.Overlapped {
    /// The file the check computes derived values into: a store of its own in the job's journal
    /// (`check/`), attached to the check's connection, in WAL mode so that the job reads one table
    /// while the check writes the next. The job's thread removes its folder (a killed run's
    /// leftover goes when the next run makes it again).
    struct ExpectedValuesFile {
        /// The schema it is attached as.
        static let schema = "cm_values"
        let path: String

        /// Makes the file, empty, in `folder` and attaches it to `database`.
        ///
        /// - Throws: when it cannot be made, or not in WAL mode (the job's reads and the check's
        ///   writes would wait for each other): the check then keeps the values to itself.
        init(in folder: URL, attachedTo database: Database, cacheKiB: Int) throws {
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            path = folder.appendingPathComponent("values.sqlite").path
            do {
                try database.attach(path, as: Self.schema)
                let mode = try database.scalar("PRAGMA \(Self.schema).journal_mode = WAL").text?.lowercased()
                guard mode == "wal" else {
                    throw MigrationError(.store, "the file of derived values cannot be in WAL mode (\(mode ?? "none"))", file: path)
                }
                try database.execute("PRAGMA \(Self.schema).synchronous = OFF; PRAGMA \(Self.schema).cache_size = -\(cacheKiB)")
            } catch {
                detach(from: database)
                try? FileManager.default.removeItem(at: folder)
                throw error
            }
        }

        /// Detaches the file from `database`.
        func detach(from database: Database) {
            try? database.execute("DETACH DATABASE \(Self.schema)")
        }
    }
}
