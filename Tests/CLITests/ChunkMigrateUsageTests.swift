import Foundation
import Testing

/// `chunkmigrate --help`, usage errors and `demo`.
@Suite("chunkmigrate usage and demo")
struct ChunkMigrateUsageTests {
    @Test("--help exits 0 and lists the subcommands and every exit code")
    func help() throws {
        let result = try chunkmigrate("--help")
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stderr == "")
        let help = lines(result.stdout)
        #expect(help.contains("Exit codes:"), "\(result)")
        for code in ["0    the job is complete", "1    a batch failed", "2    usage error or invalid plan",
                     "3    a store or the journal cannot be used", "4    the disk is full", "5    another process is running",
                     "130  stopped by SIGINT, 143 by SIGTERM"] {
            #expect(help.contains { $0.hasPrefix("  " + code) }, "no line for exit code \(code)")
        }
        for subcommand in ["run", "resume", "status", "demo", "generate"] {
            #expect(help.contains { $0.hasPrefix("  " + subcommand + " ") }, "no line for \(subcommand)")
        }
    }

    @Test("plan --help names the key policies as a plan spells them, its default too, not by the numbers a journal stores")
    func keyPolicyByName() throws {
        let result = try chunkmigrate("plan", "--help")
        #expect(result.exitCode == 0, "\(result)")
        let text = result.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("(values: allocate, preserve; default: preserve)"), "\(result.stdout)")
        #expect(!text.contains("(default: 1)") && !text.contains("0 - allocate"), "\(result.stdout)")
    }

    @Test("a usage error exits 2, as the help says, and prints the usage on stderr", arguments: [
        ["run", "--plan", "plan.json"],
        ["run", "--source", "a", "--destination", "b", "--plan", "c", "--journal", "d", "--batch-size", "0"],
        ["run", "--source", "a", "--destination", "b", "--plan", "c", "--journal", "d", "--batch-size", "4194305"],
        ["frobnicate"],
    ])
    func usageError(_ arguments: [String]) throws {
        let result = try chunkmigrate(arguments)
        #expect(result.exitCode == 2 && !result.killedBySignal, "\(result)")
        #expect(result.stderr.hasPrefix("Error: "), "\(result)")
        #expect(result.stderr.contains("Usage: chunkmigrate"), "\(result)")
        #expect(result.stdout == "")
    }

    @Test("status of a directory that holds no journal: exit 3, naming it")
    func statusWithoutJournal() throws {
        try withTemporaryDirectory { directory in
            let missing = directory + "/no.journal"
            let result = try chunkmigrate("status", missing)
            #expect(result.exitCode == 3, "\(result)")
            #expect(result.stderr.contains(missing), "\(result)")
            #expect(result.stdout == "")
        }
    }

    @Test("demo builds a store, migrates it and prints the check line")
    func demo() throws {
        try withTemporaryDirectory { directory in
            let folder = directory + "/demo"
            let result = try chunkmigrate("demo", "--messages", "2000", "--directory", folder)
            #expect(result.exitCode == 0, "\(result)")
            let output = lines(result.stdout)
            #expect(output.contains(
                "check: every kept row is there once and every relationship points where it pointed in the source"), "\(result)")
            #expect(output.contains { cells($0) == ["message", "2000", "1800"] }, "\(result)")
            #expect(output.contains { cells($0) == ["label", "20", "20"] }, "\(result)")
            let check = try chunkmigrate("check-demo", "--source", folder + "/source.sqlite",
                                         "--destination", folder + "/destination.sqlite")
            #expect(check.exitCode == 0, "\(check)")
            #expect(try JobStatusReport.read(folder + "/journal").state == "complete")
        }
    }
}
