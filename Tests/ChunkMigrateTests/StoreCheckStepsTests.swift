import Foundation
import Testing
@testable import ChunkMigrate

/// The steps of a part of the store check, which a job's check resumes from where it gave way
/// to the job, and the ranges a join-table side's pass goes over one at a time.
@Suite("The store check's steps")
struct StoreCheckStepsTests {
    /// The rows part of the check of `path`, with each step's name and what it added, in order.
    static func steps(_ database: Database, model: CoreDataModel, file: String, rowsPerRange: Int64,
                      resumed: Set<String> = []) throws -> (report: CoreDataStoreCheck.Report, steps: [(String, CoreDataStoreCheck.Report)]) {
        var steps: [(String, CoreDataStoreCheck.Report)] = []
        let report = try CoreDataStoreCheck.check(database, model: model, file: file, part: .rows, resumed: resumed,
                                                  stepDone: { steps.append(($0, $1)) }, rowsPerRange: rowsPerRange).report
        return (report, steps)
    }

    @Test("a part resumed after any of its steps, leaving out those done, makes with them the report of one run; a join table's pass in ranges finds what it finds whole")
    func resumedAfterEachStep() throws {
        let folder = try TemporaryFolder()
        // Dangling to-ones into ZFOLDER, join rows into ZTAG that point nowhere, and join rows
        // whose item key lies below every item's, above every item's, or is missing.
        let (files, writer) = try StoreCheckInJobTests.demoStore(in: folder, dangling: true)
        try writer.execute("""
            INSERT INTO Z_2TAGS (Z_2ITEMS, Z_5TAGS) VALUES (-5, 1), (1000000000000, 1), (NULL, 2);
            UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Item';
            """)
        writer.close()
        let database = try Database(path: files.old.path, mode: .readOnly)
        let file = files.old.path
        let model = try #require(try CoreDataModel.read(database, schema: "main", file: file))

        let whole = try Self.steps(database, model: model, file: file, rowsPerRange: CoreDataStoreCheck.joinRowsPerRange)
        let ranged = try Self.steps(database, model: model, file: file, rowsPerRange: 500)
        #expect(whole.report.violations.contains { $0.hasPrefix("Z_2TAGS.Z_2ITEMS: 3 rows point at no row of Item") }, "\(whole.report.violations)")
        #expect(whole.report.violations.contains { $0.hasPrefix("Z_2TAGS.Z_5TAGS: ") }, "\(whole.report.violations)")
        #expect(whole.report.violations.count >= 4, "\(whole.report.violations)")
        #expect(ranged.report.violations == whole.report.violations && ranged.report.checked == whole.report.checked)
        // The demo's 3,800 join rows in ranges of about 500: the item side's pass ends in its
        // first range, which holds the key below every item's, and no range of it is a step done.
        #expect(whole.steps.map(\.0).allSatisfy { !$0.contains("@") })
        #expect(!ranged.steps.contains { $0.0.hasPrefix("J:Z_2TAGS.Z_2ITEMS@") })
        #expect(Set(ranged.steps.map(\.0)).isSuperset(of: ["T:ZITEM", "T:ZFOLDER", "J:Z_2TAGS.Z_2ITEMS"]), "\(ranged.steps.map(\.0))")
        try Self.resumesAfterEachStep(ranged, database, model: model, file: file)

        // Without the rows that point nowhere, every range is clean and a step of its own.
        let clean = try Database(path: files.old.path, mode: .readWrite)
        try clean.execute("DELETE FROM Z_2TAGS WHERE Z_2ITEMS NOT IN (SELECT Z_PK FROM ZITEM) OR Z_2ITEMS IS NULL")
        clean.close()
        let cleanRanged = try Self.steps(database, model: model, file: file, rowsPerRange: 500)
        let cleanRanges = cleanRanged.steps.map(\.0).filter { $0.hasPrefix("J:Z_2TAGS.Z_2ITEMS@") }
        #expect(cleanRanges.count >= 6 && cleanRanges.first == "J:Z_2TAGS.Z_2ITEMS@\(Int64.min)", "\(cleanRanges)")

        try Self.resumesAfterEachStep(cleanRanged, database, model: model, file: file)
    }

    /// `run`'s part resumed after each of its steps, in ranges of 500 join rows: the steps done
    /// before and the attempt after make the report of one run, and the attempt the steps left.
    static func resumesAfterEachStep(_ run: (report: CoreDataStoreCheck.Report, steps: [(String, CoreDataStoreCheck.Report)]),
                                     _ database: Database, model: CoreDataModel, file: String) throws {
        for done in 0...run.steps.count {
            let earlier = run.steps.prefix(done).reduce(CoreDataStoreCheck.Report(violations: [], checked: 0, unchecked: [])) {
                $0.merged(with: $1.1)
            }
            let attempt = try steps(database, model: model, file: file, rowsPerRange: 500, resumed: Set(run.steps.prefix(done).map(\.0)))
            let both = earlier.merged(with: attempt.report)
            #expect(both.violations.sorted() == run.report.violations.sorted(), "resumed after \(done) steps")
            #expect(both.checked == run.report.checked && both.notes.sorted() == run.report.notes.sorted(), "resumed after \(done) steps")
            #expect(attempt.steps.map(\.0) == run.steps.dropFirst(done).map(\.0), "resumed after \(done) steps")
        }
    }

    @Test("a join table's key ranges hold every 64-bit key once, in pieces of the table's span, and are one range where the join table is small")
    func keyRanges() throws {
        let folder = try TemporaryFolder()
        let (files, writer) = try StoreCheckInJobTests.demoStore(in: folder)
        let rows = try #require(try writer.scalar("SELECT max(rowid) FROM Z_2TAGS").integer)
        let (low, high) = try { let row = try writer.rows("SELECT min(Z_PK), max(Z_PK) FROM ZITEM")[0]; return (row[0].integer!, row[1].integer!) }()
        for perRange: Int64 in [1, 7, 500, rows - 1] {
            let ranges = try CoreDataStoreCheck.keyRanges(of: "ZITEM", forRowsOf: "Z_2TAGS", rowsPerRange: perRange, database: writer)
            #expect(ranges.count == Int(min(rows / perRange + 1, high - low + 1)), "\(perRange) rows a range")
            #expect(ranges.first?.first == .min && ranges.last?.last == .max)
            #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.last + 1 == $1.first && $0.first <= $0.last })
            // Each but the outer two spans as many keys; every item key falls in one.
            let widths = Set(ranges.dropFirst().dropLast().map { $0.last - $0.first })
            #expect(widths.count <= 1)
            #expect(ranges.filter { $0.first <= low && low <= $0.last }.count == 1 && ranges.filter { $0.first <= high && high <= $0.last }.count == 1)
        }
        for perRange: Int64 in [rows, rows * 2, 0] {
            #expect(try CoreDataStoreCheck.keyRanges(of: "ZITEM", forRowsOf: "Z_2TAGS", rowsPerRange: perRange, database: writer).count == 1)
        }
        try writer.execute("DELETE FROM ZITEM")
        #expect(try CoreDataStoreCheck.keyRanges(of: "ZITEM", forRowsOf: "Z_2TAGS", rowsPerRange: 1, database: writer).count == 1)
        writer.close()
        _ = files
    }
}
