/// Reads the little-endian integers every journal file is made of (see `FORMAT.md`: "every
/// multi-byte integer is little-endian"): the one place that assembles an integer from bytes.
///
/// ```swift
/// let version = LittleEndian.read(UInt16.self, in: bytes, at: 4)
/// let crc = LittleEndian.trailingUInt32(of: bytes)   // a header's or segment's CRC-32C
/// ```
package enum LittleEndian {
    /// The `T` stored at `offset` in `bytes`, which must hold all of its bytes.
    @inline(__always)
    package static func read<T: FixedWidthInteger>(_ type: T.Type, in bytes: UnsafeRawBufferPointer, at offset: Int) -> T {
        precondition(
            offset >= 0 && offset <= bytes.count - MemoryLayout<T>.size,
            "\(T.self) at offset \(offset) is past the end of \(bytes.count) bytes")
        return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// The `T` stored at `offset` in `bytes`, which must hold all of its bytes.
    @inline(__always)
    package static func read<T: FixedWidthInteger>(_ type: T.Type, in bytes: [UInt8], at offset: Int) -> T {
        bytes.withUnsafeBytes { read(type, in: $0, at: offset) }
    }

    /// The `u32` in the last four bytes: the CRC-32C that ends a header or segment file.
    package static func trailingUInt32(of bytes: [UInt8]) -> UInt32 {
        read(UInt32.self, in: bytes, at: bytes.count - 4)
    }
}
