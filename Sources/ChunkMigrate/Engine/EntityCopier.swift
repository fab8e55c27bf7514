import MigrationJournal

/// The prepared statements that copy one entity, batch by batch, and set its deferred
/// relationships in the fix-up pass. Prepared once per run and reused for every batch.
final class EntityCopier {
    let index: UInt32
    let entity: EntityMapping
    let mapping: IDMapSegment.Mapping
    /// Whether some relationship has policy `skip`, so the batch's filter calls `cm_keep`.
    let hasSkipRelationships: Bool
    /// Deferred relationships: destination column -> (resolver index, UPDATE statement).
    private(set) var fixups: [String: (relationship: Int, statement: Statement)] = [:]

    private let maxDestination: Statement?
    private let insertFirst: Statement
    private let insertNext: Statement
    let insertSQL: String

    /// Prepares the batch statement: one `INSERT ... SELECT` that reads the next rows after the
    /// cursor in source-key order, up to the batch size, and writes them; `cm_take` records each
    /// row's source key as it is written and gives its destination key.
    init(database: Database, entity: EntityMapping, index: UInt32, relationshipIndexes: [String: Int],
         resolver: Resolver) throws(SQLiteError) {
        self.index = index
        self.entity = entity
        mapping = entity.keyPolicy == .allocate ? .allocate : .preserve
        let sourceTable = "src." + SQL.quote(entity.source.table)
        let sourceKey = "s." + SQL.key(entity.source.key)
        let destinationTable = "main." + SQL.quote(entity.destination.table)
        let destinationKey = SQL.key(entity.destination.key)
        let filter = entity.source.where.map { " AND (\($0))" } ?? ""

        var keepArguments = ""
        for (column, relationship) in entity.sortedRelationships where relationship.missingPolicy == .skip {
            keepArguments += ", \(relationshipIndexes[column]!), s.\(SQL.quote(relationship.from))"
        }
        hasSkipRelationships = !keepArguments.isEmpty
        let keep = hasSkipRelationships ? " AND cm_keep(\(sourceKey)\(keepArguments))" : ""
        maxDestination = mapping == .allocate
            ? try database.prepare("SELECT max(\(destinationKey)) FROM \(destinationTable)") : nil

        var columns = [destinationKey]
        var values = ["cm_take(\(sourceKey))"]
        for (column, expression) in entity.sortedColumns {
            columns.append(SQL.quote(column))
            values.append("(\(expression))")
        }
        for (column, relationship) in entity.sortedRelationships {
            columns.append(SQL.quote(column))
            values.append("cm_ref(\(relationshipIndexes[column]!), s.\(SQL.quote(relationship.from)), \(sourceKey))")
        }
        func insert(after cursor: Bool) -> String {
            """
            INSERT INTO \(destinationTable) (\(columns.joined(separator: ", ")))
            SELECT \(values.joined(separator: ", ")) FROM \(sourceTable) AS s
            WHERE \(cursor ? "\(sourceKey) > ?1" : "1")\(filter)\(keep) ORDER BY \(sourceKey) LIMIT ?2
            """
        }
        insertSQL = insert(after: true)
        insertFirst = try database.prepare(insert(after: false))
        insertNext = try database.prepare(insertSQL)
    }

    /// Prepares the fix-up statements of the deferred relationships.
    func prepareFixups(database: Database, deferred: Set<String>, relationshipIndexes: [String: Int]) throws(SQLiteError) {
        let sourceTable = "src." + SQL.quote(entity.source.table)
        let sourceKey = "s." + SQL.key(entity.source.key)
        let destinationTable = "main." + SQL.quote(entity.destination.table)
        let destinationKey = "d." + SQL.key(entity.destination.key)
        for (column, relationship) in entity.sortedRelationships where deferred.contains(column) {
            let index = relationshipIndexes[column]!
            let ownRows = mapping == .preserve ? " AND cm_source_of(\(self.index), \(destinationKey)) IS NOT NULL" : ""
            let sql = """
                UPDATE \(destinationTable) AS d SET \(SQL.quote(column)) = cm_fix(\(index),
                    (SELECT s.\(SQL.quote(relationship.from)) FROM \(sourceTable) AS s
                     WHERE \(sourceKey) = cm_source_of(\(self.index), \(destinationKey))), \(destinationKey))
                WHERE \(destinationKey) BETWEEN ?1 AND ?2 AND d.\(SQL.quote(column)) IS NULL\(ownRows)
                """
            fixups[column] = (index, try database.prepare(sql))
        }
    }

    /// The first destination key an allocating batch may use: one past the table's largest.
    func nextDestinationKey() throws(SQLiteError) -> Int64 {
        guard let maxDestination else { return 0 }
        defer { maxDestination.reset() }
        try maxDestination.bind([])
        guard try maxDestination.step(), !maxDestination.isNull(at: 0) else { return 1 }
        return maxDestination.int64(at: 0) + 1
    }

    /// Copies up to `limit` rows after `cursor` (from the start when `nil`), in source-key order.
    func copy(after cursor: Int64?, limit: Int) throws(SQLiteError) {
        let statement = cursor == nil ? insertFirst : insertNext
        try statement.bind(.integer(Int64(limit)), at: 2)
        if let cursor { try statement.bind(.integer(cursor), at: 1) }
        defer { statement.reset() }
        try statement.step()
    }

    /// Sets one deferred column on the destination rows between `first` and `last`.
    func fix(column: String, first: Int64, last: Int64) throws(SQLiteError) {
        guard let fixup = fixups[column] else { return }
        try fixup.statement.bind([.integer(first), .integer(last)])
        defer { fixup.statement.reset() }
        try fixup.statement.step()
    }
}
