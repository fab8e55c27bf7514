import ArgumentParser
import ChunkMigrate
import Foundation

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a job to the end; running the same command again after a kill continues it.")

    @Option(
        name: .long, help: "The source store (opened read-only, never written; with --in-place, the store migrated inside its own file).")
    var source: String

    @Option(
        name: .long,
        help:
            "The destination store (with --in-place, the target: the empty store of the new model or schema, read for its schema; made from --schema when missing)."
    )
    var destination: String

    @Option(name: .long, help: "The plan, as JSON.")
    var plan: String

    @Option(name: .long, help: "The journal directory of the job (not used with --in-place: the job's state is in the store).")
    var journal: String?

    @Flag(
        name: .long,
        help:
            "Migrate the source store inside its own file, touching only what the model change touches, with no second copy (Core Data stores; running it again after a kill continues it)."
    )
    var inPlace = false

    @Option(name: .long, help: "SQL that creates the destination when it does not exist.")
    var schema: String?

    @OptionGroup var options: JobOptions

    func validate() throws {
        if !inPlace, journal == nil { throw ValidationError("--journal is required (or --in-place)") }
    }

    func run() async throws {
        if inPlace { return try await runInPlace() }
        try await Runner.execute(options: options) { migrationOptions, logger in
            let planURL = URL(fileURLWithPath: plan)
            let data = try MigrationError.contents(of: planURL.path, what: "the plan file", code: .invalidPlan)
            let decoded = try MigrationPlan.decode(json: data, file: plan)
            let job = try MigrationJob.startOrResume(
                plan: decoded, source: URL(fileURLWithPath: source), destination: URL(fileURLWithPath: destination),
                journal: URL(fileURLWithPath: journal!), schema: try readSchema(), options: migrationOptions, logger: logger)
            guard job.isNew else { return job }
            if !options.quiet, let left = try? decoded.tablesNotCopied(from: URL(fileURLWithPath: source)), !left.isEmpty {
                FileHandle.standardError.write(
                    Data("not copied (no entity of the plan reads them): \(left.joined(separator: ", "))\n".utf8))
            }
            return job
        }
    }

    /// The in-place job: started, or continued where the store was left part-way.
    private func runInPlace() async throws {
        do {
            let data = try MigrationError.contents(of: plan, what: "the plan file", code: .invalidPlan)
            let decoded = try MigrationPlan.decode(json: data, file: plan)
            if let sql = try readSchema(), !FileManager.default.fileExists(atPath: destination) {
                try InPlaceMigration.createTarget(at: URL(fileURLWithPath: destination), schema: sql)
            }
            let job = try InPlaceMigration.startOrResume(
                plan: decoded, store: URL(fileURLWithPath: source),
                target: URL(fileURLWithPath: destination), options: options.migrationOptions)
            try await Runner.runInPlace(job, options: options)
        } catch let error as MigrationError {
            Output.fail(error)
        }
    }

    /// The schema file's SQL, when one is given; read only when the job starts.
    private func readSchema() throws -> String? {
        guard let schema else { return nil }
        let data = try MigrationError.contents(of: schema, what: "the schema file")
        guard let text = String(data: data, encoding: .utf8) else {
            throw MigrationError(.store, "cannot read the schema file: it is not UTF-8 text", file: schema)
        }
        return text
    }
}
