import MigrationJournal

/// Where a job stands, read from its journal alone.
public struct JobStatus: Sendable, Codable, Equatable {
    /// One entity's progress.
    public struct Entity: Sendable, Codable, Equatable {
        /// The entity's name in the plan.
        public var name: String
        /// Batches committed and logged.
        public var batches: UInt64
        /// Source rows read.
        public var rowsRead: Int64
        /// Rows written to the destination.
        public var rowsWritten: Int64
        /// Rows left out by a `skip` relationship.
        public var rowsSkipped: Int64
        /// The last source key read: the entity's cursor.
        public var cursor: Int64?
        /// Whether every row of the entity is migrated.
        public var complete: Bool
    }

    /// The job's identifier.
    public var jobID: String
    /// Where a job stands: `running`, `interrupted`, `failed` or `complete` (the same words in
    /// JSON).
    public typealias State = JournalReader.State

    /// Where the job stands.
    public var state: State
    /// The source store the job was started with.
    public var source: String
    /// The destination store the job was started with.
    public var destination: String
    /// Each entity's progress, in plan order.
    public var entities: [Entity]
    /// Source rows read by every entity.
    public var rowsRead: Int64 { entities.reduce(0) { $0 + $1.rowsRead } }
    /// The error the last run stopped on, when the state is `failed`.
    public var lastFailure: String?

    init(reader: JournalReader) {
        jobID = reader.header.jobID
        state = reader.state
        source = reader.header.sourcePath
        destination = reader.header.destinationPath
        lastFailure = reader.state == .failed ? reader.lastFailure : nil
        entities = zip(reader.header.entities, reader.log.entities).map { entity, logged in
            Entity(
                name: entity.name, batches: logged.lastBatch, rowsRead: Int64(logged.rowsRead),
                rowsWritten: Int64(logged.rowsWritten), rowsSkipped: Int64(logged.rowsSkipped),
                cursor: logged.cursor, complete: logged.isComplete)
        }
    }
}
