import Foundation

/// A reader of the XML Xcode writes: a model's `contents` and a mapping model's `xcmapping.xml`.
///
/// A pull reader over the bytes, in Swift alone: ``next()`` gives the next start tag with its
/// attributes, end tag or text, until the end of the document. It checks what makes XML
/// well-formed (UTF-8 text, tags that nest and close, one root element, quoted attributes given
/// once, references that resolve) and refuses anything else naming the line and the column. It
/// keeps nothing but the bytes, the names of the open elements and its position, so that reading
/// a malformed file costs no more than reading a good one, and leaves nothing behind.
///
/// What it reads: the XML declaration (whose encoding, if named, is UTF-8), comments, processing
/// instructions (skipped), a document type declaration without an internal subset (skipped),
/// elements, attributes, character data and CDATA sections, with line ends as `\n`, and the five
/// predefined entities and character references. It refuses an internal subset, where a document
/// declares its own entities and attribute defaults, and a reference to any entity but the five.
/// Xcode writes none of these but the declaration and, in a mapping model, the document type.
///
/// XML 1.0, well-formedness: https://www.w3.org/TR/xml/#sec-well-formed
struct XMLReader {
    /// What the reader found next.
    enum Event: Equatable {
        /// A start tag (or an empty-element tag, which is followed by its ``end(_:)``).
        case start(String, attributes: [String: String])
        case end(String)
        /// Character data inside the root element, references resolved; whitespace between tags
        /// included. Text may come in several events in a row.
        case text(String)
    }

    /// Why the bytes are not well-formed XML, and where.
    struct Malformed: Error, CustomStringConvertible {
        var message: String
        var line: Int
        var column: Int
        var description: String { "line \(line), column \(column): \(message)" }
    }

    private let bytes: [UInt8]
    private var index: Int
    /// The names of the elements open, innermost last.
    private var open: [String] = []
    private var sawRoot = false
    private var sawDocumentType = false
    /// The end of an empty-element tag, given as the next event.
    private var pendingEnd: String?

    /// Checks that `data` is UTF-8 text without the control characters XML forbids, and reads the
    /// XML declaration, if any.
    ///
    /// - Throws: ``Malformed`` naming the first byte that is not UTF-8 or not allowed, or a
    ///   declaration that names another encoding.
    init(_ data: Data) throws(Malformed) {
        var bytes = [UInt8](data)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        self.bytes = bytes
        self.index = 0
        try checkCharacters()
        if startsWith("<?xml"), index + 5 < bytes.count, Self.isSpace(bytes[index + 5]) {
            try readDeclaration()
        }
    }

    /// The next event, or `nil` at the end of a well-formed document.
    ///
    /// - Throws: ``Malformed`` at the first thing that is not well-formed, naming its line and
    ///   column; a document is read no further after it.
    mutating func next() throws(Malformed) -> Event? {
        if let name = pendingEnd {
            pendingEnd = nil
            open.removeLast()
            return .end(name)
        }
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "<") else {
                let start = index
                while index < bytes.count, bytes[index] != UInt8(ascii: "<") { index += 1 }
                if open.isEmpty {
                    guard bytes[start..<index].allSatisfy(Self.isSpace) else {
                        throw failure("text outside the root element", at: start)
                    }
                    continue
                }
                // Within the text only: a search to the document's end for each text made reading
                // quadratic in its length.
                if let end = find("]]>", from: start, before: index) { throw failure("']]>' in character data", at: end) }
                return .text(try decode(start..<index, inAttribute: false))
            }
            if startsWith("<!--") {
                try skipComment()
            } else if startsWith("<?") {
                try skipProcessingInstruction()
            } else if startsWith("<![CDATA[") {
                guard !open.isEmpty else { throw failure("a CDATA section outside the root element", at: index) }
                let start = index + 9
                guard let end = find("]]>", from: start) else { throw failure("a CDATA section that does not end", at: index) }
                index = end + 3
                return .text(Self.normalizingLineEnds(bytes[start..<end]))
            } else if startsWith("<!DOCTYPE") {
                guard !sawRoot, !sawDocumentType else { throw failure("a document type declaration after the start", at: index) }
                sawDocumentType = true
                try skipDocumentType()
            } else if startsWith("<!") {
                throw failure("markup that is not a comment, a CDATA section or a document type declaration", at: index)
            } else if startsWith("</") {
                return .end(try readEndTag())
            } else {
                return try readStartTag()
            }
        }
        if let name = open.last { throw failure("element <\(name)> is not closed at the end of the file", at: index) }
        guard sawRoot else { throw failure("no root element", at: index) }
        return nil
    }

    // MARK: - Tags

    private mutating func readStartTag() throws(Malformed) -> Event {
        let tagStart = index
        guard !sawRoot || !open.isEmpty else { throw failure("a second root element", at: tagStart) }
        index += 1
        let name = try readName("an element name")
        var attributes: [String: String] = [:]
        while true {
            let hadSpace = skipSpaces()
            guard index < bytes.count else { throw failure("tag <\(name)> does not end", at: tagStart) }
            if bytes[index] == UInt8(ascii: ">") {
                index += 1
                break
            }
            if startsWith("/>") {
                index += 2
                pendingEnd = name
                break
            }
            guard hadSpace else { throw failure("no space before an attribute of <\(name)>", at: index) }
            let attributeStart = index
            let attribute = try readName("an attribute name of <\(name)>")
            skipSpaces()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                throw failure("attribute \(attribute) of <\(name)> has no value", at: index)
            }
            index += 1
            skipSpaces()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
                throw failure("the value of attribute \(attribute) of <\(name)> is not quoted", at: index)
            }
            let quote = bytes[index]
            let valueStart = index + 1
            var valueEnd = valueStart
            while valueEnd < bytes.count, bytes[valueEnd] != quote {
                guard bytes[valueEnd] != UInt8(ascii: "<") else {
                    throw failure("a '<' in the value of attribute \(attribute) of <\(name)>", at: valueEnd)
                }
                valueEnd += 1
            }
            guard valueEnd < bytes.count else { throw failure("the value of attribute \(attribute) of <\(name)> does not end", at: index) }
            index = valueEnd + 1
            guard attributes[attribute] == nil else { throw failure("attribute \(attribute) given twice in <\(name)>", at: attributeStart) }
            attributes[attribute] = try decode(valueStart..<valueEnd, inAttribute: true)
        }
        open.append(name)
        sawRoot = true
        return .start(name, attributes: attributes)
    }

    private mutating func readEndTag() throws(Malformed) -> String {
        let tagStart = index
        index += 2
        let name = try readName("an element name")
        skipSpaces()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ">") else { throw failure("end tag </\(name)> does not end", at: tagStart) }
        index += 1
        guard let innermost = open.last else { throw failure("end tag </\(name)> with no element open", at: tagStart) }
        guard innermost == name else { throw failure("end tag </\(name)> where <\(innermost)> is open", at: tagStart) }
        open.removeLast()
        return name
    }

    /// A name: a letter, `_`, `:` or a character beyond ASCII, then any of those, digits, `-` and `.`.
    private mutating func readName(_ what: String) throws(Malformed) -> String {
        let start = index
        guard index < bytes.count, Self.startsName(bytes[index]) else { throw failure("\(what) expected", at: index) }
        index += 1
        while index < bytes.count, Self.continuesName(bytes[index]) { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    // MARK: - What is skipped

    /// The XML declaration: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`, whose
    /// pseudo-attributes are read as attributes are.
    private mutating func readDeclaration() throws(Malformed) {
        let start = index
        index += 5
        while true {
            skipSpaces()
            if startsWith("?>") {
                index += 2
                return
            }
            let name = try readName("a pseudo-attribute of the XML declaration")
            skipSpaces()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                throw failure("the XML declaration does not end", at: start)
            }
            index += 1
            skipSpaces()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'"),
                let end = bytes[(index + 1)...].firstIndex(of: bytes[index])
            else {
                throw failure("the XML declaration does not end", at: start)
            }
            let value = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
            index = end + 1
            if name == "encoding", !["utf-8", "utf8"].contains(value.lowercased()) {
                throw failure("the XML declaration names encoding \(value), not UTF-8", at: start)
            }
        }
    }

    private mutating func skipComment() throws(Malformed) {
        guard let end = find("--", from: index + 4) else { throw failure("a comment that does not end", at: index) }
        guard end + 2 < bytes.count, bytes[end + 2] == UInt8(ascii: ">") else { throw failure("'--' inside a comment", at: end) }
        index = end + 3
    }

    /// `<?target data?>`; another XML declaration is refused.
    private mutating func skipProcessingInstruction() throws(Malformed) {
        let start = index
        index += 2
        let target = try readName("a processing instruction's target")
        guard target.lowercased() != "xml" else { throw failure("an XML declaration after the start of the file", at: start) }
        guard startsWith("?>") || (index < bytes.count && Self.isSpace(bytes[index])) else {
            throw failure("no space after the processing instruction's target \(target)", at: index)
        }
        guard let end = find("?>", from: index) else { throw failure("a processing instruction that does not end", at: start) }
        index = end + 2
    }

    /// `<!DOCTYPE name SYSTEM "..." >`, its quoted strings passed over whole. An internal subset
    /// (`[...]`) is refused: what it declares (entities, attribute defaults) would change what the
    /// elements read as, and Xcode writes none.
    private mutating func skipDocumentType() throws(Malformed) {
        let start = index
        index += 9
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                guard let end = bytes[(index + 1)...].firstIndex(of: byte) else { break }
                index = end + 1
                continue
            }
            if byte == UInt8(ascii: "[") {
                throw failure("a document type declaration with an internal subset, which is not read", at: index)
            }
            index += 1
            if byte == UInt8(ascii: ">") { return }
        }
        throw failure("a document type declaration that does not end", at: start)
    }

    // MARK: - Characters

    /// Refuses bytes that are not UTF-8, and the control characters XML does not allow (all
    /// below U+0020 but tab, line feed and carriage return), in one pass.
    private func checkCharacters() throws(Malformed) {
        let problem: (offset: Int, control: UInt8?)? = bytes.withUnsafeBufferPointer { buffer in
            var offset = 0
            while offset < buffer.count {
                let lead = buffer[offset]
                if lead < 0x80 {
                    if lead < 0x20, lead != 0x09, lead != 0x0A, lead != 0x0D { return (offset, lead) }
                    offset += 1
                    continue
                }
                // The length a lead byte gives, and the range its second byte must lie in, which
                // refuses overlong forms, UTF-16 surrogates and scalars past U+10FFFF.
                let length: Int, low: UInt8, high: UInt8
                switch lead {
                case 0xC2...0xDF: (length, low, high) = (2, 0x80, 0xBF)
                case 0xE0: (length, low, high) = (3, 0xA0, 0xBF)
                case 0xED: (length, low, high) = (3, 0x80, 0x9F)
                case 0xE1...0xEF: (length, low, high) = (3, 0x80, 0xBF)
                case 0xF0: (length, low, high) = (4, 0x90, 0xBF)
                case 0xF4: (length, low, high) = (4, 0x80, 0x8F)
                case 0xF1...0xF3: (length, low, high) = (4, 0x80, 0xBF)
                default: return (offset, nil)
                }
                guard offset + length <= buffer.count, buffer[offset + 1] >= low, buffer[offset + 1] <= high else { return (offset, nil) }
                for next in (offset + 2)..<(offset + length) where buffer[next] & 0xC0 != 0x80 { return (offset, nil) }
                offset += length
            }
            return nil
        }
        guard let problem else { return }
        if let control = problem.control { throw failure("control character \(control) is not allowed in XML", at: problem.offset) }
        throw failure("the file is not UTF-8 text", at: problem.offset)
    }

    /// Character data or an attribute's value with its references resolved and its line ends as
    /// `\n` (in an attribute, every tab and line end as a space, as XML normalizes them).
    private func decode(_ range: Range<Int>, inAttribute: Bool) throws(Malformed) -> String {
        let slice = bytes[range]
        let special: (UInt8) -> Bool =
            inAttribute
            ? { $0 == UInt8(ascii: "&") || $0 == 0x0D || $0 == 0x0A || $0 == 0x09 }
            : { $0 == UInt8(ascii: "&") || $0 == 0x0D }
        guard slice.contains(where: special) else { return String(decoding: slice, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(slice.count)
        var position = range.lowerBound
        while position < range.upperBound {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "&"):
                guard let semicolon = bytes[position..<range.upperBound].firstIndex(of: UInt8(ascii: ";")) else {
                    throw failure("an '&' that starts no reference", at: position)
                }
                let scalar = try reference(String(decoding: bytes[(position + 1)..<semicolon], as: UTF8.self), at: position)
                out.append(contentsOf: String(scalar).utf8)
                position = semicolon + 1
            case 0x0D:
                // CR LF and a lone CR are one line end.
                out.append(inAttribute ? 0x20 : 0x0A)
                position += position + 1 < range.upperBound && bytes[position + 1] == 0x0A ? 2 : 1
            case 0x0A where inAttribute, 0x09 where inAttribute:
                out.append(0x20)
                position += 1
            default:
                out.append(byte)
                position += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The character `&name;` stands for: one of the five predefined entities, or a character
    /// reference (`&#38;`, `&#x26;`) to a character XML allows.
    private func reference(_ name: String, at position: Int) throws(Malformed) -> Unicode.Scalar {
        switch name {
        case "lt": return "<"
        case "gt": return ">"
        case "amp": return "&"
        case "apos": return "'"
        case "quot": return "\""
        default: break
        }
        var digits = Substring(name)
        var radix = 10
        guard digits.first == "#" else { throw failure("reference &\(name.prefix(40)); to an entity that is not declared", at: position) }
        digits = digits.dropFirst()
        if digits.first == "x" {
            digits = digits.dropFirst()
            radix = 16
        }
        let significant = digits.drop { $0 == "0" }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isHexDigit && (radix == 16 || $0.isNumber) }), significant.count <= 8,
            let value = significant.isEmpty ? 0 : UInt32(significant, radix: radix), let scalar = Unicode.Scalar(value),
            value == 0x09 || value == 0x0A || value == 0x0D || (value >= 0x20 && value != 0xFFFE && value != 0xFFFF)
        else {
            throw failure("character reference &\(name.prefix(40)); is not to a character XML allows", at: position)
        }
        return scalar
    }

    private static func normalizingLineEnds(_ slice: ArraySlice<UInt8>) -> String {
        guard slice.contains(0x0D) else { return String(decoding: slice, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(slice.count)
        var previous: UInt8 = 0
        for byte in slice {
            if byte == 0x0A, previous == 0x0D {
                previous = byte
                continue
            }
            out.append(byte == 0x0D ? 0x0A : byte)
            previous = byte
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: - Bytes

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    private static func startsName(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte >= 0x80
    }

    private static func continuesName(_ byte: UInt8) -> Bool {
        startsName(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".")
    }

    @discardableResult
    private mutating func skipSpaces() -> Bool {
        let start = index
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
        return index > start
    }

    private func startsWith(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        return text.withUTF8Buffer { prefix in
            for offset in 0..<count where bytes[index + offset] != prefix[offset] { return false }
            return true
        }
    }

    /// The offset of the next `text` at or after `start` that ends at or before `end` (the
    /// document's end where `nil`).
    private func find(_ text: StaticString, from start: Int, before end: Int? = nil) -> Int? {
        let end = min(end ?? bytes.count, bytes.count)
        return text.withUTF8Buffer { needle -> Int? in
            guard let first = needle.first, start + needle.count <= end else { return nil }
            var position = start
            while position + needle.count <= end {
                guard let candidate = bytes[position...(end - needle.count)].firstIndex(of: first) else { return nil }
                if (1..<needle.count).allSatisfy({ bytes[candidate + $0] == needle[$0] }) { return candidate }
                position = candidate + 1
            }
            return nil
        }
    }

    private func failure(_ message: String, at offset: Int) -> Malformed {
        let end = min(offset, bytes.count)
        let (line, lineStart) = bytes.withUnsafeBufferPointer { buffer in
            var line = 1, lineStart = 0
            for position in 0..<end where buffer[position] == 0x0A {
                line += 1
                lineStart = position + 1
            }
            return (line, lineStart)
        }
        let column = String(decoding: bytes[lineStart..<end], as: UTF8.self).count + 1
        return Malformed(message: message, line: line, column: column)
    }
}
