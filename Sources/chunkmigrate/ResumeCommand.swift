import ArgumentParser
import ChunkMigrate
import Foundation

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Continue the job recorded in a journal, or the in-place job a store is part-way through.")

    @Argument(help: "The journal directory, or a store part-way through an in-place migration.")
    var journal: String

    @Option(name: .long, help: "Where the source is now, if it moved since the job started.")
    var source: String?

    @Option(name: .long, help: "Where the destination is now, if it moved since the job started.")
    var destination: String?

    @OptionGroup var options: JobOptions

    func run() async throws {
        if InPlaceMigration.isHalfMigrated(URL(fileURLWithPath: journal)) {
            do {
                guard let job = try InPlaceMigration.resume(store: URL(fileURLWithPath: journal), options: options.migrationOptions) else {
                    return
                }
                try await Runner.runInPlace(job, options: options)
            } catch let error as MigrationError {
                Output.fail(error)
            }
            return
        }
        try await Runner.execute(options: options) { migrationOptions, logger in
            try MigrationJob.resume(
                at: URL(fileURLWithPath: journal), source: source.map(URL.init(fileURLWithPath:)),
                destination: destination.map(URL.init(fileURLWithPath:)), options: migrationOptions, logger: logger)
        }
    }
}
