/// Unsigned LEB128 varints: seven bits a byte, least significant group first, the high bit set on
/// every byte but the last. A `UInt64` takes 1 to 10 bytes.
enum Varint {
    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Decodes one varint at `offset` in `buffer` and moves `offset` past it; `nil` when the
    /// buffer ends inside the varint or the varint is longer than ten bytes.
    @inline(__always)
    static func decode(_ buffer: UnsafeBufferPointer<UInt8>, at offset: inout Int) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < buffer.count {
            let byte = buffer[offset]
            offset += 1
            if shift == 63 && byte > 1 { return nil }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }
}
