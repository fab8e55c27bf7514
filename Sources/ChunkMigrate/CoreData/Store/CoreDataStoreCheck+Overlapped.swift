import CSQLite
import Foundation

extension CoreDataStoreCheck {
    /// The check of a store a job is writing, run by the job itself on a connection of its own:
    /// the part over the rows (``Part/rows``, most of the time) on another thread as soon as the
    /// rows are in, while the job builds its indexes and finishes the store on its own; the rest
    /// (``Part/rest``) when the job is complete.
    ///
    /// The store must be in WAL mode while both run, so that neither waits for the other's locks.
    final class Overlapped: @unchecked Sendable {
        private let path: String
        /// The rows part's connection, which ``cancel()`` interrupts from the job's thread until
        /// the part closes it.
        private let handle: OpaquePointer
        private let closed = Locked(false)
        private let done = DispatchGroup()
        private let result = Locked<Result<(report: Report, seconds: Double), MigrationError>?>(nil)

        /// Opens a read-only connection to `path` and starts the rows part on another thread.
        init(path: String, cacheKiB: Int) throws {
            self.path = path
            let connection: Database
            do {
                connection = try Database(path: path, mode: .readOnly)
                try connection.execute("PRAGMA cache_size = -\(cacheKiB)")
            } catch {
                throw MigrationError(.store, "cannot open the destination to check it: \(error.message)", file: path, cause: error)
            }
            handle = connection.handle
            done.enter()
            let box = UncheckedBox(connection)
            DispatchQueue.global(qos: .utility).async { [self] in
                let started = ContinuousClock.now
                let outcome = Result { () throws(MigrationError) -> (report: Report, seconds: Double) in
                    (try Self.run(box.value, file: path, part: .rows), (ContinuousClock.now - started) / .seconds(1))
                }
                // Closed here, so that the job may change the journal mode once this part is done.
                closed.withLock { closed in
                    box.value.close()
                    closed = true
                }
                result.withLock { $0 = outcome }
                done.leave()
            }
        }

        /// Waits for the rows part: its report, and how long it took on its thread.
        func rows() throws -> (report: Report, seconds: Double) {
            done.wait()
            return try result.withLock { $0! }.get()
        }

        /// The rest of the check, on a new connection, after the job is complete.
        func rest() throws -> Report {
            let database: Database
            do { database = try Database(path: path, mode: .readOnly) } catch {
                throw MigrationError(.store, "cannot open the destination to check it: \(error.message)", file: path, cause: error)
            }
            return try Self.run(database, file: path, part: .rest)
        }

        /// Stops the rows part (a run paused or failed before the end) and waits for its thread.
        func cancel() {
            closed.withLock { closed in
                if !closed { sqlite3_interrupt(handle) }
            }
            done.wait()
        }

        private static func run(_ database: Database, file: String, part: Part) throws(MigrationError) -> Report {
            do {
                let model = try CoreDataModel.read(database, schema: "main", file: file)
                return try check(database, model: model, file: file, part: part)
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
