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
        for code in [
            "0    the job is complete", "1    a batch failed", "2    usage error or invalid plan",
            "3    a store or the journal cannot be used", "4    the disk is full", "5    another process is running",
            "130  stopped by SIGINT, 143 by SIGTERM",
        ] {
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

    @Test(
        "empty-store names a bundle's version with --model-version, reads --version NAME as before without showing it, and its help has one --version: chunkmigrate's"
    )
    func emptyStoreModelVersion() throws {
        try withTemporaryDirectory { directory in
            // A bundle of two versions: the generated Core Data pair's models, the newer current.
            #expect(try chunkmigrate("generate", "--core-data", "--rows", "10", directory + "/pair").exitCode == 0)
            let bundle = directory + "/App.xcdatamodeld"
            try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: directory + "/pair/old.xcdatamodel", toPath: bundle + "/App.xcdatamodel")
            try FileManager.default.copyItem(atPath: directory + "/pair/new.xcdatamodel", toPath: bundle + "/App 2.xcdatamodel")
            // The model's Account is new in version 2: the version asked for is the one written.
            #expect(
                try chunkmigrate("empty-store", "--models", bundle, "--model-version", "App", directory + "/named.sqlite").exitCode == 0)
            #expect(try chunkmigrate("empty-store", "--models", bundle, "--version", "App", directory + "/before.sqlite").exitCode == 0)
            #expect(try chunkmigrate("empty-store", "--models", bundle, directory + "/current.sqlite").exitCode == 0)
            let named = try SQLiteShell.tables(directory + "/named.sqlite")
            #expect(named == (try SQLiteShell.tables(directory + "/before.sqlite")))
            let current = try SQLiteShell.tables(directory + "/current.sqlite")
            #expect(!named.contains("ZACCOUNT") && current.contains("ZACCOUNT"), "\(named)")

            let twice = try chunkmigrate(
                "empty-store", "--models", bundle, "--model-version", "App", "--version", "App", directory + "/twice.sqlite")
            #expect(twice.exitCode == 2 && twice.stderr.contains("give the version once, with --model-version"), "\(twice)")
            let unknown = try chunkmigrate("empty-store", "--models", bundle, "--model-version", "App 9", directory + "/unknown.sqlite")
            #expect(
                unknown.exitCode == 2
                    && unknown.stderr.contains(
                        #"--model-version App 9: the model bundle has no such version (it has App, App 2); did you mean "App 2"?"#),
                "\(unknown)")
            // plan's versions by name are refused in the same words.
            let plan = try chunkmigrate(
                "plan", "--source", directory + "/named.sqlite", "--destination", directory + "/current.sqlite",
                "--models", bundle, "--from-version", "Apq", "--out", directory + "/plan.json")
            #expect(
                plan.exitCode == 2
                    && plan.stderr.contains(
                        #"--from-version Apq: the model bundle has no such version (it has App, App 2); did you mean "App"?"#),
                "\(plan)")
            let alone = try chunkmigrate(
                "empty-store", "--model", bundle + "/App.xcdatamodel", "--model-version", "App", directory + "/alone.sqlite")
            #expect(alone.exitCode == 2 && alone.stderr.contains("--model-version names a version of --models"), "\(alone)")

            let help = try chunkmigrate("empty-store", "--help")
            let options = lines(help.stdout).map { $0.trimmingCharacters(in: .whitespaces) }
            let versions = options.filter { $0.hasPrefix("--version") }
            #expect(versions.count == 1 && versions[0].hasSuffix("Show the version."), "\(help.stdout)")
            #expect(options.contains { $0.hasPrefix("--model-version <model-version>") }, "\(help.stdout)")
        }
    }

    @Test(
        "a usage error exits 2, as the help says, and prints the usage on stderr",
        arguments: [
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
            #expect(
                output.contains(
                    "check: every kept row is there once and every relationship points where it pointed in the source"), "\(result)")
            #expect(output.contains { cells($0) == ["message", "2000", "1800"] }, "\(result)")
            #expect(output.contains { cells($0) == ["label", "20", "20"] }, "\(result)")
            let check = try chunkmigrate(
                "check-demo", "--source", folder + "/source.sqlite",
                "--destination", folder + "/destination.sqlite")
            #expect(check.exitCode == 0, "\(check)")
            #expect(try JobStatusReport.read(folder + "/journal").state == "complete")
        }
    }
}
