import ArgumentParser
import ChunkMigrate
import Foundation

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show where the job recorded in a journal stands.")

    @Argument(help: "The journal directory.")
    var journal: String

    @Flag(name: .long, help: "Print the status as JSON.")
    var json = false

    func run() throws {
        do {
            let status = try MigrationJob.status(at: URL(fileURLWithPath: journal))
            if json {
                print(try Output.json(status))
            } else {
                print(Output.describe(status))
            }
        } catch let error as MigrationError {
            Output.fail(error)
        }
    }
}
