import Foundation
import Testing
@testable import ChunkMigrate

/// The SQLite layer: the result codes of its errors, and one connection for one thread at a time.
@Suite("The SQLite connection")
struct DatabaseTests {
    /// Each failure gives the extended code SQLite gives it, and its primary code.
    @Test("an error carries SQLite's extended result code as a type, and its primary code")
    func resultCodes() throws {
        let folder = try TemporaryFolder()
        let database = try Database(path: folder.path("codes.sqlite").path, mode: .readWriteCreate)
        try database.execute(
            """
            PRAGMA foreign_keys = ON;
            CREATE TABLE parent (id INTEGER PRIMARY KEY);
            CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER NOT NULL REFERENCES parent(id), name TEXT UNIQUE);
            INSERT INTO parent VALUES (1);
            INSERT INTO child VALUES (1, 1, 'a');
            """)
        func failure(_ sql: String) -> SQLiteError? {
            #expect(throws: SQLiteError.self) { try database.execute(sql) }
            do { try database.execute(sql) } catch { return error }
            return nil
        }
        let notNull = try #require(failure("INSERT INTO child VALUES (2, NULL, 'b')"))
        #expect(notNull.resultCode == .notNullConstraint && notNull.code == .constraint && notNull.isConstraint)
        let foreignKey = try #require(failure("INSERT INTO child VALUES (2, 9, 'b')"))
        #expect(foreignKey.resultCode == .foreignKeyConstraint && foreignKey.isForeignKeyViolation)
        let unique = try #require(failure("INSERT INTO child VALUES (2, 1, 'a')"))
        #expect(unique.code == .constraint && unique.resultCode != .notNullConstraint && !unique.isForeignKeyViolation)
        let syntax = try #require(failure("SELEC 1"))
        #expect(syntax.resultCode == .error && !syntax.isConstraint && syntax.sql == "SELEC 1")
        #expect(SQLiteResultCode.syncFailed.primary == .ioError && SQLiteResultCode.full.description.contains("full"))

        let missing = folder.path("none/none.sqlite").path
        let open = #expect(throws: SQLiteError.self) { _ = try Database(path: missing, mode: .readWrite) }
        #expect(open?.code == .cannotOpen && open?.file == missing)
    }

    #if DEBUG
        /// A second thread that prepares a statement while the first is inside a statement (held
        /// there by a SQL function that waits) stops the process naming the file; the same thread
        /// entering again, and one thread after another, do not.
        @Test("debug builds stop a connection used from two threads at once, and allow one after another")
        func oneThreadAtATime() async throws {
            await #expect(processExitsWith: .success) {
                let connection = try Connection()
                let finished = DispatchSemaphore(value: 0)
                Thread {
                    _ = try? connection.database.scalar("SELECT 1")
                    finished.signal()
                }.start()
                finished.wait()
                // Again from this thread, and from inside a statement (the SQL function's own query).
                try connection.database.createFunction("nested", argumentCount: 0, deterministic: false) { call in
                    call.result(try connection.database.scalar("SELECT 2"))
                }
                guard try connection.database.scalar("SELECT nested()") == .integer(2) else { exit(2) }
            }
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let connection = try Connection()
                let inside = DispatchSemaphore(value: 0), never = DispatchSemaphore(value: 0)
                try connection.database.createFunction("hold", argumentCount: 0, deterministic: false) { call in
                    inside.signal()
                    never.wait()
                    call.result(.integer(1))
                }
                Thread { _ = try? connection.database.scalar("SELECT hold()") }.start()
                inside.wait()
                _ = try connection.database.prepare("SELECT 1")
            }
            let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(message.contains("used from two threads at once") && message.contains("confined.sqlite"), "\(message)")
        }

        /// A connection handed to a second thread on purpose, for the tests above.
        final class Connection: @unchecked Sendable {
            let folder: TemporaryFolder
            let database: Database
            init() throws {
                folder = try TemporaryFolder()
                database = try Database(path: folder.path("confined.sqlite").path, mode: .readWriteCreate)
            }
        }
    #endif
}
