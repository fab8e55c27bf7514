import ArgumentParser
import ChunkMigrate
import Foundation
import MigrationJournal

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show where the job recorded in a journal stands, or the in-place job a store is part-way through.")

    @Argument(help: "The journal directory, or a store migrated in place.")
    var journal: String

    @Flag(name: .long, help: "Print the status as JSON.")
    var json = false

    func run() throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: journal, isDirectory: &isDirectory), !isDirectory.boolValue {
            return try inPlaceStatus()
        }
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
                    print(
                        "  space: the destination holds \(SpaceEstimate.bytes(size)), \(SpaceEstimate.bytes(SpaceEstimate.freeBytes(at: folder))) free on its volume"
                    )
                }
            }
        } catch let error as MigrationError {
            Output.fail(error)
        }
    }

    /// A store given: where the in-place job it is part-way through stands.
    private func inPlaceStatus() throws {
        do {
            guard let status = try InPlaceMigration.status(of: URL(fileURLWithPath: journal)) else {
                throw MigrationError(
                    .journal,
                    "neither a journal directory nor a store part-way through an in-place migration (a store with no in-place job under way is the old model's or the new one's as it is)",
                    file: journal)
            }
            if json { return print(try Output.json(status)) }
            let cursor = status.cursor.map { ", done up to rowid \($0)" } ?? ""
            print(
                "in place: part-way, \(status.stepsDone) of \(status.steps.counted("step")) done; next: \(status.currentStep ?? "?")\(cursor)"
            )
            print("  store: \(status.store) (neither the old model's nor the new one's: Core Data must not open it)")
            print("  target: \(status.target)")
            print("  to finish: chunkmigrate resume \(status.store)")
        } catch let error as MigrationError {
            Output.fail(error)
        }
    }
}
