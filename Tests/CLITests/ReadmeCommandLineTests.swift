import Foundation
import Testing

/// The README's Core Data example on the command line, run as written: each command of the block,
/// in a fresh directory, with the built tools.
@Suite("The README's command line")
struct ReadmeCommandLineTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The commands of the README's `sh` block under "A Core Data store, on the command line",
    /// each as its words, without its comment.
    static func commands() throws -> [[String]] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## A Core Data store, on the command line\n").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```sh\n").dropFirst().first?.components(separatedBy: "```").first)
        return block.split(separator: "\n").map { line in
            let command = line.components(separatedBy: " #").first ?? String(line)
            return command.split(separator: " ").map(String.init)
        }
    }

    @Test("every command of the README's Core Data example exits 0, in order")
    func runsAsWritten() throws {
        let commands = try Self.commands()
        #expect(commands.count >= 5)
        #expect(commands.allSatisfy { ["chunkmigrate", "chunkjournal"].contains($0.first) })
        try withTemporaryDirectory { directory in
            var outputs: [String: CommandResult] = [:]
            for command in commands {
                let result = try BuiltProduct.run(command[0], Array(command.dropFirst()), workingDirectory: directory)
                #expect(result.exitCode == 0, "\(command.joined(separator: " ")): \(result)")
                outputs[command.prefix(2).joined(separator: " ")] = result
            }
            // What the comments say: the job is complete, and the key looked up has a destination.
            #expect(
                outputs["chunkmigrate status"]?.stdout.contains(": complete") == true,
                "\(String(describing: outputs["chunkmigrate status"]))")
            #expect(outputs["chunkjournal lookup"]?.stdout.isEmpty == false, "\(String(describing: outputs["chunkjournal lookup"]))")
        }
    }
}
