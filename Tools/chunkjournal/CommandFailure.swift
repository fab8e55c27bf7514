import Foundation
import MigrationJournal

/// Why a subcommand stopped: a one-line message for standard error and the exit code.
struct CommandFailure: Error {
    /// `verify` found damage.
    static let damaged: Int32 = 1
    /// A missing or unknown argument, an unknown entity, a key that is not an integer.
    static let usage: Int32 = 2
    /// The journal cannot be read.
    static let unreadableJournal: Int32 = 3

    /// What went wrong, naming the file, entity or key.
    var message: String
    /// The process's exit code.
    var exitCode: Int32

    init(_ message: String, exitCode: Int32) {
        self.message = message
        self.exitCode = exitCode
    }

    /// A usage error.
    init(usage message: String) {
        self.init(message, exitCode: Self.usage)
    }

    /// A journal that cannot be read; the message names the file.
    init(unreadable error: JournalError) {
        self.init(error.description, exitCode: Self.unreadableJournal)
    }

    /// Writes `chunkjournal: error: <message>` on standard error.
    func report() {
        FileHandle.standardError.write(Data("chunkjournal: error: \(message)\n".utf8))
    }
}
