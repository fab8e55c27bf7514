import Foundation
import MigrationJournal
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real journal written with ``JournalWriter`` for the `chunkjournal` tests.
///
/// Three entities:
/// - `Author` (authors -> people, allocate): batch 1 reads keys 1...100, a dense segment mapped to
///   1001...1100; batch 2 reads 101...299 and writes the 100 odd keys, a sparse (LZ4) segment
///   mapped to 1101...1200.
/// - `Message` (messages -> messages, preserve, relationships to Author and itself): batch 1 reads
///   10...60 and writes 10, 20, 30, 35, 50 (one row skipped, a sparse segment); batch 2 reads and
///   writes 61...80 (dense).
/// - `Tag` (tags -> labels, allocate): batch 1 reads keys 1...3 and skips them all: no segment.
///
/// A finished journal ends with every entity complete and a `complete` record; an unfinished one
/// stops after Message batch 1 with a `failed` record.
struct JournalFixture {
    /// The journal directory.
    let directory: String
    /// The batch records in the log, in order.
    let batches: [BatchRecord]

    static let jobID = "3f1c9a2e-job-0001"
    static let createdAt = "2026-01-01T00:00:00Z"
    static let writer = "chunkmigrate 0.1.0"
    static let sourcePath = "/data/app-v1.sqlite"
    static let destinationPath = "/data/app-v2.sqlite"
    static let failure = "disk full while writing Message batch 2"
    /// 2026-01-01T00:00:00Z.
    static let startMillis: Int64 = 1_767_225_600_000

    static let entities: [JournalHeader.Entity] = [
        .init(name: "Author", sourceTable: "authors", destinationTable: "people", keys: .allocate),
        .init(
            name: "Message", sourceTable: "messages", destinationTable: "messages", keys: .preserve,
            relationships: ["author_id": "Author", "reply_to": "Message"]),
        .init(
            name: "Tag", sourceTable: "tags", destinationTable: "labels", keys: .allocate,
            relationships: ["message_id": "Message"]),
    ]

    static let plan = Array(#"{"entities":["Author","Message","Tag"],"version":1}"#.utf8)

    /// The source keys Author batch 2 writes: the odd keys from 101 to 299.
    static let sparseAuthorKeys = Array(stride(from: Int64(101), through: 299, by: 2))

    /// The segment file of a batch.
    func segmentPath(entity: UInt32, batch: UInt64) -> String {
        JournalLayout(directory: directory).segment(entity: entity, batch: batch)
    }

    /// The log file.
    var logPath: String { JournalLayout(directory: directory).log }

    /// Writes the journal into `parent/job.journal`.
    ///
    /// - Parameters:
    ///   - finished: whether the job ran to the end, or failed after Message batch 1.
    ///   - tornTail: whether a kill cut the last record short (after everything else).
    static func make(in parent: String, finished: Bool = true, tornTail: Bool = false) throws -> JournalFixture {
        let directory = parent + "/job.journal"
        let header = JournalHeader(
            jobID: jobID, createdAt: createdAt, writer: writer, planFingerprint: JournalSHA256.hex(plan),
            sourceFingerprint: "source-fingerprint", destinationFingerprint: "destination-fingerprint",
            sourcePath: sourcePath, destinationPath: destinationPath, entities: entities)
        let writer = try JournalWriter.create(directory: directory, header: header, plan: plan)
        defer {
            writer.close()
            waitUntilUnlocked(directory)
        }
        var batches: [BatchRecord] = []
        var clock = startMillis

        func commit(
            entity: UInt32, batch: UInt64, read: ClosedRange<Int64>, rowsRead: UInt32, keys: [Int64],
            destinationBase: Int64, nulled: UInt32 = 0, deferred: UInt32 = 0
        ) throws {
            let mapping = entities[Int(entity)].keys
            var crc: UInt32 = 0
            if !keys.isEmpty {
                crc = try writer.write(
                    IDMapSegment(
                        entity: entity, batch: batch, mapping: mapping,
                        destinationBase: destinationBase, sourceKeys: keys))
            }
            clock += 1_500
            let record = BatchRecord(
                entity: entity, batch: batch, firstSourceKey: read.lowerBound, lastSourceKey: read.upperBound,
                rowsRead: rowsRead, rowsWritten: UInt32(keys.count), rowsSkipped: rowsRead - UInt32(keys.count),
                relationshipsNulled: nulled, relationshipsDeferred: deferred, mapping: mapping,
                destinationBase: destinationBase, segmentFirstKey: keys.first ?? 0, segmentLastKey: keys.last ?? 0,
                segmentCRC: crc, durationMicros: 12_345 + UInt64(batches.count) * 1_000, committedAtMillis: clock)
            try writer.append(.batch(record))
            batches.append(record)
        }

        try writer.append(.started(atMillis: startMillis, processID: 4242))
        try commit(entity: 0, batch: 1, read: 1...100, rowsRead: 100, keys: Array(1...100), destinationBase: 1001)
        try commit(entity: 0, batch: 2, read: 101...299, rowsRead: 100, keys: sparseAuthorKeys, destinationBase: 1101)
        try writer.append(.entityComplete(entity: 0, batches: 2, rowsWritten: 200))
        try commit(
            entity: 1, batch: 1, read: 10...60, rowsRead: 6, keys: [10, 20, 30, 35, 50], destinationBase: 10,
            nulled: 1, deferred: 2)
        if finished {
            try commit(
                entity: 1, batch: 2, read: 61...80, rowsRead: 20, keys: Array(61...80), destinationBase: 61,
                deferred: 3)
            try writer.append(.entityComplete(entity: 1, batches: 2, rowsWritten: 25))
            try commit(entity: 2, batch: 1, read: 1...3, rowsRead: 3, keys: [], destinationBase: 0)
            try writer.append(.entityComplete(entity: 2, batches: 1, rowsWritten: 0))
            try writer.append(.complete(atMillis: clock + 10))
        } else {
            try writer.append(.failed(atMillis: clock + 10, message: failure))
        }
        if tornTail {
            try writer.appendTorn(.started(atMillis: clock + 20, processID: 4243), keepingBytes: 11)
        }
        return JournalFixture(directory: directory, batches: batches)
    }

    /// Opens the journal to continue it, as a resumed job does.
    static func openWriter(_ directory: String) throws -> JournalWriter {
        var attempts = 0
        while true {
            waitUntilUnlocked(directory)
            do {
                return try JournalWriter.open(directory: directory)
            } catch {
                // (`catch where` on a typed error crashes the 6.3.1 compiler's SILGen.)
                guard error.code == .locked, attempts < 100 else { throw error }
                attempts += 1
            }
        }
    }

    /// Waits until no process holds the journal's lock.
    ///
    /// Tests run in parallel and spawn processes: a child forked while this process held the lock
    /// keeps a copy of the lock's descriptor, and so the lock, until it executes its program and
    /// the descriptor closes (`O_CLOEXEC`). That takes milliseconds; a writer closed here may not
    /// have released the lock yet when the next line runs.
    static func waitUntilUnlocked(_ directory: String) {
        let path = JournalLayout(directory: directory).lock
        for _ in 0..<1_000 {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return }
            let free = flock(fd, LOCK_EX | LOCK_NB) == 0
            close(fd)
            if free { return }
            usleep(5_000)
        }
    }

    /// Flips every bit of the byte at `offset` of `path`.
    static func flipByte(at offset: Int, of path: String) throws {
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[offset] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
    }

    /// The size of a file in bytes.
    static func size(of path: String) throws -> Int {
        try URL(fileURLWithPath: path).resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0
    }
}

/// Runs the built `chunkjournal` with `arguments`.
func chunkjournal(_ arguments: String...) throws -> CommandResult {
    try BuiltProduct.run("chunkjournal", arguments)
}

/// The lines of a command's output, without the final newline's empty line.
func lines(_ output: String) -> [String] {
    output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
}

/// The cells of one line of a table `chunkjournal` printed: columns are separated by at least
/// two spaces, and no cell contains two spaces in a row.
func cells(_ line: String) -> [String] {
    line.split(separator: "  ").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
}
