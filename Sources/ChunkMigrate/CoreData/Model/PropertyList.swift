import Foundation

/// A property-list value as the binary format (`bplist00`) holds it, with the one type Foundation
/// does not hand out readably: the `UID` of an `NSKeyedArchiver` archive (an object's index in
/// `$objects`).
///
/// Foundation's `PropertyListSerialization` reads a keyed archive's UIDs as a private type
/// (`_NSKeyedArchiverUID` on Linux, `__NSCFType` on Apple platforms) with no public way to get the
/// index, so a Core Data model archive (a store's `Z_MODELCACHE`, a compiled `.mom`) is read and
/// written with this small codec instead. The format:
/// https://opensource.apple.com/source/CF/CF-1153.18/CFBinaryPList.c
enum PropertyList: Equatable, Sendable {
    case dictionary([String: PropertyList])
    case array([PropertyList])
    case string(String)
    case integer(Int64)
    case real(Double)
    case bool(Bool)
    /// Seconds since 2001-01-01 00:00:00 UTC.
    case date(Double)
    case data([UInt8])
    /// A keyed archive's reference to `$objects[index]`.
    case uid(Int)

    /// What went wrong reading a property list: where, and why.
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    var dictionary: [String: PropertyList]? { if case let .dictionary(value) = self { return value }; return nil }
    var array: [PropertyList]? { if case let .array(value) = self { return value }; return nil }
    var string: String? { if case let .string(value) = self { return value }; return nil }
    var uid: Int? { if case let .uid(value) = self { return value }; return nil }
    var integer: Int64? {
        switch self {
        case let .integer(value): value
        case let .bool(value): value ? 1 : 0
        default: nil
        }
    }
    var bool: Bool? {
        switch self {
        case let .bool(value): value
        case let .integer(value): value != 0
        default: nil
        }
    }

    subscript(key: String) -> PropertyList? { dictionary?[key] }
}

// MARK: - Reading

extension PropertyList {
    /// Reads a binary property list.
    ///
    /// - Throws: ``Malformed`` naming the offset or object that cannot be read; never reads out
    ///   of bounds, and refuses reference cycles.
    init(binary bytes: [UInt8]) throws {
        var reader = BinaryReader(bytes: bytes)
        self = try reader.readTop()
    }
}

private struct BinaryReader {
    let bytes: [UInt8]
    var offsets: [Int] = []
    var referenceSize = 0
    /// The objects being read, by index, and how many: a collection met again inside itself is a cycle.
    var inProgress: [Bool] = []
    var depth = 0
    /// Objects already read, by index: a value referred to many times is read once (an archive
    /// of shared objects cannot make the reader work exponentially).
    var decoded: [PropertyList?] = []
    /// Objects already read, by where they start: object indexes whose offsets point at the same
    /// bytes share one value (its storage shared too), so that a list of many indexes of one large
    /// string or data object costs that object once, not once an index.
    var decodedAt: [Int: PropertyList] = [:]
    /// Collections nest at most this deep (keyed archives nest three or four deep).
    static let maximumDepth = 256

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func readTop() throws -> PropertyList {
        guard bytes.count >= 40, Array(bytes[0..<6]) == Array("bplist".utf8) else {
            throw PropertyList.Malformed(description: "not a binary property list (no bplist header)")
        }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        referenceSize = Int(bytes[trailer + 7])
        let count = try integer(at: trailer + 8, size: 8)
        let top = try integer(at: trailer + 16, size: 8)
        let table = try integer(at: trailer + 24, size: 8)
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize), count > 0, count < bytes.count,
            top < count, table >= 8, table <= trailer, count * offsetSize <= trailer - table
        else {
            throw PropertyList.Malformed(description: "binary property list: the trailer is inconsistent")
        }
        offsets.reserveCapacity(count)
        for index in 0..<count { offsets.append(try integer(at: table + index * offsetSize, size: offsetSize)) }
        inProgress = Array(repeating: false, count: count)
        decoded = Array(repeating: nil, count: count)
        return try object(top)
    }

    func integer(at offset: Int, size: Int) throws -> Int {
        guard offset >= 0, size > 0, size <= 8, offset <= bytes.count - size else {
            throw PropertyList.Malformed(description: "binary property list: offset \(offset) is past the end")
        }
        // An index loop, not a slice's iterator: this runs for every reference of a large archive.
        var value: UInt64 = 0
        var index = offset
        while index < offset + size {
            value = value << 8 | UInt64(bytes[index])
            index += 1
        }
        guard value <= UInt64(Int.max) else {
            throw PropertyList.Malformed(description: "binary property list: a size or offset at \(offset) is too large")
        }
        return Int(value)
    }

    /// The length of an object whose marker's low nibble is `nibble`, and where its content starts.
    func length(nibble: UInt8, after marker: Int) throws -> (Int, Int) {
        guard nibble == 0xF else { return (Int(nibble), marker + 1) }
        guard marker + 1 < bytes.count, bytes[marker + 1] & 0xF0 == 0x10 else {
            throw PropertyList.Malformed(description: "binary property list: object at \(marker) has a malformed length")
        }
        let size = 1 << Int(bytes[marker + 1] & 0x0F)
        guard size <= 8 else {
            throw PropertyList.Malformed(description: "binary property list: object at \(marker) has a length of \(size) bytes")
        }
        return (try integer(at: marker + 2, size: size), marker + 2 + size)
    }

    func slice(_ start: Int, _ count: Int) throws -> ArraySlice<UInt8> {
        guard start >= 0, count >= 0, start <= bytes.count, count <= bytes.count - start else {
            throw PropertyList.Malformed(description: "binary property list: object at \(start) runs past the end")
        }
        return bytes[start..<start + count]
    }

    mutating func object(_ index: Int) throws -> PropertyList {
        guard index >= 0, index < offsets.count else {
            throw PropertyList.Malformed(description: "binary property list: reference \(index) is not an object")
        }
        if let known = decoded[index] { return known }
        if let known = decodedAt[offsets[index]] {
            decoded[index] = known
            return known
        }
        guard depth < Self.maximumDepth else {
            throw PropertyList.Malformed(description: "binary property list: collections nest more than \(Self.maximumDepth) deep")
        }
        guard !inProgress[index] else {
            throw PropertyList.Malformed(description: "binary property list: object \(index) contains itself")
        }
        inProgress[index] = true
        depth += 1
        defer {
            inProgress[index] = false
            depth -= 1
        }
        let value = try read(index)
        decoded[index] = value
        decodedAt[offsets[index]] = value
        return value
    }

    mutating func read(_ index: Int) throws -> PropertyList {
        let at = offsets[index]
        guard at < bytes.count else {
            throw PropertyList.Malformed(description: "binary property list: object \(index) starts past the end")
        }
        let marker = bytes[at], nibble = marker & 0x0F
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            default: throw PropertyList.Malformed(description: "binary property list: object \(index) has marker \(marker), not read")
            }
        case 0x1:
            let size = 1 << Int(nibble)
            let raw = try slice(at + 1, size)
            var value: UInt64 = 0
            for byte in raw { value = value << 8 | UInt64(byte) }
            // 1, 2 and 4-byte integers are unsigned, 8-byte ones signed, 16-byte ones keep the low 8.
            return .integer(Int64(bitPattern: value))
        case 0x2:
            let size = 1 << Int(nibble)
            let raw = try slice(at + 1, size)
            var value: UInt64 = 0
            for byte in raw { value = value << 8 | UInt64(byte) }
            switch size {
            case 4: return .real(Double(Float(bitPattern: UInt32(truncatingIfNeeded: value))))
            case 8: return .real(Double(bitPattern: value))
            default: throw PropertyList.Malformed(description: "binary property list: object \(index) is a real of \(size) bytes")
            }
        case 0x3:
            let raw = try slice(at + 1, 8)
            return .date(Double(bitPattern: raw.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }))
        case 0x4:
            let (count, start) = try length(nibble: nibble, after: at)
            return .data(Array(try slice(start, count)))
        case 0x5:
            let (count, start) = try length(nibble: nibble, after: at)
            guard let text = String(bytes: try slice(start, count), encoding: .ascii) else {
                throw PropertyList.Malformed(description: "binary property list: object \(index) is not ASCII")
            }
            return .string(text)
        case 0x6:
            let (count, start) = try length(nibble: nibble, after: at)
            guard count <= bytes.count / 2 else {
                throw PropertyList.Malformed(description: "binary property list: object \(index) is longer than the list")
            }
            let raw = try slice(start, count * 2)
            var units: [UInt16] = []
            units.reserveCapacity(count)
            var i = raw.startIndex
            while i < raw.endIndex { units.append(UInt16(raw[i]) << 8 | UInt16(raw[i + 1])); i += 2 }
            return .string(String(decoding: units, as: UTF16.self))
        case 0x8:
            return .uid(try integer(at: at + 1, size: Int(nibble) + 1))
        case 0xA:
            let (count, start) = try length(nibble: nibble, after: at)
            return .array(try references(start, count).map { try object($0) })
        case 0xD:
            let (count, start) = try length(nibble: nibble, after: at)
            let keys = try references(start, count)
            let values = try references(start + count * referenceSize, count)
            var result: [String: PropertyList] = [:]
            result.reserveCapacity(count)
            for position in 0..<count {
                guard case let .string(name) = try object(keys[position]) else {
                    throw PropertyList.Malformed(description: "binary property list: dictionary \(index) has a key that is not a string")
                }
                result[name] = try object(values[position])
            }
            return .dictionary(result)
        default:
            throw PropertyList.Malformed(
                description: "binary property list: object \(index) has marker \(String(marker, radix: 16)), not read")
        }
    }

    func references(_ start: Int, _ count: Int) throws -> [Int] {
        guard count >= 0, count <= bytes.count else {
            throw PropertyList.Malformed(description: "binary property list: a collection at \(start) is too long")
        }
        var result: [Int] = []
        result.reserveCapacity(count)
        for index in 0..<count { result.append(try integer(at: start + index * referenceSize, size: referenceSize)) }
        return result
    }
}

// MARK: - Writing

extension PropertyList {
    /// The binary property list (`bplist00`) of this value: every object written once per
    /// occurrence (no sharing of equal values), dictionary keys in sorted order, so equal values
    /// give equal bytes.
    func binary() -> [UInt8] {
        var writer = BinaryWriter()
        writer.flatten(self)
        return writer.finish()
    }
}

private struct BinaryWriter {
    /// The objects in the order written, each as its encoded body with references left as
    /// object indexes (filled in once the reference size is known).
    enum Body { case bytes([UInt8]); case collection(marker: UInt8, count: Int, references: [Int]) }
    var bodies: [Body] = []

    @discardableResult
    mutating func flatten(_ value: PropertyList) -> Int {
        let index = bodies.count
        bodies.append(.bytes([]))
        switch value {
        case let .bool(flag):
            bodies[index] = .bytes([flag ? 0x09 : 0x08])
        case let .integer(number):
            if number >= 0 && number <= 0xFF {
                bodies[index] = .bytes([0x10, UInt8(number)])
            } else if number >= 0 && number <= 0xFFFF {
                bodies[index] = .bytes([0x11] + Self.bigEndian(UInt64(number), 2))
            } else if number >= 0 && number <= 0xFFFF_FFFF {
                bodies[index] = .bytes([0x12] + Self.bigEndian(UInt64(number), 4))
            } else {
                bodies[index] = .bytes([0x13] + Self.bigEndian(UInt64(bitPattern: number), 8))
            }
        case let .real(number):
            bodies[index] = .bytes([0x23] + Self.bigEndian(number.bitPattern, 8))
        case let .date(seconds):
            bodies[index] = .bytes([0x33] + Self.bigEndian(seconds.bitPattern, 8))
        case let .data(raw):
            bodies[index] = .bytes(Self.header(0x4, raw.count) + raw)
        case let .string(text):
            if text.utf8.allSatisfy({ $0 < 0x80 }) {
                bodies[index] = .bytes(Self.header(0x5, text.utf8.count) + Array(text.utf8))
            } else {
                let units = Array(text.utf16)
                bodies[index] = .bytes(Self.header(0x6, units.count) + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
            }
        case let .uid(reference):
            let size = reference <= 0xFF ? 1 : reference <= 0xFFFF ? 2 : 4
            bodies[index] = .bytes([0x80 | UInt8(size - 1)] + Self.bigEndian(UInt64(reference), size))
        case let .array(elements):
            let references = elements.map { flatten($0) }
            bodies[index] = .collection(marker: 0xA, count: elements.count, references: references)
        case let .dictionary(entries):
            let keys = entries.keys.sorted()
            let keyReferences = keys.map { flatten(.string($0)) }
            let valueReferences = keys.map { flatten(entries[$0]!) }
            bodies[index] = .collection(marker: 0xD, count: keys.count, references: keyReferences + valueReferences)
        }
        return index
    }

    func finish() -> [UInt8] {
        let referenceSize = bodies.count <= 0xFF ? 1 : bodies.count <= 0xFFFF ? 2 : 4
        var output = Array("bplist00".utf8)
        var offsets: [Int] = []
        for body in bodies {
            offsets.append(output.count)
            switch body {
            case let .bytes(raw):
                output += raw
            case let .collection(marker, count, references):
                output += Self.header(marker, count)
                for reference in references { output += Self.bigEndian(UInt64(reference), referenceSize) }
            }
        }
        let table = output.count
        let offsetSize = table <= 0xFF ? 1 : table <= 0xFFFF ? 2 : table <= 0xFFFF_FFFF ? 4 : 8
        for offset in offsets { output += Self.bigEndian(UInt64(offset), offsetSize) }
        output += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
        output += Self.bigEndian(UInt64(bodies.count), 8) + Self.bigEndian(0, 8) + Self.bigEndian(UInt64(table), 8)
        return output
    }

    static func header(_ kind: UInt8, _ count: Int) -> [UInt8] {
        if count < 15 { return [kind << 4 | UInt8(count)] }
        let size = count <= 0xFF ? 1 : count <= 0xFFFF ? 2 : 4
        let exponent: UInt8 = size == 1 ? 0 : size == 2 ? 1 : 2
        return [kind << 4 | 0xF, 0x10 | exponent] + bigEndian(UInt64(count), size)
    }

    static func bigEndian(_ value: UInt64, _ size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(size - 1 - $0))) }
    }
}
