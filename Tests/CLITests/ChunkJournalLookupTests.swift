import Foundation
import MigrationJournal
import Testing

/// `chunkjournal lookup`, run as a built binary on a journal written by ``JournalWriter``.
@Suite("chunkjournal lookup")
struct ChunkJournalLookupTests {
    struct Report: Decodable {
        struct Result: Decodable, Equatable {
            var key: Int64
            var migrated: Bool
            var mapped: Int64?
        }
        var journal: String
        var entity: String
        var direction: String
        var results: [Result]
    }

    @Test("source keys to destination keys, through dense and sparse segments")
    func forward() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let result = try chunkjournal(
                "lookup", journal.directory, "Author", "1", "100", "101", "102", "151", "299",
                "5000", "-3")
            #expect(result.exitCode == 0)
            #expect(result.stderr == "")
            #expect(
                lines(result.stdout).map(cells) == [
                    ["Author source 1", "-> destination 1001"],
                    ["Author source 100", "-> destination 1100"],
                    ["Author source 101", "-> destination 1101"],
                    ["Author source 102", "not migrated"],
                    ["Author source 151", "-> destination 1126"],
                    ["Author source 299", "-> destination 1200"],
                    ["Author source 5000", "not migrated"],
                    ["Author source -3", "not migrated"],
                ], "\(result)")
        }
    }

    @Test("--reverse: destination keys back to source keys")
    func reverse() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let result = try chunkjournal(
                "lookup", journal.directory, "Author", "--reverse", "1001", "1126", "1200",
                "1201", "999")
            #expect(result.exitCode == 0)
            #expect(
                lines(result.stdout).map(cells) == [
                    ["Author destination 1001", "-> source 1"],
                    ["Author destination 1126", "-> source 151"],
                    ["Author destination 1200", "-> source 299"],
                    ["Author destination 1201", "not migrated"],
                    ["Author destination 999", "not migrated"],
                ], "\(result)")
        }
    }

    @Test("--json, both directions, on an entity that preserves keys")
    func json() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let forward = try chunkjournal("lookup", journal.directory, "Message", "35", "36", "70", "--json")
            #expect(forward.exitCode == 0)
            let report = try JSONDecoder().decode(Report.self, from: Data(forward.stdout.utf8))
            #expect(report.entity == "Message")
            #expect(report.direction == "source-to-destination")
            #expect(
                report.results == [
                    .init(key: 35, migrated: true, mapped: 35),
                    .init(key: 36, migrated: false, mapped: nil),
                    .init(key: 70, migrated: true, mapped: 70),
                ])

            let backward = try chunkjournal("lookup", journal.directory, "Message", "--reverse", "--json", "20", "21")
            let reverse = try JSONDecoder().decode(Report.self, from: Data(backward.stdout.utf8))
            #expect(reverse.direction == "destination-to-source")
            #expect(
                reverse.results == [
                    .init(key: 20, migrated: true, mapped: 20),
                    .init(key: 21, migrated: false, mapped: nil),
                ])
        }
    }

    @Test("a key that is not an integer, an unknown entity, no key: usage errors")
    func usageErrors() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let badKey = try chunkjournal("lookup", journal.directory, "Author", "12", "twelve")
            #expect(badKey.exitCode == 2)
            #expect(badKey.stdout == "")
            #expect(badKey.stderr.hasPrefix("chunkjournal: error: key 'twelve' of Author is not a 64-bit integer"), "\(badKey)")
            #expect(lines(badKey.stderr).count == 1)

            let unknown = try chunkjournal("lookup", journal.directory, "Comment", "1")
            #expect(unknown.exitCode == 2)
            #expect(unknown.stderr.contains("no entity named 'Comment'; its entities are Author, Message, Tag"), "\(unknown)")

            let noKey = try chunkjournal("lookup", journal.directory, "Author")
            #expect(noKey.exitCode == 2)
            #expect(noKey.stderr.hasPrefix("chunkjournal: error: give at least one key"), "\(noKey)")
        }
    }

    @Test("a damaged segment makes the keys it holds unreadable, naming the file")
    func damagedSegment() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let segment = journal.segmentPath(entity: 0, batch: 2)
            try JournalFixture.flipByte(at: 60, of: segment)
            let damaged = try chunkjournal("lookup", journal.directory, "Author", "151")
            #expect(damaged.exitCode == 3)
            #expect(damaged.stdout == "")
            #expect(damaged.stderr.hasPrefix("chunkjournal: error: \(segment): checksum mismatch"), "\(damaged)")

            // The dense batch before it needs no segment read.
            let intact = try chunkjournal("lookup", journal.directory, "Author", "5")
            #expect(intact.exitCode == 0)
            #expect(lines(intact.stdout).map(cells) == [["Author source 5", "-> destination 1005"]])
        }
    }
}
