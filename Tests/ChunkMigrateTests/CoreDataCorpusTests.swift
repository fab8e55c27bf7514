import Foundation
import Testing
@testable import ChunkMigrate

/// Real stores Apple's framework wrote (macOS Photos libraries from 10.15 to 26.1, the stores of
/// the services inside a library, an iOS chat app), each migrated into an emptied copy of itself:
/// what Core Data migrates as it is, chunkmigrate migrates as it is, whatever the store already
/// was (required values left NULL, join rows to rows deleted since, an R-tree index without its
/// triggers), and the job's check passes, carrying the source's own anomalies.
@Suite("Core Data: the corpus of real stores")
struct CoreDataCorpusTests {
    /// Every store under `real/` and `corpus/`.
    static let stores = CoreDataLayoutTests.allStores.filter { $0.hasPrefix("real/") || $0.hasPrefix("corpus/") }

    @Test(
        "each store migrated into an emptied copy of itself is the store again: every table, trigger and metadata key; the job's check passes",
        .enabled(if: !stores.isEmpty, "shared/fixtures/coredata is absent"), arguments: stores)
    func identity(_ name: String) throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataModelTests.copy(name, into: folder)
        let destination = try CoreDataTesting.emptiedCopy(of: source, named: "migrated.sqlite", in: folder)
        let inferred = try MigrationPlan.infer(source: source, destination: destination)
        let job = try MigrationJob.start(
            plan: inferred.plan, source: source, destination: destination, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 500), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        let report = try #require(job.storeCheck)
        #expect(report.isValid, "\(report.violations)")
        // What the check carried, the source has: checked alone, the store names it as a violation.
        #expect(report.carried.count <= (try CoreDataStoreCheck.run(store: source)).violations.count)
        let difference = CoreDataTesting.difference(try CoreDataTesting.contents(destination), try CoreDataTesting.contents(source))
        #expect(difference == nil, "\(difference ?? "")\nnotes: \(inferred.notes)")
    }
}
