import Foundation
import Testing

/// The examples ``DocExampleTests`` compiles and runs are those of the documentation, word for
/// word: each block between a `// README, ...`, `// <File>.swift ...` or `// <Article>.md ...` line
/// and `// end` must be found, line after line, in the README's code, in that Swift file's doc
/// comments or in that article's code (indentation aside).
@Suite("Documentation examples match the documentation")
struct DocExampleDriftTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Block: CustomStringConvertible {
        let marker: String, line: Int, lines: [String]
        var description: String { "\"\(marker)\" at DocExampleTests.swift:\(line)" }
    }

    /// The marked blocks of the examples' test file, and of the Apple-only examples' file.
    static func blocks() throws -> [Block] {
        var blocks: [Block] = []
        for name in ["DocExampleTests.swift", "DocExampleTests+Apple.swift"] {
            let text = try String(contentsOf: root.appendingPathComponent("Tests/ChunkMigrateTests/\(name)"), encoding: .utf8)
            var open: (marker: String, line: Int, lines: [String])?
            for (number, line) in text.components(separatedBy: "\n").enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed == "// end", let block = open {
                    blocks.append(Block(marker: block.marker, line: block.line, lines: block.lines))
                    open = nil
                } else if open == nil, trimmed.hasPrefix("// README") || trimmed.range(of: #"^// \w+\.(swift|md)"#, options: .regularExpression) != nil {
                    open = (String(trimmed.dropFirst(3)), number + 1, [])
                } else if open != nil {
                    open!.lines.append(normalized(line))
                }
            }
        }
        return blocks
    }

    /// A line without its indentation.
    static func normalized(_ line: String) -> String {
        line.trimmingCharacters(in: .whitespaces)
    }

    /// Whether `lines` appear one after the other in `text`'s lines.
    static func contains(_ text: [String], _ lines: [String]) -> Bool {
        guard !lines.isEmpty, lines.count <= text.count else { return false }
        return (0...(text.count - lines.count)).contains { start in
            lines.indices.allSatisfy { text[start + $0] == lines[$0] }
        }
    }

    /// The code of the file named `name` under `Sources/` or `Journal/`: a Swift file's doc
    /// comments without their `///`, or the code blocks of an article (`AppStartup.md`).
    static func documentation(ofFile name: String) throws -> [String] {
        var found: [String] = []
        for folder in ["Sources", "Journal"] {
            let enumerator = FileManager.default.enumerator(atPath: root.appendingPathComponent(folder).path)
            while let path = enumerator?.nextObject() as? String {
                guard path.hasSuffix("/" + name) || path == name else { continue }
                let lines = try String(contentsOf: root.appendingPathComponent(folder + "/" + path), encoding: .utf8)
                    .components(separatedBy: "\n")
                if name.hasSuffix(".md") {
                    found += code(of: lines)
                } else {
                    found += lines.compactMap { line in
                        let trimmed = normalized(line)
                        return trimmed.hasPrefix("///") ? normalized(String(trimmed.dropFirst(3))) : nil
                    }
                }
            }
        }
        return found
    }

    /// The lines inside the code fences of a Markdown text.
    static func code(of lines: [String]) -> [String] {
        var inside = false, code: [String] = []
        for line in lines {
            if normalized(line).hasPrefix("```") { inside.toggle(); continue }
            if inside { code.append(normalized(line)) }
        }
        return code
    }

    /// Where a marker says its example is: the README when it starts with `README`, and the files
    /// it names (`// ChunkMigrate.md, MigrationJob.swift`, `// MigrationJob.swift, first example`,
    /// `// README, Using it in an app, AppStartup.md`).
    static func documents(named marker: String) throws -> [(name: String, lines: [String])] {
        var documents = try marker.components(separatedBy: ", ").filter { $0.hasSuffix(".swift") || $0.hasSuffix(".md") }
            .map { ($0, try documentation(ofFile: $0)) }
        if marker.hasPrefix("README") {
            let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
            documents.append(("README.md", code(of: readme.components(separatedBy: "\n"))))
        }
        return documents
    }

    @Test("every marked example is in each document it names, word for word")
    func examplesMatch() throws {
        let blocks = try Self.blocks()
        #expect(blocks.count >= 17)
        for block in blocks {
            let documents = try Self.documents(named: block.marker)
            #expect(!documents.isEmpty, "\(block) names no document")
            for document in documents {
                #expect(!document.lines.isEmpty, "\(block): \(document.name) not found")
                #expect(Self.contains(document.lines, block.lines), "\(block) is not in \(document.name) word for word")
            }
        }
    }
}
