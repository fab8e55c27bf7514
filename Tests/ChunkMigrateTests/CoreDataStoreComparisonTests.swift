import Foundation
import Testing
@testable import ChunkMigrate

/// Two stores of one model compared by content, keys aside (``CoreDataStoreComparison``).
@Suite("Core Data: two stores compared by content")
struct CoreDataStoreComparisonTests {
    static let model = """
        <entity name="Author"><attribute name="name" attributeType="String"/><relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="author" inverseEntity="Book"/><uniquenessConstraints><uniquenessConstraint><constraint value="name"/></uniquenessConstraint></uniquenessConstraints></entity>
        <entity name="Book"><attribute name="isbn" optional="YES" attributeType="String"/><attribute name="pages" optional="YES" attributeType="Integer 32"/><relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/><relationship name="tags" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Tag" inverseName="books" inverseEntity="Tag"/></entity>
        <entity name="Tag"><attribute name="label" optional="YES" attributeType="String"/><relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="tags" inverseEntity="Book"/></entity>
        """

    /// A store of the model with the same content under the keys `offset` moves: Ann and Bob,
    /// three books, two tags named alike.
    static func store(
        _ folder: TemporaryFolder, _ name: String, offset: Int64,
        edits: (_ join: String, _ book: String, _ tag: String) -> String = { _, _, _ in "" }
    ) throws -> URL {
        let model = try CoreDataTesting.model(Self.model)
        let layout = try CoreDataLayout(model: model)
        let join = try #require(layout.joinTables.first)
        let tagSide = try #require(join.sides.first { $0.entity == "Tag" }),
            bookSide = try #require(join.sides.first { $0.entity == "Book" })
        func n(_ entity: String) -> Int64 { layout.entity(named: entity)!.number }
        let k = offset
        return try CoreDataTesting.store(
            model, at: folder.path(name), uuid: UUID().uuidString,
            rows: """
                INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (\(k + 1), \(n("Author")), 1, 'Ann'), (\(k + 2), \(n("Author")), 1, 'Bob');
                INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZISBN, ZPAGES, ZAUTHOR) VALUES (\(k + 10), \(n("Book")), 1, '111', 100, \(k + 1)),
                    (\(k + 11), \(n("Book")), 1, '222', 200, \(k + 1)), (\(k + 12), \(n("Book")), 1, '333', NULL, \(k + 2));
                INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZLABEL) VALUES (\(k + 20), \(n("Tag")), 1, 'same'), (\(k + 21), \(n("Tag")), 1, 'same');
                INSERT INTO \(join.name) (\(tagSide.column), \(bookSide.column)) VALUES (\(k + 10), \(k + 20)), (\(k + 11), \(k + 20)), (\(k + 12), \(k + 21));
                \(edits(join.name, tagSide.column, bookSide.column))
                """)
    }

    @Test(
        "the same content under other keys is equal; identities found: a uniqueness constraint, one distinct attribute, all attributes where none is distinct"
    )
    func sameContentOtherKeys() throws {
        let folder = try TemporaryFolder()
        let first = try Self.store(folder, "a.sqlite", offset: 0), second = try Self.store(folder, "b.sqlite", offset: 1000)
        let report = try CoreDataStoreComparison.run(first, second)
        #expect(report.isEqual, "\(report.differences.map(\.line))")
        #expect(report.identities == ["Author": "name", "Book": "isbn", "Tag": "all attributes"])
        #expect(report.rows == 7)
    }

    @Test(
        "a changed value, a missing row, a row in the second only, a to-one pointing elsewhere and a many-to-many's other targets are each reported, named by entity, row and property"
    )
    func differencesNamed() throws {
        let folder = try TemporaryFolder()
        let first = try Self.store(folder, "a.sqlite", offset: 0)
        let second = try Self.store(folder, "b.sqlite", offset: 500) { join, book, tag in
            """
            UPDATE ZBOOK SET ZPAGES = 201 WHERE ZISBN = '222';
            UPDATE ZBOOK SET ZAUTHOR = 501 WHERE ZISBN = '333';
            DELETE FROM ZBOOK WHERE ZISBN = '111';
            INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (600, 1, 1, 'Cy');
            INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZLABEL) VALUES (530, 3, 1, 'new');
            INSERT INTO \(join) (\(book), \(tag)) VALUES (511, 530);
            """
        }
        let report = try CoreDataStoreComparison.run(first, second)
        let lines = report.differences.map(\.line)
        #expect(lines.contains("Book isbn = '111': in the first store only"), "\(lines)")
        #expect(lines.contains("Author name = 'Cy': in the second store only"), "\(lines)")
        #expect(lines.contains("Book isbn = '222': pages is 200 in the first store, 201 in the second"), "\(lines)")
        #expect(
            lines.contains("Book isbn = '333': author points at Author name = 'Bob' in the first store, Author name = 'Ann' in the second"),
            "\(lines)")
        // A many-to-many from one side only: Book 222's tags, the new tag among them.
        #expect(
            lines.contains(
                "Book isbn = '222': tags points at Tag label = 'same' in the first store, Tag label = 'new'; Tag label = 'same' in the second"
            ), "\(lines)")
        #expect(lines.contains("Tag label = 'new': in the second store only"), "\(lines)")
        #expect(
            report.differences.filter { $0.kind == .relationship }.map { "\($0.entity).\($0.property ?? "")" }.sorted() == [
                "Book.author", "Book.tags",
            ], "\(lines)")
        #expect(report.differences.count == 6, "\(lines)")

        // A limit of one difference an entity: the rest counted.
        let limited = try CoreDataStoreComparison.run(first, second, limit: 1)
        #expect(limited.differences.count == 3 && limited.more == ["Book": 3], "\(limited.differences.map(\.line)) \(limited.more)")
    }

    @Test("an identity given replaces the one found; one naming what the model has not is refused naming it")
    func identityGiven() throws {
        let folder = try TemporaryFolder()
        let first = try Self.store(folder, "a.sqlite", offset: 0)
        let second = try Self.store(folder, "b.sqlite", offset: 7) { _, _, _ in "UPDATE ZBOOK SET ZISBN = '999' WHERE ZISBN = '111'" }
        // By isbn, the book is another; by pages, the same book with another isbn.
        let byPages = try CoreDataStoreComparison.run(first, second, identities: ["Book": ["pages"]])
        #expect(
            byPages.differences.map(\.line) == ["Book pages = 100: isbn is '111' in the first store, '999' in the second"],
            "\(byPages.differences.map(\.line))")
        let unknown = #expect(throws: MigrationError.self) {
            try CoreDataStoreComparison.run(first, second, identities: ["Book": ["isnb"]])
        }
        #expect(unknown?.message == "--identify Book: entity Book has no attribute isnb", "\(String(describing: unknown))")
    }

    @Test(
        "ProgressiveMigration: the 2 -> 3 step chunkmigrate runs equals Core Data's own migration by content (Core Data gave the posts new keys), but for the 2 posts and 4 sections the app added later",
        .enabled(
            if: CoreDataStoreTests.fixture("ProgressiveMigration/CoreDataMigration_Example_3.sqlite") != nil,
            "shared/fixtures/coredata is absent"))
    func progressiveMigrationOracle() throws {
        let folder = try TemporaryFolder()
        let bundle = try CoreDataModelBundle.read(contentsOf: try #require(CoreDataStoreTests.fixture(CoreDataStepTests.progressive)))
            .ordered(CoreDataStepTests.progressiveOrder)
        let source = try CoreDataModelTests.copy("ProgressiveMigration/CoreDataMigration_Example_2.sqlite", into: folder)
        let coreData = try CoreDataModelTests.copy("ProgressiveMigration/CoreDataMigration_Example_3.sqlite", into: folder)
        let destination = try CoreDataStepTests.emptyStore(bundle, version: "CoreDataMigration_Example 3", at: folder.path("ours.sqlite"))
        var options = InferenceOptions(modelBundle: bundle)
        options.steps = [CoreDataStepTests.sections]
        try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, options: options)
        let report = try CoreDataStoreComparison.run(destination, coreData)
        #expect(report.differences.allSatisfy { $0.kind == .extra }, "\(report.differences.map(\.line))")
        #expect(
            report.differences.filter { $0.entity == "Post" }.count == 2 && report.differences.filter { $0.entity == "Section" }.count == 4,
            "\(report.differences.map(\.line))")
        #expect(report.rows == 20)
    }
}
