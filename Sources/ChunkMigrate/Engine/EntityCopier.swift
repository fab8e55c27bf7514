import MigrationJournal

/// The prepared statements that copy one entity, batch by batch, and set its deferred
/// relationships in the fix-up pass. Prepared once per run and reused for every batch.
final class EntityCopier {
    let index: UInt32
    let entity: EntityMapping
    /// The statements' text, and what it decided about the entity's batches.
    let sql: CopierSQL
    var mapping: IDMapSegment.Mapping { sql.mapping }
    var hasSkipRelationships: Bool { sql.hasSkipRelationships }
    var isBounded: Bool { sql.isBounded }
    var assignsKeys: Bool { sql.assignsKeys }
    var insertSQL: String { sql.insert }
    /// Deferred relationships: destination column -> UPDATE statement. `bySource`: the statement
    /// takes the batch's source keys rather than its destination keys.
    private var fixups: [String: (statement: Statement, bySource: Bool, recorded: Statement?)] = [:]

    private let maxDestination: Statement?
    /// Digests of a batch's rows as written, and of the source values they were mapped from.
    private let destinationDigest: Statement?
    private let sourceDigest: Statement?
    private let insertFirst: Statement
    private let insertNext: Statement
    private let rangeFirst: Statement?
    private let rangeNext: Statement?

    /// Prepares the statements ``CopierSQL`` writes for the entity (see there for what they do
    /// and why).
    init(
        database: Database, entity: EntityMapping, index: UInt32, relationshipIndexes: [String: Int],
        byValue: Set<String> = [], sourceAccess: KeyAccess, destinationAccess: KeyAccess, assignsNextRowid: Bool,
        verifyChecksums: Bool
    ) throws(SQLiteError) {
        let sql = CopierSQL(
            entity: entity, index: index, relationshipIndexes: relationshipIndexes, byValue: byValue,
            sourceAccess: sourceAccess, destinationAccess: destinationAccess,
            assignsNextRowid: assignsNextRowid, verifyChecksums: verifyChecksums)
        self.index = index
        self.entity = entity
        self.sql = sql
        func prepare(_ text: String?) throws(SQLiteError) -> Statement? {
            guard let text else { return nil }
            return try database.prepare(text)
        }
        maxDestination = try prepare(sql.maxDestination)
        destinationDigest = try prepare(sql.destinationDigest)
        sourceDigest = try prepare(sql.sourceDigest)
        insertFirst = try database.prepare(sql.insertFirst)
        insertNext = sql.isBounded ? insertFirst : try database.prepare(sql.insert)
        rangeFirst = try prepare(sql.rangeFirst)
        rangeNext = try prepare(sql.rangeNext)
    }

    /// Runs the two digests of the batch the resolver holds: the rows as written (destination keys
    /// `destinationRange`) and the source rows they were mapped from (source keys `sourceRange`).
    func digests(
        resolver: Resolver, destinationRange: ClosedRange<Int64>,
        sourceRange: ClosedRange<Int64>
    ) throws(SQLiteError) -> (written: UInt64, mapped: UInt64) {
        guard let destinationDigest, let sourceDigest else { return (0, 0) }
        resolver.digest = 0
        try destinationDigest.bind([.integer(destinationRange.lowerBound), .integer(destinationRange.upperBound)])
        try destinationDigest.step()
        destinationDigest.reset()
        let written = resolver.digest
        resolver.digest = 0
        try sourceDigest.bind([.integer(sourceRange.lowerBound), .integer(sourceRange.upperBound)])
        try sourceDigest.step()
        sourceDigest.reset()
        return (written, resolver.digest)
    }

    /// For a bounded entity: the first and last of the next `limit` source keys after `cursor`
    /// (from the start when `nil`) and how many keys that is, or `nil` when there are none.
    func nextRange(after cursor: Int64?, limit: Int) throws(SQLiteError) -> (keys: ClosedRange<Int64>, count: Int)? {
        guard let statement = cursor == nil ? rangeFirst : rangeNext else { return nil }
        try statement.bind(.integer(Int64(limit)), at: 2)
        if let cursor { try statement.bind(.integer(cursor), at: 1) }
        defer { statement.reset() }
        guard try statement.step(), !statement.isNull(at: 0) else { return nil }
        return (statement.int64(at: 0)...statement.int64(at: 1), Int(statement.int64(at: 2)))
    }

    /// Whether the batch statements walk the source in key order without sorting, as the
    /// engine's functions require (`EXPLAIN QUERY PLAN` shows no temporary b-tree).
    func walksInKeyOrder(database: Database) throws(SQLiteError) -> Bool {
        // Rows of EXPLAIN QUERY PLAN: id, parent, notused, detail. Only the outer query matters
        // (parent 0); a subquery in an expression may sort without changing the rows' order.
        let plan = try database.rows("EXPLAIN QUERY PLAN " + insertSQL)
        return !plan.contains { row in
            row.count >= 4 && row[1].integer == 0 && row[3].text?.contains("TEMP B-TREE FOR ORDER BY") == true
        }
    }

    /// Prepares the fix-up statements of the deferred relationships (``CopierSQL/fixups(entity:index:deferred:relationshipIndexes:selfReferences:)``).
    func prepareFixups(
        database: Database, deferred: Set<String>, relationshipIndexes: [String: Int],
        selfReferences: Set<String>
    ) throws(SQLiteError) {
        for (column, fixup) in CopierSQL.fixups(
            entity: entity, index: index, deferred: deferred,
            relationshipIndexes: relationshipIndexes, selfReferences: selfReferences)
        {
            fixups[column] = (
                try database.prepare(fixup.sql), fixup.bySource,
                try fixup.recordedSQL.map { sql throws(SQLiteError) in try database.prepare(sql) }
            )
        }
    }

    /// The destination table's largest key, or `nil` when it is empty (or the entity preserves keys).
    func largestDestinationKey() throws(SQLiteError) -> Int64? {
        guard let maxDestination else { return nil }
        defer { maxDestination.reset() }
        try maxDestination.bind([])
        guard try maxDestination.step(), !maxDestination.isNull(at: 0) else { return nil }
        return maxDestination.int64(at: 0)
    }

    /// Copies up to `limit` rows after `cursor` (from the start when `nil`), in source-key order.
    func copy(after cursor: Int64?, limit: Int) throws(SQLiteError) {
        let statement = cursor == nil ? insertFirst : insertNext
        try statement.bind(.integer(Int64(limit)), at: 2)
        if let cursor { try statement.bind(.integer(cursor), at: 1) }
        defer { statement.reset() }
        try statement.step()
    }

    /// For a bounded entity: copies the rows with source keys in `range` that its filter keeps.
    func copy(range: ClosedRange<Int64>) throws(SQLiteError) {
        try insertFirst.bind([.integer(range.lowerBound), .integer(Int64.max), .integer(range.upperBound)])
        defer { insertFirst.reset() }
        try insertFirst.step()
    }

    /// Sets one deferred column on the rows of one copy batch: destination keys `destination`,
    /// source keys `source`.
    /// Whether the fix-up of `column` can read the references a copy batch recorded (a
    /// self-reference's).
    func fixesFromRecords(column: String) -> Bool { fixups[column]?.recorded != nil }

    /// `recordedBatch`: the copy batch, where it recorded the references it deferred (a
    /// self-reference's), which are then read instead of the source.
    func fix(column: String, destination: ClosedRange<Int64>, source: ClosedRange<Int64>, recordedBatch: UInt64? = nil) throws(SQLiteError)
    {
        guard let fixup = fixups[column] else { return }
        if let recordedBatch, let recorded = fixup.recorded {
            try recorded.bind([.integer(Int64(recordedBatch))])
            defer { recorded.reset() }
            try recorded.step()
            return
        }
        let keys = fixup.bySource ? source : destination
        try fixup.statement.bind([.integer(keys.lowerBound), .integer(keys.upperBound)])
        defer { fixup.statement.reset() }
        try fixup.statement.step()
    }
}
