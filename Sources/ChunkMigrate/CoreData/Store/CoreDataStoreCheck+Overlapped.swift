import Foundation

extension CoreDataStoreCheck {
    /// The check of a store a job is writing, run by the job itself on a connection of its own:
    /// the part over the rows (``Part/rows``, most of the time) on another thread as soon as the
    /// rows are in, while the job builds its indexes; on the same thread, once the indexes are
    /// built (``indexesBuilt()``), the key lookups that wait for them (``Part/postponed``) while
    /// the job finishes the store; the rest (``Part/rest``) when the job is complete.
    ///
    /// The store must be in WAL mode while both run, so that neither waits for the other's locks.
    final class Overlapped: @unchecked Sendable {
        private let path: String
        /// Key lookups left to the rest, where the index they read is built by then.
        private let postponed: Set<String>
        /// Set by ``cancel()``: the part's statements stop (``Database/stopStatements(when:)``),
        /// and it runs no other.
        private let cancelled = Locked(false)
        private let done = DispatchGroup()
        private let indexesReady = DispatchSemaphore(value: 0)
        private let result = Locked<Result<(report: Report, seconds: Double), MigrationError>?>(nil)

        /// Opens a read-only connection to `path` and starts the rows part on another thread.
        ///
        /// - Parameter indexes: the `CREATE INDEX` statements the job will build: a key lookup
        ///   on the first column of one waits for the rest.
        init(path: String, cacheKiB: Int, indexes: [String]) throws {
            self.path = path
            postponed = Set(indexes.compactMap(Self.leadingColumn))
            let connection: Database
            do {
                connection = try Database(path: path, mode: .readOnly)
                // Small caches: the check reads each table in order, from the file system's cache,
                // and its memory adds to the job's.
                try connection.execute("PRAGMA cache_size = -\(max(256, cacheKiB / 4)); PRAGMA temp.cache_size = -\(max(256, cacheKiB / 4))")
            } catch {
                throw MigrationError(.store, "cannot open the destination to check it: \(error.message)", file: path, cause: error)
            }
            let cancelled = self.cancelled
            connection.stopStatements { cancelled.withLock { $0 } }
            done.enter()
            let box = UncheckedBox(connection)
            DispatchQueue.global(qos: .utility).async { [self] in
                let started = ContinuousClock.now
                let outcome = Result { () throws(MigrationError) -> (report: Report, seconds: Double) in
                    var report = try Self.run(box.value, file: path, part: .rows, postponed: postponed)
                    var seconds = (ContinuousClock.now - started) / .seconds(1)
                    if !postponed.isEmpty {
                        indexesReady.wait()
                        guard !cancelled.withLock({ $0 }) else { return (report, seconds) }
                        let resumed = ContinuousClock.now
                        report = report.merged(with: try Self.run(box.value, file: path, part: .postponed, postponed: postponed))
                        seconds += (ContinuousClock.now - resumed) / .seconds(1)
                    }
                    return (report, seconds)
                }
                // Closed here, so that the job may change the journal mode once this part is done.
                box.value.close()
                result.withLock { $0 = outcome }
                done.leave()
            }
        }

        /// The job has built its indexes: the lookups that wait for them may run.
        func indexesBuilt() {
            indexesReady.signal()
        }

        /// Waits for the rows part: its report, and how long it took on its thread. A check that
        /// cannot run does not fail the job, whose rows are all in: its report says so, as a
        /// violation, so that the store is not taken for checked (``failed(_:)``).
        func rows() -> (report: Report, seconds: Double) {
            done.wait()
            switch result.withLock({ $0! }) {
            case let .success(part): return part
            case let .failure(error): return (Self.failed(error), 0)
            }
        }

        /// The rest of the check, on a new connection, after the job is complete.
        func rest() -> Report {
            do {
                let database = try Database(path: path, mode: .readOnly)
                return try Self.run(database, file: path, part: .rest, postponed: postponed)
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
            cancelled.withLock { $0 = true }
            indexesReady.signal()
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

        private static func run(_ database: Database, file: String, part: Part, postponed: Set<String>) throws(MigrationError) -> Report {
            do {
                let model = try CoreDataModel.read(database, schema: "main", file: file)
                return try check(database, model: model, file: file, part: part, postponed: postponed)
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
