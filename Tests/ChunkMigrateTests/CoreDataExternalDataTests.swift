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
        let source = try CoreDataTesting.store(try CoreDataTesting.model(old), at: folder.path("Photos.sqlite"),
                                               uuid: "D0000000-0000-0000-0000-000000000001", rows: """
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
        let destination = try CoreDataTesting.store(try CoreDataTesting.model(new), at: folder.path("Migrated.sqlite"),
                                                    uuid: "D0000000-0000-0000-0000-000000000002")
        return (source, destination)
    }

    @Test("the files the rows name are carried over whole, paused after every batch; a value no longer external is read into the row, one newly external is marked inline")
    func filesCarried() throws {
        let folder = try TemporaryFolder()
        let (source, destination) = try Self.stores(in: folder)
        let plan = try MigrationPlan.infer(source: source, destination: destination).plan
        #expect(plan.coreData?.externalData == [.init(attribute: "Photo.image", table: "ZPHOTO", column: "ZIMAGE")])
        _ = try MigrationJob.start(plan: plan, source: source, destination: destination, journal: folder.path("journal"),
                                   options: MigrationOptions(batchSize: 1), logger: quietLogger)
        while try MigrationJob.resume(at: folder.path("journal"), options: MigrationOptions(batchSize: 1), logger: quietLogger)
            .runBlocking(for: .zero) == .paused {}

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

    @Test("a file the rows name that is missing stops the job naming the row and the file; once it is back, the job resumes to the end")
    func missingFile() throws {
        let folder = try TemporaryFolder()
        let (source, destination) = try Self.stores(in: folder)
        let support = CoreDataFinishing.externalDataFolder(of: source.path)
        try FileManager.default.moveItem(at: support.appendingPathComponent(Self.files[1]), to: folder.path("aside"))
        let plan = try MigrationPlan.infer(source: source, destination: destination).plan
        let job = try MigrationJob.start(plan: plan, source: source, destination: destination, journal: folder.path("journal"),
                                         options: MigrationOptions(batchSize: 2), logger: quietLogger)
        let error = #expect(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error?.sourceKey == 5 && error?.entity == "Photo" && error?.file?.hasSuffix(Self.files[1]) == true
                && error?.message.contains("Photo.image of the row with key 5 refers to the external file \(Self.files[1]), which is missing") == true,
                "\(String(describing: error))")
        try FileManager.default.moveItem(at: folder.path("aside"), to: support.appendingPathComponent(Self.files[1]))
        #expect(try MigrationJob.resume(at: folder.path("journal"), logger: quietLogger).runBlocking() == .complete)
        #expect(CoreDataTesting.externalFiles(of: destination) == Array(Self.files[0...2]))

        // check-coredata names a reference whose file is gone.
        try FileManager.default.removeItem(at: CoreDataFinishing.externalDataFolder(of: destination.path).appendingPathComponent(Self.files[2]))
        let violations = try CoreDataStoreCheck.run(store: destination).violations
        #expect(violations.contains { $0.hasPrefix("ZPHOTO.ZIMAGE: 1 values of Photo.image name a file missing from") && $0.hasSuffix("the first \(Self.files[2]) (Z_PK 8)") },
                "\(violations)")
    }

    @Test("with keys allocated a missing file names the row by its destination key; a value no longer external whose file is missing stops the copy naming the attribute and the source key")
    func missingFileNamesTheRow() throws {
        let folder = try TemporaryFolder()
        let (source, destination) = try Self.stores(in: folder)
        let support = CoreDataFinishing.externalDataFolder(of: source.path)
        try FileManager.default.removeItem(at: support.appendingPathComponent(Self.files[1]))
        // Source keys 1, 2, 3, 5, 8 become 1 to 5: the row of source key 5 is destination key 4.
        let plan = try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(keys: .allocate)).plan
        let job = try MigrationJob.start(plan: plan, source: source, destination: destination, journal: folder.path("journal"),
                                         logger: quietLogger)
        let error = #expect(throws: MigrationError.self) { try job.runBlocking() }
        #expect(error?.message.contains("Photo.image of the row with destination key 4 refers to the external file \(Self.files[1])") == true
                && error?.sourceKey == nil, "\(String(describing: error))")

        let other = try TemporaryFolder()
        let (source2, destination2) = try Self.stores(in: other)
        try FileManager.default.removeItem(at: CoreDataFinishing.externalDataFolder(of: source2.path).appendingPathComponent(Self.files[4]))
        let job2 = try MigrationJob.start(plan: try MigrationPlan.infer(source: source2, destination: destination2).plan, source: source2,
                                          destination: destination2, journal: other.path("journal"), logger: quietLogger)
        let converted = #expect(throws: MigrationError.self) { try job2.runBlocking() }
        #expect(converted?.message.contains("Photo.thumb of the row with key 8 refers to the external file \(Self.files[4]), which is missing") == true
                && converted?.sourceKey == 8 && converted?.entity == "Photo", "\(String(describing: converted))")
    }
}
