import Foundation
import MigrationJournal
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

@Suite("Migrating the demo store")
struct DemoMigrationTests {
    @Test("every kept row arrives once and every relationship points where it did in the source")
    func migratesDemoStore() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 5_000)
        let sourceHash = try sha256(of: files.source)
        let destination = folder.path("new.sqlite")
        try migrateDemo(files, into: destination, journal: folder.path("journal"), batchSize: 300)

        #expect(try DemoStore.check(source: files.source, destination: destination) == [])
        // The where filter: archived conversations (one in ten) stay behind.
        #expect(try scalar("SELECT count(*) FROM conversation", on: destination) == .integer(45))
        // skip: messages of archived conversations are not copied.
        let kept = try scalar("SELECT count(*) FROM message", on: destination).integer ?? 0
        #expect(kept > 0 && kept < 5_000)
        // Columns not named take their default; a constant expression is written as given.
        #expect(try scalar("SELECT count(*) FROM message WHERE is_read <> 0", on: destination) == .integer(0))
        // preserve: label keys are the source's.
        #expect(try scalar("SELECT group_concat(id) FROM (SELECT id FROM label ORDER BY id LIMIT 3)", on: destination) == .text("10,20,30"))
        // allocate: destination keys are dense, in source-key order.
        #expect(
            try scalar("SELECT min(id) || '-' || max(id) || '-' || count(*) FROM message", on: destination)
                == .text("1-\(kept)-\(kept)"))
        // The self-reference with forward references went through the fix-up pass.
        let journal = try JournalReader(directory: folder.path("journal").path)
        #expect(!journal.fixups.isEmpty)
        #expect(journal.fixups.reduce(0) { $0 + Int($1.rowsUpdated) } > 0)
        // The checkpoint tables are gone once the job is complete.
        #expect(try scalar("SELECT count(*) FROM sqlite_schema WHERE name LIKE '_chunkmigrate%'", on: destination) == .integer(0))
        // The source is never written.
        #expect(try sha256(of: files.source) == sourceHash)
        #expect(!FileManager.default.fileExists(atPath: files.source.path + "-wal"))
        #expect(journal.state == .complete)
        #expect(JournalReader.verify(directory: folder.path("journal").path).isIntact)
    }

    @Test("the destination is the same whatever the batch size", arguments: [1, 7, 250, 100_000])
    func deterministicAcrossBatchSizes(batchSize: Int) throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 1_500)
        try migrateDemo(files, into: folder.path("reference.sqlite"), journal: folder.path("reference.journal"), batchSize: 100)
        try migrateDemo(files, into: folder.path("other.sqlite"), journal: folder.path("other.journal"), batchSize: batchSize)
        let reference = try dump(folder.path("reference.sqlite"))
        let other = try dump(folder.path("other.sqlite"))
        #expect(reference.keys.sorted() == ["conversation", "label", "message", "message_label"])
        #expect(reference == other)
    }

    @Test(
        "the fix-up pass reads the self-references each copy batch recorded as it deferred them, and writes what a scan of the source writes: with every batch recorded, with none (a limit of 0), and with some (a limit half of them pass)"
    )
    func fixupFromRecordedDeferrals() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 3_000)
        struct Result {
            var rows: [String: [[SQLiteValue]]]
            var fromRecords: Int
            var updated: [UInt32]
        }
        func migrate(_ name: String, deferralLimit: Int) throws -> Result {
            var options = MigrationOptions(batchSize: 300)
            options.deferralLimit = deferralLimit
            let job = try MigrationJob.start(
                plan: DemoStore.plan, source: files.source, destination: folder.path(name + ".sqlite"),
                journal: folder.path(name + ".journal"), schema: DemoStore.destinationSchema,
                options: options, logger: quietLogger)
            #expect(try job.runBlocking() == .complete)
            let journal = try JournalReader(directory: folder.path(name + ".journal").path)
            let updated: [UInt32] = journal.fixups.map { (record: FixupRecord) -> UInt32 in record.rowsUpdated &* 1_000 &+ record.rowsNulled
            }
            let rows = try dump(folder.path(name + ".sqlite"))
            return Result(rows: rows, fromRecords: job.lastRunFixupsFromRecords, updated: updated)
        }
        let scanned = try migrate("scanned", deferralLimit: 0)
        let recorded = try migrate("recorded", deferralLimit: Resolver.defaultDeferralLimit)
        // A limit some batches stay within and others pass: the median of what they deferred.
        let deferred = try JournalReader(directory: folder.path("recorded.journal").path).batches
            .map { Int($0.relationshipsDeferred) }.filter { $0 > 0 }.sorted()
        #expect(deferred.first != deferred.last, "\(deferred)")
        let some = try migrate("some", deferralLimit: deferred[deferred.count / 2])
        #expect(scanned.fromRecords == 0)
        #expect(
            recorded.fromRecords == recorded.updated.count && recorded.fromRecords > 5,
            "\(recorded.fromRecords) of \(recorded.updated.count)")
        #expect(some.fromRecords > 0 && some.fromRecords < recorded.fromRecords, "\(some.fromRecords) of \(recorded.fromRecords)")
        #expect(recorded.rows == scanned.rows && some.rows == scanned.rows)
        #expect(recorded.updated == scanned.updated && some.updated == scanned.updated && scanned.updated.contains { $0 >= 1_000 })
    }

    @Test("a complete job resumes instantly and changes nothing")
    func resumingCompleteJobIsNoOp() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 1_000)
        let destination = folder.path("new.sqlite")
        try migrateDemo(files, into: destination, journal: folder.path("journal"))
        let before = try dump(destination)
        let job = try MigrationJob.resume(at: folder.path("journal"), logger: quietLogger)
        #expect(job.isComplete)
        #expect(try job.runBlocking() == .complete)
        #expect(try dump(destination) == before)
    }

    @Test("a time budget stops at a batch boundary and the job resumes to the same result")
    func budgetAndResume() async throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 3_000)
        try migrateDemo(files, into: folder.path("reference.sqlite"), journal: folder.path("reference.journal"))

        let destination = folder.path("new.sqlite")
        let journal = folder.path("journal")
        var job = try startDemo(files, into: destination, journal: journal, batchSize: 50)
        var runs = 0
        var outcome = RunOutcome.paused
        while outcome == .paused && runs < 1_000 {
            outcome = try await job.run(for: .zero)
            runs += 1
            job = try MigrationJob.resume(at: journal, options: MigrationOptions(batchSize: 50), logger: quietLogger)
        }
        #expect(outcome == .complete)
        #expect(runs > 10, "a zero budget runs one batch per call")
        #expect(try dump(destination) == dump(folder.path("reference.sqlite")))
    }

    /// Starts a one-table job over `rows` people with keys 1...rows, kept where `filter` says.
    private func startPeople(
        _ rows: Int, where filter: String? = nil, options: MigrationOptions,
        in folder: TemporaryFolder
    ) throws -> MigrationJob {
        let source = folder.path("source.sqlite")
        try execute(
            """
            CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
            INSERT INTO person SELECT i, 'p' || i FROM n;
            """, on: source)
        let plan = MigrationPlan(entities: [
            EntityMapping(
                name: "Person", source: .init(table: "person", key: "id", where: filter),
                destination: .init(table: "person", key: "id"), columns: ["name": "name"])
        ])
        return try MigrationJob.start(
            plan: plan, source: source, destination: folder.path("new.sqlite"),
            journal: folder.path("journal"),
            schema: "CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT);",
            options: options, logger: quietLogger)
    }

    /// Runs one batch in each of `count` jobs resumed from `journal`, as processes started after
    /// kills would.
    private func resumeOneBatchEach(_ count: Int, journal: URL, options: MigrationOptions) throws {
        for _ in 0..<count {
            let resumed = try MigrationJob.resume(at: journal, options: options, logger: quietLogger)
            #expect(try resumed.runBlocking(for: .zero) == .paused)
        }
    }

    @Test("a resumed run starts at the batch size the job had reached, not at the first batch's")
    func resumedBatchSize() throws {
        let folder = try TemporaryFolder()
        // A time target no batch reaches: the size grows to the maximum as fast as it may.
        var options = MigrationOptions()
        options.batchTimeTarget = .seconds(3_600)
        options.initialBatchSize = 100
        options.maximumBatchSize = 20_000
        let job = try startPeople(30_000, options: options, in: folder)
        #expect(try job.runBlocking(for: .zero) == .paused)
        // The first batch of each resumed run is sized from the pace of the last one, growing by at
        // most four times as within a run.
        let journal = folder.path("journal")
        try resumeOneBatchEach(4, journal: journal, options: options)
        #expect(try JournalReader(directory: journal.path).batches.map(\.rowsRead) == [100, 400, 1_600, 6_400, 20_000])
        // A fixed size stays fixed.
        try resumeOneBatchEach(1, journal: journal, options: MigrationOptions(batchSize: 70))
        #expect(try JournalReader(directory: journal.path).batches.last?.rowsRead == 70)
    }

    @Test("a filtered entity's resumed batches cover as many keys as before, however few rows they kept")
    func resumedFilteredBatchSize() throws {
        let folder = try TemporaryFolder()
        var options = MigrationOptions()
        options.initialBatchSize = 10_000
        let job = try startPeople(40_000, where: "id % 1000 = 0", options: options, in: folder)
        #expect(try job.runBlocking(for: .zero) == .paused)
        let journal = folder.path("journal")
        try resumeOneBatchEach(2, journal: journal, options: options)
        let batches = try JournalReader(directory: journal.path).batches
        #expect(batches.map { $0.lastSourceKey - $0.firstSourceKey + 1 } == [10_000, 10_000, 10_000])
        #expect(batches.map(\.rowsRead) == [10, 10, 10])
    }

    @Test("cancelling the task stops the job at a batch boundary; it resumes to the same result")
    func cancellation() async throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("store"), messages: 20_000)
        try migrateDemo(files, into: folder.path("reference.sqlite"), journal: folder.path("reference.journal"))
        let destination = folder.path("new.sqlite")
        let journal = folder.path("journal")
        // The task is cancelled from the job's own thread as it copies the 100th message, in its
        // fifth batch, whatever the machine's speed: the job stops at the end of that batch.
        let work = Locked<Task<RunOutcome, any Error>?>(nil)
        let calls = Locked(0)
        var plan = DemoStore.plan
        let message = try #require(plan.entities.firstIndex { $0.name == "Message" })
        plan.entities[message].columns["text"] = "gate(body)"
        var options = MigrationOptions(batchSize: 20)
        options.functions = [
            SQLFunction(name: "gate", argumentCount: 1) { arguments in
                if calls.withLock({
                    $0 += 1; return $0
                }) == 100 {
                    while work.withLock({ $0 }) == nil { usleep(1000) }
                    work.withLock { $0 }?.cancel()
                }
                return arguments[0]
            }
        ]
        let job = try MigrationJob.start(
            plan: plan, source: files.source, destination: destination, journal: journal,
            schema: DemoStore.destinationSchema, options: options, logger: quietLogger)
        let updates = job.progressUpdates()
        let task = Task { try await job.run() }
        work.withLock { $0 = task }
        for await step in updates {
            #expect(step.rowsDone <= step.rowsTotal)
        }
        // The stream ends when the run stops.
        let outcome = try await task.value
        #expect(outcome == .paused)
        let status = try MigrationJob.status(at: journal)
        #expect(status.state == .interrupted)
        let batches = status.entities.reduce(0) { $0 + $1.batches }
        #expect(batches >= 5)
        // It finished the batch under way, of 20 messages (those of archived conversations are
        // read but not written), and started no other.
        let read = try #require(status.entities.first { $0.name == "Message" })
        #expect(!read.complete && calls.withLock { $0 } < 120 && read.rowsRead >= 100 && read.rowsRead <= 140, "\(read)")
        let resumed = try MigrationJob.resume(at: journal, options: options, logger: quietLogger)
        #expect(try resumed.runBlocking() == .complete)
        #expect(try dump(destination) == dump(folder.path("reference.sqlite")))
        #expect(job.progress.completedUnitCount > 0)
    }
}
