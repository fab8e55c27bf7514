import Foundation
import MigrationJournal
import Testing

/// A fresh directory under the system's temporary folder, removed when the value goes away.
final class TemporaryDirectory {
    let path: String

    init(_ label: String = #function) throws {
        let name = label.filter { $0.isLetter || $0.isNumber }.prefix(40)
        path = NSTemporaryDirectory() + "chunkmigrate-journal-tests/\(name)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A path inside the directory.
    func appending(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// SplitMix64: random keys that are the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// `count` distinct random 64-bit keys, sorted.
func randomSortedKeys(_ count: Int, seed: UInt64) -> [Int64] {
    var generator = SplitMix64(seed: seed)
    var keys = Set<Int64>()
    while keys.count < count { keys.insert(Int64(bitPattern: generator.next())) }
    return keys.sorted()
}

/// Sparse keys from `start`: gaps drawn from `gaps`.
func sparseKeys(_ count: Int, from start: Int64, gaps: ClosedRange<Int64>, seed: UInt64) -> [Int64] {
    var generator = SplitMix64(seed: seed)
    var keys = [start]
    while keys.count < count { keys.append(keys[keys.count - 1] + Int64.random(in: gaps, using: &generator)) }
    return keys
}

func readBytes(_ path: String) throws -> [UInt8] {
    Array(try Data(contentsOf: URL(fileURLWithPath: path)))
}

func writeBytes(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

func fileSize(_ path: String) throws -> Int {
    try readBytes(path).count
}

/// The CRC-32C stored in the last four bytes of a segment or header file.
func trailingCRC(_ bytes: [UInt8]) -> UInt32 { LittleEndian.trailingUInt32(of: bytes) }

/// Replaces the trailing CRC-32C so that a deliberately edited file passes its checksum.
func resealed(_ bytes: [UInt8]) -> [UInt8] {
    var bytes = Array(bytes.dropLast(4))
    let crc = CRC32C.checksum(bytes)
    for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
    return bytes
}

/// The error `body` throws, which must be a ``JournalError``.
func journalError<T>(_ body: () throws -> T) -> JournalError? {
    do {
        _ = try body()
        return nil
    } catch let error as JournalError {
        return error
    } catch {
        Issue.record("expected a JournalError, got \(error)")
        return nil
    }
}

let testPlan = Array(#"{"entities":["artist","album","track"]}"#.utf8)

/// A header for a plan of three entities: 0 allocates, 1 allocates, 2 preserves keys.
func testHeader(plan: [UInt8] = testPlan) -> JournalHeader {
    JournalHeader(
        jobID: "job-0001", createdAt: "2025-01-01T00:00:00Z", writer: "chunkmigrate tests",
        planFingerprint: JournalSHA256.hex(plan), sourceFingerprint: "source-fp", destinationFingerprint: "destination-fp",
        sourcePath: "/stores/source.sqlite", destinationPath: "/stores/destination.sqlite",
        entities: [
            .init(name: "artist", sourceTable: "ZARTIST", destinationTable: "artist", keys: .allocate),
            .init(
                name: "album", sourceTable: "ZALBUM", destinationTable: "album", keys: .allocate,
                relationships: ["artist_id": "artist"]),
            .init(
                name: "track", sourceTable: "ZTRACK", destinationTable: "track", keys: .preserve,
                relationships: ["album_id": "album"]),
        ])
}

/// Writes a batch's segment and its record, as the engine does after a commit; returns the record.
@discardableResult
func appendBatch(
    _ writer: JournalWriter, entity: UInt32, batch: UInt64, keys: [Int64], destinationBase: Int64,
    mapping: IDMapSegment.Mapping = .allocate
) throws -> BatchRecord {
    let segment = try IDMapSegment(
        entity: entity, batch: batch, mapping: mapping,
        destinationBase: destinationBase, sourceKeys: keys)
    let crc = try writer.write(segment)
    let record = BatchRecord(
        entity: entity, batch: batch, firstSourceKey: keys[0], lastSourceKey: keys[keys.count - 1],
        rowsRead: UInt32(keys.count), rowsWritten: UInt32(keys.count), rowsSkipped: 0,
        mapping: mapping, destinationBase: segment.destinationBase,
        segmentFirstKey: keys[0], segmentLastKey: keys[keys.count - 1], segmentCRC: crc,
        durationMicros: 1234, committedAtMillis: 1_700_000_000_000 + Int64(batch))
    try writer.append(.batch(record))
    return record
}
