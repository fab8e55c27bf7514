import Foundation
import Testing
@testable import ChunkMigrate

/// Binary attributes that keep large values in files beside the store.
@Suite("Core Data external binary data")
struct CoreDataExternalDataTests {
    /// Model N: image and thumb may be kept in files, raw may not. Model N+1: thumb may no
    /// longer, raw now may.
    static let old = """
        <entity name="Photo">
            <attribute name="image" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
            <attribute name="raw" optional="YES" attributeType="Binary"/>
            <attribute name="thumb" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
        </entity>
        """
    static let new = """
        <entity name="Photo">
            <attribute name="image" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
            <attribute name="raw" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
            <attribute name="thumb" optional="YES" attributeType="Binary"/>
        </entity>
        """
    static let files = (1...5).map { "0000000\($0)-AAAA-BBBB-CCCC-DDDDEEEEFFFF" }

    /// A value kept in the file `name`, as Core Data writes it in the row.
    static func reference(_ name: String) -> String { "x'02" + name.utf8.map { String(format: "%02x", $0) }.joined() + "00'" }

    static func stores(in folder: TemporaryFolder) throws -> (URL, URL) {
        let source = try CoreDataTesting.store(
            try CoreDataTesting.model(old), at: folder.path("Photos.sqlite"),
            uuid: "D0000000-0000-0000-0000-000000000001",
            rows: """
                INSERT INTO ZPHOTO (Z_PK, Z_ENT, Z_OPT, ZIMAGE, ZTHUMB, ZRAW) VALUES
                    (1, 1, 1, \(reference(files[0])), \(reference(files[3])), x'aabb'),
                    (2, 1, 1, x'01cafe', x'01beef', NULL),
                    (3, 1, 1, NULL, NULL, x''),
                    (5, 1, 1, \(reference(files[1])), NULL, NULL),
                    (8, 1, 1, \(reference(files[2])), \(reference(files[4])), NULL);
                """)
        let support = CoreDataFinishing.externalDataFolder(of: source.path)
        try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
        for (index, name) in files.enumerated() {
            try Data(repeating: UInt8(index + 1), count: 200_000 + index).write(to: support.appendingPathComponent(name))
        }
        let destination = try CoreDataTesting.store(
            try CoreDataTesting.model(new), at: folder.path("Migrated.sqlite"),
            uuid: "D0000000-0000-0000-0000-000000000002")
        return (source, destination)
    }

    @Test(
        "the files the rows name are carried over whole, paused after every batch; a value no longer external is read into the row, one newly external is marked inline"
    )
    func filesCarried() throws {
        let folder = try TemporaryFolder()
        let (source, destination) = try Self.stores(in: folder)
        let plan = try MigrationPlan.infer(source: source, destination: destination).plan
        #expect(plan.coreData?.externalData == [.init(attribute: "Photo.image", table: "ZPHOTO", column: "ZIMAGE")])
        _ = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 1), logger: quietLogger)
        while try MigrationJob.resume(at: folder.path("journal"), options: MigrationOptions(batchSize: 1), logger: quietLogger)
            .runBlocking(for: .zero) == .paused
        {}

        let copied = CoreDataFinishing.externalDataFolder(of: destination.path)
        #expect(CoreDataTesting.externalFiles(of: destination) == Array(Self.files[0...2]))
        for (index, name) in Self.files[0...2].enumerated() {
            #expect(try Data(contentsOf: copied.appendingPathComponent(name)) == Data(repeating: UInt8(index + 1), count: 200_000 + index))
        }
        let database = try Database(path: destination.path, mode: .source)
        let rows = try database.rows("SELECT Z_PK, ZIMAGE, length(ZTHUMB), substr(ZTHUMB, 1, 1), ZRAW FROM ZPHOTO ORDER BY Z_PK")
        #expect(rows[0][1] == (try Database(path: source.path, mode: .source).scalar("SELECT ZIMAGE FROM ZPHOTO WHERE Z_PK = 1")))
        #expect(rows[0][2] == .integer(200_003) && rows[0][3] == .blob([4]))
        #expect(rows[1][1] == .blob([1, 0xca, 0xfe]) && rows[1][2] == .integer(2))
        #expect(rows[0][4] == .blob([1, 0xaa, 0xbb]) && rows[2][4] == .blob([1]) && rows[1][4] == .null)
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
    }

    @Test(
        "a file the rows name that the source does not have is carried as a reference, as Core Data carries it: the job completes, its check says the source had it; check-coredata alone names it"
    )
    func missingFile() throws {
        let folder = try TemporaryFolder()
        let (source, destination) = try Self.stores(in: folder)
        let support = CoreDataFinishing.externalDataFolder(of: source.path)
        try FileManager.default.removeItem(at: support.appendingPathComponent(Self.files[1]))
        let plan = try MigrationPlan.infer(source: source, destination: destination).plan
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 2), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        #expect(CoreDataTesting.externalFiles(of: destination) == [Self.files[0], Self.files[2]])
        let reference = "SELECT ZIMAGE FROM ZPHOTO WHERE Z_PK = 5"
        #expect(
            try Database(path: destination.path, mode: .source).scalar(reference)
                == (try Database(path: source.path, mode: .source).scalar(reference)))
        let report = try #require(job.storeCheck)
        #expect(report.isValid, "\(report.violations)")
        #expect(
            report.carried.count == 1 && report.carried[0].hasPrefix("ZPHOTO.ZIMAGE: 1 values of Photo.image name a file missing from")
                && report.carried[0].contains("the first \(Self.files[1]) (Z_PK 5)"), "\(report.carried)")

        // A file the source has but the migrated store lost is no anomaly of the source.
        try FileManager.default.removeItem(
            at: CoreDataFinishing.externalDataFolder(of: destination.path).appendingPathComponent(Self.files[2]))
        let again = try CoreDataStoreCheck.run(migrated: destination, source: source, plan: plan)
        #expect(
            again.violations.count == 1 && again.violations[0].hasPrefix("ZPHOTO.ZIMAGE: 2 values of Photo.image name a file missing from"),
            "\(again.violations)")
        let alone = try CoreDataStoreCheck.run(store: destination).violations
        #expect(
            alone.contains {
                $0.hasPrefix("ZPHOTO.ZIMAGE: 2 values of Photo.image name a file missing from")
                    && $0.hasSuffix("the first \(Self.files[1]) (Z_PK 5)")
            },
            "\(alone)")
    }

    @Test(
        "with keys allocated a missing file is carried all the same; a value no longer kept in files whose file is missing is read as no value"
    )
    func missingFileKeysAllocated() throws {
        let folder = try TemporaryFolder()
        let (source, destination) = try Self.stores(in: folder)
        let support = CoreDataFinishing.externalDataFolder(of: source.path)
        try FileManager.default.removeItem(at: support.appendingPathComponent(Self.files[1]))
        try FileManager.default.removeItem(at: support.appendingPathComponent(Self.files[4]))
        // Source keys 1, 2, 3, 5, 8 become 1 to 5: the row of source key 5 is destination key 4.
        let plan = try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(keys: .allocate)).plan
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        let report = try #require(job.storeCheck)
        #expect(
            report.isValid && report.carried.count == 1 && report.carried[0].contains("the first \(Self.files[1]) (Z_PK 4)"),
            "\(report.violations) \(report.carried)")
        let rows = try Database(path: destination.path, mode: .source).rows("SELECT Z_PK, ZTHUMB IS NULL FROM ZPHOTO ORDER BY Z_PK")
        // Source key 8's thumb named the missing file: no value; source key 1's was read from its file.
        #expect(rows.map { $0[1] } == [.integer(0), .integer(0), .integer(1), .integer(1), .integer(1)], "\(rows)")
    }
}
