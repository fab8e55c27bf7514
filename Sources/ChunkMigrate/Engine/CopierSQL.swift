import MigrationJournal

/// The SQL text of one entity's copy and fix-up, built from the plan and the stores' key access
/// alone: no connection, so that it reads, and is tested, as text. ``EntityCopier`` prepares it.
struct CopierSQL {
    /// A fix-up statement: the relationship it resolves, its text, and whether it takes the
    /// batch's source keys (`?1`, `?2`) rather than its destination keys.
    /// The connection's temporary table of the self-references each copy batch deferred
    /// (`entity, relationship, batch, own, foreign_key`, source keys). Temporary, in a file and
    /// a small page cache of its own: a run that stops loses it, and its fix-up then scans.
    static let deferralTable = "cm_deferred"

    struct Fixup: Equatable {
        var relationship: Int
        var sql: String
        var bySource: Bool
        /// For a self-reference, the same fix-up from the references the copy batch recorded as it
        /// deferred them (`?1` the batch), instead of from a scan of the source (``CopierSQL/deferralTable``).
        var recordedSQL: String? = nil
    }

    /// How the entity's keys map.
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
    /// The batch statement after a cursor (`?1`), of at most `?2` rows; for a bounded entity, the
    /// rows with source keys from `?1` to `?3`.
    let insert: String
    /// The batch statement from the start (the same as ``insert`` for a bounded entity).
    let insertFirst: String
    /// For a bounded entity: the first and last of the next `?2` source keys and their count,
    /// from the start and after `?1`.
    let rangeFirst: String?
    let rangeNext: String?
    /// The destination table's largest key (allocated keys only).
    let maxDestination: String?
    /// The checksum of a batch's rows as written and as mapped from the source (when asked for).
    let destinationDigest: String?
    let sourceDigest: String?

    /// The batch statement: one `INSERT ... SELECT` that reads the next rows after the
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
    init(
        entity: EntityMapping, index: UInt32, relationshipIndexes: [String: Int], byValue: Set<String> = [],
        sourceAccess: KeyAccess, destinationAccess: KeyAccess, assignsNextRowid: Bool, verifyChecksums: Bool
    ) {
        mapping = entity.keys
        let sourceTable = "src." + SQL.quote(entity.source.table) + " AS s " + sourceAccess.hint
        let sourceKey = "s." + SQL.key(entity.source.key)
        let destinationTable = "main." + SQL.quote(entity.destination.table)
        let destinationKey = SQL.key(entity.destination.key)

        // Relationships through the ID map; those to a de-duplicated entity are looked up by value.
        let relationships = entity.sortedRelationships.filter { !byValue.contains($0.column) }
        // A preserved key is copied as it is only from a rowid, which SQLite keeps an integer.
        let takesInRelationship =
            !relationships.isEmpty
            && (mapping == .preserve
                ? sourceAccess == .rowid
                : destinationAccess == .rowid && assignsNextRowid)
        // Allocated keys SQLite can assign: every row goes in without its key, appended after the
        // largest instead of looked up first; where no relationship records the row's source key
        // (a join table), the filter does.
        assignsKeys = mapping == .allocate && destinationAccess == .rowid && assignsNextRowid
        let takesInFilter = assignsKeys && !takesInRelationship
        let filter = Self.filter(
            entity: entity, index: index, relationshipIndexes: relationshipIndexes, sourceKey: sourceKey,
            takes: takesInFilter)
        hasSkipRelationships = filter.hasSkipRelationships
        isBounded = hasSkipRelationships || entity.source.where != nil || entity.distinct != nil
        let condition = filter.condition
        maxDestination = mapping == .allocate ? "SELECT max(\(destinationKey)) FROM \(destinationTable)" : nil

        var row = Self.row(
            entity: entity, relationships: relationships, relationshipIndexes: relationshipIndexes,
            byValue: byValue, takesInRelationship: takesInRelationship, takesInFilter: takesInFilter, mapping: mapping,
            sourceKey: sourceKey, destinationKey: destinationKey)
        // The checksum, only when asked for: the same values, read back from the destination and
        // mapped again from the source.
        if verifyChecksums {
            // The destination key is digested as written, also where SQLite assigned it.
            let digested = assignsKeys ? [destinationKey] + row.columns : row.columns
            if assignsKeys { row.lookups.insert("cm_dest(\(sourceKey))", at: 0) }
            let destinationColumns = digested.map { $0 == "rowid" ? "d.rowid" : "d." + $0 }
            let ownRows = mapping == .preserve ? " AND cm_taken(d.\(destinationKey))" : ""
            destinationDigest = """
                SELECT count(\(Self.digest(destinationColumns))) FROM \(destinationTable) AS d
                WHERE d.\(destinationKey) BETWEEN ?1 AND ?2\(ownRows)
                """
            sourceDigest = """
                SELECT count(\(Self.digest(row.lookups))) FROM \(sourceTable)
                WHERE \(sourceKey) BETWEEN ?1 AND ?2 AND cm_taken(\(sourceKey))
                """
        } else {
            destinationDigest = nil
            sourceDigest = nil
        }

        // OR ABORT: the statement's conflict clause overrides a table's ON CONFLICT REPLACE, which
        // would delete rows without counting them.
        func insertRows(_ range: String) -> String {
            """
            INSERT OR ABORT INTO \(destinationTable) (\(row.columns.joined(separator: ", ")))
            SELECT \(row.values.joined(separator: ", ")) FROM \(sourceTable)
            WHERE \(range)\(condition) ORDER BY \(sourceKey) LIMIT ?2
            """
        }
        if isBounded {
            insert = insertRows("\(sourceKey) BETWEEN ?1 AND ?3")
            insertFirst = insert
            func range(_ after: String) -> String {
                "SELECT min(k), max(k), count(*) FROM (SELECT \(sourceKey) AS k FROM \(sourceTable) WHERE \(after) ORDER BY \(sourceKey) LIMIT ?2)"
            }
            rangeFirst = range("1")
            rangeNext = range("\(sourceKey) > ?1")
        } else {
            insert = insertRows("\(sourceKey) > ?1")
            insertFirst = insertRows("1")
            rangeFirst = nil
            rangeNext = nil
        }
    }

    /// The columns a batch writes and the values written into them, in the same order, and the
    /// values a checksum maps from the source (the destination key as recorded, relationships
    /// as resolved).
    private struct Row {
        var columns: [String] = []
        var values: [String] = []
        var lookups: [String] = []
    }

    /// The batch's filter after its key range (empty, or ` AND ...`), and whether it calls
    /// `cm_keep` for `skip` relationships.
    private static func filter(
        entity: EntityMapping, index: UInt32, relationshipIndexes: [String: Int],
        sourceKey: String, takes: Bool
    ) -> (condition: String, hasSkipRelationships: Bool) {
        var keepArguments = ""
        for (column, relationship) in entity.sortedRelationships where relationship.missing == .skip {
            keepArguments += ", \(relationshipIndexes[column]!), s.\(SQL.quote(relationship.from))"
        }
        let hasSkipRelationships = !keepArguments.isEmpty
        // The filter decides before cm_keep counts the row or cm_new records its value: SQLite
        // does not promise the order of the terms of a WHERE clause, but it does evaluate CASE in
        // order.
        var tests: [String] = []
        if let filter = entity.source.where { tests.append("(\(filter))") }
        if let distinct = entity.distinct { tests.append("cm_new(\(index), (\(distinct.source)))") }
        if hasSkipRelationships { tests.append("cm_keep(\(sourceKey)\(keepArguments))") }
        // Last, so that only a row that is written is taken.
        if takes { tests.append("cm_take(\(sourceKey)) IS NOT NULL") }
        var condition = ""
        if let last = tests.last {
            condition = " AND " + tests.dropLast().reversed().reduce(last) { inner, test in "CASE WHEN \(test) THEN \(inner) ELSE 0 END" }
        }
        return (condition, hasSkipRelationships)
    }

    private static func row(
        entity: EntityMapping, relationships: [(column: String, relationship: EntityMapping.Relationship)],
        relationshipIndexes: [String: Int], byValue: Set<String>, takesInRelationship: Bool, takesInFilter: Bool,
        mapping: IDMapSegment.Mapping, sourceKey: String, destinationKey: String
    ) -> Row {
        var row = Row()
        if takesInFilter {
            // No key: SQLite assigns it.
        } else if !takesInRelationship {
            row.columns.append(destinationKey)
            row.values.append("cm_take(\(sourceKey))")
            row.lookups.append("cm_dest(\(sourceKey))")
        } else if mapping == .preserve {
            row.columns.append(destinationKey)
            row.values.append(sourceKey)
            row.lookups.append(sourceKey)
        }
        // Relationships before the other columns: SQLite computes a row's values in order, so the
        // row is recorded before an expression can fail on it, and the failure names its key.
        for (position, (column, relationship)) in relationships.enumerated() {
            let arguments = "\(relationshipIndexes[column]!), s.\(SQL.quote(relationship.from)), \(sourceKey)"
            row.columns.append(SQL.quote(column))
            row.values.append((takesInRelationship && position == 0 ? "cm_take_ref(" : "cm_ref(") + arguments + ")")
            row.lookups.append("cm_lookup(\(arguments))")
        }
        for (column, relationship) in entity.sortedRelationships where byValue.contains(column) {
            let value = "cm_natural(\(relationshipIndexes[column]!), (\(relationship.from)), \(sourceKey))"
            row.columns.append(SQL.quote(column))
            row.values.append(value)
            row.lookups.append(value)
        }
        var mappedColumns = entity.sortedColumns
        if let distinct = entity.distinct { mappedColumns.append((distinct.destination, distinct.source)) }
        for (column, expression) in mappedColumns {
            row.columns.append(SQL.quote(column))
            row.values.append("(\(expression))")
            row.lookups.append("(\(expression))")
        }
        return row
    }

    /// The checksum of a row's values: SQLite takes at most 127 arguments per function, so a wide
    /// row is hashed in parts of 100 (`cm_hash`) and the parts digested.
    private static func digest(_ items: [String]) -> String {
        guard items.count > 100 else { return "cm_digest(\(items.joined(separator: ", ")))" }
        let parts = stride(from: 0, to: items.count, by: 100).map { start in
            "cm_hash(" + items[start..<min(items.count, start + 100)].joined(separator: ", ") + ")"
        }
        return "cm_digest(\(parts.joined(separator: ", ")))"
    }

    /// The fix-up statements of the deferred relationships, by destination column. A fix-up batch covers the
    /// rows of one copy batch: `?1` and `?2` are its first and last destination keys, or, for a
    /// self-reference, its first and last source keys.
    ///
    /// A self-reference needs only the rows whose foreign key is larger than their own key (the
    /// copy resolved or settled every other one, see ``Resolver/Relationship/isSelfReference``):
    /// they are found in the source, in key order, and only the rows whose target now has a
    /// destination key are written. A relationship that closes a cycle between entities visits
    /// the batch's rows still NULL.
    static func fixups(
        entity: EntityMapping, index entityIndex: UInt32, deferred: Set<String>,
        relationshipIndexes: [String: Int], selfReferences: Set<String>
    ) -> [String: Fixup] {
        let sourceTable = "src." + SQL.quote(entity.source.table)
        let sourceKey = "s." + SQL.key(entity.source.key)
        let destinationTable = "main." + SQL.quote(entity.destination.table)
        let destinationKey = "d." + SQL.key(entity.destination.key)
        var fixups: [String: Fixup] = [:]
        for (column, relationship) in entity.sortedRelationships where deferred.contains(column) {
            let index = relationshipIndexes[column]!
            let foreignKey = "s." + SQL.quote(relationship.from)
            let sql: String
            var recordedSQL: String?
            if selfReferences.contains(column) {
                // The rows to fix, as (own source key, foreign key): from the source, or from
                // what the copy batch recorded. MATERIALIZED: each row's cm_fix runs once,
                // however SQLite plans the UPDATE.
                func fix(own: String, foreignKey: String, from rows: String) -> String {
                    """
                    WITH fix AS MATERIALIZED (
                      SELECT own, cm_fix(\(index), foreign_key, own) AS target FROM (
                        SELECT cm_destination_of(\(entityIndex), \(own)) AS own, \(foreignKey) AS foreign_key
                        FROM \(rows))
                      WHERE own IS NOT NULL)
                    UPDATE \(destinationTable) AS d SET \(SQL.quote(column)) = fix.target
                    FROM fix WHERE \(destinationKey) = fix.own AND fix.target IS NOT NULL
                    """
                }
                sql = fix(
                    own: sourceKey, foreignKey: foreignKey,
                    from: "\(sourceTable) AS s WHERE \(sourceKey) BETWEEN ?1 AND ?2 AND \(foreignKey) > \(sourceKey)")
                recordedSQL = fix(
                    own: "t.own", foreignKey: "t.foreign_key",
                    from:
                        "temp.\(CopierSQL.deferralTable) AS t WHERE t.entity = \(entityIndex) AND t.relationship = \(index) AND t.batch = ?1"
                )
            } else {
                let ownRows = entity.keys == .preserve ? " AND cm_source_of(\(entityIndex), \(destinationKey)) IS NOT NULL" : ""
                sql = """
                    UPDATE \(destinationTable) AS d SET \(SQL.quote(column)) = cm_fix(\(index),
                        (SELECT \(foreignKey) FROM \(sourceTable) AS s
                         WHERE \(sourceKey) = cm_source_of(\(entityIndex), \(destinationKey))), \(destinationKey))
                    WHERE \(destinationKey) BETWEEN ?1 AND ?2 AND d.\(SQL.quote(column)) IS NULL\(ownRows)
                    """
            }
            fixups[column] = Fixup(relationship: index, sql: sql, bySource: selfReferences.contains(column), recordedSQL: recordedSQL)
        }
        return fixups
    }
}
