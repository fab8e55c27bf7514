import Foundation
import Testing

/// The examples ``DocExampleTests`` compiles and runs are those of the documentation, word for
/// word: each block between a `// README, ...`, `// <File>.swift ...` or `// <Article>.md ...` line
/// and `// end` must be, line for line (indentation aside), one whole code block of each document
/// the marker names: the README, a Swift file's doc comments, a DocC article. And the other way
/// round: every Swift code block of the README and of the DocC catalog's articles must be one of
/// those examples, marked with the document's name, so that no example goes untested.
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
                } else if trimmed.hasPrefix("// README")
                    || trimmed.range(of: #"^// [\w+]+\.(swift|md)\b"#, options: .regularExpression) != nil
                {
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
        fencedBlocks(of: lines).map(\.lines)
    }

    /// The code blocks of a Markdown text with their language, the word after the opening fence
    /// (`swift` for ```` ```swift ````; empty without one).
    static func fencedBlocks(of lines: [String]) -> [(language: String, lines: [String])] {
        var blocks: [(language: String, lines: [String])] = [], current: (language: String, lines: [String])?
        for line in lines.map(normalized) {
            if line.hasPrefix("```") {
                if let block = current {
                    blocks.append(block)
                    current = nil
                } else {
                    current = (String(line.dropFirst(3)).trimmingCharacters(in: .whitespaces), [])
                }
            } else if current != nil {
                current!.lines.append(line)
            }
        }
        return blocks
    }

    /// The README and the articles of the DocC catalog, by file name (`README.md`, `AppStartup.md`),
    /// each with its Swift code blocks.
    static func documentsWithSwift() throws -> [(name: String, blocks: [[String]])] {
        let catalog = root.appendingPathComponent("Sources/ChunkMigrate/ChunkMigrate.docc")
        let articles = try FileManager.default.contentsOfDirectory(atPath: catalog.path).filter { $0.hasSuffix(".md") }.sorted()
        let files = [("README.md", root.appendingPathComponent("README.md"))] + articles.map { ($0, catalog.appendingPathComponent($0)) }
        return try files.map { name, url in
            let lines = try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")
            return (name, fencedBlocks(of: lines).filter { $0.language == "swift" }.map(\.lines))
        }
    }

    /// Whether a marker names the document: `README` for the README, the file name for an article.
    static func marker(_ marker: String, names document: String) -> Bool {
        document == "README.md" ? marker.hasPrefix("README") : marker.components(separatedBy: ", ").contains(document)
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
            return codeBlocks(
                of: name.hasSuffix(".md")
                    ? lines
                    : lines.compactMap { line in
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

    @Test("every Swift code block of the README and of the DocC articles is an example the tests compile")
    func everySwiftBlockIsTested() throws {
        let blocks = try Self.blocks()
        let documents = try Self.documentsWithSwift()
        #expect(documents.contains { $0.name == "README.md" } && documents.count > 10)
        for document in documents {
            for code in document.blocks {
                let marked = blocks.contains { Self.marker($0.marker, names: document.name) && $0.lines == code }
                #expect(
                    marked,
                    "\(document.name): this Swift block is no marked example of DocExampleTests: \(code.prefix(2).joined(separator: " / "))"
                )
            }
        }
    }

    @Test("a block's language is the word after its opening fence")
    func fenceLanguage() {
        let markdown = ["```swift", "let a = 1", "```", "   ```sh", "ls", "   ```", "```", "x", "```"]
        #expect(Self.fencedBlocks(of: markdown).map(\.language) == ["swift", "sh", ""])
        #expect(Self.marker("README, a Core Data store at app launch", names: "README.md"))
        #expect(Self.marker("GettingStarted.md, AppStartup.md", names: "AppStartup.md"))
        #expect(!Self.marker("GettingStarted.md, AppStartup.md", names: "README.md"))
        #expect(!Self.marker("InPlace.md, from an app", names: "Plans.md"))
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
