import Foundation
import MigrationJournal
import Testing

/// `chunkjournal`'s help, its usage errors and journals it must refuse.
@Suite("chunkjournal usage")
struct ChunkJournalUsageTests {
    @Test("--help lists the subcommands and the exit codes, and exits 0")
    func help() throws {
        let result = try chunkjournal("--help")
        #expect(result.exitCode == 0)
        #expect(result.stderr == "")
        #expect(result.stdout.contains("USAGE: chunkjournal <subcommand>"))
        for subcommand in ["info", "batches", "lookup", "verify"] {
            #expect(result.stdout.contains("\n  \(subcommand) "), "no \(subcommand) in \(result)")
        }
        for code in ["0  success", "1  verify found damage", "2  usage error", "3  the journal cannot be read"] {
            #expect(result.stdout.contains(code), "no '\(code)' in \(result)")
        }
    }

    @Test(
        "a subcommand's --help shows its arguments",
        arguments: [
            ("info", "USAGE: chunkjournal info <dir> [--json]"),
            ("batches", "USAGE: chunkjournal batches <dir> [--json] [--entity <name>]"),
            ("lookup", "USAGE: chunkjournal lookup <dir> [--json] <entity> [--reverse] [<key> ...]"),
            ("verify", "USAGE: chunkjournal verify <dir> [--json]"),
        ])
    func subcommandHelp(subcommand: String, usage: String) throws {
        let result = try chunkjournal(subcommand, "--help")
        #expect(result.exitCode == 0)
        #expect(result.stdout.contains(usage), "\(result)")
    }

    @Test("a missing argument or an unknown subcommand: one line on stderr, exit 2")
    func usageErrors() throws {
        let missing = try chunkjournal("info")
        #expect(missing.exitCode == 2)
        #expect(missing.stdout == "")
        #expect(missing.stderr == "chunkjournal: error: Missing expected argument '<dir>' (see 'chunkjournal help info')\n")

        let unknown = try chunkjournal("summary", "/tmp")
        #expect(unknown.exitCode == 2)
        #expect(lines(unknown.stderr).count == 1)
        #expect(unknown.stderr.hasPrefix("chunkjournal: error: "), "\(unknown)")
        #expect(unknown.stderr.contains("'summary'"), "\(unknown)")
    }

    @Test("a journal of a newer format is refused, naming the header file: exit 3")
    func newerFormat() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let header = JournalLayout(directory: journal.directory).header
            // The u32 version follows the 8-byte magic, little-endian.
            var bytes = try Data(contentsOf: URL(fileURLWithPath: header))
            bytes[8] = 2
            try bytes.write(to: URL(fileURLWithPath: header))
            for subcommand in ["info", "batches", "verify"] {
                let result = try chunkjournal(subcommand, journal.directory)
                #expect(result.exitCode == 3, "\(subcommand): \(result)")
                #expect(result.stdout == "")
                #expect(
                    result.stderr == """
                        chunkjournal: error: \(header): journal format version 2 is newer than this reader \
                        (it reads up to 1); use a newer chunkmigrate

                        """, "\(subcommand)")
            }
        }
    }
}
