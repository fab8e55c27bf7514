import Foundation
import MigrationJournal
import Testing

/// `chunkmigrate status` and `resume` on interrupted and complete jobs, and `run` on a job that is
/// already complete.
@Suite("chunkmigrate status and resume")
struct ChunkMigrateStatusTests {
    /// What the status of the demo job should say, counted from the source store with SQL.
    struct Expected {
        var conversationsKept: Int64
        var messagesSkipped: Int64
        var messageLabels: Int64
        var messageLabelsSkipped: Int64
        /// Messages skipped among the first `n`, in key order.
        var skippedAmongFirst: (Int64) throws -> Int64

        init(source: String) throws {
            let archived = "(SELECT archived FROM conversation c WHERE c.id = m.conversation_id) = 1"
            conversationsKept = try SQLiteShell.integer(source, "SELECT count(*) FROM conversation WHERE archived = 0")
            messagesSkipped = try SQLiteShell.integer(source, "SELECT count(*) FROM message m WHERE \(archived)")
            messageLabels = try SQLiteShell.integer(source, "SELECT count(*) FROM message_label")
            messageLabelsSkipped = try SQLiteShell.integer(
                source,
                "SELECT count(*) FROM message_label l JOIN message m ON m.id = l.message_id WHERE \(archived)")
            skippedAmongFirst = { n in
                try SQLiteShell.integer(
                    source,
                    "SELECT count(*) FROM (SELECT * FROM message ORDER BY id LIMIT \(n)) m WHERE \(archived)")
            }
        }
    }

    @Test("status of an interrupted job, in text and JSON; resume finishes it; status of the complete job")
    func interruptedThenResumed() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            let expected = try Expected(source: demo.source)
            try demo.kill("job", at: "after-commit:Message:3")
            let journal = demo.journal("job")
            let jobID = try JournalReader(directory: journal).header.jobID

            // Interrupted after Message batch 3 committed; the log (what status reads) has two.
            let skipped = try expected.skippedAmongFirst(400)
            #expect(skipped > 0)
            let text = try chunkmigrate("status", journal)
            #expect(text.exitCode == 0, "\(text)")
            // The last line: what the destination holds and the free space of its volume.
            #expect(
                lines(text.stdout).last?.hasPrefix("  space: the destination holds ") == true && text.stdout.contains(" free on its volume")
            )
            #expect(
                lines(text.stdout).dropLast() == [
                    "job \(jobID): interrupted",
                    "  Conversation: \(expected.conversationsKept) rows written in 1 batch, complete",
                    "  Message: \(400 - skipped) rows written, \(skipped) skipped, in 2 batches, next after source key 1200",
                    "  Label: 0 rows written in 0 batches, not started",
                    "  MessageLabel: 0 rows written in 0 batches, not started",
                ], "\(text)")

            let interrupted = try JobStatusReport.read(journal)
            #expect(interrupted.jobID == jobID)
            #expect(interrupted.state == "interrupted")
            #expect(interrupted.lastFailure == nil)
            #expect(interrupted.source == demo.source)
            #expect(interrupted.destination == demo.destination("job"))
            #expect(
                try interrupted.entity("Message")
                    == .init(
                        name: "Message", batches: 2, rowsRead: 400, rowsWritten: 400 - skipped, rowsSkipped: skipped,
                        cursor: 1200, complete: false))
            #expect(
                try interrupted.entity("Label")
                    == .init(
                        name: "Label", batches: 0, rowsRead: 0, rowsWritten: 0, rowsSkipped: 0, cursor: nil, complete: false))

            // resume DIR finishes it; --json prints the final status on stdout.
            let resumed = try chunkmigrate("resume", journal, "--batch-size", "200", "--json")
            #expect(resumed.exitCode == 0, "\(resumed)")
            let final = try JSONDecoder().decode(JobStatusReport.self, from: Data(resumed.stdout.utf8))
            #expect(final.state == "complete")

            let complete = try JobStatusReport.read(journal)
            #expect(complete == final)
            #expect(complete.entities.map(\.name) == ["Conversation", "Message", "Label", "MessageLabel"])
            #expect(complete.entities.allSatisfy { $0.complete })
            #expect(try complete.entity("Conversation").rowsWritten == expected.conversationsKept)
            let message = try complete.entity("Message")
            #expect(message.batches == 15)
            #expect(message.rowsRead == Int64(demo.messages))
            #expect(message.rowsSkipped == expected.messagesSkipped)
            #expect(message.rowsWritten == Int64(demo.messages) - expected.messagesSkipped)
            let labels = try complete.entity("MessageLabel")
            #expect(labels.rowsRead == expected.messageLabels)
            #expect(labels.rowsSkipped == expected.messageLabelsSkipped)
            #expect(try complete.entity("Label").rowsWritten == 20)

            // The destination holds what the status counts.
            let destination = demo.destination("job")
            #expect(try SQLiteShell.integer(destination, "SELECT count(*) FROM message") == message.rowsWritten)
            #expect(try SQLiteShell.integer(destination, "SELECT count(*) FROM message_label") == labels.rowsWritten)

            let completeText = try chunkmigrate("status", journal)
            #expect(completeText.exitCode == 0)
            #expect(lines(completeText.stdout).first == "job \(jobID): complete")
            #expect(lines(completeText.stdout).dropFirst().allSatisfy { $0.hasSuffix(", complete") }, "\(completeText)")
        }
    }

    @Test("run and resume after the job is complete exit 0 and write nothing")
    func runAgainAfterComplete() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            try demo.complete("job")
            let destination = try FileSnapshot(demo.destination("job"))
            let journal = try directorySnapshot(demo.journal("job"))
            #expect(journal.keys.contains("log"))

            let again = try demo.run("job")
            #expect(again.exitCode == 0 && !again.killedBySignal, "\(again)")
            #expect(again.stdout == "" && again.stderr == "", "\(again)")
            let resumed = try chunkmigrate("resume", demo.journal("job"), "--quiet")
            #expect(resumed.exitCode == 0, "\(resumed)")

            #expect(try FileSnapshot(demo.destination("job")) == destination)
            #expect(try directorySnapshot(demo.journal("job")) == journal)
            #expect(try JobStatusReport.read(demo.journal("job")).state == "complete")
            let check = try chunkmigrate("check-demo", "--source", demo.source, "--destination", demo.destination("job"))
            #expect(check.exitCode == 0, "\(check)")
        }
    }
}
