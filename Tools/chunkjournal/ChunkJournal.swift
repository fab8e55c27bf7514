import ArgumentParser
import Foundation
import MigrationJournal

/// `chunkjournal`: reads a chunkmigrate journal directory and says what it holds, without
/// changing it.
///
/// ```
/// $ chunkjournal info /data/job.journal
/// $ chunkjournal batches /data/job.journal --entity Message
/// $ chunkjournal lookup /data/job.journal Message 42 43 --reverse
/// $ chunkjournal verify /data/job.journal --json
/// ```
@main
struct ChunkJournal: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chunkjournal",
        abstract: "Inspect a chunkmigrate journal: its job, batches, ID map and integrity.",
        discussion: """
            Every subcommand reads the journal directory <dir> and never writes to it, so it is safe \
            to run while a job is running. With --json, each prints one JSON document on standard \
            output (keys sorted; fields without a value are left out) for scripts.

            Errors are one line on standard error, "chunkjournal: error: <message>", and set the \
            exit code:
              0  success; for verify, the journal is intact
              1  verify found damage, each problem listed on standard output
              2  usage error: a missing or unknown argument or option, an
                 unknown entity, a key that is not an integer
              3  the journal cannot be read: not a journal, a newer format,
                 a damaged header or record, a missing or damaged segment
            """,
        subcommands: [Info.self, Batches.self, Lookup.self, Verify.self]
    )

    /// Parses the arguments and runs the subcommand, turning every error into one line on
    /// standard error and the exit code documented above.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let failure as CommandFailure {
            failure.report()
            exit(withError: ExitCode(failure.exitCode))
        } catch let error as JournalError {
            CommandFailure(unreadable: error).report()
            exit(withError: ExitCode(CommandFailure.unreadableJournal))
        } catch {
            // Help, version and exit codes go the parser's way; anything else is a usage error.
            if error is ExitCode || exitCode(for: error) == .success { exit(withError: error) }
            let message = message(for: error).split(whereSeparator: \.isNewline).joined(separator: "; ")
            let subcommand = CommandLine.arguments.dropFirst().first { argument in
                configuration.subcommands.contains { $0._commandName == argument }
            }
            CommandFailure(usage: message + " (see 'chunkjournal help\(subcommand.map { " " + $0 } ?? "")')").report()
            exit(withError: ExitCode(CommandFailure.usage))
        }
    }
}
