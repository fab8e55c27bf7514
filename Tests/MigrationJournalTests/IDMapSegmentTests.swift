import MigrationJournal
import Testing

@Suite("ID-map segments")
struct IDMapSegmentTests {
    /// Encodes, decodes, and checks that nothing changed.
    @discardableResult
    func roundTrip(
        _ keys: [Int64], mapping: IDMapSegment.Mapping = .allocate, base: Int64 = 1001,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [UInt8] {
        let segment = try IDMapSegment(entity: 3, batch: 42, mapping: mapping, destinationBase: base, sourceKeys: keys)
        let bytes = segment.encoded()
        let decoded = try IDMapSegment.decode(bytes, file: "42.seg")
        #expect(decoded == segment, sourceLocation: sourceLocation)
        #expect(decoded.sourceKeys == keys, sourceLocation: sourceLocation)
        #expect(decoded.entity == 3 && decoded.batch == 42 && decoded.mapping == mapping, sourceLocation: sourceLocation)
        #expect(decoded.destinationBase == (mapping == .preserve ? keys[0] : base), sourceLocation: sourceLocation)
        #expect(segment.encoded() == bytes, "encoding is deterministic", sourceLocation: sourceLocation)
        return bytes
    }

    /// The encoding byte of an encoded segment.
    func encoding(_ bytes: [UInt8]) -> IDMapSegment.Encoding? { IDMapSegment.Encoding(rawValue: bytes[6]) }

    @Test("A dense run has no payload: 56 header bytes and a 4-byte CRC")
    func dense() throws {
        let bytes = try roundTrip(Array(1...10_000))
        #expect(bytes.count == 60)
        #expect(encoding(bytes) == .dense)
        #expect(try roundTrip(Array(-5_000...4_999)).count == 60, "a dense run crossing zero")
        #expect(try roundTrip(Array((Int64.max - 99)...Int64.max)).count == 60)
        #expect(try roundTrip(Array(Int64.min...(Int64.min + 99))).count == 60)
    }

    @Test("A single key is a dense run of one")
    func singleKey() throws {
        for key: Int64 in [0, 1, -1, Int64.min, Int64.max, 123_456_789] {
            let bytes = try roundTrip([key])
            #expect(bytes.count == 60)
            #expect(encoding(bytes) == .dense)
        }
    }

    @Test("Sparse keys round-trip, compressed when LZ4 helps")
    func sparse() throws {
        let gapsOfThree = sparseKeys(10_000, from: 1, gaps: 1...5, seed: 1)
        let bytes = try roundTrip(gapsOfThree)
        #expect(encoding(bytes) == .varintLZ4)
        #expect(bytes.count < 60 + 10_000, "LZ4 beats one varint byte a key")
        let wide = sparseKeys(2_000, from: 10, gaps: 1...100_000, seed: 2)
        try roundTrip(wide)
        // Two keys, one gap.
        #expect(encoding(try roundTrip([5, 7])) == .varint)
    }

    @Test("Negative keys and keys crossing zero")
    func negativeKeys() throws {
        try roundTrip(sparseKeys(3_000, from: -1_000_000, gaps: 1...7, seed: 3).map { $0 })
        try roundTrip(sparseKeys(3_000, from: -5_000, gaps: 1...4, seed: 4))
        try roundTrip([-3, -1, 0, 2, 5])
        try roundTrip([-1, 1])
    }

    @Test("The extremes of a 64-bit key")
    func extremes() throws {
        try roundTrip([Int64.min, Int64.max])
        try roundTrip([Int64.min, -1, 0, Int64.max])
        try roundTrip([Int64.min, Int64.min + 2, Int64.max - 2, Int64.max])
        try roundTrip([Int64.min + 1, Int64.max - 1])
        // A gap of 2^64 - 2 needs the longest varint: ten bytes.
        let bytes = try roundTrip([Int64.min, Int64.max])
        #expect(bytes.count == 60 + 10)
        try roundTrip([Int64.min, Int64.max], mapping: .allocate, base: Int64.max - 1)
    }

    @Test("Random 64-bit keys")
    func randomKeys() throws {
        for seed: UInt64 in 1...5 {
            let keys = randomSortedKeys(1_000, seed: seed)
            let bytes = try roundTrip(keys)
            #expect(encoding(bytes) == .varint, "random gaps do not compress")
        }
    }

    @Test("Preserve mapping stores the first key as the destination base")
    func preserve() throws {
        try roundTrip(sparseKeys(500, from: 77, gaps: 1...9, seed: 5), mapping: .preserve, base: 0)
        try roundTrip(Array(100...199), mapping: .preserve, base: -9)
        let segment = try IDMapSegment(entity: 0, batch: 1, mapping: .preserve, destinationBase: 5, sourceKeys: [10, 20])
        #expect(segment.destinationBase == 10)
    }

    @Test("Unsorted, duplicate and empty keys are refused")
    func invalidKeys() {
        for keys: [Int64] in [[], [3, 2], [1, 2, 2, 3], [Int64.max, Int64.min], [5, 5]] {
            let error = journalError { try IDMapSegment(entity: 0, batch: 1, mapping: .allocate, destinationBase: 1, sourceKeys: keys) }
            #expect(error?.code == .invalidArgument, "keys \(keys)")
        }
        let overflow = journalError {
            try IDMapSegment(entity: 0, batch: 1, mapping: .allocate, destinationBase: Int64.max, sourceKeys: [1, 2])
        }
        #expect(overflow?.code == .invalidArgument)
    }

    @Test(
        "Every flipped bit and every overwritten byte of a segment is detected",
        arguments: [
            [10, 11, 13, 20, 21, 22, 40, 100, 101, 300] as [Int64],
            Array(stride(from: Int64(0), to: 3_000, by: 3)) + [5_000],
            [7, 8, 9, 10],
        ])
    func everyFlipDetected(keys: [Int64]) throws {
        let bytes = try IDMapSegment(entity: 1, batch: 9, mapping: .allocate, destinationBase: 50, sourceKeys: keys).encoded()
        var checked = 0
        for position in bytes.indices {
            for pattern: UInt8 in [0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF, 0x5A] {
                var damaged = bytes
                damaged[position] ^= pattern
                do {
                    let decoded = try IDMapSegment.decode(damaged, file: "9.seg")
                    Issue.record("byte \(position) ^ \(pattern) decoded to \(decoded.sourceKeys.count) keys")
                } catch {
                    let newer = (4...5).contains(position) && (UInt16(damaged[4]) | UInt16(damaged[5]) << 8) > IDMapSegment.formatVersion
                    #expect(error.code == (newer ? .newerFormat : .damagedSegment), "byte \(position) ^ \(pattern)")
                    #expect(error.file == "9.seg")
                }
                checked += 1
            }
        }
        #expect(checked == bytes.count * 10)
        // Cut short at every length, and lengthened.
        for length in 0..<bytes.count {
            #expect(journalError { try IDMapSegment.decode(Array(bytes.prefix(length)), file: "9.seg") }?.code == .damagedSegment)
        }
        #expect(journalError { try IDMapSegment.decode(bytes + [0], file: "9.seg") }?.code == .damagedSegment)
    }

    @Test("A damaged segment whose CRC was recomputed is still refused when it disagrees with itself")
    func resealedDamage() throws {
        let keys: [Int64] = [10, 12, 15, 16, 30]
        let bytes = try IDMapSegment(entity: 1, batch: 2, mapping: .allocate, destinationBase: 1, sourceKeys: keys).encoded()
        // count (offset 20), first key (24), last key (32), encoding (6), mapping (7), raw length (48)
        for (offset, value) in [(20, UInt8(4)), (20, 6), (24, 11), (32, 31), (6, 0), (6, 2), (6, 9), (7, 5), (48, 3), (56, 0x80)] {
            var edited = bytes
            edited[offset] = value
            let error = journalError { try IDMapSegment.decode(resealed(edited), file: "2.seg") }
            #expect(error?.code == .damagedSegment, "offset \(offset) = \(value)")
        }
    }

    @Test("A segment of a newer format version is refused, saying so")
    func newerVersion() throws {
        var bytes = try IDMapSegment(entity: 0, batch: 1, mapping: .allocate, destinationBase: 1, sourceKeys: [1, 5, 9]).encoded()
        bytes[4] = UInt8(IDMapSegment.formatVersion + 1)
        for candidate in [bytes, resealed(bytes)] {
            let error = journalError { try IDMapSegment.decode(candidate, file: "1.seg") }
            #expect(error?.code == .newerFormat)
            #expect(error?.message.contains("newer") == true)
            #expect(error?.file == "1.seg")
        }
    }

    @Test("The header fields sit where FORMAT.md says")
    func layout() throws {
        let keys: [Int64] = [-2, 0, 1, 5]
        let bytes = try IDMapSegment(entity: 0x0102_0304, batch: 0x0A0B, mapping: .allocate, destinationBase: 300, sourceKeys: keys)
            .encoded()
        func u64(_ offset: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << UInt64(8 * $1) } }
        #expect(Array(bytes[0..<4]) == Array("CMSG".utf8))
        #expect(bytes[4] == 1 && bytes[5] == 0)
        #expect(bytes[6] == IDMapSegment.Encoding.varint.rawValue && bytes[7] == 0)
        #expect(Array(bytes[8..<12]) == [4, 3, 2, 1])
        #expect(u64(12) == 0x0A0B)
        #expect(Array(bytes[20..<24]) == [4, 0, 0, 0])
        #expect(Int64(bitPattern: u64(24)) == -2 && Int64(bitPattern: u64(32)) == 5 && Int64(bitPattern: u64(40)) == 300)
        // delta - 1: 1, 0, 3
        #expect(Array(bytes[48..<52]) == [3, 0, 0, 0] && Array(bytes[52..<56]) == [3, 0, 0, 0])
        #expect(Array(bytes[56..<59]) == [1, 0, 3])
        #expect(trailingCRC(bytes) == CRC32C.checksum(bytes.dropLast(4)))
    }
}
