import Foundation
import Testing

/// The examples ``DocExampleTests`` compiles and runs are those of the documentation, word for
/// word: each block between a `// README, ...`, `// <File>.swift ...` or `// <Article>.md ...` line
/// and `// end` must be, line for line (indentation aside), one whole code block of each document
/// the marker names: the README, a Swift file's doc comments, a DocC article.
@Suite("Documentation examples match the documentation")
struct DocExampleDriftTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Block: CustomStringConvertible {
        let marker: String, file: String, line: Int, lines: [String]
        var description: String { "\"\(marker)\" at \(file):\(line)" }
    }

    /// The marked blocks of the examples' test files; a block without its `// end` is an error.
    static func blocks() throws -> [Block] {
        var blocks: [Block] = []
        for name in ["DocExampleTests.swift", "DocExampleTests+Apple.swift"] {
            let text = try String(contentsOf: root.appendingPathComponent("Tests/ChunkMigrateTests/\(name)"), encoding: .utf8)
            var open: Block?
            for (number, line) in text.components(separatedBy: "\n").enumerated() {
                let trimmed = normalized(line)
                if trimmed == "// end", let block = open {
                    blocks.append(block)
                    open = nil
                } else if trimmed.hasPrefix("// README") || trimmed.range(of: #"^// [\w+]+\.(swift|md)\b"#, options: .regularExpression) != nil {
                    if let open { Issue.record("\(open) has no // end before the next marker") }
                    open = Block(marker: String(trimmed.dropFirst(3)), file: name, line: number + 1, lines: [])
                } else if let block = open {
                    open = Block(marker: block.marker, file: block.file, line: block.line, lines: block.lines + [normalized(line)])
                }
            }
            if let open { Issue.record("\(open) has no // end") }
        }
        return blocks
    }

    /// A line without its indentation.
    static func normalized(_ line: String) -> String {
        line.trimmingCharacters(in: .whitespaces)
    }

    /// The code blocks of a Markdown text, each as its lines.
    static func codeBlocks(of lines: [String]) -> [[String]] {
        var blocks: [[String]] = [], current: [String]?
        for line in lines.map(normalized) {
            if line.hasPrefix("```") {
                if let block = current { blocks.append(block); current = nil } else { current = [] }
            } else if current != nil {
                current!.append(line)
            }
        }
        return blocks
    }

    /// The Swift files and articles under `Sources/` and `Journal/`, by file name, read once.
    static let sourceFiles: [String: [URL]] = {
        var files: [String: [URL]] = [:]
        for folder in ["Sources", "Journal"] {
            let base = root.appendingPathComponent(folder)
            for case let path as String in FileManager.default.enumerator(atPath: base.path) ?? FileManager.DirectoryEnumerator()
            where path.hasSuffix(".swift") || path.hasSuffix(".md") {
                files[(path as NSString).lastPathComponent, default: []].append(base.appendingPathComponent(path))
            }
        }
        return files
    }()

    /// The code blocks of the file named `name` under `Sources/` or `Journal/`: those of a Swift
    /// file's doc comments, or of an article (`AppStartup.md`).
    static func codeBlocks(ofFile name: String) throws -> [[String]] {
        try (sourceFiles[name] ?? []).flatMap { url in
            let lines = try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")
            return codeBlocks(of: name.hasSuffix(".md") ? lines : lines.compactMap { line in
                let trimmed = normalized(line)
                return trimmed.hasPrefix("///") ? String(trimmed.dropFirst(3)) : nil
            })
        }
    }

    /// The documents a marker names, with their code blocks: the README when it starts with
    /// `README`, and the files it names (`// ChunkMigrate.md, MigrationJob.swift`,
    /// `// MigrationJob.swift, first example`, `// README, Using it in an app, AppStartup.md`).
    static func documents(named marker: String) throws -> [(name: String, blocks: [[String]])] {
        var documents = try marker.components(separatedBy: ", ").filter { $0.hasSuffix(".swift") || $0.hasSuffix(".md") }
            .map { ($0, try codeBlocks(ofFile: $0)) }
        if marker.hasPrefix("README") {
            let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
            documents.append(("README.md", codeBlocks(of: readme.components(separatedBy: "\n"))))
        }
        return documents
    }

    @Test("every marked example is a whole code block of each document it names, word for word")
    func examplesMatch() throws {
        let blocks = try Self.blocks()
        #expect(blocks.count >= 17)
        for block in blocks {
            let documents = try Self.documents(named: block.marker)
            #expect(!documents.isEmpty, "\(block) names no document")
            for document in documents {
                #expect(!document.blocks.isEmpty, "\(block): \(document.name) has no code")
                #expect(document.blocks.contains(block.lines), "\(block) is not a code block of \(document.name), word for word")
            }
        }
    }

    @Test("a block is found only whole: a part of a code block, or lines across two, are not")
    func wholeBlocksOnly() {
        let markdown = ["text", "```swift", "let a = 1", "let b = 2", "```", "```", "let c = 3", "```"]
        let blocks = Self.codeBlocks(of: markdown)
        #expect(blocks == [["let a = 1", "let b = 2"], ["let c = 3"]])
        #expect(!blocks.contains(["let a = 1"]))
        #expect(!blocks.contains(["let b = 2", "let c = 3"]))
    }
}
