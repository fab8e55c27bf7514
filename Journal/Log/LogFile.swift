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
    /// The longest payload the search after a bad frame considers: every record this version
    /// writes fits (a failure's message is kept to ``LogRecord/maximumMessageBytes``), and the
    /// search costs at most this many bytes checksummed per byte after the bad frame, where
    /// frames of any length would make it quadratic in the log's size.
    static let maximumResyncPayload = 2_048

    /// The file header bytes.
    static func fileHeader() -> [UInt8] {
        var writer = ByteWriter()
        writer.raw(magic)
        writer.u16(formatVersion)
        writer.u16(0)
        return writer.bytes
    }

    /// The length of a record's frame in the file.
    static func frameLength(of record: LogRecord) -> Int {
        frameHeaderLength + record.encode().count
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
        /// The record.
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
    struct Scan {
        /// The valid records, in order.
        var records: [LogRecord]
        /// How the log ends.
        var tail: Tail
        /// The length of the log up to the end of its last valid frame.
        var validLength: Int
    }

    /// Reads every frame. A frame that is cut short or fails its checksum is a torn tail when no
    /// valid frame starts anywhere after it (a kill mid-append, or a tail the file system filled
    /// with zeros); when a valid frame does follow, the log is damaged in the middle, and this
    /// throws ``JournalError/Code/damagedRecord`` naming the record and its offset.
    static func scan(_ bytes: [UInt8], file: String) throws(JournalError) -> Scan {
        guard bytes.count >= 4, Array(bytes[0..<4]) == magic else {
            throw JournalError(.notAJournal, "not a chunkmigrate log (bad magic)", file: file)
        }
        guard bytes.count >= fileHeaderLength else {
            return Scan(records: [], tail: .torn(recordIndex: 0, offset: 0, reason: "file header cut short"), validLength: 0)
        }
        let version = LittleEndian.read(UInt16.self, in: bytes, at: 4)
        guard version <= formatVersion else {
            throw JournalError(
                .newerFormat,
                "log format version \(version) is newer than this reader (it reads up to \(formatVersion)); use a newer chunkmigrate",
                file: file)
        }
        var records: [LogRecord] = []
        var offset = fileHeaderLength
        while offset < bytes.count {
            let index = records.count
            // A bad frame: torn when nothing valid follows it, damage otherwise.
            func bad(_ reason: String) throws(JournalError) -> Scan {
                if let next = firstValidFrame(in: bytes, after: offset) {
                    throw JournalError(
                        .damagedRecord,
                        "record \(index) at offset \(offset): \(reason), and a valid record follows at offset \(next)",
                        file: file)
                }
                return Scan(records: records, tail: .torn(recordIndex: index, offset: offset, reason: reason), validLength: offset)
            }
            let remaining = bytes.count - offset
            guard remaining >= frameHeaderLength else { return try bad("frame header cut short (\(remaining) of 8 bytes)") }
            let length = Int(LittleEndian.read(UInt32.self, in: bytes, at: offset))
            let stored = LittleEndian.read(UInt32.self, in: bytes, at: offset + 4)
            guard length <= maximumPayload else { return try bad("length field \(length) is implausible") }
            let end = offset + frameHeaderLength + length
            guard end <= bytes.count else {
                return try bad("frame cut short (\(remaining - frameHeaderLength) of \(length) payload bytes)")
            }
            let computed = frameChecksum(bytes, at: offset, length: length)
            guard computed == stored else {
                return try bad("checksum mismatch (stored \(hex32(stored)), computed \(hex32(computed)))")
            }
            guard let record = LogRecord.decode(bytes, from: offset + frameHeaderLength, to: end) else {
                let kind = length > 0 ? "\(bytes[offset + frameHeaderLength])" : "none"
                throw JournalError(
                    .damagedRecord,
                    "record \(index) at offset \(offset): unknown kind \(kind) or wrong length \(length) (written by a newer chunkmigrate?)",
                    file: file)
            }
            records.append(record)
            offset = end
        }
        return Scan(records: records, tail: .clean, validLength: offset)
    }

    /// The offset of the first frame after `offset` that passes its checksum and decodes, if any,
    /// among frames of at most ``maximumResyncPayload`` bytes. Cheap checks come first (the length
    /// fits the file, the payload parses), so a tail of garbage or zeros costs little more than
    /// one pass over it, and no tail costs more than that bound per byte.
    static func firstValidFrame(in bytes: [UInt8], after offset: Int) -> Int? {
        var checked = 0
        return firstValidFrame(in: bytes, after: offset, checkedBytes: &checked)
    }

    /// The same search, adding the bytes of the payloads that parsed (each then checksummed) to
    /// `checkedBytes`.
    static func firstValidFrame(in bytes: [UInt8], after offset: Int, checkedBytes: inout Int) -> Int? {
        var candidate = offset + 1
        while bytes.count - candidate > frameHeaderLength {
            defer { candidate += 1 }
            let length = Int(LittleEndian.read(UInt32.self, in: bytes, at: candidate))
            guard length >= 1, length <= maximumResyncPayload, length <= bytes.count - candidate - frameHeaderLength else { continue }
            let end = candidate + frameHeaderLength + length
            guard LogRecord.decode(bytes, from: candidate + frameHeaderLength, to: end) != nil else { continue }
            // A payload that parses cost its length to decode, and costs it again to checksum.
            checkedBytes += length
            guard frameChecksum(bytes, at: candidate, length: length) == LittleEndian.read(UInt32.self, in: bytes, at: candidate + 4)
            else { continue }
            return candidate
        }
        return nil
    }

    /// The CRC-32C of a frame's length field followed by its payload.
    private static func frameChecksum(_ bytes: [UInt8], at offset: Int, length: Int) -> UInt32 {
        var crc = CRC32C.Checksum()
        crc.update(bytes[offset..<(offset + 4)])
        crc.update(bytes[(offset + frameHeaderLength)..<(offset + frameHeaderLength + length)])
        return crc.value
    }
}
