import Foundation
import MigrationJournal
import Testing

/// Faults from outside: a full disk and SIGTERM. After each, the same command finishes the job as
/// an uninterrupted run would have, and the source is never written.
@Suite("chunkmigrate faults", .serialized)
struct ChunkMigrateFaultTests {
    /// Mounts a tmpfs of `megabytes` at `path`; false where the machine does not allow it.
    static func mountTmpfs(_ path: String, megabytes: Int, remount: Bool = false) -> Bool {
        guard let mount = ["/usr/bin/mount", "/bin/mount"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }),
            let result = try? runExecutable(
                URL(fileURLWithPath: mount),
                ["-t", "tmpfs", "-o", (remount ? "remount," : "") + "size=\(megabytes)m", "tmpfs", path])
        else { return false }
        return result.exitCode == 0
    }

    /// Runs `body` with a tmpfs of `megabytes` mounted at `directory/disk`, and the arguments of
    /// `chunkmigrate run` for the demo job with its destination and journal there. Does nothing,
    /// saying so, where the machine cannot mount one.
    static func withTmpfs(
        in directory: String, megabytes: Int, demo: DemoWorkspace, test: String,
        _ body: (_ disk: String, _ arguments: [String]) throws -> Void
    ) throws {
        let disk = directory + "/disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        guard mountTmpfs(disk, megabytes: megabytes) else {
            print("chunkmigrate faults: skipping the \(test) test, this machine cannot mount a tmpfs here")
            return
        }
        defer { unmount(disk) }
        try body(
            disk,
            [
                "run", "--source", demo.source, "--destination", disk + "/job.sqlite", "--schema", demo.schema,
                "--plan", demo.plan, "--journal", disk + "/job.journal", "--batch-size", "500", "--quiet",
            ])
    }

    static func unmount(_ path: String) {
        for umount in ["/usr/bin/umount", "/bin/umount"] where FileManager.default.isExecutableFile(atPath: umount) {
            _ = try? runExecutable(URL(fileURLWithPath: umount), [path])
            return
        }
    }

    @Test("a full disk stops the job with exit 4 naming the file; with space again, the same command finishes it")
    func diskFull() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory, messages: 20_000)
            let source = try FileSnapshot(demo.source)
            try demo.complete("reference")
            try Self.withTmpfs(in: directory, megabytes: 2, demo: demo, test: "disk-full") { small, arguments in
                let full = try chunkmigrate(arguments)
                #expect(full.exitCode == 4, "\(full)")
                #expect(full.stderr.contains("chunkmigrate: error:"), "\(full)")
                #expect(full.stderr.contains(small), "the message names the file: \(full)")
                #expect(try FileSnapshot(demo.source) == source)

                #expect(Self.mountTmpfs(small, megabytes: 64, remount: true))
                let again = try chunkmigrate(arguments)
                #expect(again.exitCode == 0, "\(again)")
                #expect(try SQLiteShell.dump(small + "/job.sqlite") == (try SQLiteShell.dump(demo.destination("reference"))))
                #expect(try chunkjournal("verify", small + "/job.journal").exitCode == 0)
                #expect(try FileSnapshot(demo.source) == source)
            }
        }
    }

    @Test("an I/O error (the file system turns read-only) stops the job naming the file; once writable, the same command finishes it")
    func readOnlyFileSystem() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory, messages: 5_000)
            try demo.complete("reference")
            try Self.withTmpfs(in: directory, megabytes: 64, demo: demo, test: "read-only") { disk, arguments in
                let first = try chunkmigrate(arguments + ["--budget", "0"])
                #expect(first.exitCode == 0, "\(first)")
                let remount = { (options: String) in
                    _ = try? runExecutable(URL(fileURLWithPath: "/usr/bin/mount"), ["-o", "remount,\(options)", disk])
                }
                remount("ro")
                let failed = try chunkmigrate(arguments)
                remount("rw")
                #expect(failed.exitCode != 0, "\(failed)")
                #expect(failed.stderr.contains("chunkmigrate: error:"), "\(failed)")
                #expect(failed.stderr.contains(disk), "the message names the file: \(failed)")
                let again = try chunkmigrate(arguments)
                #expect(again.exitCode == 0, "\(again)")
                #expect(try SQLiteShell.dump(disk + "/job.sqlite") == (try SQLiteShell.dump(demo.destination("reference"))))
            }
        }
    }

    @Test("SIGTERM stops the job at a batch boundary with exit 143; the same command finishes it")
    func sigterm() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory, messages: 40_000)
            try demo.complete("reference")
            let process = Process()
            process.executableURL = BuiltProduct.directory.appendingPathComponent("chunkmigrate")
            process.arguments = [
                "run", "--source", demo.source, "--destination", demo.destination("job"), "--schema", demo.schema,
                "--plan", demo.plan, "--journal", demo.journal("job"), "--batch-size", "100", "--quiet",
            ]
            let errors = directory + "/stderr"
            _ = FileManager.default.createFile(atPath: errors, contents: nil)
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // Wait for a few batches of messages, then ask it to stop.
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                if let reader = try? JournalReader(directory: demo.journal("job")), reader.batches(entity: 1).count >= 3 { break }
                Thread.sleep(forTimeInterval: 0.02)
            }
            process.terminate()
            process.waitUntilExit()
            let stderr = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            #expect(
                process.terminationReason == .exit && process.terminationStatus == 143, "status \(process.terminationStatus): \(stderr)")
            #expect(stderr.contains("signal 15"), "\(stderr)")
            let reader = try JournalReader(directory: demo.journal("job"))
            #expect(reader.state == .interrupted)
            #expect(reader.log.tail == .clean)

            let again = try demo.run("job")
            #expect(again.exitCode == 0, "\(again)")
            #expect(try SQLiteShell.dump(demo.destination("job")) == (try SQLiteShell.dump(demo.destination("reference"))))
        }
    }
}
