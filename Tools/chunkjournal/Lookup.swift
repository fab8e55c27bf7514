import ArgumentParser
import MigrationJournal

/// `chunkjournal lookup DIR ENTITY KEY...`: where source keys went, or with `--reverse`, where
/// destination keys came from, through the journal's ID map.
struct Lookup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Map source keys of an entity to destination keys (or back, with --reverse).",
        discussion: "Keys are 64-bit integers; a negative key can follow '--' (lookup DIR Message -- -5)."
    )

    @OptionGroup var options: JournalOptions

    @Argument(help: ArgumentHelp("The entity's name in the plan.", valueName: "entity"))
    var entity: String

    @Flag(help: "Map destination keys back to source keys.")
    var reverse = false

    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The keys to look up.", valueName: "key"))
    var keys: [String] = []

    /// What `lookup --json` prints.
    struct Report: Codable {
        var journal: String
        var entity: String
        /// `source-to-destination` or `destination-to-source`.
        var direction: String
        var results: [Result]
    }

    /// One key and what it maps to.
    struct Result: Codable {
        var key: Int64
        var migrated: Bool
        /// The destination key (the source key with --reverse); absent when not migrated.
        var mapped: Int64?
    }

    /// The keys as given, without a `--` that ends the options.
    private var givenKeys: [String] { keys.filter { $0 != "--" } }

    func validate() throws {
        guard !givenKeys.isEmpty else { throw ValidationError("give at least one key to look up in \(entity)") }
        for key in givenKeys where Int64(key) == nil {
            throw ValidationError("key '\(key)' of \(entity) is not a 64-bit integer")
        }
    }

    func run() throws(CommandFailure) {
        let journal = try options.open()
        let index = try journal.entity(named: entity)
        var results: [Result] = []
        do {
            let map = try journal.idMap()
            for key in givenKeys.compactMap({ Int64($0) }) {
                let mapped =
                    reverse
                    ? try map.source(ofDestination: key, entity: index)
                    : try map.destination(of: key, entity: index)
                results.append(Result(key: key, migrated: mapped != nil, mapped: mapped))
            }
        } catch {
            throw CommandFailure(unreadable: error)
        }
        if options.json {
            Output.printJSON(
                Report(
                    journal: journal.layout.directory, entity: entity,
                    direction: reverse ? "destination-to-source" : "source-to-destination",
                    results: results))
            return
        }
        let (from, to) = reverse ? ("destination", "source") : ("source", "destination")
        Output.printTable(
            results.map { result in
                ["\(entity) \(from) \(result.key)", result.mapped.map { "-> \(to) \($0)" } ?? "not migrated"]
            })
    }
}
