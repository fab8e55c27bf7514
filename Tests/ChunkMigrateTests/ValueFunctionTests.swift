import Foundation
import Testing
@testable import ChunkMigrate

/// The built-in functions for Core Data's values: property lists, keyed archives, timestamps and
/// UUIDs, through a job's column expressions.
@Suite("Value functions")
struct ValueFunctionTests {
    static func hex(_ data: Data) -> String { "x'" + data.map { String(format: "%02x", $0) }.joined() + "'" }

    static func plist(_ value: [String: Any], format: PropertyListSerialization.PropertyListFormat = .binary) throws -> String {
        hex(try PropertyListSerialization.data(fromPropertyList: value, format: format, options: 0))
    }

    /// Migrates `rows` (SQL values for the source's `meta` blob) with `columns`, and returns the
    /// destination's rows in key order.
    static func migrate(_ rows: [String], columns: [String: String], destinationColumns: String) throws -> [[SQLiteValue]] {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute(
            "CREATE TABLE item (id INTEGER PRIMARY KEY, meta BLOB, created REAL, uuid BLOB);"
                + rows.enumerated().map { "INSERT INTO item VALUES (\($0.offset + 1), \($0.element));" }.joined(), on: source)
        let destination = folder.path("new.sqlite")
        let plan = MigrationPlan(entities: [
            EntityMapping(
                name: "Item", source: .init(table: "item", key: "id"), destination: .init(table: "item", key: "id"),
                keys: .preserve, columns: columns)
        ])
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, \(destinationColumns));",
            options: MigrationOptions(batchSize: 2), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        let names = columns.keys.sorted().joined(separator: ", ")
        return try Database(path: destination.path, mode: .readOnly).rows("SELECT id, \(names) FROM item ORDER BY id")
    }

    @Test(
        "plist_value reads key paths of binary and XML property lists: text, integers, booleans, reals, dates, nested dictionaries and arrays; absent keys are NULL"
    )
    func plistValues() throws {
        let date = Date(timeIntervalSinceReferenceDate: 700_000_000.5)
        let first = try Self.plist([
            "extendedName": "Ada Lovelace", "visits": 12, "pinned": true, "score": 0.25,
            "seen": date, "address": ["city": "London", "lines": ["1 Main St", "Flat 2"]],
        ])
        let second = try Self.plist(["extendedName": "Bob", "pinned": false], format: .xml)
        let rows = try Self.migrate(
            ["\(first), 0, NULL", "\(second), 0, NULL", "NULL, 0, NULL"],
            columns: [
                "a_name": "plist_value(meta, 'extendedName')", "b_visits": "plist_value(meta, 'visits')",
                "c_pinned": "plist_value(meta, 'pinned')", "d_score": "plist_value(meta, 'score')",
                "e_seen": "plist_value(meta, 'seen')", "f_city": "plist_value(meta, 'address.city')",
                "g_line": "plist_value(meta, 'address.lines.1')", "h_plist": "is_plist(meta)",
            ], destinationColumns: "a_name, b_visits, c_pinned, d_score, e_seen, f_city, g_line, h_plist")
        #expect(
            rows == [
                [
                    .integer(1), .text("Ada Lovelace"), .integer(12), .integer(1), .real(0.25), .real(700_000_000.5), .text("London"),
                    .text("Flat 2"), .integer(1),
                ],
                [.integer(2), .text("Bob"), .null, .integer(0), .null, .null, .null, .null, .integer(1)],
                [.integer(3), .null, .null, .null, .null, .null, .null, .null, .integer(0)],
            ])
    }

    @Test(
        "unarchive decodes a transformable attribute's keyed archive; Core Data timestamps convert to and from Unix time; UUID blobs to text and back",
        .enabled(if: CoreDataStoreTests.fixture("BookMigration/Model1.sqlite") != nil, "shared/fixtures/coredata is absent"))
    func archivesTimestampsUUIDs() throws {
        let folder = try TemporaryFolder()
        let books = try CoreDataStoreTests.copy("BookMigration/Model1.sqlite", into: folder)
        // The fixture's fileURL attribute is an NSString archived by NSKeyedArchiver on a device.
        let archived = try #require(
            try Database(path: books.path, mode: .readOnly).rows("SELECT ZFILEURL FROM ZBOOK WHERE Z_PK = 9").first?[0])
        guard case let .blob(bytes) = archived else { Issue.record("no blob"); return }
        let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let uuidBytes = withUnsafeBytes(of: uuid.uuid) { Data($0) }
        let rows = try Self.migrate(
            ["\(Self.hex(Data(bytes))), 700000000.5, \(Self.hex(uuidBytes))"],
            columns: [
                "a_file": "unarchive(meta)", "b_unix": "coredata_to_unix(created)", "c_back": "unix_to_coredata(coredata_to_unix(created))",
                "d_uuid": "uuid_text(uuid)", "e_blob": "uuid_blob(uuid_text(uuid)) = uuid",
            ], destinationColumns: "a_file, b_unix, c_back, d_uuid, e_blob")
        #expect(
            rows == [
                [
                    .integer(1), .text("The Trial.file"), .real(1_678_307_200.5), .real(700_000_000.5),
                    .text("E621E1F8-C36C-495A-93FC-0C247A3E6E5F"), .integer(1),
                ]
            ])
        #expect(Date(timeIntervalSince1970: 1_678_307_200.5) == Date(timeIntervalSinceReferenceDate: 700_000_000.5))
    }

    @Test("a malformed key path is a plan error naming the plan path")
    func malformedKeyPath() throws {
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute("CREATE TABLE item (id INTEGER PRIMARY KEY, meta BLOB);", on: source)
        let plan = MigrationPlan(entities: [
            EntityMapping(
                name: "Item", source: .init(table: "item", key: "id"),
                destination: .init(table: "item", key: "id"), keys: .preserve,
                columns: ["k": "plist_value(meta, 'address..city')"])
        ])
        let error = try #require(throws: MigrationError.self) {
            try MigrationJob.start(
                plan: plan, source: source, destination: folder.path("new.sqlite"), journal: folder.path("journal"),
                schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, k);", logger: quietLogger)
        }
        #expect(
            error.code == .invalidPlan && error.message.hasPrefix("entities[0].columns.k: plist_value key path 'address..city'"), "\(error)"
        )
        #expect(PlanCheck.keyPathProblem(in: "plist_value(meta, 'address.city')") == nil)
    }

    @Test("a blob that is not a property list fails the batch naming the row, unless the plan guards with is_plist")
    func notAPlist() throws {
        let good = try Self.plist(["k": "v"])
        let folder = try TemporaryFolder()
        let source = folder.path("source.sqlite")
        try execute(
            "CREATE TABLE item (id INTEGER PRIMARY KEY, meta BLOB); INSERT INTO item VALUES (1, \(good)), (5, x'00010203'), (7, \(good));",
            on: source)
        func plan(_ expression: String) -> MigrationPlan {
            MigrationPlan(entities: [
                EntityMapping(
                    name: "Item", source: .init(table: "item", key: "id"),
                    destination: .init(table: "item", key: "id"), keys: .preserve,
                    columns: ["k": expression])
            ])
        }
        let failing = try MigrationJob.start(
            plan: plan("plist_value(meta, 'k')"), source: source, destination: folder.path("a.sqlite"),
            journal: folder.path("a"), schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, k);",
            logger: quietLogger)
        let error = try #require(throws: MigrationError.self) { try failing.runBlocking() }
        #expect(error.code == .batch && error.entity == "Item" && error.sourceKey == 5, "\(error)")
        #expect(error.message.contains("not a property list"))

        let guarded = try MigrationJob.start(
            plan: plan("CASE WHEN is_plist(meta) THEN plist_value(meta, 'k') END"), source: source,
            destination: folder.path("b.sqlite"), journal: folder.path("b"),
            schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, k);", logger: quietLogger)
        #expect(try guarded.runBlocking() == .complete)
        #expect(
            try Database(path: folder.path("b.sqlite").path, mode: .readOnly).rows("SELECT id, k FROM item ORDER BY id")
                == [[.integer(1), .text("v")], [.integer(5), .null], [.integer(7), .text("v")]])
    }
}
