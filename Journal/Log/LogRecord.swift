/// One record of a journal's append-only log. See `FORMAT.md`, "Log records".
public enum LogRecord: Sendable, Equatable {
    /// A process started or resumed the job.
    case started(atMillis: Int64, processID: Int32)
    /// A batch of an entity committed.
    case batch(BatchRecord)
    /// A batch of the fix-up pass committed.
    case fixup(FixupRecord)
    /// Every batch of an entity (and its fix-ups) committed.
    case entityComplete(entity: UInt32, batches: UInt64, rowsWritten: UInt64)
    /// The job stopped on an error; it can be resumed once the cause is fixed. The message is
    /// written to at most ``maximumMessageBytes`` bytes of UTF-8, cut at a character.
    case failed(atMillis: Int64, message: String)
    /// The job finished.
    case complete(atMillis: Int64)

    /// The most bytes of a failure's message a record keeps, so that every record fits the search
    /// for a valid frame after a bad one (``LogFile/maximumResyncPayload``).
    public static let maximumMessageBytes = 2_000

    /// `message` cut to at most ``maximumMessageBytes`` bytes of UTF-8, at a character.
    static func kept(_ message: String) -> String {
        guard message.utf8.count > maximumMessageBytes else { return message }
        var kept = ""
        var bytes = 0
        for character in message {
            let size = character.utf8.count
            guard bytes + size <= maximumMessageBytes - 3 else { break }
            kept.append(character)
            bytes += size
        }
        return kept + "..."
    }

    /// The kind byte that starts the record's payload.
    var kind: UInt8 {
        switch self {
        case .started: 1
        case .batch: 2
        case .fixup: 3
        case .entityComplete: 4
        case .failed: 5
        case .complete: 6
        }
    }

    func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: 128)
        writer.u8(kind)
        switch self {
        case let .started(atMillis, processID):
            writer.i64(atMillis)
            writer.u32(UInt32(bitPattern: processID))
        case let .batch(record):
            writer.u32(record.entity)
            writer.u64(record.batch)
            writer.i64(record.firstSourceKey)
            writer.i64(record.lastSourceKey)
            writer.u32(record.rowsRead)
            writer.u32(record.rowsWritten)
            writer.u32(record.rowsSkipped)
            writer.u32(record.relationshipsNulled)
            writer.u32(record.relationshipsDeferred)
            writer.u8(record.mapping.rawValue)
            writer.i64(record.destinationBase)
            writer.i64(record.segmentFirstKey)
            writer.i64(record.segmentLastKey)
            writer.u32(record.segmentCRC)
            writer.u64(record.durationMicros)
            writer.i64(record.committedAtMillis)
        case let .fixup(record):
            writer.u32(record.entity)
            writer.string(record.column)
            writer.u64(record.batch)
            writer.i64(record.firstDestinationKey)
            writer.i64(record.lastDestinationKey)
            writer.u32(record.rowsUpdated)
            writer.u32(record.rowsNulled)
            writer.i64(record.committedAtMillis)
        case let .entityComplete(entity, batches, rowsWritten):
            writer.u32(entity)
            writer.u64(batches)
            writer.u64(rowsWritten)
        case let .failed(atMillis, message):
            writer.i64(atMillis)
            writer.string(Self.kept(message))
        case let .complete(atMillis):
            writer.i64(atMillis)
        }
        return writer.bytes
    }

    /// Decodes a payload whose checksum has been verified; `nil` for an unknown kind or a length
    /// that disagrees with the kind.
    static func decode(_ bytes: [UInt8], from start: Int, to end: Int) -> LogRecord? {
        var reader = ByteReader(bytes, from: start, to: end)
        do {
            let record: LogRecord
            switch try reader.u8() {
            case 1:
                record = .started(atMillis: try reader.i64(), processID: Int32(bitPattern: try reader.u32()))
            case 2:
                let entity = try reader.u32()
                let batch = try reader.u64()
                let first = try reader.i64()
                let last = try reader.i64()
                let read = try reader.u32()
                let written = try reader.u32()
                let skipped = try reader.u32()
                let nulled = try reader.u32()
                let deferred = try reader.u32()
                guard let mapping = IDMapSegment.Mapping(rawValue: try reader.u8()) else { return nil }
                record = .batch(
                    BatchRecord(
                        entity: entity, batch: batch, firstSourceKey: first, lastSourceKey: last,
                        rowsRead: read, rowsWritten: written, rowsSkipped: skipped,
                        relationshipsNulled: nulled, relationshipsDeferred: deferred, mapping: mapping,
                        destinationBase: try reader.i64(), segmentFirstKey: try reader.i64(),
                        segmentLastKey: try reader.i64(), segmentCRC: try reader.u32(),
                        durationMicros: try reader.u64(), committedAtMillis: try reader.i64()))
            case 3:
                record = .fixup(
                    FixupRecord(
                        entity: try reader.u32(), column: try reader.string(), batch: try reader.u64(),
                        firstDestinationKey: try reader.i64(), lastDestinationKey: try reader.i64(),
                        rowsUpdated: try reader.u32(), rowsNulled: try reader.u32(),
                        committedAtMillis: try reader.i64()))
            case 4:
                record = .entityComplete(entity: try reader.u32(), batches: try reader.u64(), rowsWritten: try reader.u64())
            case 5:
                record = .failed(atMillis: try reader.i64(), message: try reader.string())
            case 6:
                record = .complete(atMillis: try reader.i64())
            default:
                return nil
            }
            return reader.isAtEnd ? record : nil
        } catch {
            return nil
        }
    }
}
