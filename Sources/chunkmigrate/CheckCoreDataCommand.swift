import ArgumentParser
import ChunkMigrate
import Foundation
import MigrationJournal

struct CheckCoreDataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-coredata",
        abstract: "Check the invariants Core Data relies on in a store; exit 1 naming the violations.",
        discussion: """
            Against the store's model (its own model cache, or --model): the schema is the layout \
            the model implies, every Z_ENT belongs to its table's entity tree, Z_MAX is ahead of \
            every key, required attributes and to-ones have values, to-one and join-table keys \
            point at existing rows of the relationship's entity, polymorphic and order columns \
            agree with them, and the metadata decodes and names the model's entities. Without a \
            model, the checks that need none, saying what was not checked.
            """)

    @Argument(help: "The store to check (opened read-only).")
    var store: String

    @Option(
        name: .long, help: "The store's model, for a store without a model cache: its .xcdatamodel folder, contents XML, or compiled .mom.")
    var model: String?

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    func run() throws {
        let report: CoreDataStoreCheck.Report
        do {
            let model = try model.map { try CoreDataModel.read(contentsOf: URL(fileURLWithPath: $0)) }
            report = try CoreDataStoreCheck.run(store: URL(fileURLWithPath: store), model: model)
        } catch let error as MigrationError {
            Output.fail(error)
        }
        if json {
            print(try Output.json(report))
        } else {
            for violation in report.violations { print("violation: \(violation)") }
            for note in report.notes { print("note: \(note)") }
            for unchecked in report.unchecked { print("not checked: \(unchecked)") }
            print(
                report.isValid
                    ? "\(store): \(report.checked.counted("check")) passed" : "\(store): \(report.violations.count.counted("violation"))")
        }
        if !report.isValid { throw ExitCode(1) }
    }
}
