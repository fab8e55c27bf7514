import Foundation
import MigrationJournal
import Testing

/// `chunkjournal batches`, run as a built binary on a journal written by ``JournalWriter``.
@Suite("chunkjournal batches")
struct ChunkJournalBatchesTests {
    /// One batch of `batches --json`.
    struct Batch: Decodable, Equatable {
        var entity: String
        var entityIndex: UInt32
        var batch: UInt64
        var firstSourceKey: Int64
        var lastSourceKey: Int64
        var rowsRead: UInt32
        var rowsWritten: UInt32
        var rowsSkipped: UInt32
        var relationshipsNulled: UInt32
        var relationshipsDeferred: UInt32
        var keys: String
        var firstDestinationKey: Int64?
        var lastDestinationKey: Int64?
        var segmentCRC: String?
        var durationMicros: UInt64
        var committedAt: String?
        var committedAtMillis: Int64
    }

    struct Report: Decodable {
        var journal: String
        var batches: [Batch]
    }

    static let heading = [
        "ENTITY", "BATCH", "SOURCE KEYS", "READ", "WRITTEN", "SKIPPED", "NULLED", "DEFERRED",
        "DESTINATION KEYS", "CRC", "MS", "COMMITTED",
    ]

    /// The CRC the fixture recorded for a batch, as eight hex digits.
    static func crc(_ journal: JournalFixture, _ entity: UInt32, _ batch: UInt64) -> String {
        let value = journal.batches.first { $0.entity == entity && $0.batch == batch }!.segmentCRC
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    @Test("one line per batch in log order")
    func all() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let result = try chunkjournal("batches", journal.directory)
            #expect(result.exitCode == 0)
            #expect(result.stderr == "")
            #expect(
                lines(result.stdout).map(cells) == [
                    Self.heading,
                    [
                        "Author", "1", "1..100", "100", "100", "0", "0", "0", "1001..1100", Self.crc(journal, 0, 1), "12",
                        "2026-01-01T00:00:01.500Z",
                    ],
                    [
                        "Author", "2", "101..299", "100", "100", "0", "0", "0", "1101..1200", Self.crc(journal, 0, 2), "13",
                        "2026-01-01T00:00:03.000Z",
                    ],
                    [
                        "Message", "1", "10..60", "6", "5", "1", "1", "2", "10..50", Self.crc(journal, 1, 1), "14",
                        "2026-01-01T00:00:04.500Z",
                    ],
                    [
                        "Message", "2", "61..80", "20", "20", "0", "0", "3", "61..80", Self.crc(journal, 1, 2), "15",
                        "2026-01-01T00:00:06.000Z",
                    ],
                    ["Tag", "1", "1..3", "3", "0", "3", "0", "0", "-", "-", "16", "2026-01-01T00:00:07.500Z"],
                ], "\(result)")
            // The CRCs are the ones `write` returned, which are the files' trailing four bytes.
            let file = try Data(contentsOf: URL(fileURLWithPath: journal.segmentPath(entity: 1, batch: 1)))
            let trailer = file.suffix(4).reversed().map { String(format: "%02x", $0) }.joined()
            #expect(trailer == Self.crc(journal, 1, 1))
        }
    }

    @Test("--entity keeps one entity's batches; --json carries every field")
    func oneEntity() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let text = try chunkjournal("batches", journal.directory, "--entity", "Message")
            #expect(text.exitCode == 0)
            #expect(lines(text.stdout).map { cells($0).prefix(2) } == [["ENTITY", "BATCH"], ["Message", "1"], ["Message", "2"]])

            let json = try chunkjournal("batches", journal.directory, "--entity", "Message", "--json")
            #expect(json.exitCode == 0)
            #expect(json.stderr == "")
            let report = try JSONDecoder().decode(Report.self, from: Data(json.stdout.utf8))
            #expect(report.journal == journal.directory)
            #expect(
                report.batches == [
                    Batch(
                        entity: "Message", entityIndex: 1, batch: 1, firstSourceKey: 10, lastSourceKey: 60,
                        rowsRead: 6, rowsWritten: 5, rowsSkipped: 1, relationshipsNulled: 1, relationshipsDeferred: 2,
                        keys: "preserve", firstDestinationKey: 10, lastDestinationKey: 50,
                        segmentCRC: Self.crc(journal, 1, 1), durationMicros: 14_345,
                        committedAt: "2026-01-01T00:00:04.500Z", committedAtMillis: JournalFixture.startMillis + 4_500),
                    Batch(
                        entity: "Message", entityIndex: 1, batch: 2, firstSourceKey: 61, lastSourceKey: 80,
                        rowsRead: 20, rowsWritten: 20, rowsSkipped: 0, relationshipsNulled: 0, relationshipsDeferred: 3,
                        keys: "preserve", firstDestinationKey: 61, lastDestinationKey: 80,
                        segmentCRC: Self.crc(journal, 1, 2), durationMicros: 15_345,
                        committedAt: "2026-01-01T00:00:06.000Z", committedAtMillis: JournalFixture.startMillis + 6_000),
                ])

            let tag = try chunkjournal("batches", journal.directory, "--entity", "Tag", "--json")
            let tagReport = try JSONDecoder().decode(Report.self, from: Data(tag.stdout.utf8))
            #expect(tagReport.batches.count == 1)
            #expect(tagReport.batches.first?.segmentCRC == nil)
            #expect(tagReport.batches.first?.firstDestinationKey == nil)
        }
    }

    @Test("an entity with no batches yet")
    func noBatches() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent, finished: false)
            let result = try chunkjournal("batches", journal.directory, "--entity", "Tag")
            #expect(result.exitCode == 0)
            #expect(result.stdout == "no batches of Tag yet\n")
        }
    }

    @Test("an unknown entity is a usage error naming it and the known ones")
    func unknownEntity() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let result = try chunkjournal("batches", journal.directory, "--entity", "Comment")
            #expect(result.exitCode == 2)
            #expect(result.stdout == "")
            #expect(
                result.stderr == """
                    chunkjournal: error: the journal at \(journal.directory) has no entity named 'Comment'; \
                    its entities are Author, Message, Tag

                    """)
        }
    }
}
