import Foundation
import MigrationJournal
import Testing

/// `chunkmigrate run` and `resume` refusing what they cannot do: the exit code, a message that
/// names what is wrong, and nothing written.
@Suite("chunkmigrate errors")
struct ChunkMigrateErrorTests {
    /// Nothing of the job `name` was created.
    static func expectNothingCreated(_ demo: DemoWorkspace, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for path in [demo.destination(name), demo.destination(name) + "-wal", demo.journal(name)] {
            #expect(!FileManager.default.fileExists(atPath: path), "\(path) was left behind", sourceLocation: sourceLocation)
        }
    }

    @Test("a plan that is not JSON: exit 2, naming the plan file")
    func planNotJSON() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            let plan = directory + "/broken-plan.json"
            try Data("{ \"entities\": [ { \"name\": ".utf8).write(to: URL(fileURLWithPath: plan))
            let result = try demo.run("job", plan: plan)
            #expect(result.exitCode == 2, "\(result)")
            #expect(result.stderr.hasPrefix("chunkmigrate: error: \(plan):"), "\(result)")
            #expect(result.stdout == "")
            Self.expectNothingCreated(demo, "job")
        }
    }

    @Test("a relationship to an unknown entity: exit 2, naming the plan path and the near name")
    func unknownEntity() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            var object = try demo.planObject()
            changeRelationship(&object, entity: 1, column: "conversation_id") { $0["to"] = "Conversaton" }
            let result = try demo.run("job", plan: try demo.writePlan(object, to: "typo-plan.json"))
            #expect(result.exitCode == 2, "\(result)")
            #expect(result.stderr.contains("entities[1].relationships.conversation_id.to"), "\(result)")
            #expect(result.stderr.contains("\"Conversaton\""), "\(result)")
            #expect(result.stderr.contains("did you mean \"Conversation\"?"), "\(result)")
            Self.expectNothingCreated(demo, "job")
        }
    }

    @Test("a missing source: exit 3, naming the file")
    func missingSource() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            let missing = directory + "/no-such-store.sqlite"
            let result = try demo.run("job", source: missing)
            #expect(result.exitCode == 3, "\(result)")
            #expect(result.stderr.contains(missing), "\(result)")
            #expect(result.stderr.contains("does not exist"), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: missing))
            Self.expectNothingCreated(demo, "job")
        }
    }

    @Test("a source that is not SQLite: exit 3, naming the file, which is left as it was")
    func sourceNotSQLite() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            try FileManager.default.createDirectory(atPath: directory + "/notes", withIntermediateDirectories: false)
            let impostor = directory + "/notes/notes.sqlite"
            try Data(String(repeating: "not a database, just text\n", count: 200).utf8).write(to: URL(fileURLWithPath: impostor))
            let before = try FileSnapshot(impostor)
            let result = try demo.run("job", source: impostor)
            #expect(result.exitCode == 3, "\(result)")
            #expect(result.stderr.contains(impostor), "\(result)")
            #expect(result.stderr.contains("not a readable SQLite store"), "\(result)")
            Self.expectNothingCreated(demo, "job")
            #expect(try FileSnapshot(impostor) == before)
        }
    }

    @Test("running an interrupted job with another plan: exit 3, the plan differs; the job's own plan finishes it")
    func differentPlan() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            try demo.complete("reference")
            try demo.kill("job", at: "after-commit:Message:3")
            let journal = try directorySnapshot(demo.journal("job"))

            var object = try demo.planObject()
            var entities = object["entities"] as! [[String: Any]]
            var columns = entities[1]["columns"] as! [String: Any]
            columns["is_read"] = "1"
            entities[1]["columns"] = columns
            object["entities"] = entities
            let result = try demo.run("job", plan: try demo.writePlan(object, to: "changed-plan.json"))
            #expect(result.exitCode == 3, "\(result)")
            #expect(result.stderr.contains("the plan differs from the one this job started with"), "\(result)")
            #expect(result.stderr.contains(demo.journal("job")), "\(result)")
            #expect(try directorySnapshot(demo.journal("job")) == journal, "a refused run wrote to the journal")

            // The same plan, written on one line, is the job's plan.
            let same = try demo.writePlan(try demo.planObject(), to: "same-plan.json", pretty: false)
            #expect(try Data(contentsOf: URL(fileURLWithPath: same)) != Data(contentsOf: URL(fileURLWithPath: demo.plan)))
            let finished = try demo.run("job", plan: same)
            #expect(finished.exitCode == 0, "\(finished)")
            #expect(try SQLiteShell.dump(demo.destination("job")) == (try SQLiteShell.dump(demo.destination("reference"))))
        }
    }

    @Test("run with the destination of another job: exit 3, naming that job; it leaves both jobs as they were")
    func destinationOfAnotherJob() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            try demo.kill("first", at: "after-commit:Message:3")
            let firstID = try JournalReader(directory: demo.journal("first")).header.jobID
            let destination = demo.destination("first")
            let before = try SQLiteShell.dump(destination)

            var arguments = demo.runArguments("second")
            arguments[arguments.firstIndex(of: "--destination")! + 1] = destination
            let result = try chunkmigrate(arguments)
            #expect(result.exitCode == 3, "\(result)")
            #expect(result.stderr.contains(destination), "\(result)")
            #expect(result.stderr.contains("already holds the checkpoint of job \(firstID)"), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: demo.journal("second")), "the refused job left its journal")
            #expect(try SQLiteShell.dump(destination) == before)

            let first = try demo.run("first")
            #expect(first.exitCode == 0, "\(first)")
            let check = try chunkmigrate("check-demo", "--source", demo.source, "--destination", destination)
            #expect(check.exitCode == 0, "\(check)")
        }
    }

    @Test("run into the destination of a finished job: exit 3 naming the table, nothing written; with --append it writes after its rows")
    func destinationOfFinishedJob() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory, messages: 400)
            let first = try demo.complete("first")
            #expect(first.exitCode == 0, "\(first)")
            let destination = demo.destination("first")
            let before = try SQLiteShell.dump(destination)
            let conversations = try SQLiteShell.integer(destination, "SELECT count(*) FROM conversation")

            var arguments = demo.runArguments("second")
            arguments[arguments.firstIndex(of: "--destination")! + 1] = destination
            let refused = try chunkmigrate(arguments)
            #expect(refused.exitCode == 3, "\(refused)")
            #expect(
                refused.stderr.contains("\(destination), entity Conversation: the destination already holds rows in conversation"),
                "\(refused)")
            #expect(!FileManager.default.fileExists(atPath: demo.journal("second")), "the refused job left its journal")
            #expect(try SQLiteShell.dump(destination) == before)

            // Asked to append, the job writes after the rows there: allocated conversation keys
            // follow them, and the labels, whose keys the plan preserves, collide with their own.
            let appended = try chunkmigrate(arguments + ["--append"])
            #expect(appended.exitCode == 1, "\(appended)")
            #expect(appended.stderr.contains("entity Label") && appended.stderr.contains("UNIQUE constraint failed: label"), "\(appended)")
            #expect(try SQLiteShell.integer(destination, "SELECT count(*) FROM conversation") == 2 * conversations)
        }
    }

    @Test("a foreign key with no mapping and missing: fail: exit 1 naming the row; status says failed; fixed, the job resumes")
    func missingMapping() throws {
        try withTemporaryDirectory { directory in
            let demo = try DemoWorkspace.generate(in: directory)
            // Every conversation kept, and message 950 (source key 2850, in batch 5) in none.
            try FileManager.default.createDirectory(atPath: directory + "/broken", withIntermediateDirectories: false)
            let broken = directory + "/broken/source.sqlite"
            try FileManager.default.copyItem(atPath: demo.source, toPath: broken)
            try SQLiteShell.execute(
                broken, "UPDATE conversation SET archived = 0; UPDATE message SET conversation_id = 999999 WHERE id = 2850;")
            var object = try demo.planObject()
            changeRelationship(&object, entity: 1, column: "conversation_id") { $0["missing"] = "fail" }
            let plan = try demo.writePlan(object, to: "strict-plan.json")
            let brokenBefore = try FileSnapshot(broken)

            let failed = try demo.run("job", source: broken, plan: plan)
            #expect(failed.exitCode == 1, "\(failed)")
            for part in [
                "entity Message", "batch 5", "source key 2850", "column conversation_id",
                "conversation_id 999999 has no mapping in Conversation",
            ] {
                #expect(failed.stderr.contains(part), "\(failed)")
            }
            // Batches 1...4 stay committed; batch 5 was rolled back and its segment removed.
            let destination = demo.destination("job")
            #expect(try SQLiteShell.integer(destination, "SELECT count(*) FROM message") == 800)
            let journal = try JournalReader(directory: demo.journal("job"))
            let message = try #require(journal.entityIndex(named: "Message"))
            #expect(journal.batches(entity: message).map(\.batch) == [1, 2, 3, 4])
            #expect(!FileManager.default.fileExists(atPath: journal.layout.segment(entity: message, batch: 5)))

            let text = try chunkmigrate("status", demo.journal("job"))
            #expect(text.exitCode == 0, "\(text)")
            #expect(lines(text.stdout).first?.hasSuffix(": failed") == true, "\(text)")
            #expect(text.stdout.contains("last error: entity Message, batch 5, source key 2850, column conversation_id"), "\(text)")
            let status = try JobStatusReport.read(demo.journal("job"))
            #expect(status.state == "failed")
            #expect(status.lastFailure?.contains("entity Message, batch 5, source key 2850, column conversation_id") == true)

            // Running it again fails the same way; changing the plan instead is refused.
            let again = try demo.run("job", source: broken, plan: plan)
            #expect(again.exitCode == 1 && again.stderr == failed.stderr, "\(again)")
            changeRelationship(&object, entity: 1, column: "conversation_id") { $0["missing"] = "null" }
            let lenient = try demo.run("job", source: broken, plan: try demo.writePlan(object, to: "lenient-plan.json"))
            #expect(lenient.exitCode == 3, "\(lenient)")
            #expect(try FileSnapshot(broken) == brokenBefore, "the source store was written")

            // Fix the cause in a copy of the source (the row goes), and resume the job from it.
            let fixed = directory + "/fixed.sqlite"
            try FileManager.default.copyItem(atPath: broken, toPath: fixed)
            try SQLiteShell.execute(fixed, "DELETE FROM message WHERE id = 2850;")
            let resumed = try chunkmigrate("resume", demo.journal("job"), "--source", fixed, "--batch-size", "200", "--quiet")
            #expect(resumed.exitCode == 0, "\(resumed)")
            #expect(try JobStatusReport.read(demo.journal("job")).state == "complete")
            let check = try chunkmigrate("check-demo", "--source", fixed, "--destination", destination)
            #expect(check.exitCode == 0, "\(check)")

            // The same as a new job on the fixed source.
            try demo.complete("fresh", source: fixed, plan: plan)
            #expect(try SQLiteShell.dump(destination) == (try SQLiteShell.dump(demo.destination("fresh"))))
        }
    }
}
