import Foundation
import Testing
@testable import ChunkMigrate

/// A Core Data store migrated inside its own file.
@Suite("In place")
struct InPlaceMigrationTests {
    /// Runs an in-place migration to the end, paused after every batch.
    static func migrateInPlace(_ plan: MigrationPlan, store: URL, target: URL, batchSize: Int = 2) throws -> Int {
        var options = MigrationOptions(batchSize: batchSize)
        options.checksFreeSpace = false
        var runs = 0
        while try InPlaceMigration.startOrResume(plan: plan, store: store, target: target, options: options).runBlocking(for: .zero) == .paused {
            runs += 1
        }
        return runs
    }

    @Test("the demo pair (every entity renumbered, a join table renamed, a new derived count, history, triggers) in place, paused after every batch, equals the copy path; a half-migrated store is told apart")
    func demoEqualsCopyPath() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 600)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        let copied = folder.path("copied.sqlite")
        try FileManager.default.copyItem(at: files.new, to: copied)
        let job = try MigrationJob.start(plan: plan, source: files.old, destination: copied, journal: folder.path("journal"), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)

        let store = folder.path("store.sqlite")
        try FileManager.default.copyItem(at: files.old, to: store)
        // One batch, then the store is half-migrated: every entry point says so.
        var options = MigrationOptions(batchSize: 2)
        options.checksFreeSpace = false
        #expect(try InPlaceMigration.startOrResume(plan: plan, store: store, target: files.new, options: options).runBlocking(for: .zero) == .paused)
        #expect(InPlaceMigration.isHalfMigrated(store))
        for attempt in [{ _ = try CoreDataStoreCheck.run(store: store) },
                        { _ = try MigrationPlan.infer(source: store, destination: files.new) }] as [() throws -> Void] {
            let error = #expect(throws: MigrationError.self) { try attempt() }
            #expect(error?.message.contains("part-way through an in-place migration") == true, "\(String(describing: error))")
        }
        let journalError = #expect(throws: MigrationError.self) { try MigrationJob.resume(at: store, logger: quietLogger) }
        #expect(journalError?.message.contains("this is a store, not a journal") == true, "\(String(describing: journalError))")
        let status = try #require(try InPlaceMigration.status(of: store))
        #expect(status.target == files.new.path && status.stepsDone < status.steps && status.currentStep != nil, "\(status)")
        // Towards another model than the one it started with: refused.
        let other = #expect(throws: MigrationError.self) { try InPlaceMigration.startOrResume(plan: plan, store: store, target: files.old, options: options) }
        #expect(other?.code == .mismatch, "\(String(describing: other))")
        // Paused from its progress, then continued from the store alone, one batch a run.
        let pausing = try #require(try InPlaceMigration.resume(store: store, options: options))
        #expect(try pausing.runBlocking { _ in pausing.pause() } == .paused)
        #expect(try #require(try InPlaceMigration.status(of: store)).stepsDone >= status.stepsDone)
        var runs = 0
        while let job = try InPlaceMigration.resume(store: store, options: options) {
            _ = try job.runBlocking(for: .zero)
            runs += 1
        }
        #expect(runs > 100 && !InPlaceMigration.isHalfMigrated(store))
        #expect(try InPlaceMigration.status(of: store) == nil)
        #expect(CoreDataTesting.difference(try CoreDataTesting.contents(store), try CoreDataTesting.contents(copied)) == nil)
        #expect(try CoreDataStoreCheck.run(store: store).violations == [])
        let indexes = "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name"
        #expect(try Database(path: store.path, mode: .source).rows(indexes) == (try Database(path: files.new.path, mode: .source).rows(indexes)))
    }

    @Test("the Messenger stores migrated in place equal Core Data's own migration of them, table by table",
          .enabled(if: CoreDataOracleTests.present, "shared/fixtures/coredata is absent"), arguments: CoreDataOracleTests.pairs.map { "\($0.old) -> \($0.new)" })
    func sameAsCoreData(_ pair: String) throws {
        let (old, new, change) = CoreDataOracleTests.pairs.first { "\($0.old) -> \($0.new)" == pair }!
        let folder = try TemporaryFolder()
        let store = try CoreDataModelTests.copy(old, into: folder)
        try CoreDataTesting.provideExternalFiles(for: store)
        let coreData = try CoreDataModelTests.copy(new, into: folder)
        let target = try CoreDataTesting.emptiedCopy(of: coreData, named: "target.sqlite", in: folder)
        let plan = try MigrationPlan.infer(source: store, destination: target).plan
        _ = try Self.migrateInPlace(plan, store: store, target: target, batchSize: 3)
        var ours = try CoreDataTesting.contents(store), theirs = try CoreDataTesting.contents(coreData)
        ours["(triggers)"] = nil
        theirs["(triggers)"] = nil
        #expect(CoreDataTesting.difference(ours, theirs) == nil, "\(change)")
        #expect(try CoreDataStoreCheck.run(store: store).violations == [])
    }

    @Test("a plan that needs the copy path is refused with the reason, the store untouched")
    func refused() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 50)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new, options: InferenceOptions(keys: .allocate)).plan
        let before = try Data(contentsOf: files.old)
        let error = #expect(throws: MigrationError.self) { try InPlaceMigration.startOrResume(plan: plan, store: files.old, target: files.new) }
        #expect(error?.message.hasPrefix("this migration needs the copy path (run without --in-place): entities[") == true
                && error?.message.contains("gives its rows new keys") == true, "\(String(describing: error))")
        #expect(try Data(contentsOf: files.old) == before && !InPlaceMigration.isHalfMigrated(files.old))
    }
}
