@testable import MigrationJournal
import Testing

/// The contract the Apple platforms' codec and sync path rely on, pinned on Linux: an LZ4 payload
/// is one bare block whose decoded size is only in the segment header, blocks at the engine's
/// sizes round-trip, a block from another encoder decodes to the same keys, and every durability
/// point of the journal goes through ``FileSync``.
@Suite("Portability of the journal across platforms")
struct PortabilityTests {
    /// Header fields of an encoded segment (FORMAT.md, ID-map segments).
    struct Fields {
        var encoding: UInt8
        var rawLength: Int
        var payload: ArraySlice<UInt8>

        init(_ bytes: [UInt8]) {
            func u32(_ offset: Int) -> Int { Int(LittleEndian.read(UInt32.self, in: bytes, at: offset)) }
            encoding = bytes[6]
            rawLength = u32(48)
            payload = bytes[56..<(56 + u32(52))]
        }
    }

    /// The raw varints of sorted keys, as the writer builds them.
    func varints(_ keys: [Int64]) -> [UInt8] {
        var raw: [UInt8] = []
        for (previous, key) in zip(keys, keys.dropFirst()) {
            Varint.append(UInt64(bitPattern: key) &- UInt64(bitPattern: previous) &- 1, to: &raw)
        }
        return raw
    }

    @Test(
        "An LZ4 payload is one bare block: it decodes with the header's rawLength and with no other length",
        arguments: [100, 1_000, 10_000, 100_000, 500_000])
    func payloadIsOneBlock(count: Int) throws {
        // Gaps of 1 to 3: compressible, as a table with a few deleted rows is.
        let keys = sparseKeys(count, from: 1_000, gaps: 1...3, seed: UInt64(count))
        let bytes = try IDMapSegment(entity: 0, batch: 1, mapping: .allocate, destinationBase: 1, sourceKeys: keys).encoded()
        let fields = Fields(bytes)
        #expect(fields.encoding == IDMapSegment.Encoding.varintLZ4.rawValue)
        #expect(fields.rawLength == count - 1, "one varint byte per gap")
        #expect(LZ4Block.decompress(fields.payload, rawLength: fields.rawLength) == varints(keys))
        // The decoder needs the exact size and refuses any other: no size travels in the block.
        #expect(LZ4Block.decompress(fields.payload, rawLength: fields.rawLength - 1) == nil)
        #expect(LZ4Block.decompress(fields.payload, rawLength: fields.rawLength + 1) == nil)
        #expect(try IDMapSegment.decode(bytes, file: "1.seg").sourceKeys == keys)
    }

    @Test(
        "LZ4 blocks at the sizes the engine produces round-trip, deterministically",
        arguments: [2, 100, 1_000, 10_000, 100_000, 500_000])
    func blocksRoundTrip(count: Int) throws {
        // A batch is 100 to 500,000 rows; its varints take 1 to 10 bytes a key. Small gaps
        // compress; random 64-bit keys (up to 10 bytes each) mostly do not.
        for keys in [sparseKeys(count, from: -7, gaps: 1...300, seed: 3), randomSortedKeys(count, seed: 5)] {
            let raw = varints(keys)
            let block = try #require(LZ4Block.compress(raw))
            #expect(LZ4Block.decompress(block[...], rawLength: raw.count) == raw)
            #expect(LZ4Block.compress(raw) == block, "the same input gives the same block")
            let segment = try IDMapSegment(entity: 2, batch: 9, mapping: .preserve, destinationBase: keys[0], sourceKeys: keys)
            #expect(try IDMapSegment.decode(segment.encoded(), file: "9.seg").sourceKeys == keys)
        }
    }

    @Test("A block from another encoder decodes to the same keys, and its segment verifies by its own CRC")
    func anotherEncodersBlock() throws {
        // FORMAT.md's LZ4 example: keys -20, -18, ..., 58; the raw varints are 39 bytes of 01.
        let keys = Array(stride(from: Int64(-20), through: 58, by: 2))
        let liblz4 = try IDMapSegment(entity: 2, batch: 3, mapping: .preserve, destinationBase: -20, sourceKeys: keys).encoded()
        // The same 39 bytes as another valid block: 1 literal, a match of 14 at offset 1, a match
        // of 19 at offset 1, then 5 literals. 14 bytes where liblz4 makes 11.
        let other: [UInt8] = [0x1A, 0x01, 0x01, 0x00, 0x0F, 0x01, 0x00, 0x00, 0x50, 0x01, 0x01, 0x01, 0x01, 0x01]
        #expect(LZ4Block.decompress(other[...], rawLength: 39) == [UInt8](repeating: 1, count: 39))
        var bytes = Array(liblz4[0..<52])
        bytes += [UInt8(other.count), 0, 0, 0] + other
        bytes = resealed(bytes + [0, 0, 0, 0])
        #expect(bytes != liblz4)
        let decoded = try IDMapSegment.decode(bytes, file: "3.seg")
        #expect(decoded.sourceKeys == keys)
        #expect(trailingCRC(bytes) != trailingCRC(liblz4), "the CRC covers the stored bytes, so each file verifies by its own")
    }

    @Test("Every durability point of the journal goes through FileSync")
    func syncAtEachDurabilityPoint() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("job.journal")
        let layout = JournalLayout(directory: path)
        let recorder = FileSync.Recorder()
        try FileSync.$recorder.withValue(recorder) {
            let writer = try JournalWriter.create(directory: path, header: testHeader(), plan: testPlan)
            #expect(
                recorder.events == [
                    .init(path: directory.path, dataOnly: false),  // the new directory's entry
                    .init(path: layout.plan + ".tmp", dataOnly: false),
                    .init(path: layout.log + ".tmp", dataOnly: false),
                    .init(path: layout.header + ".tmp", dataOnly: false),
                    .init(path: layout.directory, dataOnly: false),  // the renames
                ])
            var seen = recorder.events.count

            // A segment: the first of its entity syncs segments/ for the new folder, then the
            // file before its rename, then its folder after it.
            try writer.write(IDMapSegment(entity: 1, batch: 1, mapping: .allocate, destinationBase: 1, sourceKeys: [1, 5, 9]))
            #expect(
                Array(recorder.events[seen...]) == [
                    .init(path: layout.segments, dataOnly: false),
                    .init(path: layout.segment(entity: 1, batch: 1) + ".tmp", dataOnly: false),
                    .init(path: layout.segmentFolder(entity: 1), dataOnly: false),
                ])
            seen = recorder.events.count

            // A log record: one data sync of the log.
            try writer.append(.started(atMillis: 1_700_000_000_000, processID: 42))
            #expect(Array(recorder.events[seen...]) == [.init(path: layout.log, dataOnly: true)])
            seen = recorder.events.count

            // Removing a segment written before a commit that never happened: the folder.
            try writer.removeSegments(entity: 1, after: 0)
            #expect(Array(recorder.events[seen...]) == [.init(path: layout.segmentFolder(entity: 1), dataOnly: false)])
            seen = recorder.events.count

            // A torn tail is cut off, durably, when the journal is opened again.
            try writer.appendTorn(.complete(atMillis: 1_700_000_000_001), keepingBytes: 5)
            writer.close()
            seen = recorder.events.count
            let reopened = try JournalWriter.open(directory: path)
            defer { reopened.close() }
            #expect(Array(recorder.events[seen...]) == [.init(path: layout.log, dataOnly: false)])
        }
        #expect(FileSync.recorder == nil, "the recorder is bound to the test's task only")
    }
}
