import Foundation

extension CoreDataStoreCheck {
    /// The check of a store a job is writing, run by the job itself on a connection of its own
    /// and another thread:
    ///
    /// 1. the part over the rows (``Part/rows``, most of the time) as soon as the rows are in,
    ///    while the job builds its indexes;
    /// 2. each key lookup that reads an index the job builds (``Part/postponed``) once that index
    ///    is built (``indexBuilt(_:)``), and each derived attribute's values
    ///    (``ExpectedValues``) once the indexes of the tables its derivation reads are: while the
    ///    job builds the other indexes and computes the same values;
    /// 3. once the job has finished the store (``storeFinished()``), the values it wrote
    ///    compared with those, which is cheap;
    ///
    /// and the rest (``Part/rest``) on the job's thread when the job is complete.
    ///
    /// The store must be in WAL mode while both run, so that neither waits for the other's locks.
    final class Overlapped: @unchecked Sendable {
        private let path: String
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
            /// Whether the part over the rows, most of the check, is done.
            var rowsDone = false
        }
        private let signals = Locked(Signals())
        /// Signalled with each change of ``signals``.
        private let wake = DispatchSemaphore(value: 0)
        private let done = DispatchGroup()
        private let result = Locked<Result<(report: Report, seconds: Double, derivedDone: Set<String>), MigrationError>?>(nil)
        /// The derived attributes whose values were compared, which the rest leaves out.
        private var derivedDone: Set<String> = []

        /// Opens a read-only connection to `path` and starts the check on another thread.
        ///
        /// - Parameter indexes: the indexes the job will build: a key lookup on the first column
        ///   of one, or a derivation reading its table, waits for it.
        init(path: String, cacheKiB: Int, indexes: [(name: String, sql: String)]) throws {
            self.path = path
            var byName: [String: (table: String, leading: String?)] = [:]
            for index in indexes {
                let leading = Self.leadingColumn(index.sql)
                guard let table = leading.map({ String($0.prefix { $0 != "." }) }) else { continue }
                byName[index.name] = (table, leading)
            }
            self.indexes = byName
            postponed = Set(byName.values.compactMap(\.leading))
            let connection: Database
            do {
                connection = try Database(path: path, mode: .readOnly)
                // Small caches: the check reads each table in order, from the file system's cache,
                // and its memory adds to the job's.
                try connection.execute("PRAGMA cache_size = -\(max(256, cacheKiB / 4)); PRAGMA temp.cache_size = -\(max(256, cacheKiB / 4))")
            } catch {
                throw MigrationError(.store, "cannot open the destination to check it: \(error.message)", file: path, cause: error)
            }
            let signals = self.signals
            connection.stopStatements { signals.withLock { $0.cancelled } }
            done.enter()
            let box = UncheckedBox(connection)
            DispatchQueue.global(qos: .utility).async { [self] in
                let outcome = Result { () throws(MigrationError) in try work(box.value) }
                // Closed here, so that the job may change the journal mode once this part is done.
                box.value.close()
                result.withLock { $0 = outcome }
                done.leave()
            }
        }

        /// The check's thread: the rows part, then each lookup and derived value as the indexes
        /// they read are built, then the comparison of the values once the job has written its own.
        private func work(_ database: Database) throws(MigrationError) -> (report: Report, seconds: Double, derivedDone: Set<String>) {
            var seconds = 0.0
            func timed<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
                let started = ContinuousClock.now
                defer { seconds += (ContinuousClock.now - started) / .seconds(1) }
                return try body()
            }
            // The store's model, read once for every part this thread runs.
            let model = try timed { () throws(MigrationError) in try Self.sqlite(file: path) { try CoreDataModel.read(database, schema: "main", file: path) } }
            var report = try timed { () throws(MigrationError) in try Self.run(database, model: model, file: path, part: .rows, postponed: postponed) }
            signals.withLock { $0.rowsDone = true }
            var lookups = postponed
            // Computing the derived values here is a head start, never a condition: a value this
            // thread cannot compute (a store whose layout the rows part found wrong, a full
            // temporary folder) is left to the rest of the check, which checks it as before.
            var expected = timed { () -> [ExpectedValues] in
                do {
                    guard let model else { return [] }
                    let layout = try CoreDataLayout(model: model).resolved(against: database, schema: "main", file: path).0
                    return try ExpectedValues.all(in: database, layout: layout)
                } catch {
                    return []
                }
            }
            var computed: [ExpectedValues] = []
            while true {
                let now = signals.withLock { $0 }
                if now.cancelled { return (report, seconds, []) }
                // An index is waited for while the job has yet to build it.
                let unbuilt: [(table: String, leading: String?)] = now.allBuilt ? [] : indexes.filter { !now.built.contains($0.key) }.map(\.value)
                let readyLookups = lookups.filter { column in !unbuilt.contains { $0.leading == column } }
                let readyValues = expected.filter { values in !unbuilt.contains { values.reads.contains($0.table) } }
                if readyLookups.isEmpty && readyValues.isEmpty {
                    if lookups.isEmpty && expected.isEmpty && now.finished { break }
                    wake.wait()
                    continue
                }
                try timed { () throws(MigrationError) in
                    if !readyLookups.isEmpty {
                        report = report.merged(with: try Self.run(database, model: model, file: path, part: .postponed, postponed: readyLookups))
                        lookups.subtract(readyLookups)
                    }
                    for values in readyValues {
                        do {
                            try values.compute(in: database)
                            computed.append(values)
                        } catch {}
                    }
                    expected.removeAll { values in readyValues.contains { $0.key == values.key } }
                }
            }
            var compared: Set<String> = []
            timed {
                for values in computed {
                    let line: String?
                    do { line = try values.compare(in: database) } catch { continue }
                    report.checked += 1
                    if let line { report.violations.append(line) }
                    compared.insert(values.key)
                }
            }
            if signals.withLock({ $0.cancelled }) { return (report, seconds, []) }
            return (report, seconds, compared)
        }

        /// The job has built the index `name`: the lookups and values waiting for it may run.
        func indexBuilt(_ name: String) {
            signals.withLock { _ = $0.built.insert(name) }
            wake.signal()
        }

        /// Whether the part over the rows, most of the check's work, is done: what is left (the
        /// lookups and derived values) mostly waits for indexes, and the job's index builds may
        /// use the second core.
        var isPastRows: Bool { signals.withLock { $0.rowsDone } }

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

        /// Waits for the rows part: its report, and how long it took on its thread. A check that
        /// cannot run does not fail the job, whose rows are all in: its report says so, as a
        /// violation, so that the store is not taken for checked (``failed(_:)``).
        func rows() -> (report: Report, seconds: Double) {
            done.wait()
            switch result.withLock({ $0! }) {
            case let .success(part):
                derivedDone = part.derivedDone
                return (part.report, part.seconds)
            case let .failure(error): return (Self.failed(error), 0)
            }
        }

        /// The rest of the check, on a new connection, after the job is complete.
        func rest() -> Report {
            do {
                let database = try Database(path: path, mode: .readOnly)
                let model = try Self.sqlite(file: path) { try CoreDataModel.read(database, schema: "main", file: path) }
                return try Self.run(database, model: model, file: path, part: .rest, postponed: postponed, derivedDone: derivedDone)
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
        }

        /// `TABLE.COLUMN` of an index's first column, from `CREATE INDEX name ON table (column, ...)`.
        static func leadingColumn(_ sql: String) -> String? {
            guard let range = sql.range(of: #"\bON\s+("[^"]+"|\S+?)\s*\(\s*("[^"]+"|[^\s,)]+)"#, options: [.regularExpression, .caseInsensitive]) else {
                return nil
            }
            let parts = sql[range].dropFirst(2).trimmingCharacters(in: .whitespaces).split(separator: "(", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            func name(_ text: Substring) -> String { text.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")).uppercased() }
            return "\(name(parts[0])).\(name(parts[1]))"
        }

        /// One part of the check. The job changes the schema with each index it builds; where it
        /// builds many small ones one after another, a statement of the check can find the
        /// schema changed at each of SQLite's tries to prepare it again. The part, which only
        /// reads, then runs again.
        private static func run(_ database: Database, model: CoreDataModel?, file: String, part: Part, postponed: Set<String>,
                                derivedDone: Set<String> = []) throws(MigrationError) -> Report {
            try sqlite(file: file) {
                var attempt = 1
                while true {
                    do {
                        return try check(database, model: model, file: file, part: part, postponed: postponed, derivedDone: derivedDone)
                    } catch let error as SQLiteError where error.isSchemaChanged && attempt < 5 {
                        attempt += 1
                    }
                }
            }
        }

        /// `body`'s errors as the check's.
        private static func sqlite<T>(file: String, _ body: () throws -> T) throws(MigrationError) -> T {
            do {
                return try body()
            } catch let error as MigrationError {
                throw error
            } catch let error as SQLiteError {
                throw MigrationError(.store, "cannot check the destination as a Core Data store: \(error.message)", file: file, sql: error.sql)
            } catch {
                throw MigrationError(.store, "cannot check the destination: \(error)", file: file)
            }
        }
    }
}

/// A value handed to another thread that alone uses it from then on.
private final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
