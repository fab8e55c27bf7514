import ArgumentParser
import ChunkMigrate
import Foundation

struct CompareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "Compare two Core Data stores of one model by content, keys aside; exit 1 naming the differences.",
        discussion: """
            Every row of every entity is found by its identity, every attribute's value compared, \
            and every relationship by the identity of the rows it points at: a migration that gives \
            rows new keys (Core Data's heavyweight migration does) compares equal when it keeps the \
            content. To prove a custom migration before it meets millions of rows: let Core Data \
            migrate a small sample store on a Mac, let chunkmigrate migrate a copy of the same \
            sample, and compare the two.

            A row's identity, unless --identify gives it: a uniqueness constraint of the model, else \
            one attribute whose values are there and different in every row of both stores, else \
            all its attributes. It prints how each entity is identified, then each difference: a \
            row in one store only, a value that differs, a relationship that points elsewhere.
            """)

    @Argument(help: "The first store (opened read-only).")
    var first: String

    @Argument(help: "The second store (opened read-only).")
    var second: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The attributes that identify an entity's rows, as ENTITY=ATTRIBUTE[,ATTRIBUTE...] (repeatable).",
            valueName: "entity=attributes"))
    var identify: [String] = []

    @Option(
        name: .long,
        help: "The stores' model, for stores without a model cache: an .xcdatamodel folder, its contents XML, or a compiled .mom.")
    var model: String?

    @Option(name: .long, help: "The differences shown per entity; the rest are counted.")
    var limit = 20

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    func validate() throws {
        for item in identify {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw ValidationError("--identify \(item): give it as ENTITY=ATTRIBUTE[,ATTRIBUTE...]")
            }
        }
        guard limit > 0 else { throw ValidationError("--limit must be 1 or more") }
    }

    func run() throws {
        var identities: [String: [String]] = [:]
        for item in identify {
            let parts = item.split(separator: "=", maxSplits: 1)
            identities[String(parts[0])] = parts[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let report: CoreDataStoreComparison.Report
        do {
            let model = try model.map { try CoreDataModel.read(contentsOf: URL(fileURLWithPath: $0)) }
            report = try CoreDataStoreComparison.run(
                URL(fileURLWithPath: first), URL(fileURLWithPath: second), identities: identities,
                model: model, limit: limit)
        } catch let error as MigrationError {
            Output.fail(error)
        }
        if json {
            print(try Output.json(report))
        } else {
            for (entity, identity) in report.identities.sorted(by: { $0.key < $1.key }) { print("identity: \(entity) by \(identity)") }
            for difference in report.differences { print("difference: \(difference.line)") }
            for (entity, more) in report.more.sorted(by: { $0.key < $1.key }) {
                print("difference: \(entity): \(more.counted("more difference")) not shown (--limit)")
            }
            let total = report.differences.count + report.more.values.reduce(0, +)
            print(
                report.isEqual
                    ? "equal: \(report.rows.counted("row")) compared"
                    : "\(total.counted("difference")) in \(report.rows.counted("row")) compared")
        }
        if !report.isEqual { throw ExitCode(1) }
    }
}
