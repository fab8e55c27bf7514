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

    @Test("SHA-256 known vectors")
    func sha256KnownVectors() {
        #expect(SHA256.hex([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // Two blocks (FIPS 180-2, appendix B.2).
        #expect(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // One million "a": many blocks through update().
        var hash = SHA256()
        for _ in 0..<1000 { hash.update([UInt8](repeating: 0x61, count: 1000)) }
        #expect(hash.finalizeHex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("SHA-256 fields are separated so that strings cannot run into each other")
    func sha256Fields() {
        var one = SHA256()
        one.update(field: "ab")
        one.update(field: "c")
        var two = SHA256()
        two.update(field: "a")
        two.update(field: "bc")
        #expect(one.finalize() != two.finalize())
        var three = SHA256()
        three.update(Array("ab\0c\0".utf8))
        var four = SHA256()
        four.update(field: "ab")
        four.update(field: "c")
        #expect(three.finalizeHex() == four.finalizeHex())
    }
}
