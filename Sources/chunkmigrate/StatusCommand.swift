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
                if status.state != .complete {
                    // What the rest of the job can grow into.
                    let folder = URL(fileURLWithPath: status.destination).deletingLastPathComponent().path
                    let size = (try? FileManager.default.attributesOfItem(atPath: status.destination)[.size] as? NSNumber)?.int64Value ?? 0
                    print("  space: the destination holds \(SpaceEstimate.bytes(size)), \(SpaceEstimate.bytes(SpaceEstimate.freeBytes(at: folder))) free on its volume")
                }
            }
        } catch let error as MigrationError {
            Output.fail(error)
        }
    }
}
