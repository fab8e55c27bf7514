import ArgumentParser
import ChunkMigrate
import ChunkMigrateDemo
import Foundation

struct CheckDemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-demo",
        abstract: "Check a migrated demo destination against its source: every kept row once, every relationship right.",
        shouldDisplay: false)

    @Option(name: .long, help: "The demo source store.")
    var source: String

    @Option(name: .long, help: "The migrated destination.")
    var destination: String

    func run() throws {
        let problems = try DemoStore.check(source: URL(fileURLWithPath: source), destination: URL(fileURLWithPath: destination))
        if problems.isEmpty {
            print("check: every kept row is there once and every relationship points where it pointed in the source")
        } else {
            for problem in problems { print("check FAILED: \(problem)") }
            throw ExitCode(1)
        }
    }
}
