import MigrationJournal
import Testing

/// The worked examples of `Journal/FORMAT.md`, byte for byte: if the format changes, these fail
/// and the document must change with it.
@Suite("FORMAT.md examples")
struct FormatExampleTests {
    func bytes(_ hex: String) -> [UInt8] {
        hex.split(separator: " ").map { UInt8($0, radix: 16)! }
    }

    @Test("The varint segment example")
    func varintSegment() throws {
        let segment = try IDMapSegment(
            entity: 1, batch: 7, mapping: .allocate, destinationBase: 501,
            sourceKeys: [10, 11, 15, 16, 300])
        let expected = bytes(
            """
            43 4d 53 47 01 00 01 00 01 00 00 00 07 00 00 00 00 00 00 00 05 00 00 00 0a 00 00 00 00 00 00 00 \
            2c 01 00 00 00 00 00 00 f5 01 00 00 00 00 00 00 05 00 00 00 05 00 00 00 00 03 00 9b 02 43 19 bd 59
            """)
        #expect(segment.encoded() == expected)
        #expect(try IDMapSegment.decode(expected, file: "example") == segment)
    }

    @Test("The dense segment example")
    func denseSegment() throws {
        let segment = try IDMapSegment(entity: 0, batch: 1, mapping: .allocate, destinationBase: 1, sourceKeys: Array(1...10_000))
        let expected = bytes(
            """
            43 4d 53 47 01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 10 27 00 00 01 00 00 00 00 00 00 00 \
            10 27 00 00 00 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 22 c4 e8 de
            """)
        #expect(segment.encoded() == expected)
    }

    @Test("The LZ4 segment example")
    func lz4Segment() throws {
        let keys = Array(stride(from: Int64(-20), to: 60, by: 2))
        let segment = try IDMapSegment(entity: 2, batch: 3, mapping: .preserve, destinationBase: 0, sourceKeys: keys)
        let expected = bytes(
            """
            43 4d 53 47 01 00 02 01 02 00 00 00 03 00 00 00 00 00 00 00 28 00 00 00 ec ff ff ff ff ff ff ff \
            3a 00 00 00 00 00 00 00 ec ff ff ff ff ff ff ff 27 00 00 00 0b 00 00 00 1f 01 01 00 0e 50 01 01 \
            01 01 01 91 2a 4e a7
            """)
        // The LZ4 bytes are liblz4's; any valid block of the same keys decodes the same.
        #expect(try IDMapSegment.decode(expected, file: "example").sourceKeys == keys)
        #if !canImport(Compression)
            // Apple's encoder may make other bytes, or none this short (FORMAT.md, Encodings).
            #expect(segment.encoded() == expected)
        #endif
    }

    @Test("The log example")
    func log() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("job.journal")
        let writer = try JournalWriter.create(directory: path, header: testHeader(), plan: testPlan)
        try writer.append(.started(atMillis: 1_700_000_000_000, processID: 4242))
        try writer.append(.complete(atMillis: 1_700_000_000_001))
        writer.close()
        #expect(
            try readBytes(JournalLayout(directory: path).log)
                == bytes(
                    """
                    43 4d 4c 47 01 00 00 00 0d 00 00 00 af c6 82 57 01 00 68 e5 cf 8b 01 00 00 92 10 00 00 \
                    09 00 00 00 de 99 0f e1 06 01 68 e5 cf 8b 01 00 00
                    """))
    }
}
