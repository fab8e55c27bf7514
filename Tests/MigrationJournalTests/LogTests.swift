import MigrationJournal
import Testing

@Suite("The journal log and header")
struct LogTests {
    /// One of each kind of record, in the order a job writes them.
    static func sampleRecords() -> [LogRecord] {
        [
            .started(atMillis: 1_700_000_000_000, processID: 4242),
            .batch(
                BatchRecord(
                    entity: 0, batch: 1, firstSourceKey: -5, lastSourceKey: 1_000, rowsRead: 900, rowsWritten: 899,
                    rowsSkipped: 1, relationshipsNulled: 3, relationshipsDeferred: 4, mapping: .allocate,
                    destinationBase: 1, segmentFirstKey: -4, segmentLastKey: 999, segmentCRC: 0xDEAD_BEEF,
                    durationMicros: 123_456, committedAtMillis: 1_700_000_000_500)),
            .batch(
                BatchRecord(
                    entity: 2, batch: 1, firstSourceKey: Int64.min, lastSourceKey: Int64.max, rowsRead: 0, rowsWritten: 0,
                    rowsSkipped: 0, mapping: .preserve, destinationBase: 0, segmentFirstKey: 0, segmentLastKey: 0,
                    segmentCRC: 0)),
            .fixup(
                FixupRecord(
                    entity: 2, column: "reply_to", batch: 1, firstDestinationKey: 1, lastDestinationKey: 5_000,
                    rowsUpdated: 4_000, rowsNulled: 7, committedAtMillis: 1_700_000_001_000)),
            .entityComplete(entity: 0, batches: 1, rowsWritten: 899),
            .failed(
                atMillis: 1_700_000_002_000, message: "album batch 3, source key 17: column title: NOT NULL constraint failed — ünïcødé"),
            .started(atMillis: 1_700_000_003_000, processID: -1),
            .complete(atMillis: 1_700_000_004_000),
        ]
    }

    func createJournal(_ directory: TemporaryDirectory, records: [LogRecord] = sampleRecords()) throws -> String {
        let path = directory.appending("job.journal")
        let writer = try JournalWriter.create(directory: path, header: testHeader(), plan: testPlan)
        for record in records { try writer.append(record) }
        writer.close()
        return path
    }

    /// The offset of each frame and the end of the log, read back through the reader.
    func frameOffsets(_ path: String) throws -> [Int] {
        let reader = try JournalReader(directory: path)
        return reader.log.entries.map(\.offset) + [reader.log.validLength]
    }

    @Test("Records written by JournalWriter read back equal, with the header and plan")
    func roundTrip() throws {
        let directory = try TemporaryDirectory()
        let path = try createJournal(directory)
        let reader = try JournalReader(directory: path)
        #expect(reader.records == Self.sampleRecords())
        #expect(reader.header == testHeader())
        #expect(reader.header.formatVersion == JournalHeader.formatVersion)
        #expect(reader.plan == testPlan)
        #expect(reader.log.tail == .clean)
        #expect(reader.batches.count == 2 && reader.batches(entity: 2).count == 1)
        #expect(reader.fixups.count == 1)
        #expect(reader.entityIndex(named: "track") == 2 && reader.entityIndex(named: "nope") == nil)
        #expect(reader.isComplete(entity: 0) && !reader.isComplete(entity: 1))
        #expect(reader.state == .complete)
        #expect(reader.log.entries.map(\.index) == Array(0..<8))
        // The log file is the 8-byte file header followed by the frames, nothing else.
        #expect(try fileSize(reader.layout.log) == reader.log.validLength)
        #expect(reader.log.entries.first?.offset == 8)

        // Reopening for writing sees the same records and appends after them.
        let writer = try JournalWriter.open(directory: path)
        #expect(writer.records == Self.sampleRecords())
        #expect(writer.droppedTail == .clean)
        try writer.append(.started(atMillis: 9, processID: 1))
        writer.close()
        #expect(try JournalReader(directory: path).records == Self.sampleRecords() + [.started(atMillis: 9, processID: 1)])
    }

    @Test("Job states: interrupted, failed, running")
    func states() throws {
        let directory = try TemporaryDirectory()
        let path = try createJournal(directory, records: Array(Self.sampleRecords().prefix(5)))
        #expect(try JournalReader(directory: path).state == .interrupted)
        let writer = try JournalWriter.open(directory: path)
        #expect(try JournalReader(directory: path).state == .running)
        #expect(journalError { try JournalWriter.open(directory: path) }?.code == .locked)
        try writer.append(.failed(atMillis: 1, message: "disk full"))
        writer.close()
        let failed = try JournalReader(directory: path)
        #expect(failed.state == .failed)
        #expect(failed.lastFailure == "disk full")
    }

    @Test("create refuses a directory that already holds a journal")
    func createTwice() throws {
        let directory = try TemporaryDirectory()
        let path = try createJournal(directory)
        #expect(journalError { try JournalWriter.create(directory: path, header: testHeader(), plan: testPlan) }?.code == .invalidArgument)
        #expect(journalError { try JournalReader(directory: directory.appending("none")) }?.code == .notFound)
        #expect(journalError { try JournalReader(directory: directory.path) }?.code == .notAJournal)
    }

    @Test(
        "A torn last record is dropped on open and cut off by JournalWriter.open",
        arguments: [1, 3, 4, 7, 8, 9, 20, 50, 101])
    func tornTail(keepingBytes: Int) throws {
        let directory = try TemporaryDirectory("tornTail\(keepingBytes)")
        let records = Array(Self.sampleRecords().prefix(3))
        let path = try createJournal(directory, records: records)
        let intactLength = try fileSize(JournalLayout(directory: path).log)
        let torn = Self.sampleRecords()[1]  // a batch record: a 102-byte frame
        let writer = try JournalWriter.open(directory: path)
        try writer.appendTorn(torn, keepingBytes: keepingBytes)
        writer.close()
        #expect(try fileSize(JournalLayout(directory: path).log) == intactLength + keepingBytes)

        let reader = try JournalReader(directory: path)
        #expect(reader.records == records)
        guard case let .torn(index, offset, reason) = reader.log.tail else {
            Issue.record("expected a torn tail, got \(reader.log.tail)")
            return
        }
        #expect(index == 3)
        #expect(offset == intactLength)
        #expect(!reason.isEmpty)
        #expect(reader.log.validLength == intactLength)

        let reopened = try JournalWriter.open(directory: path)
        #expect(reopened.records == records)
        #expect(reopened.droppedTail == reader.log.tail)
        #expect(try fileSize(JournalLayout(directory: path).log) == intactLength, "open cuts the torn bytes off")
        let next = LogRecord.complete(atMillis: 77)
        try reopened.append(next)
        reopened.close()
        let after = try JournalReader(directory: path)
        #expect(after.records == records + [next])
        #expect(after.log.tail == .clean)
    }

    @Test("A whole frame is 8 bytes of length and CRC plus the payload")
    func frameLength() throws {
        let directory = try TemporaryDirectory()
        let path = try createJournal(directory, records: Array(Self.sampleRecords().prefix(2)))
        let offsets = try frameOffsets(path)
        #expect(offsets == [8, 8 + 8 + 13, 8 + 8 + 13 + 8 + 94])
        let bytes = try readBytes(JournalLayout(directory: path).log)
        #expect(Array(bytes[0..<8]) == Array("CMLG".utf8) + [1, 0, 0, 0])
        // The CRC covers the four length bytes and the payload.
        #expect(LittleEndian.read(UInt32.self, in: bytes, at: 29) == 94)
        let stored = LittleEndian.read(UInt32.self, in: bytes, at: 33)
        #expect(stored == CRC32C.checksum(Array(bytes[29..<33]) + Array(bytes[37..<(37 + 94)])))
        #expect(bytes[37] == 2, "a batch record's kind")
    }

    @Test("A flipped byte in a middle record is damage naming the record, wherever it is in the frame")
    func middleRecordDamage() throws {
        let directory = try TemporaryDirectory()
        let path = try createJournal(directory)
        let log = JournalLayout(directory: path).log
        let original = try readBytes(log)
        let offsets = try frameOffsets(path)
        let damagedIndex = 1  // the first batch record
        for position in offsets[damagedIndex]..<offsets[damagedIndex + 1] {
            for pattern: UInt8 in [0x01, 0x80, 0xFF] {
                var bytes = original
                bytes[position] ^= pattern
                try writeBytes(bytes, to: log)
                let error = journalError { try JournalReader(directory: path) }
                #expect(error?.code == .damagedRecord, "byte \(position) ^ \(pattern)")
                #expect(
                    error?.message.contains("record \(damagedIndex) at offset \(offsets[damagedIndex])") == true,
                    "byte \(position) ^ \(pattern): \(error?.message ?? "no error")")
                #expect(error?.file == log)
                // The writer refuses it too, rather than cutting the good records off.
                #expect(journalError { try JournalWriter.open(directory: path) }?.code == .damagedRecord)
            }
        }
        try writeBytes(original, to: log)
        #expect(try JournalReader(directory: path).records == Self.sampleRecords())
    }

    @Test("A flipped byte in the last record reads as a torn tail, and verify names the record")
    func lastRecordDamage() throws {
        let directory = try TemporaryDirectory()
        let records = Self.sampleRecords()
        let path = try createJournal(directory, records: Array(records.prefix(3)))
        let log = JournalLayout(directory: path).log
        let original = try readBytes(log)
        let offsets = try frameOffsets(path)
        for position in offsets[2]..<offsets[3] {
            var bytes = original
            bytes[position] ^= 0x10
            try writeBytes(bytes, to: log)
            let reader = try JournalReader(directory: path)
            #expect(reader.records == Array(records.prefix(2)), "byte \(position)")
            guard case .torn(recordIndex: 2, offset: offsets[2], _) = reader.log.tail else {
                Issue.record("byte \(position): expected record 2 torn, got \(reader.log.tail)")
                continue
            }
            let report = JournalReader.verify(directory: path)
            #expect(!report.isIntact)
            #expect(report.problems.contains { $0.code == "damaged-record" && $0.message.contains("record 2 at offset \(offsets[2])") })
        }
    }

    @Test("A tail of zeros, as a file system can leave after a crash, is torn, not damage")
    func zeroTail() throws {
        let directory = try TemporaryDirectory()
        let path = try createJournal(directory, records: Array(Self.sampleRecords().prefix(4)))
        let log = JournalLayout(directory: path).log
        let original = try readBytes(log)
        try writeBytes(original + [UInt8](repeating: 0, count: 4096), to: log)
        let reader = try JournalReader(directory: path)
        #expect(reader.records == Array(Self.sampleRecords().prefix(4)))
        #expect(reader.log.validLength == original.count)
        guard case .torn(recordIndex: 4, offset: original.count, _) = reader.log.tail else {
            Issue.record("expected a torn tail, got \(reader.log.tail)")
            return
        }
    }

    @Test("A log of a newer format version is refused, saying so")
    func newerLog() throws {
        let directory = try TemporaryDirectory()
        let path = try createJournal(directory)
        let log = JournalLayout(directory: path).log
        var bytes = try readBytes(log)
        bytes[4] = UInt8(LogFile.formatVersion + 1)
        try writeBytes(bytes, to: log)
        let error = journalError { try JournalReader(directory: path) }
        #expect(error?.code == .newerFormat)
        #expect(error?.message.contains("newer") == true)
        #expect(journalError { try JournalWriter.open(directory: path) }?.code == .newerFormat)
    }

    @Test("A header of a newer format version is refused before its checksum is read")
    func newerHeader() throws {
        let directory = try TemporaryDirectory()
        let path = try createJournal(directory)
        let headerPath = JournalLayout(directory: path).header
        let original = try readBytes(headerPath)
        #expect(Array(original[0..<8]) == Array("CMJOURNL".utf8))
        var bytes = original
        bytes[8] = UInt8(JournalHeader.formatVersion + 1)
        for candidate in [bytes, resealed(bytes)] {
            try writeBytes(candidate, to: headerPath)
            let error = journalError { try JournalReader(directory: path) }
            #expect(error?.code == .newerFormat)
            #expect(error?.message.contains("newer") == true)
            #expect(error?.file == headerPath)
        }
        // The same header damaged instead is damage, not a version question.
        var damaged = original
        damaged[30] ^= 0x04
        try writeBytes(damaged, to: headerPath)
        #expect(journalError { try JournalReader(directory: path) }?.code == .damagedHeader)
        try writeBytes(Array(original.prefix(10)), to: headerPath)
        #expect(journalError { try JournalReader(directory: path) }?.code == .damagedHeader)
        try writeBytes(Array("{}".utf8), to: headerPath)
        #expect(journalError { try JournalReader(directory: path) }?.code == .notAJournal)
    }

    @Test("The header round-trips through its JSON body")
    func headerRoundTrip() throws {
        let header = testHeader()
        let bytes = try header.encoded()
        #expect(try JournalHeader.decode(bytes, file: "header") == header)
        #expect(try header.encoded() == bytes, "the encoding is deterministic")
        let length = Int(LittleEndian.read(UInt32.self, in: bytes, at: 12))
        #expect(bytes.count == 16 + length + 4)
        #expect(trailingCRC(bytes) == CRC32C.checksum(bytes.dropLast(4)))
    }

    @Test("A batch record's last destination key")
    func destinationLast() {
        var record = BatchRecord(
            entity: 0, batch: 1, firstSourceKey: 1, lastSourceKey: 10, rowsRead: 10, rowsWritten: 10,
            rowsSkipped: 0, mapping: .allocate, destinationBase: 101,
            segmentFirstKey: 1, segmentLastKey: 10, segmentCRC: 0)
        #expect(record.destinationLast == 110)
        record.mapping = .preserve
        #expect(record.destinationLast == 10)
    }
}
