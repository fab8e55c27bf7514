import Foundation
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// The disk a job needs, worked out before its first row is written.
@Suite("Space estimate")
struct SpaceEstimateTests {
    @Test("the estimate of a Core Data job is the destination it writes, within 10%")
    func estimateMatchesTheDestination() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 20_000)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        let estimate = try SpaceEstimate.of(plan: plan, source: files.old, destination: files.new)
        let before = try FileManager.default.attributesOfItem(atPath: files.new.path)[.size] as! NSNumber
        // Where the file system has room for the bound (3.5 times the source's file), a job starts
        // on the bound; where it has less, on the estimate.
        let sourceBytes = try (FileManager.default.attributesOfItem(atPath: files.old.path)[.size] as! NSNumber).int64Value
        let bound = try #require(SpaceEstimate.upperBound(source: files.old.path, freeBytes: .max))
        #expect(bound.isUpperBound && bound.neededBytes >= sourceBytes * 7 / 2 && bound.neededBytes >= estimate.neededBytes)
        var options = MigrationOptions(batchSize: 2_000)
        options.freeSpace = { _ in estimate.neededBytes * 2 }
        let job = try MigrationJob.start(
            plan: plan, source: files.old, destination: files.new, journal: folder.path("journal"),
            options: options, logger: quietLogger)
        #expect(job.spaceEstimate?.destinationBytes == estimate.destinationBytes && job.spaceEstimate?.isUpperBound == false)
        #expect(try job.runBlocking() == .complete)
        let after = try FileManager.default.attributesOfItem(atPath: files.new.path)[.size] as! NSNumber
        let grown = after.int64Value - before.int64Value
        #expect(abs(Double(estimate.destinationBytes) / Double(grown) - 1) < 0.10, "estimated \(estimate.destinationBytes), grew \(grown)")
        #expect(estimate.freeBytes > 0 && estimate.fits)
    }

    @Test("each table's and index's bytes are its pages, as a walk of them counts them (not dbstat's 32-bit sum, which wraps over 2 GiB)")
    func sourceSizesArePages() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 5_000)
        let stores = try Stores.open(source: files.old.path, destination: files.new.path, schema: nil, options: MigrationOptions())
        let sizes = try SpaceEstimate.sourceSizes(stores.database)
        let walked = try stores.database.rows("SELECT lower(name), sum(pgsize) FROM dbstat('src') GROUP BY 1")
        #expect(walked.count > 10 && walked.count == sizes.count)
        for row in walked {
            let name = try #require(row[0].text)
            #expect(
                sizes[name] == row[1].integer, "\(name): \(String(describing: sizes[name])) against \(String(describing: row[1].integer))")
        }
        #expect(try #require(sizes["zitem"]) > 100_000)
    }

    @Test("a job the free space cannot hold is refused before anything is written, naming the bytes needed and free")
    func refusedBeforeWriting() throws {
        let folder = try TemporaryFolder()
        let files = try DemoStore.generate(in: folder.url, messages: 5_000)
        let plan = try MigrationPlan.decode(json: Data(contentsOf: files.plan))
        let schema = try String(contentsOf: files.schema, encoding: .utf8)
        var options = MigrationOptions()
        options.freeSpace = { _ in 100_000 }
        let destination = folder.path("destination.sqlite")
        let error = #expect(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: plan, source: files.source, destination: destination, journal: folder.path("journal"),
                schema: schema, options: options, logger: quietLogger)
        }
        #expect(
            error?.code == .diskFull && error?.message.hasPrefix("not enough free space for the job: it needs ") == true
                && error?.message.contains("0.1 MB free") == true, "\(String(describing: error))")
        // Nothing left behind: no journal, no destination.
        #expect(!FileManager.default.fileExists(atPath: folder.path("journal").path))
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        // With room, the same job starts.
        options.freeSpace = nil
        let started = try MigrationJob.start(
            plan: plan, source: files.source, destination: destination, journal: folder.path("journal"),
            schema: schema, options: options, logger: quietLogger)
        #expect(started.spaceEstimate?.isUpperBound == true && started.spaceEstimate?.description.hasPrefix("needs at most ") == true)
        #expect(SpaceEstimate.bytes(1_610_612_736) == "1.5 GB" && SpaceEstimate.bytes(52_428_800) == "50 MB")
    }
}
