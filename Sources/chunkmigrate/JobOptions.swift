import ArgumentParser
import ChunkMigrate
import MigrationJournal

/// Options shared by the commands that run a job.
struct JobOptions: ParsableArguments {
    @Option(name: .long, help: "Rows per batch (fixed). By default the size adapts so a batch takes about --batch-seconds.")
    var batchSize: Int?

    @Option(name: .long, help: "Target duration of one batch, in seconds, when the batch size adapts.")
    var batchSeconds: Double = 0.5

    @Option(name: .long, help: "Stop at the first batch boundary after this many seconds; run again to continue.")
    var budget: Double?

    @Option(
        name: .long,
        help:
            "MiB of ID-map keys kept in memory (fixed). By default the cache starts at 2 MiB and grows, up to 64 MiB, only when lookups keep reading segments it evicted."
    )
    var idMapCacheMib: Int?

    @Option(name: .long, help: "MiB of SQLite page cache for each of the source and the destination.")
    var sqliteCacheMib = 2

    @Flag(name: .long, help: "Before each batch commits, compare a checksum of the rows written with the mapped source values.")
    var verifyChecksums = false

    @Flag(
        name: .long,
        help:
            "Let a new job write into destination tables that already hold rows (allocated keys follow them); refused otherwise. Never for a Core Data plan."
    )
    var append = false

    @Flag(
        name: .long,
        help: "Estimate the disk a new job needs from the source's pages even where the volume has room for 3.5 times the source's file.")
    var exactSpaceEstimate = false

    @Flag(name: .long, help: "Do not check a migrated Core Data store at the end (check-coredata does it apart).")
    var noCheck = false

    @Flag(name: .long, help: "Print the final status as JSON on stdout.")
    var json = false

    @Flag(name: .long, help: "Print no progress.")
    var quiet = false

    func validate() throws {
        if let batchSize, batchSize < 1 || batchSize > IDMapSegment.maximumKeyCount {
            throw ValidationError("--batch-size must be from 1 to \(IDMapSegment.maximumKeyCount), the most rows one batch's ID map holds")
        }
        if batchSeconds <= 0 { throw ValidationError("--batch-seconds must be positive") }
        if idMapCacheMib.map({ $0 < 1 }) == true || sqliteCacheMib < 1 { throw ValidationError("cache sizes must be at least 1 MiB") }
    }

    var migrationOptions: MigrationOptions {
        var options = MigrationOptions(batchSize: batchSize)
        options.batchTimeTarget = .milliseconds(Int64(batchSeconds * 1000))
        if let idMapCacheMib {
            options.idMapCacheBytes = idMapCacheMib << 20
            options.idMapCacheLimitBytes = idMapCacheMib << 20
        }
        options.verifyChecksums = verifyChecksums
        options.appendToExistingRows = append
        options.checksStore = !noCheck
        options.estimatesSpaceExactly = exactSpaceEstimate
        options.sqliteCacheKiB = sqliteCacheMib << 10
        return options
    }

    var budgetDuration: Duration? { budget.map { .milliseconds(Int64($0 * 1000)) } }
}
