/// CRC-32C (Castagnoli, reflected polynomial `0x82F63B78`), the checksum of every journal frame,
/// header and segment.
///
/// Initial value `0xFFFFFFFF`, final XOR `0xFFFFFFFF`: the CRC-32C of the ASCII bytes
/// `123456789` is `0xE3069283`. Computed slicing-by-8 in software so the journal needs no
/// hardware feature and gives the same value on every machine.
package enum CRC32C {
    /// The checksum of `bytes`.
    package static func checksum<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt32 {
        var crc = Checksum()
        crc.update(bytes)
        return crc.value
    }

    /// An incremental CRC-32C over several pieces.
    package struct Checksum: Sendable {
        private var state: UInt32 = 0xFFFF_FFFF

        /// Starts an empty checksum.
        package init() {}

        /// Adds `bytes` to the checksum.
        package mutating func update<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
            let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
                update(UnsafeRawBufferPointer(buffer))
            }
            if done == nil {
                let copy = Array(bytes)
                copy.withUnsafeBytes { update($0) }
            }
        }

        /// Adds the bytes of `buffer` to the checksum.
        package mutating func update(_ buffer: UnsafeRawBufferPointer) {
            var crc = state
            var index = 0
            let count = buffer.count
            let table = CRC32C.table
            while count - index >= 8 {
                let one = crc ^ LittleEndian.read(UInt32.self, in: buffer, at: index)
                let two = LittleEndian.read(UInt32.self, in: buffer, at: index + 4)
                crc =
                    table[7 * 256 + Int(one & 0xFF)]
                    ^ table[6 * 256 + Int((one >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((one >> 16) & 0xFF)]
                    ^ table[4 * 256 + Int(one >> 24)]
                    ^ table[3 * 256 + Int(two & 0xFF)]
                    ^ table[2 * 256 + Int((two >> 8) & 0xFF)]
                    ^ table[1 * 256 + Int((two >> 16) & 0xFF)]
                    ^ table[Int(two >> 24)]
                index += 8
            }
            while index < count {
                crc = table[Int((crc ^ UInt32(buffer[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
            state = crc
        }

        /// The checksum of everything added so far.
        package var value: UInt32 { state ^ 0xFFFF_FFFF }
    }

    /// Eight 256-entry tables for slicing-by-8; table 0 is the classic byte-at-a-time table.
    private static let table: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 {
                crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1
            }
            table[byte] = crc
        }
        for slice in 1..<8 {
            for byte in 0..<256 {
                let previous = table[(slice - 1) * 256 + byte]
                table[slice * 256 + byte] = (previous >> 8) ^ table[Int(previous & 0xFF)]
            }
        }
        return table
    }()
}
