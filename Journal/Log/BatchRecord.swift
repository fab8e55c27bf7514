/// What the log records of one committed batch: where it read, what it wrote, how it validated,
/// and the checksum of its ID-map segment. See `FORMAT.md`, "Batch record".
public struct BatchRecord: Sendable, Equatable, Codable {
    /// The entity's index in the plan.
    public var entity: UInt32
    /// The batch number, from 1 within the entity, without gaps.
    public var batch: UInt64
    /// The first source key the batch read.
    public var firstSourceKey: Int64
    /// The last source key the batch read: the entity's cursor once the batch is committed.
    public var lastSourceKey: Int64
    /// Source rows read (after the entity's filter).
    public var rowsRead: UInt32
    /// Rows inserted into the destination: the keys of the segment.
    public var rowsWritten: UInt32
    /// Rows not copied because a relationship with policy `skip` had no mapping.
    public var rowsSkipped: UInt32
    /// Foreign keys written as NULL because a relationship with policy `null` had no mapping.
    public var relationshipsNulled: UInt32
    /// Foreign keys written as NULL for now, to be set by the fix-up pass (self-references, cycles).
    public var relationshipsDeferred: UInt32
    /// How the batch's source keys map to destination keys.
    public var mapping: IDMapSegment.Mapping
    /// The destination key of the first written row.
    public var destinationBase: Int64
    /// The first and last source keys written (the segment's range); meaningless when nothing was written.
    public var segmentFirstKey: Int64
    /// The last source key written.
    public var segmentLastKey: Int64
    /// The CRC-32C of the segment file; 0 when the batch wrote no row and so has no segment.
    public var segmentCRC: UInt32
    /// How long the batch took, in microseconds.
    public var durationMicros: UInt64
    /// When the batch committed, in milliseconds since 1970 (UTC).
    public var committedAtMillis: Int64

    /// Creates a record.
    public init(
        entity: UInt32, batch: UInt64, firstSourceKey: Int64, lastSourceKey: Int64,
        rowsRead: UInt32, rowsWritten: UInt32, rowsSkipped: UInt32,
        relationshipsNulled: UInt32 = 0, relationshipsDeferred: UInt32 = 0,
        mapping: IDMapSegment.Mapping, destinationBase: Int64,
        segmentFirstKey: Int64, segmentLastKey: Int64, segmentCRC: UInt32,
        durationMicros: UInt64 = 0, committedAtMillis: Int64 = 0
    ) {
        self.entity = entity
        self.batch = batch
        self.firstSourceKey = firstSourceKey
        self.lastSourceKey = lastSourceKey
        self.rowsRead = rowsRead
        self.rowsWritten = rowsWritten
        self.rowsSkipped = rowsSkipped
        self.relationshipsNulled = relationshipsNulled
        self.relationshipsDeferred = relationshipsDeferred
        self.mapping = mapping
        self.destinationBase = destinationBase
        self.segmentFirstKey = segmentFirstKey
        self.segmentLastKey = segmentLastKey
        self.segmentCRC = segmentCRC
        self.durationMicros = durationMicros
        self.committedAtMillis = committedAtMillis
    }

    /// The destination key of the last written row.
    public var destinationLast: Int64 {
        mapping == .preserve ? segmentLastKey : destinationBase &+ Int64(rowsWritten) &- 1
    }
}

/// One batch of the fix-up pass that sets deferred foreign keys (self-references and cycles).
public struct FixupRecord: Sendable, Equatable, Codable {
    /// The entity whose rows were updated.
    public var entity: UInt32
    /// The relationship's destination column.
    public var column: String
    /// The fix-up batch number, from 1 within (entity, column).
    public var batch: UInt64
    /// The destination key range the batch covered, inclusive.
    public var firstDestinationKey: Int64
    /// The last destination key the batch covered.
    public var lastDestinationKey: Int64
    /// Rows whose foreign key was set.
    public var rowsUpdated: UInt32
    /// Rows whose source foreign key had no mapping and stayed NULL (policy `null`).
    public var rowsNulled: UInt32
    /// When the batch committed, in milliseconds since 1970 (UTC).
    public var committedAtMillis: Int64

    /// Creates a record.
    public init(
        entity: UInt32, column: String, batch: UInt64, firstDestinationKey: Int64,
        lastDestinationKey: Int64, rowsUpdated: UInt32, rowsNulled: UInt32, committedAtMillis: Int64 = 0
    ) {
        self.entity = entity
        self.column = column
        self.batch = batch
        self.firstDestinationKey = firstDestinationKey
        self.lastDestinationKey = lastDestinationKey
        self.rowsUpdated = rowsUpdated
        self.rowsNulled = rowsNulled
        self.committedAtMillis = committedAtMillis
    }
}
