import Foundation
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// The job's fraction as an app reads it from ``MigrationJob/progressUpdates()``: one number over
/// every phase, monotone, 1 only once the job is complete, and each phase named by its own table.
@Suite("The job's progress")
struct JobProgressTests {
    /// Every report of a run of `job` to its end.
    static func reports(of job: MigrationJob, for budget: Duration? = nil) async throws -> (RunOutcome, [MigrationProgress]) {
        let updates = job.progressUpdates()
        let collector = Task {
            var steps: [MigrationProgress] = []
            for await step in updates { steps.append(step) }
            return steps
        }
        let outcome = try await job.run(for: budget)
        return (outcome, await collector.value)
    }

    @Test(
        "over a Core Data store (copy, index builds, derived values, triggers, the check): the fraction never goes back, stays below 1 until the last report, which says complete with 1; each index build names its index and the index's own table, the derived values their table, the triggers none (the stream keeps the newest reports where its reader lags: these hold of any it keeps)"
    )
    func fractionOverEveryPhase() async throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.path("demo"), rows: 3_000)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        let job = try MigrationJob.start(
            plan: plan, source: files.old, destination: files.new, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 200), logger: quietLogger)
        let (outcome, steps) = try await Self.reports(of: job)
        #expect(outcome == .complete)
        let fractions = steps.map(\.fraction)
        #expect(zip(fractions, fractions.dropFirst()).allSatisfy { $0 <= $1 }, "\(fractions)")
        #expect(steps.last?.phase == .complete && steps.last?.fraction == 1)
        #expect(steps.dropLast().allSatisfy { $0.fraction < 1 && $0.phase != .complete })
        #expect(job.progress.fractionCompleted == 1)
        let indexes = steps.filter { if case .index = $0.phase { true } else { false } }
        #expect(!indexes.isEmpty)
        let destination = try Database(path: files.new.path, mode: .readOnly)
        for step in indexes {
            guard case let .index(name) = step.phase else { continue }
            let table = try destination.scalar("SELECT tbl_name FROM sqlite_schema WHERE type = 'index' AND name = ?1", .text(name)).text
            #expect(
                step.table?.caseInsensitiveCompare(table ?? "") == .orderedSame,
                "\(name): \(String(describing: step.table)) against \(String(describing: table))")
            #expect(
                plan.entities.first { $0.name == step.entity }?.destination.table.caseInsensitiveCompare(table ?? "") == .orderedSame,
                "\(name) reported under \(step.entity)")
        }
        let derived = try #require(steps.first { $0.phase == .finishing(step: "derive Tag.itemCount") })
        #expect(derived.table == "ZTAG")
        #expect(steps.contains { $0.phase == .finishing(step: "triggers") && $0.table == nil })
        #expect(steps.contains { $0.phase == .check })
        #expect(
            steps.filter { $0.phase == .copy }.allSatisfy { step in
                plan.entities.first { $0.name == step.entity }?.destination.table == step.table
            })
    }

    @Test(
        "paused after every batch and resumed until complete (every report kept, one or two a run): each run's fraction never goes back, the last report of the last run is complete with 1 and no earlier one is; when the copy ends, the work after it is still ahead; every phase reported"
    )
    func fractionAcrossRuns() async throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.path("demo"), rows: 600)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        var job = try MigrationJob.start(
            plan: plan, source: files.old, destination: files.new, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 100), logger: quietLogger)
        var all: [MigrationProgress] = []
        var runs = 0
        while true {
            let (outcome, steps) = try await Self.reports(of: job, for: .zero)
            let fractions = steps.map(\.fraction)
            #expect(zip(fractions, fractions.dropFirst()).allSatisfy { $0 <= $1 }, "\(fractions)")
            all += steps
            runs += 1
            if outcome == .complete { break }
            job = try MigrationJob.resume(at: folder.path("journal"), logger: quietLogger)
        }
        #expect(runs > 10)
        #expect(all.last?.phase == .complete && all.last?.fraction == 1)
        #expect(all.dropLast().allSatisfy { $0.fraction < 1 })
        // The copy's rows are not the whole job: the index builds, derived values and the check
        // are still ahead when it ends.
        let endOfCopy = try #require(all.last { $0.phase == .copy })
        #expect(endOfCopy.fraction < 0.9, "\(endOfCopy)")
        #expect(all.contains { if case .index = $0.phase { true } else { false } })
        #expect(all.contains { $0.phase == .finishing(step: "derive Tag.itemCount") && $0.table == "ZTAG" })
        #expect(all.contains { $0.phase == .finishing(step: "triggers") && $0.table == nil })
    }
}
