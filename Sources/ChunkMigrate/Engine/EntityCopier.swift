import MigrationJournal

/// The prepared statements that copy one entity, batch by batch, and set its deferred
/// relationships in the fix-up pass. Prepared once per run and reused for every batch.
final class EntityCopier {
    let index: UInt32
    let entity: EntityMapping
    let mapping: IDMapSegment.Mapping
    /// Whether some relationship has policy `skip`, so the batch's filter calls `cm_keep`.
    let hasSkipRelationships: Bool
    /// Whether a batch is bounded by a key range read first: when rows can be left out (a `where`
    /// filter, a `skip` relationship), a batch covers the next `batchSize` source keys whatever
    /// is left out of them, so a long run of left-out rows cannot make one batch unbounded.
    let isBounded: Bool
    /// Whether SQLite assigns the destination keys (allocated keys into a table whose key is a
    /// true alias of the rowid, without AUTOINCREMENT: the next rowid is one past the largest,
    /// which is what the engine records), so a batch checks the destination's largest key
    /// afterwards instead of writing each key itself.
    let assignsKeys: Bool
    /// Deferred relationships: destination column -> (resolver index, UPDATE statement).
    /// `bySource`: the statement takes the batch's source keys rather than its destination keys.
    private(set) var fixups: [String: (relationship: Int, statement: Statement, bySource: Bool)] = [:]

    private let maxDestination: Statement?
    /// Digests of a batch's rows as written, and of the source values they were mapped from.
    private let destinationDigest: Statement?
    private let sourceDigest: Statement?
    private let insertFirst: Statement
    private let insertNext: Statement
    private let rangeFirst: Statement?
    private let rangeNext: Statement?
    let insertSQL: String

    /// Prepares the batch statement: one `INSERT ... SELECT` that reads the next rows after the
    /// cursor in source-key order and writes them, recording each row's source key as it is
    /// written. `sourceAccess` forces the walk in key order; `destinationAccess` and
    /// `assignsNextRowid` say whether SQLite may assign allocated keys.
    ///
    /// Each row costs one call of a Swift function at least, so where it can the recording rides
    /// on a call the row makes anyway: the first relationship's `cm_take_ref` records the key and
    /// resolves the foreign key, and the destination key is the source key (`preserve` from a
    /// rowid) or SQLite's next rowid (`allocate` into a table that assigns it, see
    /// ``TableSchema/assignsNextRowid``). Otherwise (no relationship, a source walked by an
    /// index, a destination key SQLite does not assign) `cm_take` records the key and gives the
    /// destination key.
    ///
    /// A de-duplicated entity (``EntityMapping/distinct``) keeps a row only when `cm_new` has not
    /// seen its value in the batch nor finds it in the destination; a relationship to one
    /// (`byValue`) is looked up by value with `cm_natural`.
    init(database: Database, entity: EntityMapping, index: UInt32, relationshipIndexes: [String: Int],
         byValue: Set<String> = [], sourceAccess: KeyAccess, destinationAccess: KeyAccess, assignsNextRowid: Bool,
         verifyChecksums: Bool) throws(SQLiteError) {
        self.index = index
        self.entity = entity
        mapping = entity.keyPolicy == .allocate ? .allocate : .preserve
        let sourceTable = "src." + SQL.quote(entity.source.table) + " AS s " + sourceAccess.hint
        let sourceKey = "s." + SQL.key(entity.source.key)
        let destinationTable = "main." + SQL.quote(entity.destination.table)
        let destinationKey = SQL.key(entity.destination.key)

        var keepArguments = ""
        for (column, relationship) in entity.sortedRelationships where relationship.missingPolicy == .skip {
            keepArguments += ", \(relationshipIndexes[column]!), s.\(SQL.quote(relationship.from))"
        }
        hasSkipRelationships = !keepArguments.isEmpty
        isBounded = hasSkipRelationships || entity.source.where != nil || entity.distinct != nil
        // The filter decides before cm_keep counts the row or cm_new records its value: SQLite
        // does not promise the order of the terms of a WHERE clause, but it does evaluate CASE in
        // order.
        var tests: [String] = []
        if let filter = entity.source.where { tests.append("(\(filter))") }
        if let distinct = entity.distinct { tests.append("cm_new(\(index), (\(distinct.source)))") }
        if hasSkipRelationships { tests.append("cm_keep(\(sourceKey)\(keepArguments))") }
        var condition = ""
        if let last = tests.last {
            condition = " AND " + tests.dropLast().reversed().reduce(last) { inner, test in "CASE WHEN \(test) THEN \(inner) ELSE 0 END" }
        }
        maxDestination = mapping == .allocate
            ? try database.prepare("SELECT max(\(destinationKey)) FROM \(destinationTable)") : nil

        // Relationships through the ID map; those to a de-duplicated entity are looked up by value.
        let relationships = entity.sortedRelationships.filter { !byValue.contains($0.column) }
        // A preserved key is copied as it is only from a rowid, which SQLite keeps an integer.
        let takesInRelationship = !relationships.isEmpty && (mapping == .preserve
            ? sourceAccess == .rowid
            : destinationAccess == .rowid && assignsNextRowid)
        assignsKeys = takesInRelationship && mapping == .allocate
        // Column names and the values written, in the same order; `lookups` are the values a
        // checksum maps from the source (the destination key as recorded, relationships as resolved).
        var columns: [String] = []
        var values: [String] = []
        var lookups: [String] = []
        if !takesInRelationship {
            columns.append(destinationKey)
            values.append("cm_take(\(sourceKey))")
            lookups.append("cm_dest(\(sourceKey))")
        } else if mapping == .preserve {
            columns.append(destinationKey)
            values.append(sourceKey)
            lookups.append(sourceKey)
        }
        // Relationships before the other columns: SQLite computes a row's values in order, so the
        // row is recorded before an expression can fail on it, and the failure names its key.
        for (position, (column, relationship)) in relationships.enumerated() {
            let arguments = "\(relationshipIndexes[column]!), s.\(SQL.quote(relationship.from)), \(sourceKey)"
            columns.append(SQL.quote(column))
            values.append((takesInRelationship && position == 0 ? "cm_take_ref(" : "cm_ref(") + arguments + ")")
            lookups.append("cm_lookup(\(arguments))")
        }
        for (column, relationship) in entity.sortedRelationships where byValue.contains(column) {
            let value = "cm_natural(\(relationshipIndexes[column]!), (\(relationship.from)), \(sourceKey))"
            columns.append(SQL.quote(column))
            values.append(value)
            lookups.append(value)
        }
        var mappedColumns = entity.sortedColumns
        if let distinct = entity.distinct { mappedColumns.append((distinct.destination, distinct.source)) }
        for (column, expression) in mappedColumns {
            columns.append(SQL.quote(column))
            values.append("(\(expression))")
            lookups.append("(\(expression))")
        }
        // The checksum, prepared only when asked for: the same values, read back from the
        // destination and mapped again from the source. SQLite takes at most 127 arguments per
        // function, so a wide row is hashed in parts of 100 (`cm_hash`) and the parts digested.
        func digest(_ items: [String]) -> String {
            guard items.count > 100 else { return "cm_digest(\(items.joined(separator: ", ")))" }
            let parts = stride(from: 0, to: items.count, by: 100).map { start in
                "cm_hash(" + items[start..<min(items.count, start + 100)].joined(separator: ", ") + ")"
            }
            return "cm_digest(\(parts.joined(separator: ", ")))"
        }
        if verifyChecksums {
            // The destination key is digested as written, also where SQLite assigned it.
            let digested = assignsKeys ? [destinationKey] + columns : columns
            if assignsKeys { lookups.insert("cm_dest(\(sourceKey))", at: 0) }
            let destinationColumns = digested.map { $0 == "rowid" ? "d.rowid" : "d." + $0 }
            let ownRows = mapping == .preserve ? " AND cm_taken(d.\(destinationKey))" : ""
            destinationDigest = try database.prepare("""
                SELECT count(\(digest(destinationColumns))) FROM \(destinationTable) AS d
                WHERE d.\(destinationKey) BETWEEN ?1 AND ?2\(ownRows)
                """)
            sourceDigest = try database.prepare("""
                SELECT count(\(digest(lookups))) FROM \(sourceTable)
                WHERE \(sourceKey) BETWEEN ?1 AND ?2 AND cm_taken(\(sourceKey))
                """)
        } else {
            destinationDigest = nil
            sourceDigest = nil
        }

        // OR ABORT: the statement's conflict clause overrides a table's ON CONFLICT REPLACE, which
        // would delete rows without counting them.
        func insert(_ range: String) -> String {
            """
            INSERT OR ABORT INTO \(destinationTable) (\(columns.joined(separator: ", ")))
            SELECT \(values.joined(separator: ", ")) FROM \(sourceTable)
            WHERE \(range)\(condition) ORDER BY \(sourceKey) LIMIT ?2
            """
        }
        if isBounded {
            insertSQL = insert("\(sourceKey) BETWEEN ?1 AND ?3")
            insertFirst = try database.prepare(insertSQL)
            insertNext = insertFirst
            func range(_ after: String) -> String {
                "SELECT min(k), max(k), count(*) FROM (SELECT \(sourceKey) AS k FROM \(sourceTable) WHERE \(after) ORDER BY \(sourceKey) LIMIT ?2)"
            }
            rangeFirst = try database.prepare(range("1"))
            rangeNext = try database.prepare(range("\(sourceKey) > ?1"))
        } else {
            insertSQL = insert("\(sourceKey) > ?1")
            insertFirst = try database.prepare(insert("1"))
            insertNext = try database.prepare(insertSQL)
            rangeFirst = nil
            rangeNext = nil
        }
    }

    /// Runs the two digests of the batch the resolver holds: the rows as written (destination keys
    /// `destinationRange`) and the source rows they were mapped from (source keys `sourceRange`).
    func digests(resolver: Resolver, destinationRange: ClosedRange<Int64>,
                 sourceRange: ClosedRange<Int64>) throws(SQLiteError) -> (written: UInt64, mapped: UInt64) {
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

    /// Prepares the fix-up statements of the deferred relationships. A fix-up batch covers the
    /// rows of one copy batch: `?1` and `?2` are its first and last destination keys, or, for a
    /// self-reference, its first and last source keys.
    ///
    /// A self-reference needs only the rows whose foreign key is larger than their own key (the
    /// copy resolved or settled every other one, see ``Resolver/Relationship/isSelfReference``):
    /// they are found in the source, in key order, and only the rows whose target now has a
    /// destination key are written. A relationship that closes a cycle between entities visits
    /// the batch's rows still NULL.
    func prepareFixups(database: Database, deferred: Set<String>, relationshipIndexes: [String: Int],
                       selfReferences: Set<String>) throws(SQLiteError) {
        let sourceTable = "src." + SQL.quote(entity.source.table)
        let sourceKey = "s." + SQL.key(entity.source.key)
        let destinationTable = "main." + SQL.quote(entity.destination.table)
        let destinationKey = "d." + SQL.key(entity.destination.key)
        for (column, relationship) in entity.sortedRelationships where deferred.contains(column) {
            let index = relationshipIndexes[column]!
            let foreignKey = "s." + SQL.quote(relationship.from)
            let sql: String
            if selfReferences.contains(column) {
                // MATERIALIZED: each row's cm_fix runs once, however SQLite plans the UPDATE.
                sql = """
                    WITH fix AS MATERIALIZED (
                      SELECT own, cm_fix(\(index), foreign_key, own) AS target FROM (
                        SELECT cm_destination_of(\(self.index), \(sourceKey)) AS own, \(foreignKey) AS foreign_key
                        FROM \(sourceTable) AS s
                        WHERE \(sourceKey) BETWEEN ?1 AND ?2 AND \(foreignKey) > \(sourceKey))
                      WHERE own IS NOT NULL)
                    UPDATE \(destinationTable) AS d SET \(SQL.quote(column)) = fix.target
                    FROM fix WHERE \(destinationKey) = fix.own AND fix.target IS NOT NULL
                    """
            } else {
                let ownRows = mapping == .preserve ? " AND cm_source_of(\(self.index), \(destinationKey)) IS NOT NULL" : ""
                sql = """
                    UPDATE \(destinationTable) AS d SET \(SQL.quote(column)) = cm_fix(\(index),
                        (SELECT \(foreignKey) FROM \(sourceTable) AS s
                         WHERE \(sourceKey) = cm_source_of(\(self.index), \(destinationKey))), \(destinationKey))
                    WHERE \(destinationKey) BETWEEN ?1 AND ?2 AND d.\(SQL.quote(column)) IS NULL\(ownRows)
                    """
            }
            fixups[column] = (index, try database.prepare(sql), selfReferences.contains(column))
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
    func fix(column: String, destination: ClosedRange<Int64>, source: ClosedRange<Int64>) throws(SQLiteError) {
        guard let fixup = fixups[column] else { return }
        let keys = fixup.bySource ? source : destination
        try fixup.statement.bind([.integer(keys.lowerBound), .integer(keys.upperBound)])
        defer { fixup.statement.reset() }
        try fixup.statement.step()
    }
}
