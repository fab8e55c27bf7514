import Foundation
import Testing

/// A kill after the log says the job is complete, before the destination is cleaned up.
@Suite("chunkmigrate completion")
struct ChunkMigrateCompletionTests {
    @Test("a kill after the complete record: the next run removes the checkpoint tables and restores the journal mode")
    func killAfterComplete() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            // A destination in WAL mode, as Core Data keeps its stores.
            let destination = demo.destination("job")
            let schema = try String(contentsOfFile: demo.schema, encoding: .utf8)
            try SQLiteShell.execute(destination, schema + "\nPRAGMA journal_mode = WAL;")
            try demo.kill("job", at: "after-complete:job:0")
            #expect(
                try SQLiteShell.integer(
                    destination,
                    "SELECT count(*) FROM sqlite_schema WHERE name LIKE '_chunkmigrate%'") == 2)

            let again = try demo.run("job")
            #expect(again.exitCode == 0, "\(again)")
            #expect(
                try SQLiteShell.integer(
                    destination,
                    "SELECT count(*) FROM sqlite_schema WHERE name LIKE '_chunkmigrate%'") == 0)
            #expect(try SQLiteShell.query(destination, "PRAGMA journal_mode") == ["'wal'"])
            let check = try chunkmigrate("check-demo", "--source", demo.source, "--destination", destination)
            #expect(check.exitCode == 0, "\(check)")
        }
    }
}
