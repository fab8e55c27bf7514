import Foundation
import Logging
import MigrationJournal

/// Where a job stands when a run starts: the log made to agree with the destination's checkpoint,
/// each entity's progress, its key range, and the first batch's size.
extension Engine {
    /// Makes the log agree with the destination's checkpoint, which is the truth: rebuilds the
    /// record of a batch that committed but was not logged, deletes segments of batches that
    /// never committed, and refuses a destination that is behind the log.
    func reconcile() throws {
        // A job an earlier version started keeps its ledger in this version's form from here on.
        try CheckpointStore.upgradeLedger(in: database)
        for (index, entity) in plan.entities.enumerated() {
            let entityIndex = UInt32(index)
            let logged = journal.log.entities[index]
            let checkpoint = try checkpoints.copyBatch(entity: entityIndex)
            let committed = checkpoint?.batch ?? 0
            if logged.lastBatch + 1 == committed, let checkpoint {
                if checkpoint.rowsWritten > 0 {
                    guard try journal.segmentCRC(entity: entityIndex, batch: committed) == checkpoint.segmentCRC else {
                        throw MigrationError(
                            .journal,
                            "batch \(committed) is committed in the destination but its ID-map segment is missing or damaged; the journal cannot be repaired",
                            entity: entity.name, batch: committed,
                            file: journal.layout.segment(entity: entityIndex, batch: committed))
                    }
                }
                logger.info(
                    "rebuilding the log record of a committed batch", metadata: ["entity": "\(entity.name)", "batch": "\(committed)"])
                try journal.append(.batch(checkpoint))
            } else if logged.lastBatch > committed {
                throw MigrationError(
                    .mismatch,
                    "the journal records \(logged.lastBatch) batches but the destination's checkpoint only \(committed): this destination is not the one the job wrote (restored from a copy?)",
                    entity: entity.name, file: database.path)
            } else if logged.lastBatch != committed {
                throw MigrationError(
                    .journal,
                    "the destination has committed batch \(committed) but the log ends at batch \(logged.lastBatch); the journal has lost records",
                    entity: entity.name, file: journal.layout.log)
            }
            try journal.removeSegments(entity: entityIndex, after: committed)

            for column in (order.deferred[index] ?? []).sorted() {
                let fixup = try checkpoints.fixupBatch(entity: entityIndex, column: column)
                let done = fixup?.batch ?? 0
                let inLog = logged.fixupBatches[column] ?? 0
                if inLog + 1 == done, let fixup {
                    try journal.append(.fixup(fixup))
                } else if inLog != done {
                    throw MigrationError(
                        .mismatch,
                        "the journal records \(inLog) fix-up batches of \(column) but the destination \(done)",
                        entity: entity.name, column: column, file: database.path)
                }
            }
        }
        loadStates()
        for case let .batch(batch) in journal.log.records {
            try idMap.add(batch)
            // A lost segment is a lost piece of the ID map: refuse rather than resolve around it.
            if try batch.rowsWritten > 0 && !journal.hasSegment(entity: batch.entity, batch: batch.batch) {
                throw MigrationError(
                    .journal,
                    "the ID-map segment of this batch is missing: the destination keys of its rows are lost, so relationships to them cannot be resolved. Restore the journal directory from a backup, or start the job again into a fresh destination (`chunkjournal verify` lists what else is damaged)",
                    entity: plan.entities[Int(batch.entity)].name, batch: batch.batch,
                    file: journal.layout.segment(entity: batch.entity, batch: batch.batch))
            }
        }
    }

    /// Rebuilds per-entity progress from the log.
    func loadStates() {
        states = journal.log.entities.map { logged in
            var state = EntityState()
            state.batch = logged.lastBatch
            state.cursor = logged.cursor
            state.rowsRead = Int64(logged.rowsRead)
            state.rowsWritten = Int64(logged.rowsWritten)
            state.rowsSkipped = Int64(logged.rowsSkipped)
            state.complete = logged.isComplete
            state.fixupBatch = logged.fixupBatches
            state.lastBatch = logged.lastBatchRecord.map { (Int($0.rowsRead), .microseconds($0.durationMicros)) }
            return state
        }
    }

    /// Reads each unfinished entity's key range, from which the totals progress reports are
    /// estimated: counting rows would read the whole table before the first batch.
    func readKeyRanges() throws {
        for (index, entity) in plan.entities.enumerated() where !states[index].complete {
            states[index].keyRange = try stores.keyRange(table: entity.source.table, key: entity.source.key)
        }
    }

    /// A resumed run sizes its first batch from the pace of the entity's last one instead of
    /// starting over: a job killed again and again would spend its runs growing it back. Only
    /// where a batch's size is its rows: a filtered entity's batch covers keys it may not keep.
    func sizeFirstBatchFromLastRun() {
        if let entity = order.entities.first(where: { !states[$0].complete }), copiers[entity]?.isBounded == false,
            let last = states[entity].lastBatch, last.duration > .zero,
            let proposed = Self.adaptedBatchSize(rows: last.rows, elapsed: last.duration, options: options)
        {
            batchSize = Self.bounded(proposed, around: last.rows, options: options)
        }
    }
}
