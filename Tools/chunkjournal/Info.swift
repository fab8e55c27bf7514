import ArgumentParser
import Foundation
import MigrationJournal

/// `chunkjournal info DIR`: the job, its plan, how far each entity got, and where the job stands.
struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the job, its plan, each entity's progress and the job's state."
    )

    @OptionGroup var options: JournalOptions

    /// What `info --json` prints.
    struct Report: Codable {
        var journal: String
        var formatVersion: UInt32
        var jobID: String
        var writer: String
        var createdAt: String
        var sourcePath: String
        var destinationPath: String
        var planFingerprint: String
        /// `running`, `interrupted`, `failed` or `complete`.
        var state: JournalReader.State
        /// The message of the last failure since the last start, when the job is failed.
        var lastFailure: String?
        /// Valid records in the log.
        var records: Int
        var entities: [Entity]
        /// The last record, cut short by a kill; resuming drops it.
        var tornTail: TornTail?
    }

    /// One entity of the plan and its progress.
    struct Entity: Codable {
        var index: UInt32
        var name: String
        var sourceTable: String
        var destinationTable: String
        /// `allocate` or `preserve`.
        var keys: String
        /// Destination column -> target entity.
        var relationships: [String: String]
        var batches: Int
        var rowsRead: UInt64
        var rowsWritten: UInt64
        var rowsSkipped: UInt64
        /// The first source key read and the cursor (the last source key read).
        var firstSourceKey: Int64?
        var lastSourceKey: Int64?
        /// The size of the segment files the log names.
        var segmentBytes: Int
        /// `segmentBytes / rowsWritten`.
        var idMapBytesPerRow: Double?
        var complete: Bool
    }

    /// Where the log's torn last record starts.
    struct TornTail: Codable {
        var recordIndex: Int
        var offset: Int
        var reason: String
    }

    func run() throws(CommandFailure) {
        let journal = try options.open()
        let report = Self.report(journal)
        if options.json {
            Output.printJSON(report)
        } else {
            Self.printText(report)
        }
    }

    /// Sums up the journal: its header, and each entity's batches, rows, keys and segment bytes.
    static func report(_ journal: JournalReader) -> Report {
        let header = journal.header
        var entities: [Entity] = []
        for (position, (entity, logged)) in zip(header.entities, journal.log.entities).enumerated() {
            let index = UInt32(position)
            let segmentBytes = journal.batches(entity: index).filter { $0.rowsWritten > 0 }.reduce(0) { total, batch in
                total + fileSize(journal.layout.segment(entity: index, batch: batch.batch))
            }
            entities.append(
                Entity(
                    index: index, name: entity.name, sourceTable: entity.sourceTable,
                    destinationTable: entity.destinationTable, keys: entity.keys.description,
                    relationships: entity.relationships, batches: logged.batchCount,
                    rowsRead: logged.rowsRead, rowsWritten: logged.rowsWritten, rowsSkipped: logged.rowsSkipped,
                    firstSourceKey: logged.firstSourceKey, lastSourceKey: logged.cursor,
                    segmentBytes: segmentBytes,
                    idMapBytesPerRow: logged.rowsWritten > 0 ? Double(segmentBytes) / Double(logged.rowsWritten) : nil,
                    complete: logged.isComplete))
        }
        var torn: TornTail?
        if case let .torn(recordIndex, offset, reason) = journal.log.tail {
            torn = TornTail(recordIndex: recordIndex, offset: offset, reason: reason)
        }
        let state = journal.state
        return Report(
            journal: journal.layout.directory, formatVersion: header.formatVersion, jobID: header.jobID,
            writer: header.writer, createdAt: header.createdAt, sourcePath: header.sourcePath,
            destinationPath: header.destinationPath, planFingerprint: header.planFingerprint,
            state: state, lastFailure: state == .failed ? journal.lastFailure : nil,
            records: journal.log.records.count, entities: entities, tornTail: torn)
    }

    /// Prints the report as aligned text: identity and state, the plan, then progress.
    static func printText(_ report: Report) {
        var state = report.state.rawValue
        if let failure = report.lastFailure { state += ": " + failure }
        if report.state == .running { state += " (a process holds the journal's lock)" }
        Output.printTable([
            ["journal", report.journal],
            ["format", "\(report.formatVersion)"],
            ["job", report.jobID],
            ["writer", report.writer],
            ["created at", report.createdAt],
            ["source", report.sourcePath],
            ["destination", report.destinationPath],
            ["records", "\(report.records)"],
            ["state", state],
        ])
        print("")
        print("plan: \(report.entities.count.counted("entity", "entities"))")
        Output.printTable(
            report.entities.map { entity in
                let relationships = entity.relationships.sorted { $0.key < $1.key }.map { "\($0.key) -> \($0.value)" }
                return [
                    entity.name, "\(entity.sourceTable) -> \(entity.destinationTable)", "keys \(entity.keys)",
                    relationships.isEmpty ? "" : "relationships " + relationships.joined(separator: ", "),
                ]
            }, indent: "  ")
        print("")
        print("progress:")
        Output.printTable(
            report.entities.map { entity in
                let keys = entity.firstSourceKey.map { Output.range($0, entity.lastSourceKey ?? $0) } ?? "-"
                let perRow = entity.idMapBytesPerRow.map { String(format: "%.2f bytes/row", $0) } ?? "-"
                let status = entity.complete ? "complete" : entity.batches == 0 ? "not started" : "in progress"
                return [
                    entity.name, entity.batches.counted("batch", "batches"),
                    "read \(entity.rowsRead)", "written \(entity.rowsWritten)", "skipped \(entity.rowsSkipped)",
                    "source keys \(keys)", "ID map \(perRow)", status,
                ]
            }, indent: "  ")
        if let torn = report.tornTail {
            print("")
            print("torn tail: record \(torn.recordIndex) at offset \(torn.offset) (\(torn.reason)); resuming the job drops it")
        }
    }

    /// The size of a file in bytes; 0 when it is missing (verify reports that).
    private static func fileSize(_ path: String) -> Int {
        (try? URL(fileURLWithPath: path).resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
    }
}
