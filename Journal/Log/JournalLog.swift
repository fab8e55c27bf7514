/// A journal's log, read once and indexed: its records in order, how the file ended, and for each
/// entity of the plan what its batches add up to, so that resuming, status, `chunkjournal` and
/// verify all read the same answers instead of each walking the records.
///
/// It holds the records and, beside them, a summary per entity (a few numbers and its fix-up
/// columns); nothing per batch.
///
/// ```swift
/// let log = try JournalReader(directory: "/tmp/job.journal").log
/// let message = log.entities[1]
/// print(message.lastBatch, message.cursor ?? "not started", message.rowsWritten, message.isComplete)
/// for batch in log.batches(entity: 1) { print(batch.batch, batch.lastSourceKey) }
/// ```
public struct JournalLog: Sendable {
    /// What the log says of one entity of the plan.
    public struct Entity: Sendable, Equatable {
        /// How many batch records the entity has.
        public internal(set) var batchCount = 0
        /// The first source key its first batch read.
        public internal(set) var firstSourceKey: Int64?
        /// Source rows read, in all its batches.
        public internal(set) var rowsRead: UInt64 = 0
        /// Rows written to the destination.
        public internal(set) var rowsWritten: UInt64 = 0
        /// Rows left out by a `skip` relationship.
        public internal(set) var rowsSkipped: UInt64 = 0
        /// The record of its last batch in the log.
        public internal(set) var lastBatchRecord: BatchRecord?
        /// Whether the log records the entity as complete.
        public internal(set) var isComplete = false
        /// The number of the last fix-up batch of each deferred column: `column -> batch`.
        public internal(set) var fixupBatches: [String: UInt64] = [:]

        /// The number of the entity's last logged batch; 0 before its first. Batches are numbered
        /// from 1 without gaps, so in an intact log this is also how many there are.
        public var lastBatch: UInt64 { lastBatchRecord?.batch ?? 0 }
        /// The last source key its last batch read: where the next batch starts after.
        public var cursor: Int64? { lastBatchRecord?.lastSourceKey }

        mutating func count(_ record: BatchRecord) {
            if batchCount == 0 { firstSourceKey = record.firstSourceKey }
            batchCount += 1
            rowsRead += UInt64(record.rowsRead)
            rowsWritten += UInt64(record.rowsWritten)
            rowsSkipped += UInt64(record.rowsSkipped)
            lastBatchRecord = record
        }
    }

    /// The valid records, in order.
    public private(set) var records: [LogRecord] = []
    /// How the file ended when it was read: a torn last record is dropped from ``records``.
    public let tail: LogFile.Tail
    /// The length of the file when it was read, up to the end of its last valid frame.
    public let validLength: Int
    /// Each entity of the journal's plan, by entity number. Records that name an entity the plan
    /// does not have are kept in ``records`` but counted nowhere (verify reports them).
    public private(set) var entities: [Entity]
    /// Whether the log records the job as complete.
    public private(set) var recordsCompletion = false
    /// Whether the log records at least one committed batch.
    public private(set) var recordsBatches = false
    /// The message of the last failure since the last start, if the log records one.
    public private(set) var lastFailure: String?

    /// Indexes `records`, read from a file that ended as `tail` says.
    init(records: [LogRecord], tail: LogFile.Tail = .clean, validLength: Int = LogFile.fileHeaderLength, entityCount: Int) {
        self.tail = tail
        self.validLength = validLength
        entities = Array(repeating: Entity(), count: entityCount)
        self.records = records
        for record in records { count(record) }
    }

    /// Reads and indexes a log file's bytes (see `LogFile.scan` for what is damage
    /// and what is a torn tail).
    init(scanning bytes: [UInt8], file: String, entityCount: Int) throws(JournalError) {
        let scan = try LogFile.scan(bytes, file: file)
        self.init(records: scan.records, tail: scan.tail, validLength: scan.validLength, entityCount: entityCount)
    }

    /// Adds a record appended to the file.
    mutating func append(_ record: LogRecord) {
        records.append(record)
        count(record)
    }

    /// Adds what a record says to the summaries.
    private mutating func count(_ record: LogRecord) {
        switch record {
        case let .batch(batch):
            recordsBatches = true
            if entities.indices.contains(Int(batch.entity)) { entities[Int(batch.entity)].count(batch) }
        case let .fixup(fixup):
            if entities.indices.contains(Int(fixup.entity)) { entities[Int(fixup.entity)].fixupBatches[fixup.column] = fixup.batch }
        case let .entityComplete(entity, _, _):
            if entities.indices.contains(Int(entity)) { entities[Int(entity)].isComplete = true }
        case .started:
            lastFailure = nil
        case let .failed(_, message):
            lastFailure = message
        case .complete:
            recordsCompletion = true
        }
    }

    /// The batch records, in log order; for one entity when `entity` is given.
    public func batches(entity: UInt32? = nil) -> [BatchRecord] {
        records.compactMap { record in
            guard case let .batch(batch) = record else { return nil }
            return entity == nil || batch.entity == entity ? batch : nil
        }
    }

    /// The fix-up records, in log order.
    public var fixups: [FixupRecord] {
        records.compactMap { record in
            guard case let .fixup(fixup) = record else { return nil }
            return fixup
        }
    }

    /// Every record with its position and the byte offset of its frame. The offsets are not
    /// stored: frames lie back to back from the end of the file header, so each follows from the
    /// lengths of the records before it.
    public var entries: [LogFile.Entry] {
        var offset = LogFile.fileHeaderLength
        return records.enumerated().map { index, record in
            defer { offset += LogFile.frameLength(of: record) }
            return LogFile.Entry(index: index, offset: offset, record: record)
        }
    }

    /// Whether the job stopped on an error: the last record is a failure.
    public var endsInFailure: Bool {
        if case .failed = records.last { true } else { false }
    }
}
