import Foundation
import Testing

/// `Examples/BookMigration`: the objc.io custom migration from model 1 to model 3, run as the
/// example's README says, on the real model-1 store of the shared fixtures, checked the way the
/// example project's own tests check a migrated store.
@Suite("BookMigration example")
struct BookMigrationExampleTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let fixture = repository.deletingLastPathComponent().appendingPathComponent(
        "shared/fixtures/coredata/BookMigration/Model1.sqlite"
    ).path

    @Test(
        "model 1 to model 3: users kept, one Author per distinct name with all its books, every book with its author, one File per (book, user) with the book's fileURL",
        .enabled(if: FileManager.default.fileExists(atPath: fixture), "shared/fixtures/coredata/BookMigration is absent"),
        arguments: [nil, "before-start-commit:job:0", "before-commit:BookAuthors:2", "after-commit:Author:1"])
    func modelOneToThree(_ kill: String?) throws {
        try withTemporaryDirectory { directory in
            let source = directory + "/Model1.sqlite"
            try FileManager.default.copyItem(atPath: Self.fixture, toPath: source)
            let destination = directory + "/new.sqlite"
            let arguments = [
                "run", "--source", source, "--destination", destination,
                "--schema", Self.repository.appendingPathComponent("Examples/BookMigration/Model3.sql").path,
                "--plan", Self.repository.appendingPathComponent("Examples/BookMigration/plan.json").path,
                "--journal", directory + "/new.journal", "--batch-size", "1", "--quiet",
            ]
            if let kill {
                let killed = try chunkmigrate(arguments, environment: ["CHUNKMIGRATE_KILL_AT": kill])
                #expect(killed.killedBySignal, "\(killed)")
            }
            let run = try chunkmigrate(arguments)
            #expect(run.exitCode == 0, "\(run)")

            func rows(_ sql: String) throws -> [String] { try SQLiteShell.query(destination, sql) }
            // Users still exist, with their keys and ids.
            #expect(
                try rows("SELECT Z_PK, ZUSERID FROM ZUSER ORDER BY Z_PK")
                    == (try SQLiteShell.query(source, "SELECT Z_PK, ZUSERID FROM ZUSER ORDER BY Z_PK")))
            // One Author per distinct name, numbered in order of first appearance.
            #expect(
                try rows("SELECT Z_PK, Z_ENT, ZNAME FROM ZAUTHOR ORDER BY Z_PK")
                    == ["1,1,'Franz Kafka'", "2,1,'Witold Gombrowicz'", "3,1,'Thomas Bernhard'"])
            // Every book has its author, and each author all of their books.
            #expect(
                try rows(
                    """
                    SELECT b.ZTITLE, a.ZNAME FROM ZBOOK b JOIN Z_1BOOKS j ON j.Z_2BOOKS = b.Z_PK JOIN ZAUTHOR a ON a.Z_PK = j.Z_1AUTHORS
                    ORDER BY b.Z_PK
                    """) == (try SQLiteShell.query(source, "SELECT ZTITLE, ZAUTHORNAME FROM ZBOOK ORDER BY Z_PK")))
            #expect(try rows("SELECT count(*) FROM ZBOOK b WHERE NOT EXISTS (SELECT 1 FROM Z_1BOOKS j WHERE j.Z_2BOOKS = b.Z_PK)") == ["0"])
            // One File per (book, user), with the book's fileURL; every File has a book and a user.
            #expect(
                try rows("SELECT f.ZBOOK, f.ZUSER, hex(f.ZFILEURL) FROM ZFILE f ORDER BY f.ZBOOK")
                    == (try SQLiteShell.query(source, "SELECT Z_PK, ZUSER, hex(ZFILEURL) FROM ZBOOK WHERE ZUSER IS NOT NULL ORDER BY Z_PK"))
            )
            #expect(
                try rows(
                    """
                    SELECT count(*) FROM ZFILE f WHERE NOT EXISTS (SELECT 1 FROM ZBOOK b WHERE b.Z_PK = f.ZBOOK)
                                                    OR NOT EXISTS (SELECT 1 FROM ZUSER u WHERE u.Z_PK = f.ZUSER)
                    """) == ["0"])
            // Core Data's bookkeeping: numbers by name, Z_MAX ahead of the keys, the store's identity.
            #expect(
                try rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT")
                    == ["'Author',3", "'Book',12", "'File',4", "'User',3"])
            #expect(try rows("SELECT Z_UUID FROM Z_METADATA") == (try SQLiteShell.query(source, "SELECT Z_UUID FROM Z_METADATA")))
            #expect(try rows("SELECT count(*) FROM sqlite_schema WHERE name LIKE '_chunkmigrate%'") == ["0"])
            let check = try chunkmigrate("check-coredata", destination)
            #expect(check.exitCode == 0, "\(check)")
        }
    }
}
