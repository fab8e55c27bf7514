import Foundation
import Logging
import MigrationJournal

/// One batch: of the copy (rows written, validated, the ID-map segment, the checkpoint, in one
/// transaction) or of the fix-up pass; what a failing statement was, and the next batch's size.
extension Engine {
    /// Copies the next batch of an entity; returns the rows read, or `nil` when the entity has no
    /// rows left.
    ///
    /// One transaction: the `INSERT ... SELECT` writes the next rows after the cursor (recording
    /// their source keys as they pass), the batch is validated, its ID-map segment is written and
    /// made durable, the checkpoint is updated, and the transaction commits. The log record follows
    /// the commit.
    func copyBatch(entity index: Int) throws -> Int? {
        guard let copier = copiers[index] else { throw MigrationError(.invalidPlan, "entity \(index) was not prepared") }
        let entity = plan.entities[index]
        let entityIndex = UInt32(index)
        let state = states[index]
        let batch = state.batch + 1
        let started = clock.now
        // The source rows the batch covers: its rows read, or, for a bounded entity, every key of
        // its range, left out or not (what its time is spent on, and what sizes the next batch).
        var covered = 0
        var recorded = false

        let committed: BatchRecord?
        do {
            // A batch that finds no rows left returns nil and commits nothing.
            committed = try database.inTransaction(.immediate) { () throws -> BatchRecord? in
                let base = try allocationBase(copier: copier, batch: batch)
                resolver.beginBatch(entity: entityIndex, base: base, mapping: copier.mapping, capacity: batchSize)
                guard let (range, count) = try copyRows(copier: copier, after: state.cursor, batch: batch) else { return nil }
                covered = count
                let kept = resolver.batchKeys
                let read = copier.hasSkipRelationships ? resolver.scanned : kept.count
                guard read > 0 || range != nil else { return nil }
                let skipped = copier.hasSkipRelationships ? resolver.skipped : 0
                try validateCounts(copier: copier, batch: batch, base: base, kept: kept, read: read, skipped: skipped)
                // A bounded batch covers its whole key range, rows left out included.
                let first = range?.lowerBound ?? kept[0]
                let last = range?.upperBound ?? kept[kept.count - 1]
                if options.verifyChecksums {
                    try compareChecksums(copier: copier, batch: batch, base: base, kept: kept)
                }
                recorded = try recordDeferrals(entity: entityIndex, batch: batch)
                return try recordBatch(
                    entity: index, copier: copier, batch: batch, base: base, kept: kept, keys: first...last,
                    read: read, skipped: skipped, started: started)
            }
        } catch {
            idMap.truncate(entity: entityIndex, after: state.batch)
            // A device that failed (or filled up) may have failed the COMMIT after its commit
            // point (a sync of the rollback journal once it was truncated): the batch may be in
            // the destination. Its segment stays for the next run, whose reconcile rebuilds the
            // batch's record where the destination holds it and removes the segment where not.
            let wrapped = MigrationError.wrapping(error, entity: entity.name, batch: batch)
            if wrapped.code != .deviceError, wrapped.code != .diskFull {
                try? journal.removeSegments(entity: entityIndex, after: state.batch)
            }
            throw wrapped
        }
        guard let record = committed else { return nil }
        if recorded { recordedDeferrals.insert([UInt64(index), batch]) }
        CrashPoint.check(.afterCommit, entity: entity.name, batch: batch)
        if CrashPoint.isArmed(.midRecord, entity: entity.name, batch: batch) {
            try journal.appendTorn(.batch(record), keepingBytes: 20)
            CrashPoint.killNow()
        }
        try journal.append(.batch(record))

        states[index].apply(record)
        adaptBatchSize(elapsed: clock.now - started, rows: max(covered, Int(record.rowsRead)))
        return Int(record.rowsRead)
    }

    /// The rows of one batch written, inside its transaction: the next range of a bounded entity
    /// (`nil` when none is left, with how many source keys it covers), or the next `batchSize`
    /// rows after `cursor`. An SQLite error is diagnosed to name the row at fault.
    func copyRows(copier: EntityCopier, after cursor: Int64?, batch: UInt64) throws -> (range: ClosedRange<Int64>?, covered: Int)? {
        var range: ClosedRange<Int64>?
        var covered = 0
        if copier.isBounded {
            guard let next = try copier.nextRange(after: cursor, limit: batchSize) else { return nil }
            range = next.keys
            covered = next.count
        }
        do throws(SQLiteError) {
            if let range {
                try copier.copy(range: range)
            } else {
                try copier.copy(after: cursor, limit: batchSize)
            }
        } catch {
            throw diagnose(error, copier: copier, batch: batch)
        }
        return (range, covered)
    }

    /// The end of a batch's transaction, once its rows are written and validated: its ID-map
    /// segment, its record (added to the ID map, and to the destination's checkpoint), and Core
    /// Data's bookkeeping. `keys` is the source-key range the batch covers.
    func recordBatch(
        entity index: Int, copier: EntityCopier, batch: UInt64, base: Int64, kept: [Int64],
        keys: ClosedRange<Int64>, read: Int, skipped: Int, started: ContinuousClock.Instant
    ) throws -> BatchRecord {
        let entityIndex = UInt32(index)
        let name = plan.entities[index].name
        // Preserved keys map to themselves: the run "starts" at the first key.
        let destinationBase = copier.mapping == .allocate ? base : (kept.first ?? keys.lowerBound)
        var crc: UInt32 = 0
        if !kept.isEmpty {
            crc = try journal.write(
                IDMapSegment(
                    entity: entityIndex, batch: batch, mapping: copier.mapping,
                    destinationBase: destinationBase, sourceKeys: kept))
        }
        CrashPoint.check(.afterSegment, entity: name, batch: batch)
        var record = BatchRecord(
            entity: entityIndex, batch: batch, firstSourceKey: keys.lowerBound, lastSourceKey: keys.upperBound,
            rowsRead: UInt32(read), rowsWritten: UInt32(kept.count), rowsSkipped: UInt32(skipped),
            relationshipsNulled: UInt32(resolver.nulled), relationshipsDeferred: UInt32(resolver.deferred),
            mapping: copier.mapping, destinationBase: destinationBase,
            segmentFirstKey: kept.first ?? keys.lowerBound, segmentLastKey: kept.last ?? keys.upperBound, segmentCRC: crc)
        // Keep the keys in the cache only when a relationship will look them up.
        try idMap.add(record, keys: isRelationshipTarget[index] ? kept : nil)
        try hooks?.afterBatch(entity: index)
        record.durationMicros = UInt64(max(0, (clock.now - started).microseconds))
        record.committedAtMillis = Self.nowMillis()
        try checkpoints.save(record)
        CrashPoint.check(.beforeCommit, entity: name, batch: batch)
        return record
    }

    /// Where a batch's allocated keys start: after the destination's largest (from 1 in an empty
    /// table); 0 for preserved keys.
    func allocationBase(copier: EntityCopier, batch: UInt64) throws -> Int64 {
        guard copier.mapping == .allocate else { return 0 }
        let largest = try copier.largestDestinationKey() ?? 0
        guard largest <= Int64.max - Int64(batchSize) else {
            throw MigrationError(
                .batch,
                "the destination's largest key is \(largest): allocating \(batchSize) more keys would pass the largest 64-bit integer",
                entity: copier.entity.name, batch: batch)
        }
        return largest + 1
    }

    /// Checks a batch's counts: the rows read are those written plus those skipped, and every row
    /// taken was written. Where SQLite assigned the keys, they must be the ones the ID map will
    /// record: the rows arrived one past the largest key each, so the largest is now the last.
    func validateCounts(
        copier: EntityCopier, batch: UInt64, base: Int64, kept: [Int64], read: Int,
        skipped: Int
    ) throws {
        let written = database.changes
        guard written == kept.count, read == kept.count + skipped else {
            throw MigrationError(
                .batch,
                "validation failed: \(read) rows read and \(skipped) skipped, so \(read - skipped) should be written, but \(written) were",
                entity: copier.entity.name, batch: batch, sourceKey: kept.first)
        }
        if copier.assignsKeys, written > 0 {
            let largest = try copier.largestDestinationKey()
            guard largest == base + Int64(written) - 1 else {
                throw MigrationError(
                    .batch,
                    "validation failed: the destination's largest key is \(largest ?? 0) after the batch, but the batch's keys run from \(base) to \(base + Int64(written) - 1) (a trigger inserting into the table?)",
                    entity: copier.entity.name, batch: batch, sourceKey: kept.last)
            }
        }
    }

    /// Compares the checksum of the batch's rows as written with that of the source values the
    /// plan maps them from (``MigrationOptions/verifyChecksums``).
    func compareChecksums(copier: EntityCopier, batch: UInt64, base: Int64, kept: [Int64]) throws {
        guard let firstKept = kept.first, let lastKept = kept.last else { return }
        let destinationRange = copier.mapping == .allocate ? base...(base + Int64(kept.count) - 1) : firstKept...lastKept
        let digests = try copier.digests(resolver: resolver, destinationRange: destinationRange, sourceRange: firstKept...lastKept)
        guard digests.written == digests.mapped else {
            throw MigrationError(
                .batch,
                "validation failed: the rows written differ from the source values mapped by the plan (a destination column's type affinity changed a value?); checksum \(String(digests.written, radix: 16)) written, \(String(digests.mapped, radix: 16)) mapped",
                entity: copier.entity.name, batch: batch, sourceKey: firstKept)
        }
    }

    /// Writes the self-references the batch deferred into ``CopierSQL/deferralTable``, in its transaction;
    /// whether it did (it does not where the batch deferred too many to keep).
    func recordDeferrals(entity: UInt32, batch: UInt64) throws -> Bool {
        guard !resolver.deferralsOverflowed, let statement = recordDeferral else { return false }
        for deferral in resolver.deferrals {
            try statement.bind([
                .integer(Int64(entity)), .integer(Int64(deferral.relationship)), .integer(Int64(batch)),
                .integer(deferral.own), .integer(deferral.foreignKey),
            ])
            defer { statement.reset() }
            try statement.step()
        }
        return true
    }

    func fixupBatch(entity index: Int, column: String, ref: IDMap.SegmentRef) throws {
        guard let copier = copiers[index] else { throw MigrationError(.invalidPlan, "entity \(index) was not prepared") }
        let entity = plan.entities[index]
        let batch = (states[index].fixupBatch[column] ?? 0) + 1
        let first = ref.mapping == .allocate ? ref.destinationBase : ref.firstKey
        let last = ref.mapping == .allocate ? ref.destinationBase + Int64(ref.count) - 1 : ref.lastKey
        do {
            let record = try database.inTransaction(.immediate) {
                resolver.resetCounters()
                let recorded = recordedDeferrals.contains([UInt64(index), ref.batch]) && copier.fixesFromRecords(column: column)
                try copier.fix(
                    column: column, destination: first...last, source: ref.firstKey...ref.lastKey,
                    recordedBatch: recorded ? ref.batch : nil)
                if recorded { fixupsFromRecords += 1 }
                let record = FixupRecord(
                    entity: UInt32(index), column: column, batch: batch,
                    firstDestinationKey: first, lastDestinationKey: last,
                    rowsUpdated: UInt32(resolver.updated), rowsNulled: UInt32(resolver.nulled),
                    committedAtMillis: Self.nowMillis())
                try checkpoints.save(record)
                return record
            }
            CrashPoint.check(.afterFixupCommit, entity: entity.name, batch: batch)
            try journal.append(.fixup(record))
            states[index].fixupBatch[column] = batch
        } catch {
            throw MigrationError.wrapping(error, entity: entity.name, batch: batch, column: column)
        }
    }

    /// Names the row behind a failed batch insert. Rows flow through the INSERT in key order and
    /// `cm_take` records a row just before SQLite writes it, so the row a constraint rejected is the
    /// last one taken.
    func diagnose(_ error: SQLiteError, copier: EntityCopier, batch: UInt64) -> MigrationError {
        let entity = copier.entity.name
        if error.cause is MigrationError { return MigrationError.wrapping(error, entity: entity, batch: batch) }
        guard error.isConstraint else {
            return MigrationError.wrapping(error, entity: entity, batch: batch, sourceKey: resolver.batchKeys.last)
        }
        // SQLite checks immediate foreign keys at the end of the statement, not at the row, so the
        // last row taken is not the culprit: name the batch's key range instead.
        if error.isForeignKeyViolation {
            let range = resolver.batchKeys.first.map { "rows with source keys \($0) to \(resolver.batchKeys.last ?? $0)" } ?? "the batch"
            return MigrationError(
                .batch,
                "validation failed: \(error.message) for one of the \(range); a foreign key points at a row that does not exist in the destination",
                entity: entity, batch: batch, file: error.file, cause: error)
        }
        return MigrationError(
            .batch, "validation failed: \(error.message)", entity: entity, batch: batch,
            sourceKey: resolver.batchKeys.last,
            column: Self.column(fromConstraintMessage: error.message), file: error.file, cause: error)
    }

    /// `message.text` from "NOT NULL constraint failed: message.text".
    static func column(fromConstraintMessage message: String) -> String? {
        guard let range = message.range(of: "constraint failed: ") else { return nil }
        let names = message[range.upperBound...].split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) }
        return names.map { name in name.split(separator: ".").last.map(String.init) ?? name }
    }

    func adaptBatchSize(elapsed: Duration, rows: Int) {
        guard rows >= batchSize / 2, let proposed = Self.adaptedBatchSize(rows: batchSize, elapsed: elapsed, options: options) else {
            return
        }
        batchSize = Self.bounded(proposed, around: batchSize, options: options)
    }

    /// `proposed` within a factor of four of `size` (one odd batch cannot swing the size), then
    /// within the options' bounds.
    static func bounded(_ proposed: Int, around size: Int, options: MigrationOptions) -> Int {
        min(
            options.maximumBatchSize, IDMapSegment.maximumKeyCount,
            max(options.minimumBatchSize, min(size * 4, max(size / 4, proposed))))
    }

    /// The batch size that would take ``MigrationOptions/batchTimeTarget`` at the pace of a batch
    /// of `rows` rows that took `elapsed`, within the options' bounds; `nil` when the size is fixed.
    static func adaptedBatchSize(rows: Int, elapsed: Duration, options: MigrationOptions) -> Int? {
        guard options.batchSize == nil, rows > 0 else { return nil }
        let proposed = Double(rows) * (options.batchTimeTarget / max(elapsed, .microseconds(100)))
        return Int(min(Double(options.maximumBatchSize), max(Double(options.minimumBatchSize), proposed)))
    }
}
