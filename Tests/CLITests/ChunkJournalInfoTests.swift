import Foundation
import MigrationJournal
import Testing

/// `chunkjournal info`, run as a built binary on journals written by ``JournalWriter``.
@Suite("chunkjournal info")
struct ChunkJournalInfoTests {
    /// The fields of `info --json` a script relies on.
    struct Report: Decodable {
        struct Entity: Decodable {
            var index: UInt32
            var name: String
            var sourceTable: String
            var destinationTable: String
            var keys: String
            var relationships: [String: String]
            var batches: Int
            var rowsRead: UInt64
            var rowsWritten: UInt64
            var rowsSkipped: UInt64
            var firstSourceKey: Int64?
            var lastSourceKey: Int64?
            var segmentBytes: Int
            var idMapBytesPerRow: Double?
            var complete: Bool
        }
        struct TornTail: Decodable {
            var recordIndex: Int
            var offset: Int
            var reason: String
        }
        var journal: String
        var formatVersion: UInt32
        var jobID: String
        var writer: String
        var createdAt: String
        var sourcePath: String
        var destinationPath: String
        var planFingerprint: String
        var state: String
        var lastFailure: String?
        var records: Int
        var entities: [Entity]
        var tornTail: TornTail?
    }

    /// The bytes of the segment files of an entity's batches that wrote rows.
    static func segmentBytes(_ journal: JournalFixture, entity: UInt32) throws -> Int {
        try journal.batches.filter { $0.entity == entity && $0.rowsWritten > 0 }.reduce(0) { total, batch in
            total + (try JournalFixture.size(of: journal.segmentPath(entity: entity, batch: batch.batch)))
        }
    }

    @Test("text: identity, plan, progress per entity, state")
    func text() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let result = try chunkjournal("info", journal.directory)
            #expect(result.exitCode == 0)
            #expect(result.stderr == "")
            let output = lines(result.stdout)
            try #require(output.count == 19, "\(result)")
            #expect(
                output[0..<9].map(cells) == [
                    ["journal", journal.directory],
                    ["format", "1"],
                    ["job", JournalFixture.jobID],
                    ["writer", JournalFixture.writer],
                    ["created at", JournalFixture.createdAt],
                    ["source", JournalFixture.sourcePath],
                    ["destination", JournalFixture.destinationPath],
                    ["records", "10"],
                    ["state", "complete"],
                ])
            #expect(
                output[9..<14] == [
                    "",
                    "plan: 3 entities",
                    "  Author   authors -> people     keys allocate",
                    "  Message  messages -> messages  keys preserve  relationships author_id -> Author, reply_to -> Message",
                    "  Tag      tags -> labels        keys allocate  relationships message_id -> Message",
                ])
            #expect(output[14..<16] == ["", "progress:"])
            let author = String(format: "%.2f", Double(try Self.segmentBytes(journal, entity: 0)) / 200)
            let message = String(format: "%.2f", Double(try Self.segmentBytes(journal, entity: 1)) / 25)
            #expect(
                output[16..<19].map(cells) == [
                    [
                        "Author", "2 batches", "read 200", "written 200", "skipped 0", "source keys 1..299",
                        "ID map \(author) bytes/row", "complete",
                    ],
                    [
                        "Message", "2 batches", "read 26", "written 25", "skipped 1", "source keys 10..80",
                        "ID map \(message) bytes/row", "complete",
                    ],
                    ["Tag", "1 batch", "read 3", "written 0", "skipped 3", "source keys 1..3", "ID map -", "complete"],
                ])
        }
    }

    @Test("--json: one document with the header, the plan and each entity's progress")
    func json() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent)
            let result = try chunkjournal("info", journal.directory, "--json")
            #expect(result.exitCode == 0)
            #expect(result.stderr == "")
            let report = try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
            #expect(report.journal == journal.directory)
            #expect(report.formatVersion == 1)
            #expect(report.jobID == JournalFixture.jobID)
            #expect(report.writer == JournalFixture.writer)
            #expect(report.createdAt == JournalFixture.createdAt)
            #expect(report.sourcePath == JournalFixture.sourcePath)
            #expect(report.destinationPath == JournalFixture.destinationPath)
            #expect(report.planFingerprint == JournalSHA256.hex(JournalFixture.plan))
            #expect(report.state == "complete")
            #expect(report.lastFailure == nil)
            #expect(report.records == 10)
            #expect(report.tornTail == nil)
            #expect(report.entities.map(\.name) == ["Author", "Message", "Tag"])
            #expect(report.entities.map(\.index) == [0, 1, 2])
            #expect(report.entities.map(\.sourceTable) == ["authors", "messages", "tags"])
            #expect(report.entities.map(\.destinationTable) == ["people", "messages", "labels"])
            #expect(report.entities.map(\.keys) == ["allocate", "preserve", "allocate"])
            #expect(report.entities[1].relationships == ["author_id": "Author", "reply_to": "Message"])
            #expect(report.entities.map(\.batches) == [2, 2, 1])
            #expect(report.entities.map(\.rowsRead) == [200, 26, 3])
            #expect(report.entities.map(\.rowsWritten) == [200, 25, 0])
            #expect(report.entities.map(\.rowsSkipped) == [0, 1, 3])
            #expect(report.entities.map(\.firstSourceKey) == [1, 10, 1])
            #expect(report.entities.map(\.lastSourceKey) == [299, 80, 3])
            #expect(report.entities.map(\.complete) == [true, true, true])
            let bytes = [try Self.segmentBytes(journal, entity: 0), try Self.segmentBytes(journal, entity: 1), 0]
            #expect(report.entities.map(\.segmentBytes) == bytes)
            #expect(report.entities[0].idMapBytesPerRow == Double(bytes[0]) / 200)
            #expect(report.entities[1].idMapBytesPerRow == Double(bytes[1]) / 25)
            #expect(report.entities[2].idMapBytesPerRow == nil)
            // The sparse Author segment stores 100 keys in far less than 8 bytes a key.
            #expect(bytes[0] < 200 * 2)
        }
    }

    @Test("a failed job: its state and last failure, entities in progress and not started")
    func failed() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent, finished: false)
            let text = try chunkjournal("info", journal.directory)
            #expect(text.exitCode == 0)
            let output = lines(text.stdout)
            #expect(output.contains { cells($0) == ["state", "failed: \(JournalFixture.failure)"] }, "\(text)")
            #expect(output.contains { cells($0).first == "Message" && cells($0).last == "in progress" }, "\(text)")
            #expect(
                output.contains {
                    cells($0) == ["Tag", "0 batches", "read 0", "written 0", "skipped 0", "source keys -", "ID map -", "not started"]
                }, "\(text)")

            let json = try chunkjournal("info", journal.directory, "--json")
            let report = try JSONDecoder().decode(Report.self, from: Data(json.stdout.utf8))
            #expect(report.state == "failed")
            #expect(report.lastFailure == JournalFixture.failure)
            #expect(report.entities.map(\.complete) == [true, false, false])
            #expect(report.entities[2].firstSourceKey == nil)
        }
    }

    @Test("a torn tail is reported with its record and offset")
    func tornTail() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent, tornTail: true)
            let tornOffset = try JournalFixture.size(of: journal.logPath) - 11
            let text = try chunkjournal("info", journal.directory)
            #expect(text.exitCode == 0)
            #expect(text.stderr == "")
            let last = try #require(lines(text.stdout).last)
            #expect(last.hasPrefix("torn tail: record 10 at offset \(tornOffset) ("), "\(text)")
            #expect(last.hasSuffix("); resuming the job drops it"))

            let json = try chunkjournal("info", journal.directory, "--json")
            let report = try JSONDecoder().decode(Report.self, from: Data(json.stdout.utf8))
            #expect(report.records == 10)
            #expect(report.tornTail?.recordIndex == 10)
            #expect(report.tornTail?.offset == tornOffset)
        }
    }

    @Test("a journal whose lock a process holds is running")
    func running() throws {
        try withTemporaryDirectory { parent in
            let journal = try JournalFixture.make(in: parent, finished: false)
            let writer = try JournalFixture.openWriter(journal.directory)
            defer { writer.close() }
            let result = try chunkjournal("info", journal.directory, "--json")
            #expect(result.exitCode == 0)
            let report = try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
            #expect(report.state == "running")
            #expect(report.lastFailure == nil)
        }
    }
}
