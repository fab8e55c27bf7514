import Foundation
import MigrationJournal
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// Rows of the failure table (the Failures article of the DocC catalog) that no other suite covers.
@Suite("Failure table")
struct FailureTableTests {
    @Test("two entities with the same name")
    func duplicateNames() throws {
        let entity = EntityMapping(name: "Node", source: .init(table: "a"), destination: .init(table: "b"))
        let error = try #require(throws: MigrationError.self) { try MigrationPlan(entities: [entity, entity]).validate() }
        #expect(error.code == .invalidPlan)
        #expect(error.message.contains("entities[1].name"))
        #expect(error.message.contains("entities[0]"))
    }

    @Test("a table that is not in the store")
    func unknownTable() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute("CREATE TABLE node (id INTEGER PRIMARY KEY, title TEXT);", on: source)
        let plan = MigrationPlan(entities: [
            EntityMapping(
                name: "Node", source: .init(table: "nodes"),
                destination: .init(table: "node"), columns: ["title": "title"])
        ])
        let error = try #require(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: plan, source: source, destination: folder.path("new.sqlite"), journal: folder.path("journal"),
                schema: "CREATE TABLE node (title TEXT);", logger: quietLogger)
        }
        #expect(error.code == .invalidPlan)
        #expect(error.message.contains("entities[0].source.table"))
        #expect(error.message.contains("\"nodes\""))
    }

    @Test("a destination that does not exist, without a schema to create it")
    func missingDestination() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 100)
        let error = try #require(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: DemoStore.plan, source: files.source, destination: folder.path("missing.sqlite"),
                journal: folder.path("journal"), logger: quietLogger)
        }
        #expect(error.code == .store)
        #expect(error.file == folder.path("missing.sqlite").path)
        #expect(error.message.contains("--schema"))
        #expect(!FileManager.default.fileExists(atPath: folder.path("missing.sqlite").path))
    }

    @Test("a source that is not SQLite, or a damaged SQLite file", arguments: ["garbage", "truncated"])
    func badSource(kind: String) throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 20_000)
        let bad = folder.path("bad.sqlite")
        let bytes = try Data(contentsOf: files.source)
        if kind == "garbage" {
            try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 * 7919) }).write(to: bad)
        } else {
            try bytes.prefix(bytes.count / 3).write(to: bad)
        }
        let before = try Data(contentsOf: bad)
        var error: MigrationError?
        do {
            let job = try MigrationJob.start(
                plan: DemoStore.plan, source: bad, destination: folder.path("new.sqlite"),
                journal: folder.path("journal"), schema: DemoStore.destinationSchema,
                logger: quietLogger)
            _ = try job.runBlocking()
        } catch let caught as MigrationError {
            error = caught
        }
        let failure = try #require(error, "a damaged source must fail the job")
        #expect([MigrationError.Code.store, .invalidPlan, .batch].contains(failure.code))
        #expect(failure.description.contains("bad.sqlite") || failure.description.contains("malformed"), "\(failure)")
        #expect(try Data(contentsOf: bad) == before, "the source is never written")
    }

    @Test("another process is running the job")
    func busy() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 500)
        let job = try startDemo(files, into: folder.path("new.sqlite"), journal: folder.path("journal"))
        let holder = try JournalWriter.open(directory: folder.path("journal").path)
        defer { holder.close() }
        let error = try #require(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error.code == .busy)
        holder.close()
        #expect(try job.runBlocking() == .complete)
    }
}

@Suite("Device errors")
struct DeviceErrorTests {
    @Test(
        "a device that fails a write or sync (EIO from the journal's files, SQLite's disk I/O error) is a device error, as a full disk is a full disk; other failures are not"
    )
    func deviceErrors() {
        let cases: [(any Error, MigrationError.Code)] = [
            (SQLiteError(.syncFailed, message: "disk I/O error", file: "new.sqlite"), .deviceError),  // SQLITE_IOERR_FSYNC
            (SQLiteError(.full, message: "database or disk is full", file: "new.sqlite"), .diskFull),
            (SQLiteError(.constraint, message: "NOT NULL constraint failed", file: "new.sqlite"), .store),
            (JournalError(.deviceError, "write failed: Input/output error", file: "j/log"), .deviceError),
            (JournalError(.diskFull, "write failed: No space left on device", file: "j/log"), .diskFull),
            (JournalError(.io, "open failed: Permission denied", file: "j/log"), .journal),
        ]
        for (error, code) in cases {
            let wrapped = MigrationError.wrapping(error)
            #expect(wrapped.code == code && wrapped.file != nil, "\(error) -> \(wrapped.code)")
        }
    }

    @Test(
        "an error of any step whose cause is a failing device or a full disk takes that code, through causes and Foundation's file errors (an in-place step, a store that does not open, a file that does not read stopped with exit 1 or 3)"
    )
    func deviceErrorsThroughCauses() {
        let eio = SQLiteError(.syncFailed, message: "disk I/O error", file: "store.sqlite")
        let cases: [(MigrationError, MigrationError.Code)] = [
            (MigrationError(.batch, "in-place step Note failed: disk I/O error", cause: eio), .deviceError),
            (
                MigrationError(
                    .invalidPlan, "cannot read the plan file", cause: JournalError(.deviceError, "read failed: Input/output error")),
                .deviceError
            ),
            (
                MigrationError(.store, "outer", cause: MigrationError(.batch, "inner", cause: JournalError(.diskFull, "write failed"))),
                .diskFull
            ),
            (MigrationError(.store, "copy", cause: NSError(domain: NSPOSIXErrorDomain, code: Int(EIO))), .deviceError),
            (
                MigrationError(
                    .store, "copy",
                    cause: NSError(
                        domain: NSCocoaErrorDomain, code: CocoaError.fileWriteUnknown.rawValue,
                        userInfo: [NSUnderlyingErrorKey: NSError(domain: NSPOSIXErrorDomain, code: Int(ENOSPC))])), .diskFull
            ),
            (MigrationError(.batch, "constraint", cause: SQLiteError(.constraint, message: "NOT NULL constraint failed")), .batch),
            (
                MigrationError(
                    .invalidPlan, "cannot read the plan file", cause: JournalError(.notFound, "open failed: No such file or directory")),
                .invalidPlan
            ),
            (MigrationError(.store, "copy", cause: NSError(domain: NSPOSIXErrorDomain, code: Int(EACCES))), .store),
        ]
        for (error, code) in cases {
            #expect(error.code == code, "\(error) -> \(error.code)")
        }
    }

    @Test("a function of the plan that meets a failing device fails its statement with SQLite's disk I/O error, not a plain SQL error")
    func deviceErrorInFunction() throws {
        let folder = try TemporaryFolder()
        let database = try Database(path: folder.path("f.sqlite").path, mode: .readWriteCreate)
        try database.createFunction("read_file", argumentCount: 0, deterministic: false) { _ in
            throw MigrationError(
                .store, "cannot read the external file A1", cause: JournalError(.deviceError, "read failed: Input/output error"))
        }
        try database.createFunction("fail_plainly", argumentCount: 0, deterministic: false) { _ in
            throw MigrationError(.batch, "no such value")
        }
        let failed = #expect(throws: SQLiteError.self) { try database.scalar("SELECT read_file()") }
        #expect(
            failed?.isDeviceError == true && failed?.message.contains("cannot read the external file A1") == true,
            "\(String(describing: failed))")
        let plain = #expect(throws: SQLiteError.self) { try database.scalar("SELECT fail_plainly()") }
        #expect(plain?.isDeviceError == false && plain?.isDiskFull == false)
        #expect(MigrationError.wrapping(failed!).code == .deviceError)
    }

    @Test(
        "a file that cannot be looked at for another reason than its absence (a loop of symbolic links) is an error naming it, not a missing file"
    )
    func statFailureIsNoAbsence() throws {
        let folder = try TemporaryFolder()
        let loop = folder.path("loop.sqlite").path
        try FileManager.default.createSymbolicLink(atPath: loop, withDestinationPath: loop)
        let error = #expect(throws: MigrationError.self) {
            try Stores.open(
                source: loop, destination: folder.path("new.sqlite").path, schema: "CREATE TABLE t(a);", options: MigrationOptions())
        }
        #expect(
            error?.file == loop && error?.message.contains("cannot look for the file") == true
                && error?.message.contains("does not exist") == false,
            "\(String(describing: error))")
        let plan = #expect(throws: MigrationError.self) { try MigrationError.contents(of: loop, what: "the plan file", code: .invalidPlan) }
        #expect(
            plan?.code == .invalidPlan && plan?.message.contains("cannot read the plan file: open failed:") == true,
            "\(String(describing: plan))")
    }
}

@Suite("Damaged journals on resume")
struct DamagedJournalTests {
    @Test("a missing segment is refused with the file, the entity and the batch")
    func missingSegment() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 2_000)
        let journal = folder.path("journal")
        let job = try startDemo(files, into: folder.path("new.sqlite"), journal: journal, batchSize: 100)
        for _ in 0..<5 { _ = try job.runBlocking(for: .zero) }
        let layout = JournalLayout(directory: journal.path)
        let segment = layout.segment(entity: 1, batch: 1)
        try FileManager.default.removeItem(atPath: segment)
        let error = try #require(throws: MigrationError.self) {
            try MigrationJob.resume(at: journal, logger: quietLogger).runBlocking()
        }
        #expect(error.code == .journal)
        #expect(error.file == segment)
        #expect(error.entity == "Message")
        #expect(error.batch == 1)
    }
}
