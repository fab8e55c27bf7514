import MigrationJournal
import Testing

@Suite("The log index")
struct JournalLogTests {
    /// Writes a journal with `records` through ``JournalWriter`` and returns its directory.
    func journal(_ directory: TemporaryDirectory, _ records: [LogRecord]) throws -> String {
        let path = directory.appending("job.journal")
        let writer = try JournalWriter.create(directory: path, header: testHeader(), plan: testPlan)
        for record in records { try writer.append(record) }
        writer.close()
        return path
    }

    func batch(
        entity: UInt32, _ number: UInt64, keys: ClosedRange<Int64>, written: UInt32, skipped: UInt32 = 0,
        micros: UInt64 = 0
    ) -> LogRecord {
        .batch(
            BatchRecord(
                entity: entity, batch: number, firstSourceKey: keys.lowerBound, lastSourceKey: keys.upperBound,
                rowsRead: written + skipped, rowsWritten: written, rowsSkipped: skipped, mapping: .allocate,
                destinationBase: 1, segmentFirstKey: keys.lowerBound, segmentLastKey: keys.upperBound, segmentCRC: 1,
                durationMicros: micros))
    }

    @Test("Each entity's summary adds up its batch records, in log order")
    func entitySummaries() throws {
        let directory = try TemporaryDirectory()
        let records: [LogRecord] = [
            .started(atMillis: 1, processID: 1),
            batch(entity: 0, 1, keys: 1...100, written: 100),
            batch(entity: 0, 2, keys: 101...250, written: 140, skipped: 10, micros: 777),
            .entityComplete(entity: 0, batches: 2, rowsWritten: 240),
            batch(entity: 1, 1, keys: -50 ... -10, written: 3, skipped: 38),
            .fixup(
                FixupRecord(
                    entity: 1, column: "artist_id", batch: 1, firstDestinationKey: 1, lastDestinationKey: 9,
                    rowsUpdated: 3, rowsNulled: 0)),
            .fixup(
                FixupRecord(
                    entity: 1, column: "artist_id", batch: 2, firstDestinationKey: 10, lastDestinationKey: 19,
                    rowsUpdated: 0, rowsNulled: 0)),
        ]
        let log = try JournalReader(directory: try journal(directory, records)).log

        #expect(log.records == records)
        #expect(log.entities.count == 3)
        let artist = log.entities[0]
        #expect(artist.lastBatch == 2 && artist.batchCount == 2)
        #expect(artist.firstSourceKey == 1 && artist.cursor == 250)
        #expect(artist.rowsRead == 250 && artist.rowsWritten == 240 && artist.rowsSkipped == 10)
        #expect(artist.lastBatchRecord?.durationMicros == 777)
        #expect(artist.isComplete && artist.fixupBatches.isEmpty)
        let album = log.entities[1]
        #expect(album.lastBatch == 1 && album.firstSourceKey == -50 && album.cursor == -10)
        #expect(album.rowsRead == 41 && album.rowsWritten == 3 && album.rowsSkipped == 38)
        #expect(!album.isComplete)
        #expect(album.fixupBatches == ["artist_id": 2])
        let track = log.entities[2]
        #expect(track.lastBatch == 0 && track.batchCount == 0 && track.cursor == nil && track.lastBatchRecord == nil)

        #expect(log.batches(entity: 0).map(\.batch) == [1, 2])
        #expect(log.batches().map(\.entity) == [0, 0, 1])
        #expect(log.fixups.map(\.batch) == [1, 2])
        #expect(log.recordsBatches && !log.recordsCompletion && !log.endsInFailure && log.lastFailure == nil)
    }

    @Test("The last failure is the one since the last start; the job's end is recorded")
    func failuresAndCompletion() throws {
        let directory = try TemporaryDirectory()
        let failed = try journal(
            directory,
            [
                .started(atMillis: 1, processID: 1),
                .failed(atMillis: 2, message: "first"),
                .started(atMillis: 3, processID: 1),
                .failed(atMillis: 4, message: "second"),
            ])
        let log = try JournalReader(directory: failed).log
        #expect(log.lastFailure == "second" && log.endsInFailure && !log.recordsBatches)

        // A start after the failure clears it; a record after it ends the failed state.
        let writer = try JournalWriter.open(directory: failed)
        try writer.append(.started(atMillis: 5, processID: 2))
        #expect(writer.log.lastFailure == nil && !writer.log.endsInFailure)
        try writer.append(.complete(atMillis: 6))
        #expect(writer.log.recordsCompletion)
        writer.close()
        #expect(try JournalReader(directory: failed).state == .complete)
    }

    @Test("A writer's index after appends equals the index read back from the file")
    func writerAndReaderAgree() throws {
        let directory = try TemporaryDirectory()
        let path = try journal(directory, [batch(entity: 2, 1, keys: 5...9, written: 5)])
        let writer = try JournalWriter.open(directory: path)
        try writer.append(batch(entity: 2, 2, keys: 10...20, written: 4, skipped: 7))
        try writer.append(.entityComplete(entity: 2, batches: 2, rowsWritten: 9))
        let appended = writer.log
        writer.close()
        let read = try JournalReader(directory: path).log
        #expect(read.entities == appended.entities)
        #expect(read.records == appended.records)
        #expect(read.entities[2].rowsWritten == 9 && read.entities[2].cursor == 20 && read.entities[2].isComplete)
    }

    @Test("Entry offsets follow from the record lengths and match the file")
    func entryOffsets() throws {
        let directory = try TemporaryDirectory()
        let path = try journal(directory, LogTests.sampleRecords())
        let log = try JournalReader(directory: path).log
        let offsets = log.entries.map(\.offset)
        #expect(offsets.first == 8)
        // Each frame's length field, read from the file at the computed offset, is the distance to the next.
        let bytes = try readBytes(JournalLayout(directory: path).log)
        for (offset, next) in zip(offsets, offsets.dropFirst() + [log.validLength]) {
            #expect(Int(LittleEndian.read(UInt32.self, in: bytes, at: offset)) + 8 == next - offset, "frame at \(offset)")
        }
        #expect(log.validLength == bytes.count)
    }

    @Test("A record naming an entity the plan does not have is kept but counted nowhere")
    func unknownEntity() throws {
        let directory = try TemporaryDirectory()
        let path = try journal(
            directory, [batch(entity: 7, 1, keys: 1...3, written: 3), .entityComplete(entity: 9, batches: 1, rowsWritten: 3)])
        let reader = try JournalReader(directory: path)
        #expect(reader.log.records.count == 2)
        #expect(reader.log.entities.allSatisfy { $0.batchCount == 0 && !$0.isComplete })
        #expect(reader.batches(entity: 7).count == 1)
        #expect(!reader.isComplete(entity: 9))
    }
}
