import ChunkMigrate
import Foundation
import MigrationJournal
import Testing

/// `chunkmigrate run` killed with SIGKILL at each named crash point (`CHUNKMIGRATE_KILL_AT`), then
/// run again with the same command: the state the kill leaves on disk, and a resumed destination
/// equal to that of an uninterrupted run.
@Suite("chunkmigrate kill and resume")
struct ChunkMigrateKillResumeTests {
    /// A crash point and the batch it fires in.
    struct KillPoint: CustomTestStringConvertible, Sendable {
        var point: String
        var entity: String
        var batch: UInt64

        var value: String { "\(point):\(entity):\(batch)" }
        var testDescription: String { value }
    }

    static let points = [
        KillPoint(point: "after-segment", entity: "Message", batch: 3),
        KillPoint(point: "before-commit", entity: "Message", batch: 3),
        KillPoint(point: "after-commit", entity: "Message", batch: 3),
        KillPoint(point: "mid-record", entity: "Message", batch: 3),
        KillPoint(point: "after-fixup-commit", entity: "Message", batch: 1),
    ]

    @Test(
        "a kill leaves the state its point names, and the same command finishes the job as if uninterrupted",
        arguments: points)
    func killAndRunAgain(_ kill: KillPoint) throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            let sourceBefore = try FileSnapshot(demo.source)
            try demo.complete("reference")

            try demo.kill("killed", at: kill.value)
            try Self.expectKilledState(kill, demo: demo)

            // The same command, without the kill.
            let again = try demo.run("killed")
            #expect(again.exitCode == 0 && !again.killedBySignal, "\(again)")
            #expect(again.stderr == "", "\(again)")

            let killed = demo.destination("killed")
            let reference = demo.destination("reference")
            let dump = try SQLiteShell.dump(killed)
            #expect(dump.keys.sorted() == ["conversation", "label", "message", "message_label"])
            #expect(dump == (try SQLiteShell.dump(reference)))
            #expect((dump["message"]?.count ?? 0) > 2000)

            let check = try chunkmigrate("check-demo", "--source", demo.source, "--destination", killed)
            #expect(check.exitCode == 0, "\(check)")
            let verify = try chunkjournal("verify", demo.journal("killed"))
            #expect(verify.exitCode == 0, "\(verify)")

            // The rebuilt records are those an uninterrupted run writes; no batch is lost or doubled.
            #expect(try Self.progressRecords(demo.journal("killed")) == (try Self.progressRecords(demo.journal("reference"))))
            #expect(try JournalReader(directory: demo.journal("killed")).log.tail == .clean)

            #expect(try FileSnapshot(demo.source) == sourceBefore, "the source store was written, or a file appeared next to it")
        }
    }

    /// Every kill point of the kill-and-resume tests, by suite.
    static let everyKillPoint: [String] =
        points.map(\.value) + ChunkMigrateCoreDataTests.killPoints
        + ChunkMigrateCoreDataTests.demoKillPoints + ChunkMigrateCoreDataTests.stepKillPoints + ChunkMigrateCoreDataTests.inPlaceKillPoints

    @Test("every crash point of the job is one at which a kill-and-resume test kills it", arguments: CrashPoint.allCases)
    func everyCrashPointIsKilledAt(_ point: CrashPoint) {
        #expect(
            Self.everyKillPoint.contains { $0.hasPrefix(point.rawValue + ":") },
            "no kill-and-resume test kills at \(point.rawValue): add one where it fires")
    }

    /// Checks what the destination's checkpoint, the journal's log and its segments say right
    /// after the kill.
    static func expectKilledState(_ kill: KillPoint, demo: DemoWorkspace) throws {
        let journal = try JournalReader(directory: demo.journal("killed"))
        let destination = demo.destination("killed")
        let message = try #require(journal.entityIndex(named: "Message"))
        let logged = journal.batches(entity: message).map(\.batch)
        func checkpoint(_ phase: String) throws -> [String] {
            try SQLiteShell.query(
                destination,
                "SELECT batch FROM _chunkmigrate_checkpoint WHERE entity = \(message) AND phase = '\(phase)'")
        }
        let segment3 = FileManager.default.fileExists(atPath: journal.layout.segment(entity: message, batch: 3))
        let rows = try SQLiteShell.integer(destination, "SELECT count(*) FROM message")
        let loggedRows = journal.batches(entity: message).reduce(0) { $0 + Int64($1.rowsWritten) }
        #expect(journal.state == .interrupted)

        switch kill.point {
        case "after-segment", "before-commit":
            // The segment is durable, the batch is not committed and not logged.
            #expect(segment3)
            #expect(logged == [1, 2])
            #expect(try checkpoint("copy") == ["2"])
            #expect(rows == loggedRows)
            #expect(journal.log.tail == .clean)
            if kill.point == "after-segment" {
                let batches = try chunkjournal("batches", demo.journal("killed"), "--entity", "Message", "--json")
                #expect(batches.exitCode == 0, "\(batches)")
                let report = try JSONDecoder().decode(ChunkJournalBatchesTests.Report.self, from: Data(batches.stdout.utf8))
                #expect(report.batches.map(\.batch) == [1, 2])
            }
        case "after-commit":
            // Committed with its checkpoint, but the log has no record of it.
            #expect(segment3)
            #expect(logged == [1, 2])
            #expect(try checkpoint("copy") == ["3"])
            #expect(rows > loggedRows)
            #expect(journal.log.tail == .clean)
        case "mid-record":
            // Committed, and the log ends with half of its record.
            #expect(logged == [1, 2])
            #expect(try checkpoint("copy") == ["3"])
            #expect(rows > loggedRows)
            guard case .torn = journal.log.tail else {
                Issue.record("the log's tail is \(journal.log.tail), not torn")
                return
            }
        case "after-fixup-commit":
            // Every copy batch is logged; the first fix-up batch is committed but not logged.
            let all = try JournalReader(directory: demo.journal("reference")).batches(entity: 1).map(\.batch)
            #expect(all.count > 3)
            #expect(logged == all)
            #expect(try checkpoint("fixup:reply_to_id") == ["1"])
            #expect(journal.fixups.isEmpty)
            #expect(journal.log.tail == .clean)
        default:
            Issue.record("no expectation for crash point \(kill.point)")
        }
    }

    /// The batch, fix-up and entity-complete records of a journal, without their times: what a
    /// resumed job must log exactly as an uninterrupted one does.
    static func progressRecords(_ directory: String) throws -> [String] {
        try JournalReader(directory: directory).records.compactMap { record in
            switch record {
            case let .batch(b):
                "batch \(b.entity)/\(b.batch) keys \(b.firstSourceKey)...\(b.lastSourceKey) read \(b.rowsRead) written \(b.rowsWritten) skipped \(b.rowsSkipped) nulled \(b.relationshipsNulled) deferred \(b.relationshipsDeferred) base \(b.destinationBase) segment \(b.segmentFirstKey)...\(b.segmentLastKey) crc \(b.segmentCRC)"
            case let .fixup(f):
                "fixup \(f.entity)/\(f.column)/\(f.batch) \(f.firstDestinationKey)...\(f.lastDestinationKey) updated \(f.rowsUpdated) nulled \(f.rowsNulled)"
            case let .entityComplete(entity, batches, rowsWritten):
                "complete \(entity) \(batches) \(rowsWritten)"
            case .started, .failed, .complete:
                nil
            }
        }
    }
}
