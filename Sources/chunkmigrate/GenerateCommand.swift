import ArgumentParser
import ChunkMigrate
import ChunkMigrateDemo
import Foundation

struct GenerateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Write the demo store, its destination schema and its plan into a directory (for the harness and benchmarks).",
        discussion: """
            With --core-data, write a Core Data store at model N (old.sqlite) and the empty store \
            Core Data creates for model N+1 (new.sqlite), whose entity numbers are shifted by a new \
            entity, instead; it prints their two paths. With --books N, write the objc.io BookMigration \
            example's store at model 1 with N books and a property-list attribute (old.sqlite), the \
            model-3 schema with three attributes taken from that property list (Model3Plus.sql) and \
            the plan (plan.json) instead; it prints the store's path.
            """)

    @Option(name: .long, help: "Messages in the store.")
    var messages = 300_000

    @Flag(name: .customLong("core-data"), help: "Write the Core Data stores old.sqlite and new.sqlite instead of the demo store.")
    var coreData = false

    @Option(name: .long, help: "Items in the Core Data store (with --core-data; default: 100000).")
    var rows: Int?

    @Option(
        name: .long,
        help: "Write the BookMigration store old.sqlite with this many books, Model3Plus.sql and plan.json instead of the demo store.")
    var books: Int?

    @Argument(
        help:
            "The directory to write source.sqlite, destination-schema.sql and plan.json into (with --core-data: old.sqlite and new.sqlite; with --books: old.sqlite, Model3Plus.sql and plan.json)."
    )
    var directory: String

    func validate() throws {
        if rows != nil, !coreData { throw ValidationError("--rows applies to --core-data; the demo store takes --messages") }
        if let rows, rows < 1 { throw ValidationError("--rows must be at least 1") }
        if books != nil, coreData { throw ValidationError("--books and --core-data write different stores; give one of them") }
        if let books, books < 1 { throw ValidationError("--books must be at least 1") }
    }

    func run() throws {
        let url = URL(fileURLWithPath: directory)
        if let books {
            let files = try BookDemoStore.generate(in: url, books: books)
            print(files.old.path)
        } else if coreData {
            let files = try CoreDataDemoStore.generate(in: url, rows: rows ?? 100_000)
            print(files.old.path)
            print(files.new.path)
        } else {
            let files = try DemoStore.generate(in: url, messages: messages)
            print(files.source.path)
        }
    }
}
