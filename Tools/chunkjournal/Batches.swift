import ArgumentParser
import MigrationJournal

/// `chunkjournal batches DIR [--entity NAME]`: one line per committed batch, in log order.
struct Batches: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the committed batches: key ranges, row counts, segment checksums, timings."
    )

    @OptionGroup var options: JournalOptions

    @Option(help: ArgumentHelp("Only the batches of this entity.", valueName: "name"))
    var entity: String?

    /// What `batches --json` prints.
    struct Report: Codable {
        var journal: String
        var batches: [Batch]
    }

    /// One batch record, with its entity's name and its keys spelled out.
    struct Batch: Codable {
        var entity: String
        var entityIndex: UInt32
        var batch: UInt64
        /// The source keys read, inclusive.
        var firstSourceKey: Int64
        var lastSourceKey: Int64
        var rowsRead: UInt32
        var rowsWritten: UInt32
        var rowsSkipped: UInt32
        var relationshipsNulled: UInt32
        var relationshipsDeferred: UInt32
        /// `allocate` or `preserve`.
        var keys: String
        /// The destination keys written, inclusive; absent when the batch wrote no row.
        var firstDestinationKey: Int64?
        var lastDestinationKey: Int64?
        /// Eight hexadecimal digits; absent when the batch wrote no row and so has no segment.
        var segmentCRC: String?
        var durationMicros: UInt64
        /// ISO 8601, UTC; absent when the record does not know.
        var committedAt: String?
        var committedAtMillis: Int64
    }

    func run() throws(CommandFailure) {
        let journal = try options.open()
        let index = try entity.map { name throws(CommandFailure) in try journal.entity(named: name) }
        let batches = journal.batches(entity: index).map { record in
            let wrote = record.rowsWritten > 0
            return Batch(
                entity: Int(record.entity) < journal.header.entities.count
                    ? journal.header.entities[Int(record.entity)].name : "#\(record.entity)",
                entityIndex: record.entity, batch: record.batch,
                firstSourceKey: record.firstSourceKey, lastSourceKey: record.lastSourceKey,
                rowsRead: record.rowsRead, rowsWritten: record.rowsWritten, rowsSkipped: record.rowsSkipped,
                relationshipsNulled: record.relationshipsNulled, relationshipsDeferred: record.relationshipsDeferred,
                keys: record.mapping.description,
                firstDestinationKey: wrote ? (record.mapping == .preserve ? record.segmentFirstKey : record.destinationBase) : nil,
                lastDestinationKey: wrote ? record.destinationLast : nil,
                segmentCRC: wrote ? Output.hex(record.segmentCRC) : nil,
                durationMicros: record.durationMicros,
                committedAt: Output.time(millis: record.committedAtMillis),
                committedAtMillis: record.committedAtMillis)
        }
        if options.json {
            Output.printJSON(Report(journal: journal.layout.directory, batches: batches))
            return
        }
        guard !batches.isEmpty else {
            print(entity.map { "no batches of \($0) yet" } ?? "no batches yet")
            return
        }
        let heading = [
            "ENTITY", "BATCH", "SOURCE KEYS", "READ", "WRITTEN", "SKIPPED", "NULLED", "DEFERRED",
            "DESTINATION KEYS", "CRC", "MS", "COMMITTED",
        ]
        Output.printTable(
            [heading]
                + batches.map { batch in
                    [
                        batch.entity, "\(batch.batch)", Output.range(batch.firstSourceKey, batch.lastSourceKey),
                        "\(batch.rowsRead)", "\(batch.rowsWritten)", "\(batch.rowsSkipped)",
                        "\(batch.relationshipsNulled)", "\(batch.relationshipsDeferred)",
                        batch.firstDestinationKey.map { Output.range($0, batch.lastDestinationKey ?? $0) } ?? "-",
                        batch.segmentCRC ?? "-", "\(batch.durationMicros / 1000)", batch.committedAt ?? "-",
                    ]
                })
    }
}
