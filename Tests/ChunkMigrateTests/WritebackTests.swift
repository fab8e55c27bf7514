import Foundation
import Testing
@testable import ChunkMigrate

#if os(Linux)
    /// ``Database/startWriteback(every:)``: the descriptor it opens must not cost SQLite its locks.
    @Suite("Writing pages back in the background")
    struct WritebackTests {
        /// The file's POSIX locks this process holds, from `/proc/locks` (`... POSIX ADVISORY WRITE pid maj:min:inode ...`).
        private func locks(on path: URL) throws -> Int {
            var info = stat()
            guard stat(path.path, &info) == 0 else { return 0 }
            let pid = ProcessInfo.processInfo.processIdentifier
            return try String(contentsOfFile: "/proc/locks", encoding: .utf8).split(separator: "\n").filter { line in
                let fields = line.split(separator: " ")
                guard fields.count > 5, fields[1] == "POSIX", fields[4] == "\(pid)" else { return false }
                return fields[5].split(separator: ":").last == "\(info.st_ino)"
            }.count
        }

        /// This process's descriptors open on `path`.
        private func descriptors(on path: URL) throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").filter { name in
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")) == path.path
            }.count
        }

        @Test(
            "the write lock of a transaction holds while the writeback runs and after it stops; its descriptor closes with the connection")
        func keepsLocks() throws {
            let folder = try TemporaryFolder()
            let path = folder.path("store.sqlite")
            let database = try Database(path: path.path, mode: .readWriteCreate)
            try database.execute("CREATE TABLE t (x); PRAGMA journal_mode = TRUNCATE")
            #expect(try descriptors(on: path) == 1)
            let writeback = try #require(database.startWriteback(every: .milliseconds(1)))
            #expect(try descriptors(on: path) == 2)
            // The timer's first call, however busy the machine.
            let started = Date()
            while writeback.lastResult.withLock({ $0 }) == nil && Date().timeIntervalSince(started) < 10 {
                Thread.sleep(forTimeInterval: 0.005)
            }
            #expect(writeback.lastResult.withLock { $0 } == 0)
            try database.inTransaction(.immediate) {
                try database.execute(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) INSERT INTO t SELECT randomblob(100) FROM n"
                )
                Thread.sleep(forTimeInterval: 0.02)
                writeback.stop()
                // Stopped, with SQLite's write lock held: closing the descriptor now would drop it.
                #expect(try locks(on: path) > 0)
            }
            // A second run opens no second descriptor.
            database.startWriteback()?.stop()
            #expect(try descriptors(on: path) == 2)
            database.close()
            #expect(try descriptors(on: path) == 0)
            #expect(try locks(on: path) == 0)
        }

        @Test("a connection closed with a statement still alive stays open inside SQLite, with its locks: the descriptor is left open")
        func lingeringConnection() throws {
            let folder = try TemporaryFolder()
            let path = folder.path("store.sqlite")
            var database: Database? = try Database(path: path.path, mode: .readWriteCreate)
            // In WAL mode an open connection holds a lock on the file at all times.
            try database?.execute("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1)")
            database?.startWriteback(every: .milliseconds(1))?.stop()
            var statement: Statement? = try database?.prepare("SELECT x FROM t")
            #expect(try statement?.step() == true)
            #expect(try locks(on: path) > 0)
            database = nil
            // SQLite keeps the connection until the statement goes, and so its lock.
            #expect(try locks(on: path) > 0)
            statement = nil
            #expect(try locks(on: path) == 0)
        }
    }
#endif
