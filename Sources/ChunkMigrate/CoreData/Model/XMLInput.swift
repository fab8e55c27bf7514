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
        guard String(data: data, encoding: .utf8) != nil else {
            throw MigrationError(.store, "not \(what): the file is not UTF-8 text", file: file)
        }
        let bytes = [UInt8](data)
        var index = 0
        // The XML declaration, `<?xml ...?>`, is the one allowed, and only at the start.
        if bytes.starts(with: Array("<?xml".utf8)) { index = 5 }
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "<"), bytes[index + 1] == UInt8(ascii: "?") {
                throw MigrationError(.store, "not \(what): a processing instruction at byte \(index)", file: file)
            }
            index += 1
        }
    }
}
