import ArgumentParser
import MigrationJournal

/// `chunkjournal verify DIR`: checks every record and segment; exit 0 when intact, 1 when damaged.
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the header, every record and every ID-map segment of a journal.",
        discussion: """
            Exits 0 when the journal is intact and 1 when something is damaged, listing each \
            problem, the first one first. A torn last record (left by a kill) counts as a problem: \
            resuming the job drops it. Segments that no record names yet are pending work that \
            resuming deletes or logs; they are noted, not counted as damage.
            """
    )

    @OptionGroup var options: JournalOptions

    /// What `verify --json` prints.
    struct Report: Codable {
        var journal: String
        var intact: Bool
        var records: Int
        var segmentsChecked: Int
        var pendingSegments: [String]
        var problems: [VerifyReport.Problem]
    }

    func run() throws(CommandFailure) {
        // A journal that cannot be opened at all is not something verify can check; damage in
        // its header or records is what verify reports.
        do {
            _ = try JournalReader(directory: options.directory)
        } catch {
            guard error.code == .damagedHeader || error.code == .damagedRecord else {
                throw CommandFailure(unreadable: error)
            }
        }

        let result = JournalReader.verify(directory: options.directory)
        let directory = JournalLayout(directory: options.directory).directory
        if options.json {
            Output.printJSON(
                Report(
                    journal: directory, intact: result.isIntact, records: result.records,
                    segmentsChecked: result.segmentsChecked,
                    pendingSegments: result.pendingSegments, problems: result.problems))
        } else {
            if result.isIntact {
                print("intact: \(result.records.counted("record")), \(result.segmentsChecked.counted("segment")) checked")
            } else {
                let count = result.problems.count
                print(
                    "damaged: \(count.counted("problem")) (\(result.records.counted("record")), \(result.segmentsChecked.counted("segment")) checked)"
                )
                for (number, problem) in result.problems.enumerated() {
                    print("\(number + 1). [\(problem.code)] " + Self.describe(problem))
                }
            }
            for pending in result.pendingSegments {
                print("note: pending segment \(pending): no record names it yet; resuming the job deletes or logs it")
            }
        }
        guard let first = result.problems.first else { return }
        let more = result.problems.count > 1 ? " (and \(result.problems.count - 1) more)" : ""
        throw CommandFailure(
            "the journal at \(directory) is damaged: " + Self.describe(first) + more,
            exitCode: CommandFailure.damaged)
    }

    private static func describe(_ problem: VerifyReport.Problem) -> String {
        problem.file.map { "\($0): \(problem.message)" } ?? problem.message
    }
}
