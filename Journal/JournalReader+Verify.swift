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
        var report = VerifyReport()
        func problem(_ error: JournalError) {
            report.problems.append(.init(code: error.code.rawValue, message: error.message, file: error.file))
        }
        let journal: JournalReader
        do {
            journal = try JournalReader(directory: directory)
        } catch {
            problem(error)
            return report
        }
        let layout = journal.layout
        report.records = journal.log.entries.count
        if SHA256.hex(journal.plan) != journal.header.planFingerprint {
            problem(JournalError(.damagedHeader, "plan.json does not match the plan fingerprint in the header", file: layout.plan))
        }

        let entityCount = journal.header.entities.count
        var lastBatch = [UInt64](repeating: 0, count: entityCount)
        var lastCursor = [Int64?](repeating: nil, count: entityCount)
        var complete = Set<UInt32>()
        var lastFixup: [String: UInt64] = [:]
        let map = IDMap(layout: layout, entityCount: entityCount, cacheBudget: 1 << 20)

        for entry in journal.log.entries {
            func broken(_ what: String) {
                problem(JournalError(.discontinuity, "record \(entry.index) at offset \(entry.offset): \(what)", file: layout.log))
            }
            switch entry.record {
            case let .batch(record):
                let entity = Int(record.entity)
                guard entity < entityCount else {
                    broken("batch names entity \(record.entity), but the plan has \(entityCount)")
                    continue
                }
                let name = journal.header.entities[entity].name
                if complete.contains(record.entity) { broken("\(name) batch \(record.batch) comes after the entity was complete") }
                if record.batch != lastBatch[entity] + 1 {
                    broken("\(name) batch \(record.batch) follows batch \(lastBatch[entity])")
                }
                if let cursor = lastCursor[entity], record.firstSourceKey <= cursor {
                    broken("\(name) batch \(record.batch) starts at source key \(record.firstSourceKey), not after the previous batch's last key \(cursor)")
                }
                if record.firstSourceKey > record.lastSourceKey {
                    broken("\(name) batch \(record.batch) has an inverted source key range")
                }
                if UInt64(record.rowsRead) != UInt64(record.rowsWritten) + UInt64(record.rowsSkipped) {
                    broken("\(name) batch \(record.batch) read \(record.rowsRead) rows but wrote \(record.rowsWritten) and skipped \(record.rowsSkipped)")
                }
                if record.rowsWritten > 0 && (record.segmentFirstKey < record.firstSourceKey || record.segmentLastKey > record.lastSourceKey) {
                    broken("\(name) batch \(record.batch) wrote keys outside the range it read")
                }
                lastBatch[entity] = record.batch
                lastCursor[entity] = record.lastSourceKey
                do {
                    try map.add(record)
                    if record.rowsWritten > 0, let ref = map.segments(entity: record.entity).last {
                        _ = try map.readSegment(entity: record.entity, ref: ref)
                        report.segmentsChecked += 1
                    }
                } catch {
                    problem(error)
                }
            case let .fixup(record):
                let key = "\(record.entity)/\(record.column)"
                if record.batch != (lastFixup[key] ?? 0) + 1 {
                    broken("fix-up of entity \(record.entity) column \(record.column) batch \(record.batch) follows batch \(lastFixup[key] ?? 0)")
                }
                lastFixup[key] = record.batch
            case let .entityComplete(entity, batches, _):
                if Int(entity) >= entityCount {
                    broken("entity \(entity) is complete, but the plan has \(entityCount)")
                } else if batches != lastBatch[Int(entity)] {
                    broken("entity \(entity) is complete after \(batches) batches, but the log has \(lastBatch[Int(entity)])")
                }
                complete.insert(entity)
            case .started, .failed, .complete:
                break
            }
        }

        if case let .torn(index, offset, reason) = journal.log.tail {
            problem(JournalError(.damagedRecord,
                "record \(index) at offset \(offset) is torn (\(reason)); resuming the job drops it and rebuilds it from the destination's checkpoint",
                file: layout.log))
        }

        // Segment files the log does not name yet.
        for entity in 0..<entityCount {
            let folder = layout.segmentFolder(entity: UInt32(entity))
            guard let names = try? FileIO.list(folder) else { continue }
            for name in names where name.hasSuffix(".seg") || name.hasSuffix(".tmp") {
                let number = UInt64(name.split(separator: ".").first ?? "") ?? 0
                if name.hasSuffix(".tmp") || number > lastBatch[entity] {
                    report.pendingSegments.append(folder + "/" + name)
                }
            }
        }
        return report
    }
}
