import ArgumentParser
import MigrationJournal

/// The journal directory and the output format, shared by every subcommand.
struct JournalOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("The journal directory of a chunkmigrate job.", valueName: "dir"))
    var directory: String

    @Flag(help: "Print one JSON document (sorted keys) instead of text.")
    var json = false

    /// Opens the journal read-only.
    ///
    /// - Throws: ``CommandFailure`` with exit code 3 naming the file when it is not a journal,
    ///   was written by a newer format, or is damaged before its last record.
    func open() throws(CommandFailure) -> JournalReader {
        do {
            return try JournalReader(directory: directory)
        } catch {
            throw CommandFailure(unreadable: error)
        }
    }
}

extension JournalReader {
    /// The index of the entity named `name`.
    ///
    /// - Throws: a usage ``CommandFailure`` naming the entity and listing the known ones.
    func entity(named name: String) throws(CommandFailure) -> UInt32 {
        if let index = entityIndex(named: name) { return index }
        let known = header.entities.map(\.name)
        throw CommandFailure(
            usage: "the journal at \(layout.directory) has no entity named '\(name)'; its entities are "
                + (known.isEmpty ? "none" : known.joined(separator: ", ")))
    }
}
