/// Appends little-endian integers, LEB128 varints and byte strings to a byte array.
///
/// Every multi-byte integer in the journal is little-endian; see `FORMAT.md`.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    mutating func u8(_ value: UInt8) { bytes.append(value) }

    mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    mutating func u32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift)))
        }
    }

    mutating func u64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }

    mutating func varint(_ value: UInt64) { Varint.append(value, to: &bytes) }

    /// A UTF-8 string prefixed by its byte length as a `u32`.
    mutating func string(_ value: String) {
        let utf8 = Array(value.utf8)
        u32(UInt32(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    mutating func raw<Bytes: Sequence<UInt8>>(_ other: Bytes) { bytes.append(contentsOf: other) }
}

/// Reads what ``ByteWriter`` wrote; every read checks the remaining length and throws
/// ``ByteReader/Truncated`` instead of reading past the end.
struct ByteReader {
    struct Truncated: Error {
        var offset: Int
        var needed: Int
    }

    let bytes: [UInt8]
    private(set) var offset: Int
    let end: Int

    init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        self.offset = start
        self.end = end ?? bytes.count
    }

    var remaining: Int { end - offset }
    var isAtEnd: Bool { offset >= end }

    private mutating func take(_ count: Int) throws(Truncated) -> Int {
        guard count >= 0, end - offset >= count else { throw Truncated(offset: offset, needed: count) }
        let start = offset
        offset += count
        return start
    }

    mutating func u8() throws(Truncated) -> UInt8 {
        bytes[try take(1)]
    }

    mutating func u16() throws(Truncated) -> UInt16 {
        LittleEndian.read(UInt16.self, in: bytes, at: try take(2))
    }

    mutating func u32() throws(Truncated) -> UInt32 {
        LittleEndian.read(UInt32.self, in: bytes, at: try take(4))
    }

    mutating func u64() throws(Truncated) -> UInt64 {
        LittleEndian.read(UInt64.self, in: bytes, at: try take(8))
    }

    mutating func i64() throws(Truncated) -> Int64 { Int64(bitPattern: try u64()) }

    mutating func string() throws(Truncated) -> String {
        let length = Int(try u32())
        let at = try take(length)
        return String(decoding: bytes[at..<(at + length)], as: UTF8.self)
    }

    mutating func slice(_ count: Int) throws(Truncated) -> ArraySlice<UInt8> {
        let at = try take(count)
        return bytes[at..<(at + count)]
    }
}
