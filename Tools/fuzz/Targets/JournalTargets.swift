// Fuzz targets of the journal's readers, compiled into the MigrationJournal module itself (see
// Tools/fuzz/build.sh) so that its internal readers are callable. The entry point that picks a
// target is in ChunkMigrateTargets.swift.
//
// Every file the journal reads ends in a CRC-32C, which random bytes almost never match: each
// target reads the input as it is (the checksum's refusal), then once more with the checksums
// (and the header's length field) made to agree, so that the fuzzer reaches what lies behind them.

/// The journal's fuzz targets by name; each takes one input and must return without crashing,
/// whatever the bytes (a thrown ``JournalError`` is a correct answer).
package enum JournalFuzzTargets {
    package static let all: [String: @Sendable ([UInt8]) -> Void] = [
        "journal-header": header,
        "journal-log": log,
        "journal-segment": segment,
    ]

    /// `JournalHeader.decode`: magic, version, length, CRC, JSON body.
    static func header(_ bytes: [UInt8]) {
        _ = try? JournalHeader.decode(bytes, file: "header")
        var fixed = bytes
        if fixed.count >= 20 {
            let length = UInt32(truncatingIfNeeded: fixed.count - 20)
            for shift in 0..<4 { fixed[12 + shift] = UInt8(truncatingIfNeeded: length >> UInt32(8 * shift)) }
            withCorrectChecksum(&fixed)
        }
        _ = try? JournalHeader.decode(fixed, file: "header")
    }

    /// `JournalLog(scanning:)`: the log's frames, torn tails and damage in the middle, each
    /// record's payload, and the per-entity summary (three entities, so that records naming a
    /// fourth are met too).
    static func log(_ bytes: [UInt8]) {
        _ = try? JournalLog(scanning: bytes, file: "log", entityCount: 3)
        var fixed = bytes
        var offset = LogFile.fileHeaderLength
        while fixed.count - offset >= LogFile.frameHeaderLength {
            let length = Int(LittleEndian.read(UInt32.self, in: fixed, at: offset))
            let end = offset + LogFile.frameHeaderLength + length
            guard length <= LogFile.maximumPayload, end <= fixed.count else { break }
            var crc = CRC32C.Checksum()
            crc.update(fixed[offset..<(offset + 4)])
            crc.update(fixed[(offset + LogFile.frameHeaderLength)..<end])
            store(crc.value, in: &fixed, at: offset + 4)
            offset = end
        }
        _ = try? JournalLog(scanning: fixed, file: "log", entityCount: 3)
    }

    /// `IDMapSegment.decode`: header checks, dense, varint and LZ4 payloads; then the keys as the
    /// ID map's cache packs them, which must give every key back.
    static func segment(_ bytes: [UInt8]) {
        _ = try? IDMapSegment.decode(bytes, file: "segment")
        var fixed = bytes
        if fixed.count >= IDMapSegment.headerLength + 4 { withCorrectChecksum(&fixed) }
        guard let segment = try? IDMapSegment.decode(fixed, file: "segment") else { return }
        // The check below is a loop per key: a dense segment's millions of keys would make an
        // input slow, not wrong.
        guard segment.sourceKeys.count <= 1 << 16 else { return }
        let keys = segment.sourceKeys
        let packed = PackedKeys(keys)
        precondition(packed.count == keys.count, "PackedKeys holds \(packed.count) of \(keys.count) keys")
        for (position, key) in keys.enumerated() {
            precondition(packed.key(at: position) == key, "PackedKeys gives another key at \(position)")
            precondition(packed.position(of: key) == position, "PackedKeys does not find key \(key)")
        }
    }

    /// Rewrites the trailing CRC-32C to the checksum of the bytes before it.
    private static func withCorrectChecksum(_ bytes: inout [UInt8]) {
        store(CRC32C.checksum(bytes[0..<(bytes.count - 4)]), in: &bytes, at: bytes.count - 4)
    }

    private static func store(_ value: UInt32, in bytes: inout [UInt8], at offset: Int) {
        for shift in 0..<4 { bytes[offset + shift] = UInt8(truncatingIfNeeded: value >> UInt32(8 * shift)) }
    }
}
