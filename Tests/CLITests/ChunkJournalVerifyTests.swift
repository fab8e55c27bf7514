import Foundation
import MigrationJournal
import Testing

/// `chunkjournal verify`, run as a built binary on intact and damaged journals.
@Suite("chunkjournal verify")
struct ChunkJournalVerifyTests {
    struct Report: Decodable {
        struct Problem: Decodable {
            var code: String
            var message: String
            var file: String?
        }
        var journal: String
        var intact: Bool
        var records: Int
        var segmentsChecked: Int
        var pendingSegments: [String]
        var problems: [Problem]
    }

    @Test("an intact journal: the counts, exit 0")
    func intact() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let result = try chunkjournal("verify", journal.directory)
            #expect(result.exitCode == 0)
            #expect(result.stdout == "intact: 10 records, 4 segments checked\n")
            #expect(result.stderr == "")

            let json = try chunkjournal("verify", journal.directory, "--json")
            #expect(json.exitCode == 0)
            let report = try JSONDecoder().decode(Report.self, from: Data(json.stdout.utf8))
            #expect(report.intact)
            #expect(report.records == 10)
            #expect(report.segmentsChecked == 4)
            #expect(report.problems.isEmpty)
            #expect(report.pendingSegments.isEmpty)
        }
    }

    @Test("a flipped byte in a segment: exit 1, naming the segment file")
    func flippedSegmentByte() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let segment = journal.segmentPath(entity: 0, batch: 2)
            try JournalFixture.flipByte(at: 60, of: segment)
            let result = try chunkjournal("verify", journal.directory)
            #expect(result.exitCode == 1)
            let output = lines(result.stdout)
            #expect(output.first == "damaged: 1 problem (10 records, 3 segments checked)", "\(result)")
            #expect(output.dropFirst().first?.hasPrefix("1. [damaged-segment] \(segment): checksum mismatch") == true, "\(result)")
            #expect(
                result.stderr.hasPrefix(
                    "chunkjournal: error: the journal at \(journal.directory) is damaged: \(segment): checksum mismatch"), "\(result)")
            #expect(lines(result.stderr).count == 1)

            let json = try chunkjournal("verify", journal.directory, "--json")
            #expect(json.exitCode == 1)
            let report = try JSONDecoder().decode(Report.self, from: Data(json.stdout.utf8))
            #expect(!report.intact)
            #expect(report.problems.map(\.code) == ["damaged-segment"])
            #expect(report.problems.first?.file == segment)
        }
    }

    @Test("a torn tail: exit 1, naming the record and its offset")
    func tornTail() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent, tornTail: true)
            let offset = try JournalFixture.size(of: journal.logPath) - 11
            let result = try chunkjournal("verify", journal.directory)
            #expect(result.exitCode == 1)
            let output = lines(result.stdout)
            #expect(output.first == "damaged: 1 problem (10 records, 4 segments checked)", "\(result)")
            #expect(
                output.dropFirst().first?.hasPrefix(
                    "1. [damaged-record] \(journal.logPath): record 10 at offset \(offset) is torn") == true, "\(result)")
            #expect(result.stderr.contains("\(journal.logPath): record 10 at offset \(offset) is torn"))
        }
    }

    @Test("a damaged record before the last: verify reports it (exit 1), info cannot read the journal (exit 3)")
    func damagedRecord() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            // The first record's payload starts after the 8-byte file header and the 8-byte frame header.
            try JournalFixture.flipByte(at: 18, of: journal.logPath)
            let verify = try chunkjournal("verify", journal.directory)
            #expect(verify.exitCode == 1)
            #expect(
                lines(verify.stdout).dropFirst().first?.hasPrefix(
                    "1. [damaged-record] \(journal.logPath): record 0 at offset 8: checksum mismatch") == true, "\(verify)")

            let info = try chunkjournal("info", journal.directory)
            #expect(info.exitCode == 3)
            #expect(info.stdout == "")
            #expect(
                info.stderr.hasPrefix("chunkjournal: error: \(journal.logPath): record 0 at offset 8: checksum mismatch"),
                "\(info)")
        }
    }

    @Test("a segment no record names yet is noted, not counted as damage")
    func pendingSegment() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent, finished: false)
            let writer = try JournalFixture.openWriter(journal.directory)
            try writer.write(
                IDMapSegment(
                    entity: 1, batch: 2, mapping: .preserve, destinationBase: 61,
                    sourceKeys: Array(61...80)))
            writer.close()
            let result = try chunkjournal("verify", journal.directory)
            #expect(result.exitCode == 0)
            #expect(
                lines(result.stdout) == [
                    "intact: 6 records, 3 segments checked",
                    "note: pending segment \(journal.segmentPath(entity: 1, batch: 2)): no record names it yet; "
                        + "resuming the job deletes or logs it",
                ], "\(result)")
            #expect(result.stderr == "")
        }
    }

    @Test("a directory that is not a journal: exit 3")
    func notAJournal() throws {
        try withTemporaryDirectory { parent in
            try Data("hello".utf8).write(to: URL(fileURLWithPath: parent + "/notes.txt"))
            let result = try chunkjournal("verify", parent)
            #expect(result.exitCode == 3)
            #expect(result.stdout == "")
            #expect(result.stderr == "chunkjournal: error: \(parent): not a chunkmigrate journal: it has no header file\n")

            let missing = try chunkjournal("verify", parent + "/nowhere", "--json")
            #expect(missing.exitCode == 3)
            #expect(missing.stdout == "")
            #expect(missing.stderr == "chunkjournal: error: \(parent)/nowhere: no journal directory here\n")
        }
    }
}
