import Foundation
import Testing
@testable import ChunkMigrate

/// The check a Core Data job makes of the store it wrote, partly alongside its index builds.
@Suite("The job's own store check")
struct StoreCheckInJobTests {
    @Test("a job that writes dangling to-ones completes with a report naming them: the lookup that waits for the index it reads, and the part over the rows")
    func findsViolations() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 3_000)
        var plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        let item = try #require(plan.entities.firstIndex { $0.name == "Item" })
        // ZFOLDER's lookup reads ZITEM_ZFOLDER_INDEX, which the job builds: postponed. ZLINKED
        // has a polymorphic column, so its rows are read alongside the index builds.
        plan.entities[item].columns["ZFOLDER"] = "CASE WHEN Z_PK % 7 = 0 THEN ZFOLDER + 1000000 ELSE ZFOLDER END"
        plan.entities[item].columns["ZLINKED"] = "CASE WHEN ZLINKED IS NOT NULL AND Z_PK % 5 = 0 THEN ZLINKED + 1000000 ELSE ZLINKED END"
        // Tag.itemCount copied as a wrong number instead of derived: the values the check computes
        // while the job builds its indexes differ from those the job wrote.
        let tag = try #require(plan.entities.firstIndex { $0.name == "Tag" })
        #expect(plan.coreData?.derived.contains { $0.attribute == "Tag.itemCount" } == true)
        plan.coreData?.derived.removeAll { $0.attribute == "Tag.itemCount" }
        plan.entities[tag].columns["ZITEMCOUNT"] = "CASE WHEN Z_PK % 4 = 0 THEN -1 ELSE (SELECT count(*) FROM src.Z_2TAGS WHERE Z_5TAGS = s.Z_PK) END"
        let job = try MigrationJob.start(plan: plan, source: files.old, destination: files.new, journal: folder.path("journal"),
                                         options: MigrationOptions(batchSize: 500), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        let report = try #require(job.storeCheck)
        #expect(!report.isValid)
        #expect(report.violations.contains { $0.hasPrefix("ZITEM.ZFOLDER: ") && $0.contains("point at no row of Folder") }, "\(report.violations)")
        #expect(report.violations.contains { $0.hasPrefix("ZITEM.ZLINKED: ") }, "\(report.violations)")
        #expect(report.violations.contains { $0.hasPrefix("ZTAG.ZITEMCOUNT: ") && $0.contains("another value than the derived attribute Tag.itemCount") },
                "\(report.violations)")
        // The same as check-coredata's, made apart on the finished store.
        let apart = try CoreDataStoreCheck.run(store: files.new)
        #expect(Set(apart.violations) == Set(report.violations) && apart.checked == report.checked)
        #expect(job.lastRunPhases.map { $0.checkAlongside > 0 && $0.indexes > 0 } == true)
    }

    @Test("paused in the index builds and finished by another run: the check of the run that completes the job; off, none")
    func pausedAndOff() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 3_000)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        // One batch a run: the runs stop everywhere, in the index builds and the finishing steps too.
        var runs = 0, reports = 0
        while true {
            let job = try MigrationJob.startOrResume(plan: plan, source: files.old, destination: files.new, journal: folder.path("journal"),
                                                     options: MigrationOptions(batchSize: 700), logger: quietLogger)
            let outcome = try job.runBlocking(for: .zero)
            runs += 1
            if job.storeCheck != nil { reports += 1 }
            if outcome == .complete {
                #expect(job.storeCheck?.isValid == true && job.storeCheck?.violations == [], "\(String(describing: job.storeCheck))")
                break
            }
        }
        #expect(runs > 10 && reports == 1)
        #expect(try CoreDataStoreCheck.run(store: files.new).isValid)

        let other = try TemporaryFolder()
        let second = try CoreDataDemoStore.generate(in: other.url, rows: 300)
        var options = MigrationOptions()
        options.checksStore = false
        let job = try MigrationJob.start(plan: try MigrationPlan.infer(source: second.old, destination: second.new).plan, source: second.old,
                                         destination: second.new, journal: other.path("journal"), options: options, logger: quietLogger)
        #expect(try job.runBlocking() == .complete && job.storeCheck == nil && job.lastRunPhases?.check == 0)
    }
}
