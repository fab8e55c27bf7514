import ArgumentParser
import ChunkMigrate
import Foundation

struct CheckCoreDataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-coredata",
        abstract: "Check the invariants Core Data relies on in a store; exit 1 naming the violations.",
        discussion: """
            Every Z_ENT belongs to its table's entity tree, Z_MAX is ahead of every key, to-one and \
            join-table keys point at existing rows of the right entity, polymorphic columns match \
            the rows they point at, and the metadata decodes and names the model's entities.
            """)

    @Argument(help: "The store to check (opened read-only).")
    var store: String

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    func run() throws {
        let report: CoreDataStoreCheck.Report
        do {
            report = try CoreDataStoreCheck.run(store: URL(fileURLWithPath: store))
        } catch let error as MigrationError {
            Output.fail(error)
        }
        if json {
            print(try Output.json(report))
        } else {
            for violation in report.violations { print("violation: \(violation)") }
            if !report.unchecked.isEmpty {
                print("not checked (target entity unknown from the store alone): \(report.unchecked.joined(separator: ", "))")
            }
            print(report.isValid ? "\(store): \(report.checked) checks passed" : "\(store): \(report.violations.count) violations")
        }
        if !report.isValid { throw ExitCode(1) }
    }
}
