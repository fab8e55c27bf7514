/// What ``JournalReader/verify(directory:)`` found.
public struct VerifyReport: Sendable, Codable, Equatable {
    /// One thing that is wrong, in log order.
    public struct Problem: Sendable, Codable, Equatable {
        /// The ``JournalError/Code`` raw value.
        public var code: String
        /// What is wrong, naming the record, entity, batch and offset.
        public var message: String
        /// The file concerned.
        public var file: String?
    }

    /// Records read.
    public var records = 0
    /// Segment files read and checked against their records.
    public var segmentsChecked = 0
    /// Segment files with no record yet: written for a batch that had not committed, or
    /// committed but not yet logged, when the job stopped. Resume deletes or logs them.
    public var pendingSegments: [String] = []
    /// Everything wrong, the first one first.
    public var problems: [Problem] = []

    /// Whether nothing is wrong.
    public var isIntact: Bool { problems.isEmpty }
}

extension JournalReader {
    /// Checks a journal end to end: the header and plan fingerprint, every record's checksum,
    /// the log's continuity (batch numbers without gaps, source keys and destination keys only
    /// moving forward, counts that add up), and every segment's checksum and agreement with its
    /// record.
    public static func verify(directory: String) -> VerifyReport {
        var verification = Verification()
        let journal: JournalReader
        do {
            journal = try JournalReader(directory: directory)
        } catch {
            verification.problem(error)
            return verification.report
        }
        verification.report.records = journal.log.records.count
        verification.checkPlanFingerprint(of: journal)
        verification.checkRecords(of: journal)
        verification.checkTail(of: journal)
        verification.findPendingSegments(of: journal)
        return verification.report
    }
}

/// One run of ``JournalReader/verify(directory:)``: the report so far, and what the records read
/// so far say each next record must continue.
private struct Verification {
    var report = VerifyReport()
    /// The last batch number and source key of each entity, in the records read so far.
    private var lastBatch: [UInt64] = []
    private var lastCursor: [Int64?] = []
    private var complete = Set<UInt32>()
    /// The last fix-up batch of each `entity/column`.
    private var lastFixup: [String: UInt64] = [:]

    mutating func problem(_ error: JournalError) {
        report.problems.append(.init(code: error.code.rawValue, message: error.message, file: error.file))
    }

    /// The frozen plan is the one the header's fingerprint names.
    mutating func checkPlanFingerprint(of journal: JournalReader) {
        guard JournalSHA256.hex(journal.plan) != journal.header.planFingerprint else { return }
        problem(JournalError(.damagedHeader, "plan.json does not match the plan fingerprint in the header", file: journal.layout.plan))
    }

    /// Every record continues the ones before it, and every segment a batch record names is
    /// intact and agrees with it.
    mutating func checkRecords(of journal: JournalReader) {
        let entityCount = journal.header.entities.count
        lastBatch = Array(repeating: 0, count: entityCount)
        lastCursor = Array(repeating: nil, count: entityCount)
        let map = IDMap(layout: journal.layout, entityCount: entityCount, cacheBudget: 1 << 20)
        for entry in journal.log.entries {
            func discontinuities(_ broken: [String]) -> [JournalError] {
                broken.map {
                    JournalError(.discontinuity, "record \(entry.index) at offset \(entry.offset): \($0)", file: journal.layout.log)
                }
            }
            switch entry.record {
            case let .batch(record):
                discontinuities(checkContinuity(of: record, entities: journal.header.entities)).forEach { problem($0) }
                if Int(record.entity) < entityCount { checkSegment(of: record, in: map) }
            case let .fixup(record):
                discontinuities(checkContinuity(of: record)).forEach { problem($0) }
            case let .entityComplete(entity, batches, _):
                discontinuities(checkCompletion(of: entity, after: batches)).forEach { problem($0) }
            case .started, .failed, .complete:
                break
            }
        }
    }

    /// What is wrong with a batch record after the records before it.
    private mutating func checkContinuity(of record: BatchRecord, entities: [JournalHeader.Entity]) -> [String] {
        let entity = Int(record.entity)
        guard entity < entities.count else {
            return ["batch names entity \(record.entity), but the plan has \(entities.count)"]
        }
        let name = "\(entities[entity].name) batch \(record.batch)"
        var broken: [String] = []
        if complete.contains(record.entity) { broken.append("\(name) comes after the entity was complete") }
        if record.batch != lastBatch[entity] + 1 {
            broken.append("\(name) follows batch \(lastBatch[entity])")
        }
        if let cursor = lastCursor[entity], record.firstSourceKey <= cursor {
            broken.append("\(name) starts at source key \(record.firstSourceKey), not after the previous batch's last key \(cursor)")
        }
        if record.firstSourceKey > record.lastSourceKey {
            broken.append("\(name) has an inverted source key range")
        }
        if UInt64(record.rowsRead) != UInt64(record.rowsWritten) + UInt64(record.rowsSkipped) {
            broken.append("\(name) read \(record.rowsRead) rows but wrote \(record.rowsWritten) and skipped \(record.rowsSkipped)")
        }
        if record.rowsWritten > 0 && (record.segmentFirstKey < record.firstSourceKey || record.segmentLastKey > record.lastSourceKey) {
            broken.append("\(name) wrote keys outside the range it read")
        }
        lastBatch[entity] = record.batch
        lastCursor[entity] = record.lastSourceKey
        return broken
    }

    /// Reads back the segment of a batch that wrote rows: present, intact, and as its record says.
    private mutating func checkSegment(of record: BatchRecord, in map: IDMap) {
        do {
            try map.add(record)
            if record.rowsWritten > 0, let ref = map.segments(entity: record.entity).last {
                _ = try map.readSegment(entity: record.entity, ref: ref)
                report.segmentsChecked += 1
            }
        } catch {
            problem(error)
        }
    }

    /// What is wrong with a fix-up record after the records before it.
    private mutating func checkContinuity(of record: FixupRecord) -> [String] {
        let key = "\(record.entity)/\(record.column)"
        let previous = lastFixup[key] ?? 0
        lastFixup[key] = record.batch
        guard record.batch != previous + 1 else { return [] }
        return ["fix-up of entity \(record.entity) column \(record.column) batch \(record.batch) follows batch \(previous)"]
    }

    /// What is wrong with an entity's completion record after its batch records.
    private mutating func checkCompletion(of entity: UInt32, after batches: UInt64) -> [String] {
        defer { complete.insert(entity) }
        if Int(entity) >= lastBatch.count {
            return ["entity \(entity) is complete, but the plan has \(lastBatch.count)"]
        }
        if batches != lastBatch[Int(entity)] {
            return ["entity \(entity) is complete after \(batches) batches, but the log has \(lastBatch[Int(entity)])"]
        }
        return []
    }

    /// A torn last record is reported: resuming drops it.
    mutating func checkTail(of journal: JournalReader) {
        guard case let .torn(index, offset, reason) = journal.log.tail else { return }
        problem(
            JournalError(
                .damagedRecord,
                "record \(index) at offset \(offset) is torn (\(reason)); resuming the job drops it and rebuilds it from the destination's checkpoint",
                file: journal.layout.log))
    }

    /// Segment files the log does not name yet: temporary files, and segments of batches after
    /// the entity's last logged one.
    mutating func findPendingSegments(of journal: JournalReader) {
        for (entity, logged) in journal.log.entities.enumerated() {
            let folder = journal.layout.segmentFolder(entity: UInt32(entity))
            guard let names = try? FileIO.list(folder) else { continue }
            for name in names {
                let batch = JournalLayout.batch(ofSegmentNamed: name)
                if JournalLayout.isTemporary(name) || (batch ?? 0) > logged.lastBatch {
                    report.pendingSegments.append(folder + "/" + name)
                }
            }
        }
    }
}
