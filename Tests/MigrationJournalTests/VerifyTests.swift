import Foundation
import MigrationJournal
import Testing

@Suite("JournalReader.verify")
struct VerifyTests {
    /// A journal of three entities: sparse allocate, dense allocate, sparse preserve; 7 segments.
    func makeJournal(_ directory: TemporaryDirectory) throws -> String {
        let path = directory.appending("job.journal")
        let writer = try JournalWriter.create(directory: path, header: testHeader(), plan: testPlan)
        defer { writer.close() }
        try writer.append(.started(atMillis: 1, processID: 10))
        try appendBatch(writer, entity: 0, batch: 1, keys: sparseKeys(300, from: 1, gaps: 1...4, seed: 1), destinationBase: 1)
        try appendBatch(writer, entity: 0, batch: 2, keys: sparseKeys(300, from: 5_000, gaps: 1...4, seed: 2), destinationBase: 301)
        try appendBatch(writer, entity: 0, batch: 3, keys: sparseKeys(300, from: 9_000, gaps: 1...4, seed: 3), destinationBase: 601)
        try writer.append(.entityComplete(entity: 0, batches: 3, rowsWritten: 900))
        try appendBatch(writer, entity: 1, batch: 1, keys: Array(1...500), destinationBase: 1)
        try appendBatch(writer, entity: 1, batch: 2, keys: Array(501...1_000), destinationBase: 501)
        try appendBatch(
            writer, entity: 2, batch: 1, keys: sparseKeys(100, from: -400, gaps: 1...9, seed: 4), destinationBase: 0, mapping: .preserve)
        try appendBatch(writer, entity: 2, batch: 2, keys: Array(1_000...1_099), destinationBase: 0, mapping: .preserve)
        return path
    }

    @Test("An intact journal verifies")
    func intact() throws {
        let directory = try TemporaryDirectory()
        let path = try makeJournal(directory)
        let report = JournalReader.verify(directory: path)
        #expect(report.isIntact, "\(report.problems)")
        #expect(report.records == 9)
        #expect(report.segmentsChecked == 7)
        #expect(report.pendingSegments.isEmpty)
    }

    @Test("A missing segment is reported as missing-segment")
    func missingSegment() throws {
        let directory = try TemporaryDirectory()
        let path = try makeJournal(directory)
        let segment = JournalLayout(directory: path).segment(entity: 0, batch: 2)
        try FileManager.default.removeItem(atPath: segment)
        let report = JournalReader.verify(directory: path)
        #expect(!report.isIntact)
        #expect(report.problems.count == 1)
        #expect(report.problems.first?.code == "missing-segment")
        #expect(report.problems.first?.file == segment)
        #expect(report.segmentsChecked == 6)
    }

    @Test("A flipped byte in a segment file is reported as damaged-segment naming the file")
    func damagedSegment() throws {
        let directory = try TemporaryDirectory()
        let path = try makeJournal(directory)
        for (entity, batch) in [(UInt32(0), UInt64(3)), (1, 1), (2, 1)] {
            let segment = JournalLayout(directory: path).segment(entity: entity, batch: batch)
            let original = try readBytes(segment)
            for position in [0, 7, 30, original.count / 2, original.count - 1] {
                var bytes = original
                bytes[position] ^= 0x20
                try writeBytes(bytes, to: segment)
                let report = JournalReader.verify(directory: path)
                #expect(report.problems.count == 1, "entity \(entity) batch \(batch) byte \(position)")
                #expect(report.problems.first?.code == "damaged-segment")
                #expect(report.problems.first?.file == segment)
            }
            // A segment that is intact in itself but is not the one the record names.
            let other = try IDMapSegment(
                entity: entity, batch: batch, mapping: entity == 2 ? .preserve : .allocate,
                destinationBase: 1, sourceKeys: [1_000_000, 1_000_002])
            try writeBytes(other.encoded(), to: segment)
            #expect(JournalReader.verify(directory: path).problems.map(\.code) == ["damaged-segment"])
            try writeBytes(original, to: segment)
            #expect(JournalReader.verify(directory: path).isIntact)
        }
    }

    @Test("A gap in batch numbers is a discontinuity")
    func batchGap() throws {
        let directory = try TemporaryDirectory()
        let path = try makeJournal(directory)
        let writer = try JournalWriter.open(directory: path)
        try appendBatch(writer, entity: 1, batch: 4, keys: Array(2_000...2_099), destinationBase: 2_000)
        writer.close()
        let report = JournalReader.verify(directory: path)
        #expect(report.problems.count == 1)
        #expect(report.problems.first?.code == "discontinuity")
        #expect(report.problems.first?.message.contains("batch 4 follows batch 2") == true)
    }

    @Test("Keys that move backwards are a discontinuity")
    func keysBackwards() throws {
        let directory = try TemporaryDirectory()
        let path = try makeJournal(directory)
        let writer = try JournalWriter.open(directory: path)
        try appendBatch(writer, entity: 1, batch: 3, keys: Array(900...1_100), destinationBase: 1_001)
        writer.close()
        let report = JournalReader.verify(directory: path)
        #expect(!report.problems.isEmpty)
        #expect(report.problems.allSatisfy { $0.code == "discontinuity" })
    }

    @Test("An edited plan.json no longer matches the header's fingerprint")
    func editedPlan() throws {
        let directory = try TemporaryDirectory()
        let path = try makeJournal(directory)
        let plan = JournalLayout(directory: path).plan
        var bytes = try readBytes(plan)
        bytes[3] = UInt8(ascii: "E")
        try writeBytes(bytes, to: plan)
        let report = JournalReader.verify(directory: path)
        #expect(report.problems.count == 1)
        #expect(report.problems.first?.file == plan)
        #expect(report.problems.first?.message.contains("plan") == true)
    }

    @Test("A segment written for a batch that never committed is pending, not a problem")
    func pendingSegment() throws {
        let directory = try TemporaryDirectory()
        let path = try makeJournal(directory)
        let writer = try JournalWriter.open(directory: path)
        try writer.write(IDMapSegment(entity: 0, batch: 4, mapping: .allocate, destinationBase: 901, sourceKeys: [20_000, 20_001]))
        #expect(try writer.hasSegment(entity: 0, batch: 4))
        #expect(try writer.segmentCRC(entity: 0, batch: 4) != nil)
        writer.close()
        let report = JournalReader.verify(directory: path)
        #expect(report.isIntact)
        #expect(report.pendingSegments == [JournalLayout(directory: path).segment(entity: 0, batch: 4)])

        // Resume deletes it.
        let resumed = try JournalWriter.open(directory: path)
        try resumed.removeSegments(entity: 0, after: 3)
        #expect(try !resumed.hasSegment(entity: 0, batch: 4))
        #expect(try resumed.hasSegment(entity: 0, batch: 3))
        resumed.close()
        #expect(JournalReader.verify(directory: path).pendingSegments.isEmpty)
    }

    @Test("Segment files are named by entity and ten-digit batch number")
    func segmentNames() throws {
        let layout = JournalLayout(directory: "/tmp/x.journal/")
        #expect(layout.directory == "/tmp/x.journal")
        #expect(layout.segment(entity: 2, batch: 17) == "/tmp/x.journal/segments/2/0000000017.seg")
        #expect(layout.header == "/tmp/x.journal/header" && layout.log == "/tmp/x.journal/log")
        #expect(layout.plan == "/tmp/x.journal/plan.json" && layout.lock == "/tmp/x.journal/lock")
    }
}
