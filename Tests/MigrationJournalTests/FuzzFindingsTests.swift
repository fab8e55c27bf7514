import Foundation
@testable import MigrationJournal
import Testing

/// The inputs fuzzing found (`Tools/fuzz`) that made the journal's readers allocate without
/// bound or take time quadratic in a file's size, each now refused or read in bounded time.
@Suite("Journal readers: what fuzzing found")
struct JournalFuzzFindingsTests {
    /// A dense segment of `count` keys from 1: 60 bytes whatever the count.
    static func denseSegment(count: UInt32) -> [UInt8] {
        var writer = ByteWriter()
        writer.raw(Array("CMSG".utf8))
        writer.u16(1)
        writer.u8(0)  // dense
        writer.u8(0)  // allocate
        writer.u32(0)  // entity
        writer.u64(1)  // batch
        writer.u32(count)
        writer.i64(1)
        writer.i64(Int64(count))
        writer.i64(1)  // destination base
        writer.u32(0)
        writer.u32(0)
        writer.u32(CRC32C.checksum(writer.bytes))
        return writer.bytes
    }

    @Test(
        "a 60-byte dense segment claiming 4,294,967,295 keys is refused as damaged, not decoded into 32 GiB; the largest count a segment maps still reads"
    )
    func denseSegmentCount() throws {
        let error = journalError { try IDMapSegment.decode(Self.denseSegment(count: .max), file: "1.seg") }
        #expect(
            error?.code == .damagedSegment && error?.message.contains("more than a segment maps") == true, "\(String(describing: error))")
        let over = journalError {
            try IDMapSegment.decode(Self.denseSegment(count: UInt32(IDMapSegment.maximumKeyCount) + 1), file: "1.seg")
        }
        #expect(over?.code == .damagedSegment)
        let largest = try IDMapSegment.decode(Self.denseSegment(count: UInt32(IDMapSegment.maximumKeyCount)), file: "1.seg")
        #expect(largest.sourceKeys.count == IDMapSegment.maximumKeyCount && largest.sourceKeys.last == Int64(IDMapSegment.maximumKeyCount))
        // A writer refuses to make what a reader would refuse.
        let keys = Array(Int64(1)...Int64(IDMapSegment.maximumKeyCount + 1))
        let refused = journalError { try IDMapSegment(entity: 0, batch: 1, mapping: .allocate, destinationBase: 1, sourceKeys: keys) }
        #expect(refused?.code == .invalidArgument && refused?.message.contains("at most 4194304") == true, "\(String(describing: refused))")
    }

    /// A log whose first frame fails its checksum and where a `failed` record's frame running to
    /// the end of the file starts every `step` bytes, each with a wrong checksum.
    static func nestedFrames(size: Int, step: Int = 24) -> [UInt8] {
        var bytes = LogFile.fileHeader() + [UInt8](repeating: 0, count: size - LogFile.fileHeaderLength)
        var at = LogFile.fileHeaderLength
        while at + 21 <= size {
            let length = min(size - at - 8, LogFile.maximumPayload)
            var frame = ByteWriter()
            frame.u32(UInt32(length))
            frame.u32(0)
            frame.u8(5)
            frame.i64(0)
            frame.u32(UInt32(length - 13))
            bytes.replaceSubrange(at..<(at + 21), with: frame.bytes)
            at += step
        }
        return bytes
    }

    @Test(
        "after a bad frame, the search for a valid one checks frames of at most 2,048 bytes: a log of frames that nest to its end reads as a torn tail in one bounded pass (it checksummed every nested frame, quadratic)"
    )
    func nestedFramesAfterBadFrame() throws {
        let bytes = Self.nestedFrames(size: 64 << 10)
        let scan = try LogFile.scan(bytes, file: "log")
        #expect(scan.records.isEmpty && scan.torn?.index == 0 && scan.torn?.offset == 8, "\(scan.tail)")
        // The work, counted rather than timed: each nested frame checked to the end of the file
        // would be about 87 million bytes here.
        var checked = 0
        #expect(LogFile.firstValidFrame(in: bytes, after: 8, checkedBytes: &checked) == nil)
        #expect(checked <= 8 * bytes.count, "\(checked) bytes checked for a \(bytes.count)-byte log")

        // A valid frame after the damage is still found, so damage in the middle is still refused.
        var damaged = bytes
        let valid = LogFile.frame(.complete(atMillis: 7))
        damaged.replaceSubrange(40_000..<(40_000 + valid.count), with: valid)
        let error = journalError { try LogFile.scan(damaged, file: "log") }
        #expect(
            error?.code == .damagedRecord && error?.message.contains("a valid record follows at offset 40000") == true,
            "\(String(describing: error))")
    }

    @Test(
        "a failure's message is kept to 2,000 bytes of UTF-8, cut at a character, so that its record is one the search after a bad frame finds"
    )
    func longFailureMessage() throws {
        let message = String(repeating: "é", count: 1_500) + "end"  // 3,003 bytes
        let frame = LogFile.frame(.failed(atMillis: 1, message: message))
        #expect(frame.count - LogFile.frameHeaderLength <= LogFile.maximumResyncPayload)
        let decoded = LogRecord.decode(frame, from: LogFile.frameHeaderLength, to: frame.count)
        guard case let .failed(_, kept)? = decoded else {
            Issue.record("not a failure: \(String(describing: decoded))")
            return
        }
        #expect(kept.utf8.count <= LogRecord.maximumMessageBytes && kept.hasSuffix("...") && kept.hasPrefix("éé"))
        #expect(kept.dropLast(3).allSatisfy { $0 == "é" }, "cut inside a character")
        let short = LogFile.frame(.failed(atMillis: 1, message: "disk full"))
        #expect(LogRecord.decode(short, from: LogFile.frameHeaderLength, to: short.count) == .failed(atMillis: 1, message: "disk full"))

        // After a bad frame, the long failure is found: damage, not a torn tail.
        var log = LogFile.fileHeader() + LogFile.frame(.complete(atMillis: 1)) + frame
        log[LogFile.fileHeaderLength + 9] ^= 0xFF
        let error = journalError { try LogFile.scan(log, file: "log") }
        #expect(error?.code == .damagedRecord, "\(String(describing: error))")
    }
}

@Suite("The journal's files when the file system fails")
struct JournalFileSystemFailureTests {
    @Test(
        "a segment that cannot be looked at for another reason than its absence (a loop of symbolic links) is an I/O error naming it, not a missing segment to rebuild around"
    )
    func statFailureIsNoAbsence() throws {
        let directory = try TemporaryDirectory("statFailure")
        let writer = try JournalWriter.create(directory: directory.path, header: testHeader(), plan: testPlan)
        defer { writer.close() }
        let layout = JournalLayout(directory: directory.path)
        try FileIO.makeDirectory(layout.segmentFolder(entity: 0))
        let path = layout.segment(entity: 0, batch: 1)
        #expect(try !writer.hasSegment(entity: 0, batch: 1))
        #expect(try writer.segmentCRC(entity: 0, batch: 1) == nil)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: path)
        for error in [
            journalError { try writer.hasSegment(entity: 0, batch: 1) }, journalError { try writer.segmentCRC(entity: 0, batch: 1) },
        ] {
            #expect(error?.code == .io && error?.file == path, "\(String(describing: error))")
        }
    }
}

extension LogFile.Scan {
    var torn: (index: Int, offset: Int, reason: String)? {
        guard case let .torn(index, offset, reason) = tail else { return nil }
        return (index, offset, reason)
    }
}
