/// The framing of the log file: an 8-byte file header, then frames of
/// `u32 length | u32 crc32c(length bytes ++ payload) | payload`. See `FORMAT.md`, "Log".
public enum LogFile {
    /// The log format version this code writes and the newest it reads.
    public static let formatVersion: UInt16 = 1
    static let magic: [UInt8] = Array("CMLG".utf8)
    static let fileHeaderLength = 8
    static let frameHeaderLength = 8
    /// The largest payload a reader accepts; a longer length field is damage, not a record.
    static let maximumPayload = 1 << 20

    /// The file header bytes.
    static func fileHeader() -> [UInt8] {
        var writer = ByteWriter()
        writer.raw(magic)
        writer.u16(formatVersion)
        writer.u16(0)
        return writer.bytes
    }

    /// One framed record.
    static func frame(_ record: LogRecord) -> [UInt8] {
        let payload = record.encode()
        var writer = ByteWriter(capacity: payload.count + frameHeaderLength)
        writer.u32(UInt32(payload.count))
        var crc = CRC32C.Checksum()
        crc.update(writer.bytes)
        crc.update(payload)
        writer.u32(crc.value)
        writer.raw(payload)
        return writer.bytes
    }

    /// A record and where it starts in the file.
    public struct Entry: Sendable, Equatable {
        /// The record's position in the log, from 0.
        public var index: Int
        /// The byte offset of its frame.
        public var offset: Int
        public var record: LogRecord
    }

    /// How the log ends.
    public enum Tail: Sendable, Equatable {
        /// Every byte belongs to a valid frame.
        case clean
        /// The last frame is incomplete or fails its checksum, as a kill or power loss mid-append
        /// leaves it; it is dropped and the log continues at `offset`.
        case torn(recordIndex: Int, offset: Int, reason: String)
    }

    /// The valid records of a log, and how it ends.
    public struct Scan: Sendable {
        public var entries: [Entry]
        public var tail: Tail
        /// The length of the log up to the end of its last valid frame.
        public var validLength: Int
    }

    /// Reads every frame. A damaged frame that is the last thing in the file is a torn tail; a
    /// damaged frame followed by more bytes is damage, and throws naming the record and offset.
    public static func scan(_ bytes: [UInt8], file: String) throws(JournalError) -> Scan {
        guard bytes.count >= 4, Array(bytes[0..<4]) == magic else {
            throw JournalError(.notAJournal, "not a chunkmigrate log (bad magic)", file: file)
        }
        guard bytes.count >= fileHeaderLength else {
            return Scan(entries: [], tail: .torn(recordIndex: 0, offset: 0, reason: "file header cut short"), validLength: 0)
        }
        let version = UInt16(bytes[4]) | UInt16(bytes[5]) << 8
        guard version <= formatVersion else {
            throw JournalError(.newerFormat,
                "log format version \(version) is newer than this reader (it reads up to \(formatVersion)); use a newer chunkmigrate",
                file: file)
        }
        var entries: [Entry] = []
        var offset = fileHeaderLength
        while offset < bytes.count {
            let index = entries.count
            func torn(_ reason: String) -> Scan {
                Scan(entries: entries, tail: .torn(recordIndex: index, offset: offset, reason: reason), validLength: offset)
            }
            let remaining = bytes.count - offset
            guard remaining >= frameHeaderLength else { return torn("frame header cut short (\(remaining) of 8 bytes)") }
            var reader = ByteReader(bytes, from: offset)
            let length = Int(try! reader.u32())
            let stored = try! reader.u32()
            let end = offset + frameHeaderLength + length
            guard length <= maximumPayload else {
                if end >= bytes.count || length > remaining { return torn("length field \(length) runs past the end of the file") }
                throw JournalError(.damagedRecord, "record \(index) at offset \(offset): length field \(length) is implausible", file: file)
            }
            guard end <= bytes.count else {
                return torn("frame cut short (\(remaining - frameHeaderLength) of \(length) payload bytes)")
            }
            var crc = CRC32C.Checksum()
            crc.update(bytes[offset..<(offset + 4)])
            crc.update(bytes[(offset + frameHeaderLength)..<end])
            guard crc.value == stored else {
                if end == bytes.count { return torn("checksum mismatch in the last frame") }
                throw JournalError(.damagedRecord,
                    "record \(index) at offset \(offset): checksum mismatch (stored \(hex32(stored)), computed \(hex32(crc.value)))",
                    file: file)
            }
            guard let record = LogRecord.decode(bytes, from: offset + frameHeaderLength, to: end) else {
                throw JournalError(.damagedRecord,
                    "record \(index) at offset \(offset): unknown kind \(bytes[offset + frameHeaderLength]) or wrong length \(length)",
                    file: file)
            }
            entries.append(Entry(index: index, offset: offset, record: record))
            offset = end
        }
        return Scan(entries: entries, tail: .clean, validLength: offset)
    }
}
