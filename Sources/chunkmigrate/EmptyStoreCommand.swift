import ArgumentParser
import ChunkMigrate
import Foundation

struct EmptyStoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "empty-store",
        abstract:
            "Write the empty Core Data store of a model version, as Core Data lays it out, for testing a migration where Core Data is not at hand.",
        discussion: """
            Tables, columns, indexes, derived attributes' triggers, Z_PRIMARYKEY, Z_METADATA and \
            Z_MODELCACHE. Its metadata holds Core Data's own entity version hashes \
            (NSStoreModelVersionHashes) and their digest, so Core Data knows its model version; \
            its model cache is chunkmigrate's own, not Core Data's: on a device, let Core Data \
            create the destination.
            """)

    @Argument(help: "The store to write; it must not exist.")
    var store: String

    @Option(name: .long, help: "The model: an .xcdatamodel folder, its contents XML, a compiled .mom, or a store (its model cache).")
    var model: String?

    @Option(
        name: .long, parsing: .singleValue,
        help:
            "Every version of the model (.xcdatamodeld or .momd), with --model-version; repeatable for bundles an app merges into one model at run time (their current versions merged, or --model-version A + B + C)."
    )
    var models: [String] = []

    @Option(name: .customLong("model-version"), help: "With --models: the version, by name (default: the bundle's current version).")
    var modelVersion: String?

    /// `--version NAME`, as `--model-version` was named before: still read, no longer shown, so
    /// that the help's `--version` is chunkmigrate's own.
    @Option(name: .customLong("version"), help: .hidden)
    var versionBefore: String?

    /// The version asked for, by either name.
    var version: String? { modelVersion ?? versionBefore }

    @Flag(name: .long, help: "With persistent history's tables, as a store opened with NSPersistentHistoryTrackingKey.")
    var history = false

    func validate() throws {
        guard (model == nil) != models.isEmpty else { throw ValidationError("give --model or --models") }
        if modelVersion != nil && versionBefore != nil { throw ValidationError("give the version once, with --model-version") }
        if version != nil, models.isEmpty { throw ValidationError("--model-version names a version of --models") }
    }

    func run() throws {
        do {
            let chosen: CoreDataModel
            if let model {
                chosen = try CoreDataModel.read(contentsOf: URL(fileURLWithPath: model))
            } else {
                let bundle = try CoreDataModelBundle.read(contentsOf: models.map { URL(fileURLWithPath: $0) })
                chosen = try bundle.version(named: version ?? bundle.current, givenWith: "--model-version", file: models.first).model
            }
            try CoreDataEmptyStore.create(at: URL(fileURLWithPath: store), model: chosen, persistentHistory: history)
            print(store)
        } catch let error as MigrationError {
            Output.fail(error)
        }
    }
}
