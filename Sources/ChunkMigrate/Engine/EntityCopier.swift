import MigrationJournal

/// The prepared statements that copy one entity, batch by batch, and set its deferred
/// relationships in the fix-up pass. Prepared once per run and reused for every batch.
final class EntityCopier {
    let index: UInt32
    let entity: EntityMapping
    let mapping: IDMapSegment.Mapping
    /// Relationships with policy `skip`: their position among the columns `selectKeys` returns
    /// after the key, and their resolver index.
    let skipRelationships: [Int]
    /// Deferred relationships: destination column -> (resolver index, UPDATE statement).
    private(set) var fixups: [String: (relationship: Int, statement: Statement)] = [:]

    private let selectFirst: Statement
    private let selectNext: Statement
    private let maxDestination: Statement?
    private let insert: Statement
    let insertSQL: String

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

        var skip: [Int] = []
        var skipColumns = ""
        for (column, relationship) in entity.sortedRelationships where relationship.missingPolicy == .skip {
            skip.append(relationshipIndexes[column]!)
            skipColumns += ", s." + SQL.quote(relationship.from)
        }
        skipRelationships = skip
        selectFirst = try database.prepare(
            "SELECT \(sourceKey)\(skipColumns) FROM \(sourceTable) AS s WHERE 1\(filter) ORDER BY \(sourceKey) LIMIT ?1")
        selectNext = try database.prepare(
            "SELECT \(sourceKey)\(skipColumns) FROM \(sourceTable) AS s WHERE \(sourceKey) > ?2\(filter) ORDER BY \(sourceKey) LIMIT ?1")
        maxDestination = mapping == .allocate
            ? try database.prepare("SELECT max(\(destinationKey)) FROM \(destinationTable)") : nil

        var columns = [destinationKey]
        var values = ["cm_batch_key(\(sourceKey))"]
        for (column, expression) in entity.sortedColumns {
            columns.append(SQL.quote(column))
            values.append("(\(expression))")
        }
        for (column, relationship) in entity.sortedRelationships {
            columns.append(SQL.quote(column))
            values.append("cm_ref(\(relationshipIndexes[column]!), s.\(SQL.quote(relationship.from)), \(sourceKey))")
        }
        let keep = skip.isEmpty ? "" : " AND cm_keep(\(sourceKey))"
        insertSQL = """
            INSERT INTO \(destinationTable) (\(columns.joined(separator: ", ")))
            SELECT \(values.joined(separator: ", ")) FROM \(sourceTable) AS s
            WHERE \(sourceKey) BETWEEN ?1 AND ?2\(filter)\(keep) ORDER BY \(sourceKey)
            """
        insert = try database.prepare(insertSQL)
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

    /// The next source keys after `cursor` (from the start when `nil`), with the foreign keys of
    /// `skip` relationships.
    func selectKeys(after cursor: Int64?, limit: Int) throws(SQLiteError) -> (keys: [Int64], foreignKeys: [[Int64?]]) {
        let statement = cursor == nil ? selectFirst : selectNext
        try statement.bind(.integer(Int64(limit)), at: 1)
        if let cursor { try statement.bind(.integer(cursor), at: 2) }
        defer { statement.reset() }
        var keys: [Int64] = []
        keys.reserveCapacity(limit)
        var foreignKeys = [[Int64?]](repeating: [], count: skipRelationships.count)
        while try statement.step() {
            keys.append(statement.int64(at: 0))
            for position in skipRelationships.indices {
                foreignKeys[position].append(statement.isNull(at: position + 1) ? nil : statement.int64(at: position + 1))
            }
        }
        return (keys, foreignKeys)
    }

    /// The first destination key an allocating batch may use: one past the table's largest.
    func nextDestinationKey() throws(SQLiteError) -> Int64 {
        guard let maxDestination else { return 0 }
        defer { maxDestination.reset() }
        try maxDestination.bind([])
        guard try maxDestination.step(), !maxDestination.isNull(at: 0) else { return 1 }
        return maxDestination.int64(at: 0) + 1
    }

    /// Copies the selected rows between `first` and `last` (inclusive) that the resolver's batch keeps.
    func copy(first: Int64, last: Int64) throws(SQLiteError) {
        try insert.bind([.integer(first), .integer(last)])
        defer { insert.reset() }
        try insert.step()
    }

    /// Sets one deferred column on the destination rows between `first` and `last`.
    func fix(column: String, first: Int64, last: Int64) throws(SQLiteError) {
        guard let fixup = fixups[column] else { return }
        try fixup.statement.bind([.integer(first), .integer(last)])
        defer { fixup.statement.reset() }
        try fixup.statement.step()
    }
}
