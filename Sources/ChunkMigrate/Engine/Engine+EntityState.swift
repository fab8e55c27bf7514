import Foundation
import MigrationJournal

extension Engine {
    /// What the log and the checkpoint say of one entity.
    struct EntityState {
        var batch: UInt64 = 0
        var cursor: Int64?
        var rowsRead: Int64 = 0
        var rowsWritten: Int64 = 0
        var rowsSkipped: Int64 = 0
        var complete = false
        /// The source's smallest and largest key, when it has rows.
        var keyRange: ClosedRange<Int64>?
        /// Rows of the entity in all: exact once it is complete, estimated from the key range and
        /// the density of keys read so far before that.
        var estimatedTotal: Int64 {
            if complete { return rowsRead }
            guard let keyRange else { return rowsRead }
            let span = Double(keyRange.upperBound) - Double(keyRange.lowerBound) + 1
            let ceiling = Double(Int64.max / 1024)
            guard let cursor, rowsRead > 0 else { return Int64(min(span, ceiling)) }
            let done = Double(cursor) - Double(keyRange.lowerBound) + 1
            let left = Double(keyRange.upperBound) - Double(cursor)
            return rowsRead + Int64(min(ceiling, max(0, left * Double(rowsRead) / max(1, done))))
        }
        /// Fix-ups: column -> last fix-up batch.
        var fixupBatch: [String: UInt64] = [:]
        /// The rows the last batch read and how long it took, from which a resumed run sizes its
        /// first batch.
        var lastBatch: (rows: Int, duration: Duration)?

        /// Counts a committed batch.
        mutating func apply(_ record: BatchRecord) {
            batch = record.batch
            cursor = record.lastSourceKey
            rowsRead += Int64(record.rowsRead)
            rowsWritten += Int64(record.rowsWritten)
            rowsSkipped += Int64(record.rowsSkipped)
            lastBatch = (Int(record.rowsRead), .microseconds(record.durationMicros))
        }
    }
}
