import ArgumentParser
import ChunkMigrate
import Foundation

struct GenerateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Write the demo store, its destination schema and its plan into a directory (for the harness and benchmarks).",
        discussion: """
            With --core-data, write a Core Data store at model N (old.sqlite) and the empty store \
            Core Data creates for model N+1 (new.sqlite), whose entity numbers are shifted by a new \
            entity, instead; it prints their two paths.
            """)

    @Option(name: .long, help: "Messages in the store.")
    var messages = 300_000

    @Flag(name: .customLong("core-data"), help: "Write the Core Data stores old.sqlite and new.sqlite instead of the demo store.")
    var coreData = false

    @Option(name: .long, help: "Items in the Core Data store (with --core-data; default: 100000).")
    var rows: Int?

    @Argument(help: "The directory to write source.sqlite, destination-schema.sql and plan.json into (with --core-data: old.sqlite and new.sqlite).")
    var directory: String

    func validate() throws {
        if rows != nil, !coreData { throw ValidationError("--rows applies to --core-data; the demo store takes --messages") }
        if let rows, rows < 1 { throw ValidationError("--rows must be at least 1") }
    }

    func run() throws {
        let url = URL(fileURLWithPath: directory)
        if coreData {
            let files = try CoreDataDemoStore.generate(in: url, rows: rows ?? 100_000)
            print(files.old.path)
            print(files.new.path)
        } else {
            let files = try DemoStore.generate(in: url, messages: messages)
            print(files.source.path)
        }
    }
}
