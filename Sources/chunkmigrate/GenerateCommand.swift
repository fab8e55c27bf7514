import ArgumentParser
import ChunkMigrate
import Foundation

struct GenerateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Write the demo store, its destination schema and its plan into a directory (for the harness and benchmarks).")

    @Option(name: .long, help: "Messages in the store.")
    var messages = 300_000

    @Argument(help: "The directory to write source.sqlite, destination-schema.sql and plan.json into.")
    var directory: String

    func run() throws {
        let files = try DemoStore.generate(in: URL(fileURLWithPath: directory), messages: messages)
        print(files.source.path)
    }
}
