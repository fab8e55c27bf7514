import ArgumentParser
import ChunkMigrate
import ChunkMigrateDemo
import Foundation

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Build a demo store (conversations, messages with replies, labels), migrate it, and show the result.")

    @Option(name: .long, help: "Messages in the demo store.")
    var messages = 300_000

    @Option(name: .long, help: "Where to put the demo store, destination and journal (replaced if present).")
    var directory = "chunkmigrate-demo"

    @OptionGroup var options: JobOptions

    func run() async throws {
        let folder = URL(fileURLWithPath: directory)
        try? FileManager.default.removeItem(at: folder)
        let started = ContinuousClock.now
        let files = try DemoStore.generate(in: folder, messages: messages)
        // Flushed at once, so that the lines keep their place among the progress lines on stderr.
        let say = { (text: String) in
            if !options.json { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
        }
        say("demo store: \(files.source.path) (\(messages) messages), generated in \(ProgressDisplay.clock(ContinuousClock.now - started))")
        let destination = folder.appendingPathComponent("destination.sqlite")
        let journal = folder.appendingPathComponent("journal")
        say("migrating into \(destination.path), journal \(journal.path)")
        let migrationStart = ContinuousClock.now
        try await Runner.execute(options: options, closing: false) { migrationOptions, logger in
            try MigrationJob.start(
                plan: DemoStore.plan, source: files.source, destination: destination, journal: journal,
                schema: DemoStore.destinationSchema, options: migrationOptions, logger: logger)
        }
        let elapsed = ContinuousClock.now - migrationStart
        let summary = try DemoStore.summary(source: files.source, destination: destination)
        say("migrated in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .abbreviated)))")
        say(summary)
        // The tools of the build that ran this one (a release build when run as `swift run -c
        // release`); `swift run -c release chunkjournal` where chunkjournal is not built yet.
        let tools = Bundle.main.executableURL?.deletingLastPathComponent().path ?? "."
        let chunkjournal =
            FileManager.default.isExecutableFile(atPath: tools + "/chunkjournal")
            ? tools + "/chunkjournal" : "swift run -c release chunkjournal"
        say(
            """

            Inspect the journal:   \(chunkjournal) info \(journal.path)
            Where did message 6 go: \(chunkjournal) lookup \(journal.path) Message 6
            Run it yourself:       \(tools)/chunkmigrate run --source \(files.source.path) \\
                                     --destination /tmp/new.sqlite --schema \(files.schema.path) \\
                                     --plan \(files.plan.path) --journal /tmp/new.journal
            """)
    }
}
