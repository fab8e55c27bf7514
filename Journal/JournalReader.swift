/// A read-only view of a journal directory: its header, frozen plan and log, as they are on disk
/// when it is opened. Opening drops a torn last record and reports it in ``log``.
///
/// ```swift
/// let journal = try JournalReader(directory: journalPath)
/// print(journal.header.jobID, journal.batches.count, journal.state)
/// let map = try journal.idMap()
/// let destination = try map.destination(of: 42, entity: 1)
/// ```
public struct JournalReader: Sendable {
    /// The files of the journal.
    public let layout: JournalLayout
    /// The header.
    public let header: JournalHeader
    /// The frozen plan's bytes.
    public let plan: [UInt8]
    /// The log, read once and indexed.
    public let log: JournalLog

    /// Opens the journal at `directory`; throws when it is not a journal, was written by a newer
    /// format, or its header or a record before the last is damaged.
    public init(directory: String) throws(JournalError) {
        layout = JournalLayout(directory: directory)
        guard try FileIO.isDirectory(layout.directory) else {
            throw JournalError(.notFound, "no journal directory here", file: layout.directory)
        }
        guard try FileIO.exists(layout.header) else {
            throw JournalError(.notAJournal, "not a chunkmigrate journal: it has no header file", file: layout.directory)
        }
        header = try JournalHeader.decode(try FileIO.read(layout.header), file: layout.header)
        plan = try FileIO.read(layout.plan)
        log = try JournalLog(scanning: try FileIO.read(layout.log), file: layout.log, entityCount: header.entities.count)
    }

    /// Every log record, in order.
    public var records: [LogRecord] { log.records }

    /// The batch records, in log order; for one entity when `entity` is given.
    public func batches(entity: UInt32? = nil) -> [BatchRecord] { log.batches(entity: entity) }

    /// Every batch record, in log order.
    public var batches: [BatchRecord] { log.batches() }

    /// The fix-up records, in log order.
    public var fixups: [FixupRecord] { log.fixups }

    /// The index of the entity named `name`, if the plan has one.
    public func entityIndex(named name: String) -> UInt32? {
        header.entities.firstIndex { $0.name == name }.map { UInt32($0) }
    }

    /// Where the job stands.
    public enum State: String, Sendable, Codable {
        /// A process holds the journal's lock now.
        case running
        /// The job stopped before the end without recording an error (killed, cancelled, out of budget).
        case interrupted
        /// The job's last run stopped on an error; it resumes once the cause is fixed.
        case failed
        /// Every entity is done.
        case complete
    }

    /// Where the job stands, from the log and the lock.
    public var state: State {
        if log.recordsCompletion { return .complete }
        if FileIO.Lock.isHeld(path: layout.lock) { return .running }
        return log.endsInFailure ? .failed : .interrupted
    }

    /// The last failure message recorded since the last start, if the job is failed.
    public var lastFailure: String? { log.lastFailure }

    /// Whether the log records the entity as complete.
    public func isComplete(entity: UInt32) -> Bool {
        log.entities.indices.contains(Int(entity)) && log.entities[Int(entity)].isComplete
    }

    /// An ID map over the batches of this journal, reading segments from its directory; its
    /// cache holds `cacheBudget` bytes of keys and grows up to `cacheLimit` when lookups need it.
    public func idMap(cacheBudget: Int = IDMap.defaultCacheBudget, cacheLimit: Int? = nil) throws(JournalError) -> IDMap {
        let map = IDMap(layout: layout, entityCount: header.entities.count, cacheBudget: cacheBudget, cacheLimit: cacheLimit)
        for case let .batch(record) in log.records { try map.add(record) }
        return map
    }
}
