import Foundation
import Testing

/// What a run says at its end: the status and this run's numbers with their nouns in the singular
/// for one, and a last line that says what to do next.
@Suite("chunkmigrate run summary")
struct ChunkMigrateSummaryTests {
    /// `run` without `--quiet`, into the job `name`.
    static func run(_ demo: DemoWorkspace, _ name: String, _ extra: [String] = []) throws -> CommandResult {
        try chunkmigrate(demo.runArguments(name).filter { $0 != "--quiet" } + extra)
    }

    @Test("a complete run ends with one line naming the migrated store and the journal, and what to do with them")
    func complete() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            let result = try Self.run(demo, "job")
            #expect(result.exitCode == 0, "\(result)")
            #expect(
                lines(result.stderr).last == "chunkmigrate: complete: \(demo.destination("job")) is the migrated store; "
                    + "put it in place of the old one, then remove the journal \(demo.journal("job"))", "\(result)")
            // One batch of Conversation; Message's skipped rows and its batches apart.
            #expect(result.stderr.contains(" rows written in 1 batch, complete"), "\(result)")
            #expect(result.stderr.contains(" skipped, in ") && !result.stderr.contains(" skipped in "), "\(result)")
            #expect(!result.stderr.contains(" 1 batches") && !result.stderr.contains(" 1 rows "), "\(result)")

            // Run again: the job is complete already, and the run says so the same way.
            let again = try Self.run(demo, "job")
            #expect(again.exitCode == 0, "\(again)")
            #expect(lines(again.stderr).last?.hasPrefix("chunkmigrate: complete: ") == true, "\(again)")
            #expect(again.stderr.contains("this run: 0 source rows in "), "\(again)")
        }
    }

    @Test("--quiet and --json leave the last line out; a run its budget stopped ends with how to continue")
    func quietJSONAndBudget() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory, messages: 500)
            let quiet = try chunkmigrate(demo.runArguments("quiet"))
            #expect(quiet.exitCode == 0 && !quiet.stderr.contains("chunkmigrate: complete"), "\(quiet)")
            let json = try Self.run(demo, "json", ["--json"])
            #expect(json.exitCode == 0 && !json.stderr.contains("chunkmigrate: complete"), "\(json)")

            let paused = try Self.run(demo, "paused", ["--budget", "0"])
            #expect(paused.exitCode == 0, "\(paused)")
            #expect(lines(paused.stderr).last == "chunkmigrate: time budget used; run the same command again to continue", "\(paused)")
            #expect(paused.stderr.contains("this run: "), "\(paused)")
        }
    }

    @Test("demo ends with what to try next, not with the line of a run")
    func demo() throws {
        try withTemporaryDirectory { directory in
            let result = try chunkmigrate("demo", "--messages", "300", "--directory", directory + "/demo")
            #expect(result.exitCode == 0, "\(result)")
            #expect(!result.stderr.contains("chunkmigrate: complete"), "\(result)")
            #expect(result.stdout.contains("Run it yourself:"), "\(result)")
        }
    }
}
