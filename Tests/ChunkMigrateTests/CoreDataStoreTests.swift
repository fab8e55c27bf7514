import Foundation
import MigrationJournal
import Testing
@testable import ChunkMigrate

/// Real Core Data stores, written by Apple's framework on devices, as sources. They live in the
/// workspace's shared fixtures, outside the repository; the tests are skipped when they are absent.
@Suite("Core Data stores")
struct CoreDataStoreTests {
    static let fixtures: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/fixtures/coredata")

    static func fixture(_ name: String) -> URL? {
        let url = fixtures.appendingPathComponent(name)
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    /// A copy of a fixture in the test's folder: a WAL store gets sidecar files even when only read.
    static func copy(_ name: String, into folder: TemporaryFolder) throws -> URL {
        let source = try #require(fixture(name), "fixture \(name) not found under \(fixtures.path)")
        let copy = folder.path((name as NSString).lastPathComponent)
        try FileManager.default.copyItem(at: source, to: copy)
        // A WAL store's rows may live in its -wal file only: the three files are the store.
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: source.path + suffix) {
            try FileManager.default.copyItem(atPath: source.path + suffix, toPath: copy.path + suffix)
        }
        return copy
    }

    @Test(
        "notes and folders of NoteStore.sqlite: sub-entities filtered by Z_ENT, the folder relationship through the ID map",
        .enabled(if: fixture("NoteStore.sqlite") != nil, "shared/fixtures/coredata/NoteStore.sqlite is absent"))
    func noteStore() throws {
        let folder = try TemporaryFolder()
        let source = try Self.copy("NoteStore.sqlite", into: folder)
        let before = try sha256(of: source)
        let entities = try Database(path: source.path, mode: .source).rows("SELECT Z_NAME, Z_ENT FROM Z_PRIMARYKEY")
        let number = Dictionary(uniqueKeysWithValues: entities.compactMap { row in row[0].text.map { ($0, row[1].integer ?? 0) } })
        let folderEntity = try #require(number["ICFolder"])
        let noteEntity = try #require(number["ICNote"])
        let plan = MigrationPlan(entities: [
            EntityMapping(
                name: "Note", source: .init(table: "ZICCLOUDSYNCINGOBJECT", key: "Z_PK", where: "Z_ENT = \(noteEntity)"),
                destination: .init(table: "note", key: "id"), columns: ["title": "ZTITLE1"],
                relationships: ["folder_id": .init(from: "ZFOLDER", to: "Folder", missing: .null)]),
            EntityMapping(
                name: "Folder", source: .init(table: "ZICCLOUDSYNCINGOBJECT", key: "Z_PK", where: "Z_ENT = \(folderEntity)"),
                destination: .init(table: "folder", key: "id"), columns: ["title": "ZTITLE2"]),
        ])
        let destination = folder.path("notes.sqlite")
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            schema: """
                CREATE TABLE folder (id INTEGER PRIMARY KEY, title TEXT);
                CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT, folder_id INTEGER REFERENCES folder(id));
                """,
            options: MigrationOptions(batchSize: 2), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)

        let sourceNotes = try Database(path: source.path, mode: .source).rows(
            """
            SELECT n.ZTITLE1, f.ZTITLE2 FROM ZICCLOUDSYNCINGOBJECT n
            LEFT JOIN ZICCLOUDSYNCINGOBJECT f ON f.Z_PK = n.ZFOLDER AND f.Z_ENT = \(folderEntity)
            WHERE n.Z_ENT = \(noteEntity) ORDER BY n.Z_PK
            """)
        let migrated = try Database(path: destination.path, mode: .readOnly).rows(
            """
            SELECT n.title, f.title FROM note n LEFT JOIN folder f ON f.id = n.folder_id ORDER BY n.id
            """)
        #expect(sourceNotes.count >= 5)
        #expect(migrated == sourceNotes)
        #expect(
            try scalar("SELECT count(*) FROM folder", on: destination).integer
                == (try Database(path: source.path, mode: .source).scalar(
                    "SELECT count(*) FROM ZICCLOUDSYNCINGOBJECT WHERE Z_ENT = \(folderEntity)"
                ).integer))
        #expect(try sha256(of: source) == before)
        #expect(!FileManager.default.fileExists(atPath: source.path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: source.path + "-shm"))
    }

    @Test(
        "books and users of the objc.io BookMigration store (model 1), rollback-journal Core Data",
        .enabled(if: fixture("BookMigration/Model1.sqlite") != nil, "shared/fixtures/coredata/BookMigration is absent"))
    func bookMigration() throws {
        let folder = try TemporaryFolder()
        let source = try Self.copy("BookMigration/Model1.sqlite", into: folder)
        let plan = MigrationPlan(entities: [
            EntityMapping(
                name: "Book", source: .init(table: "ZBOOK", key: "Z_PK"), destination: .init(table: "book"),
                columns: ["title": "ZTITLE", "author": "ZAUTHORNAME"],
                relationships: ["user_id": .init(from: "ZUSER", to: "User")]),
            EntityMapping(
                name: "User", source: .init(table: "ZUSER", key: "Z_PK"), destination: .init(table: "user"),
                keys: .preserve, columns: ["user_number": "ZUSERID"]),
        ])
        let destination = folder.path("books.sqlite")
        let job = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            schema: "CREATE TABLE user (user_number INTEGER); CREATE TABLE book (title TEXT, author TEXT, user_id INTEGER);",
            options: MigrationOptions(batchSize: 3), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        let expected = try Database(path: source.path, mode: .source).rows(
            "SELECT ZTITLE, ZAUTHORNAME, ZUSER FROM ZBOOK ORDER BY Z_PK")
        let migrated = try Database(path: destination.path, mode: .readOnly).rows(
            "SELECT title, author, user_id FROM book ORDER BY rowid")
        #expect(expected.count == 4)
        #expect(migrated == expected)  // users keep their keys (preserve)
        #expect(try scalar("SELECT count(*) FROM user", on: destination) == .integer(3))
    }
}
