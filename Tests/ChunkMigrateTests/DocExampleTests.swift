// swift-format-ignore-file
// (The examples here are the docs' code blocks word for word: DocExampleDriftTests.)
import Foundation
import Logging
import MigrationJournal
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// The examples of the README, of the DocC articles and of the doc comments, word for word, where the compiler checks
/// them and a test runs them on a temporary store. When an example changes, change it here too.
///
/// The examples that use Apple's frameworks are compiled, not run, in `DocExampleTests+Apple.swift`;
/// `DocExampleDriftTests` checks that all of them are the documentation's, word for word.
@Suite("Documentation examples")
struct DocExampleTests {
    let logger = quietLogger

    /// What the examples name: the demo store's plan, source and schema, and where the new store
    /// and the journal go.
    private struct Inputs {
        let plan: MigrationPlan, old: URL, new: URL, journal: URL, schema: String
    }

    private func inputs(in folder: TemporaryFolder, messages: Int = 2_000) throws -> Inputs {
        let files = try DemoStore.generate(in: folder.path("demo"), messages: messages)
        return Inputs(plan: DemoStore.plan, old: files.source, new: folder.path("new.sqlite"), journal: folder.path("journal"),
                      schema: DemoStore.destinationSchema)
    }

    /// A demo store migrated as far as `start` takes it, for the examples to continue.
    private func startedJob(in folder: TemporaryFolder, messages: Int = 2_000) throws -> (journalURL: URL, newStore: URL) {
        let files = try DemoStore.generate(in: folder.path("demo"), messages: messages)
        let journalURL = folder.path("Migration.journal"), newStore = folder.path("Model-v2.sqlite")
        _ = try MigrationJob.start(plan: DemoStore.plan, source: files.source, destination: newStore, journal: journalURL,
                                   schema: DemoStore.destinationSchema, options: MigrationOptions(batchSize: 500), logger: logger)
        return (journalURL, newStore)
    }

    @Test("DemoStore: generate a store and start its migration")
    func demoStore() throws {
        let temporary = try TemporaryFolder()
        let folder = temporary.url
        // DemoStore.swift
        let files = try DemoStore.generate(in: folder, messages: 100_000)
        let job = try MigrationJob.start(plan: DemoStore.plan, source: files.source, destination: folder.appending(path: "new.sqlite"),
                                         journal: folder.appending(path: "journal"), schema: DemoStore.destinationSchema,
                                         logger: logger)
        // end
        #expect(!job.isComplete)
        #expect(try MigrationJob.status(at: job.journalURL).entities.map(\.name) == DemoStore.plan.entities.map(\.name))
    }

    @Test("MigrationJob: resume from the startup path, one budget at a time")
    func resumeFromStartup() async throws {
        let folder = try TemporaryFolder()
        let (journalURL, _) = try startedJob(in: folder)
        let options = MigrationOptions(batchSize: 500)
        var outcomes: [RunOutcome] = []
        for _ in 0..<100 {
            // MigrationJob.swift, first example
            let job = try MigrationJob.resume(at: journalURL, options: options, logger: logger)
            let outcome = try await job.run(for: .seconds(10))   // .complete or .paused
            // end
            outcomes.append(outcome)
            if outcome == .complete { break }
        }
        #expect(outcomes.last == .complete)
        #expect(try MigrationJob.status(at: journalURL).state == .complete)
    }

    @Test("MigrationJob: start a job and follow its progress")
    func startAndFollow() async throws {
        let folder = try TemporaryFolder()
        let given = try inputs(in: folder, messages: 3_000)
        let plan = given.plan, old = given.old, new = given.new, newSchemaSQL = given.schema, journalURL = given.journal
        let seen = Locked<[MigrationProgress]>([])
        func print(_ entity: String, _ done: Int64, _ total: Int64) {
            seen.withLock { $0.append(MigrationProgress(entity: entity, phase: .copy, batch: 0, rowsDone: done, rowsTotal: total,
                                                         jobRowsDone: 0, jobRowsTotal: 0, rowsPerSecond: 0,
                                                         estimatedRemaining: nil, batchSize: 0)) }
        }
        // MigrationJob.swift, second example
        let job = try MigrationJob.start(plan: plan, source: old, destination: new, journal: journalURL,
                                         schema: newSchemaSQL, logger: logger)
        let updates = job.progressUpdates()              // ends when the run below ends
        let printer = Task { for await step in updates { print(step.entity, step.rowsDone, step.rowsTotal) } }
        _ = try await job.run()
        await printer.value                              // every report printed
        // end
        #expect(job.isComplete)
        let steps = seen.withLock { $0 }
        #expect(!steps.isEmpty)
        #expect(steps.allSatisfy { $0.rowsDone <= $0.rowsTotal })
        #expect(Set(steps.map(\.entity)).isSubset(of: Set(plan.entities.map(\.name))))
    }

    @Test("progress names its phase: rows copied, then the fix-up pass of the self-reference")
    func progressPhases() async throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.path("demo"), messages: 1_000)
        let job = try startDemo(files, into: folder.path("new.sqlite"), journal: folder.path("journal"), batchSize: 400)
        let updates = job.progressUpdates()
        let collector = Task {
            var phases: [MigrationProgress.Phase] = []
            for await step in updates { phases.append(step.phase) }
            return phases
        }
        #expect(try await job.run() == .complete)
        let phases = await collector.value
        #expect(phases.first == .copy)
        #expect(phases.contains(.fixup(column: "reply_to_id")))
        #expect(phases.firstIndex(of: .fixup(column: "reply_to_id"))! > phases.lastIndex(of: .copy)!)
        #expect(MigrationProgress.Phase.fixup(column: "reply_to_id").description == "fixup reply_to_id")
        #expect(MigrationProgress.Phase.index(name: "message_by_date").description == "index message_by_date")
    }

    @Test("MigrationJob.startOrResume: the same call starts the job, then continues it")
    func startOrResume() async throws {
        let folder = try TemporaryFolder()
        let given = try inputs(in: folder)
        let plan = given.plan, oldStoreURL = given.old, newStoreURL = given.new, journalURL = given.journal
        let newSchemaSQL = given.schema
        var calls: [Bool] = []
        for _ in 0..<100 {
            // startOrResume's example, as in its doc comment (checked in appStartupArticle)
            let job = try MigrationJob.startOrResume(plan: plan, source: oldStoreURL, destination: newStoreURL,
                                                     journal: journalURL, schema: newSchemaSQL, logger: logger)
            if !job.isComplete { _ = try await job.run(for: .seconds(5)) }
            // end
            calls.append(job.isNew)
            if job.isComplete { break }
        }
        #expect(calls.first == true)
        #expect(calls.dropFirst().allSatisfy { !$0 })
        #expect(try MigrationJob.status(at: journalURL).state == .complete)
        // A plan other than the job's is refused, not started over.
        var other = plan
        other.entities.removeLast()
        #expect(throws: MigrationError.self) {
            try MigrationJob.startOrResume(plan: other, source: oldStoreURL, destination: newStoreURL, journal: journalURL,
                                           logger: logger)
        }
    }

    @Test("JournalReader: a journal's header, batches, state and ID map")
    func journalReader() async throws {
        let folder = try TemporaryFolder()
        let (journalURL, _) = try startedJob(in: folder)
        #expect(try await MigrationJob.resume(at: journalURL, logger: logger).run() == .complete)
        var printed: [String] = []
        func print(_ items: Any...) { printed.append(items.map { "\($0)" }.joined(separator: " ")) }
        let journalPath = journalURL.path
        // JournalReader.swift
        let journal = try JournalReader(directory: journalPath)
        print(journal.header.jobID, journal.batches.count, journal.state)
        let map = try journal.idMap()
        let destination = try map.destination(of: 42, entity: 1)
        // end
        #expect(printed == ["\(journal.header.jobID) \(journal.batches.count) complete"])
        #expect(journal.batches.count > 1)
        // Entity 1 is Message: its source key 42 has a destination key, which the destination holds.
        #expect(destination != nil)
    }

    @Test("JournalError: a journal from a newer format is refused with its own code")
    func journalError() throws {
        let folder = try TemporaryFolder()
        let (journalURL, _) = try startedJob(in: folder)
        // The format version, the four bytes after the magic, made newer than this reader.
        let header = journalURL.appendingPathComponent("header")
        var bytes = try Data(contentsOf: header)
        bytes.replaceSubrange(8..<12, with: [0x09, 0, 0, 0])
        try bytes.write(to: header)
        var printed: [String] = []
        func print(_ text: String) { printed.append(text) }
        let journalPath = journalURL.path
        // JournalError.swift
        do {
            _ = try JournalReader(directory: journalPath)
        } catch where error.code == .newerFormat {
            print(error.message)   // "journal format version 9 is newer than this reader ..."
        } catch {
            print("cannot read the journal: \(error)")
        }
        // end
        #expect(printed.count == 1)
        #expect(printed.first?.hasPrefix("journal format version 9 is newer than this reader") == true)
    }

    @Test("GettingStarted.md: the library's start, and the startup path with progress")
    func readmeLibrary() async throws {
        let temporary = try TemporaryFolder()
        let given = try inputs(in: temporary)
        let plan = given.plan, oldStore = given.old, newStore = given.new, journalURL = given.journal, newSchemaSQL = given.schema
        let options = MigrationOptions(batchSize: 500)
        let shown = Locked(0)
        func show(_ done: Int64, _ total: Int64, _ remaining: Duration?) { shown.withLock { $0 += 1 } }
        var opened = false
        func openNewStore() { opened = true }
        do {
            // GettingStarted.md, the calls: start
            // Start a job (once: on the first launch of the new version).
            let job = try MigrationJob.start(plan: plan, source: oldStore, destination: newStore,
                                             journal: journalURL, schema: newSchemaSQL, options: options, logger: logger)
            // end
            #expect(job.isNew)
        }
        for _ in 0..<100 where !opened {
            // GettingStarted.md, the calls: from the app's startup path
            // From the app's startup path: cheap when there is nothing to do.
            let job = try MigrationJob.resume(at: journalURL, options: options, logger: logger)
            if !job.isComplete {
                let updates = job.progressUpdates()               // ends when the run below ends
                Task { for await step in updates { show(step.rowsDone, step.rowsTotal, step.estimatedRemaining) } }
                switch try await job.run(for: .seconds(15)) {   // or run() to the end
                case .complete: openNewStore()
                case .paused: break                              // continue at the next launch or background window
                }
            }
            // end
        }
        #expect(opened)
        let messages = try scalar("SELECT count(*) FROM message", on: newStore).integer
        #expect(messages != nil && messages != 0)
    }

    @MainActor final class Model { var progress = 0.0; var phase = "" }

    @Test("The AppStartup and GettingStarted articles and the catalog's overview: start or resume, cancel, resume, a budget with progress")
    @MainActor func appStartupArticle() async throws {
        let folder = try TemporaryFolder()
        let given = try inputs(in: folder, messages: 3_000)
        let plan = given.plan, oldStoreURL = given.old, newStoreURL = given.new, newSchemaSQL = given.schema
        let journalURL = given.journal
        let model = Model()
        do {
            // AppStartup.md, start or resume
            let job = try MigrationJob.startOrResume(plan: plan, source: oldStoreURL, destination: newStoreURL,
                                                     journal: journalURL, schema: newSchemaSQL, logger: logger)
            // end
            #expect(job.isNew)
            // AppStartup.md, pause and resume
            let work = Task { try await job.run() }
            // when the system says time is up:
            work.cancel()          // the job stops at the next batch boundary
            // end
            #expect(try await work.value == .paused)
            #expect(!job.isComplete)
        }
        do {
            // AppStartup.md, resume
            let job = try MigrationJob.resume(at: journalURL, logger: logger)
            // end
            #expect(!job.isComplete)
        }
        do {
            // GettingStarted.md, AppStartup.md
            let job = try MigrationJob.resume(at: journalURL, logger: logger)
            if !job.isComplete {
                let updates = job.progressUpdates()
                Task { @MainActor in for await step in updates { model.progress = step.fraction; model.phase = "\(step.phase)" } }
                while try await job.run(for: .seconds(5)) == .paused { }   // the view stays responsive between calls
            }
            // end
            #expect(job.isComplete)
        }
        // ChunkMigrate.md, MigrationJob.swift, GettingStarted.md
        let job = try MigrationJob.startOrResume(plan: plan, source: oldStoreURL, destination: newStoreURL,
                                                 journal: journalURL, schema: newSchemaSQL, logger: logger)
        if !job.isComplete { _ = try await job.run(for: .seconds(5)) }
        // end
        #expect(!job.isNew && job.isComplete)
        #expect((0.0...1.0).contains(model.progress))
    }

    @Test("InPlace.md: in place from the app's startup path, started, then finished launch after launch")
    func inPlaceStartup() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 300)
        let storeURL = files.old, emptyNewStoreURL = files.new
        let plan = try MigrationPlan.infer(source: storeURL, destination: emptyNewStoreURL).plan
        for launch in 0..<3 {
            let storeNeedsMigration = launch == 0
            // InPlace.md, from an app
            // Part-way through (a kill, the watchdog, a pause): finish it first; nil when nothing is under way.
            if let job = try InPlaceMigration.resume(store: storeURL) {
                _ = try job.runBlocking(for: .seconds(5))          // .paused: it goes on at the next launch
            } else if storeNeedsMigration {                       // the store's model is not the app's: start
                let job = try InPlaceMigration.startOrResume(plan: plan, store: storeURL, target: emptyNewStoreURL)
                _ = try job.runBlocking(for: .seconds(5))          // job.pause() from another thread stops it at a batch boundary
            }
            // end
        }
        #expect(!InPlaceMigration.isHalfMigrated(storeURL))
        #expect(try CoreDataStoreCheck.run(store: storeURL).violations == [])
        let model = { (url: URL) in try CoreDataModel.read(store: url).map(CoreDataModelBundle.signature) }
        #expect(try model(storeURL) == (try model(emptyNewStoreURL)))
    }

    @Test("CoreDataStores.md: a Core Data store, inferred, migrated and checked")
    func readmeCoreData() async throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.path("store"), rows: 500)
        let oldStoreURL = files.old, emptyNewStoreURL = files.new, journalURL = folder.path("journal")
        // CoreDataStores.md, steps 2 and 3
        let inferred = try MigrationPlan.infer(source: oldStoreURL, destination: emptyNewStoreURL)
        let job = try MigrationJob.start(plan: inferred.plan, source: oldStoreURL, destination: emptyNewStoreURL,
                                         journal: journalURL, logger: logger)
        _ = try await job.run(for: .seconds(15))          // later launches: MigrationJob.resume(at: journalURL, ...)
        let report = try job.storeCheck ?? CoreDataStoreCheck.run(store: emptyNewStoreURL)   // report.isValid before replacing the store
        // end
        #expect(job.isComplete)
        #expect(report.isValid)
        #expect(report.checked > 0 && job.storeCheck?.checked == report.checked)
    }

    @Test("README: a Core Data store at app launch, inferred and started, then opened again once complete")
    @MainActor func readmeCoreDataAtLaunch() async throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.path("store"), rows: 500)
        let storeURL = files.old, newStoreURL = files.new, journalURL = folder.path("Migration.journal")
        let model = Model()
        var reports: [CoreDataStoreCheck.Report] = []
        var started: [Bool] = []
        for _ in 0..<2 {
            func launch() async throws {
                // README, a Core Data store at app launch
                let job = try MigrationJob.hasJournal(at: journalURL)
                    ? MigrationJob.resume(at: journalURL, logger: logger)
                    : MigrationJob.start(plan: MigrationPlan.infer(source: storeURL, destination: newStoreURL).plan,
                                         source: storeURL, destination: newStoreURL, journal: journalURL, logger: logger)
                let updates = job.progressUpdates()
                Task { @MainActor in for await step in updates { model.progress = step.fraction; model.phase = "\(step.phase)" } }
                while try await job.run(for: .seconds(5)) == .paused { }   // a kill loses at most one batch; the next launch goes on
                let report = try job.storeCheck ?? CoreDataStoreCheck.run(store: newStoreURL)
                guard report.isValid else { return }                      // report.violations name what is wrong; the old store stays
                // end
                started.append(job.isNew)
                reports.append(report)
            }
            try await launch()
        }
        // The first launch started the job and ran it to the end; the second found it complete.
        #expect(started == [true, false])
        #expect(reports.count == 2 && reports.allSatisfy { $0.checked > 0 })
        #expect((0.0...1.0).contains(model.progress))
        let migrated = { (url: URL) in try CoreDataModel.read(store: url).map(CoreDataModelBundle.signature) }
        #expect(try migrated(newStoreURL) != nil)
    }
}
