import MigrationJournal
import Testing

@Suite("Checksums and hashes")
struct CodecTests {
    @Test("CRC-32C of \"123456789\" is 0xE3069283")
    func crc32cKnownVector() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        // RFC 3720, B.4: 32 bytes of zeros and 32 bytes of 0xFF.
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
    }

    @Test("An incremental CRC-32C equals the one-shot CRC at every split point")
    func crc32cIncremental() {
        var generator = SplitMix64(seed: 7)
        let bytes = (0..<301).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let whole = CRC32C.checksum(bytes)
        for split in [0, 1, 3, 7, 8, 9, 63, 64, 65, 150, 300, 301] {
            var crc = CRC32C.Checksum()
            crc.update(bytes[..<split])
            crc.update(bytes[split...])
            #expect(crc.value == whole, "split at \(split)")
        }
        var byteByByte = CRC32C.Checksum()
        for byte in bytes { byteByByte.update(CollectionOfOne(byte)) }
        #expect(byteByByte.value == whole)
        // A non-contiguous collection goes through the same code.
        #expect(CRC32C.checksum(bytes.lazy.map { $0 }) == whole)
    }

    @Test("SHA-256 of the FIPS 180-2 test vectors: \"abc\", the empty string, 448 bits, one million a")
    func sha256KnownVectors() {
        #expect(JournalSHA256.hex([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(JournalSHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // Two blocks (FIPS 180-2, appendix B.2).
        #expect(
            JournalSHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // One million "a": many blocks through update().
        var hash = JournalSHA256()
        for _ in 0..<1000 { hash.update([UInt8](repeating: 0x61, count: 1000)) }
        #expect(hash.finalizeHex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("SHA-256 fields are separated so that strings cannot run into each other")
    func sha256Fields() {
        var one = JournalSHA256()
        one.update(field: "ab")
        one.update(field: "c")
        var two = JournalSHA256()
        two.update(field: "a")
        two.update(field: "bc")
        #expect(one.finalize() != two.finalize())
        var three = JournalSHA256()
        three.update(Array("ab\0c\0".utf8))
        var four = JournalSHA256()
        four.update(field: "ab")
        four.update(field: "c")
        #expect(three.finalizeHex() == four.finalizeHex())
    }
}

@Suite("Little-endian integers")
struct LittleEndianTests {
    @Test("Integers read back from hand-written little-endian bytes, at any offset")
    func knownBytes() {
        let bytes: [UInt8] = [0xAA, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0xFF]
        #expect(LittleEndian.read(UInt16.self, in: bytes, at: 1) == 0x0201)
        #expect(LittleEndian.read(UInt32.self, in: bytes, at: 1) == 0x0403_0201)
        #expect(LittleEndian.read(UInt64.self, in: bytes, at: 1) == 0x0807_0605_0403_0201)
        #expect(LittleEndian.read(UInt32.self, in: bytes, at: 6) == 0xFF08_0706)
        #expect(LittleEndian.read(Int16.self, in: bytes, at: 8) == -248)
        #expect(LittleEndian.trailingUInt32(of: bytes) == 0xFF08_0706)
        bytes.withUnsafeBytes { raw in
            #expect(LittleEndian.read(UInt32.self, in: raw, at: 3) == 0x0605_0403)
        }
    }

    @Test("What the journal writes reads back: a header's trailing CRC")
    func headerCRC() throws {
        let bytes = try testHeader().encoded()
        #expect(LittleEndian.trailingUInt32(of: bytes) == CRC32C.checksum(bytes.dropLast(4)))
        #expect(LittleEndian.read(UInt32.self, in: bytes, at: 8) == JournalHeader.formatVersion)
    }
}

@Suite("Counts with their nouns")
struct CountedTests {
    @Test("one is singular, any other number plural, given or with an s")
    func singularAndPlural() {
        #expect(1.counted("batch", "batches") == "1 batch")
        #expect(2.counted("batch", "batches") == "2 batches")
        #expect(0.counted("record") == "0 records")
        #expect(Int64(1).counted("source row") == "1 source row")
        #expect(UInt64(3).counted("entity", "entities") == "3 entities")
    }
}
