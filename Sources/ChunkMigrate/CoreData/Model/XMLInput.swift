import Foundation

/// What an XML file from outside must be before Foundation's `XMLParser` reads it. On Linux the
/// parser stops the process on some malformed input (a name that is not UTF-8, a processing
/// instruction without data), so those are refused first, naming the file. A model's `contents`
/// and a mapping model's `xcmapping.xml` are UTF-8 and hold no processing instruction but the XML
/// declaration at the start.
enum XMLInput {
    /// - Throws: ``MigrationError`` naming `file` when `data` is not UTF-8 or holds a processing
    ///   instruction after the XML declaration.
    static func check(_ data: Data, what: String, file: String) throws {
        // UTF-8 without NUL (UTF-16 text is valid UTF-8 byte by byte, with NULs between).
        guard let text = String(data: data, encoding: .utf8), !data.contains(0) else {
            throw MigrationError(.store, "not \(what): the file is not UTF-8 text", file: file)
        }
        let bytes = [UInt8](data)
        var index = 0
        // The XML declaration, `<?xml ...?>`, is the one allowed, and only at the start; the
        // encoding it declares, if any, UTF-8 (another, UTF-7 say, could spell `<?` otherwise).
        if let declaration = text.range(of: #"^<\?xml[ \t\r\n][^>]*\?>"#, options: .regularExpression) {
            let inside = text[declaration]
            if let encoding = inside.range(of: #"encoding\s*=\s*["']([^"']*)["']"#, options: .regularExpression),
               !["utf-8", "utf8"].contains(where: { inside[encoding].lowercased().contains("\"\($0)\"") || inside[encoding].lowercased().contains("'\($0)'") }) {
                throw MigrationError(.store, "not \(what): it declares \(inside[encoding]), not UTF-8", file: file)
            }
            index = text.utf8.distance(from: text.startIndex, to: declaration.upperBound)
        }
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "<"), bytes[index + 1] == UInt8(ascii: "?") {
                throw MigrationError(.store, "not \(what): a processing instruction at byte \(index)", file: file)
            }
            index += 1
        }
    }
}
