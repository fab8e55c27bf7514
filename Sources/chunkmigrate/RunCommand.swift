import ArgumentParser
import ChunkMigrate
import Foundation

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a job to the end; running the same command again after a kill continues it.")

    @Option(name: .long, help: "The source store (opened read-only, never written).")
    var source: String

    @Option(name: .long, help: "The destination store.")
    var destination: String

    @Option(name: .long, help: "The plan, as JSON.")
    var plan: String

    @Option(name: .long, help: "The journal directory of the job.")
    var journal: String

    @Option(name: .long, help: "SQL that creates the destination when it does not exist.")
    var schema: String?

    @OptionGroup var options: JobOptions

    func run() async throws {
        try await Runner.execute(options: options) { migrationOptions, logger in
            let planURL = URL(fileURLWithPath: plan)
            guard let data = FileManager.default.contents(atPath: planURL.path) else {
                throw MigrationError(.invalidPlan, "cannot read the plan file", file: plan)
            }
            let decoded = try MigrationPlan.decode(json: data, file: plan)
            let job = try MigrationJob.startOrResume(
                plan: decoded, source: URL(fileURLWithPath: source), destination: URL(fileURLWithPath: destination),
                journal: URL(fileURLWithPath: journal), schema: try readSchema(), options: migrationOptions, logger: logger)
            guard job.isNew else { return job }
            if !options.quiet, let left = try? decoded.tablesNotCopied(from: URL(fileURLWithPath: source)), !left.isEmpty {
                FileHandle.standardError.write(Data("not copied (no entity of the plan reads them): \(left.joined(separator: ", "))\n".utf8))
            }
            return job
        }
    }

    /// The schema file's SQL, when one is given; read only when the job starts.
    private func readSchema() throws -> String? {
        guard let schema else { return nil }
        do { return try String(contentsOfFile: schema, encoding: .utf8) } catch {
            throw MigrationError(.store, "cannot read the schema file", file: schema)
        }
    }
}
