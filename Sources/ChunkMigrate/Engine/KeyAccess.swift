/// How a batch walks a table in key order: by its rowid, or by a unique index on its key column.
/// A batch relies on rows flowing through `INSERT ... SELECT ... ORDER BY key` in key order, one
/// at a time, without a sort; the plan is refused when a table offers no such path.
enum KeyAccess: Equatable {
    /// The rowid (the key is omitted, or is the table's INTEGER PRIMARY KEY).
    case rowid
    /// A unique index on the key column alone, which is NOT NULL.
    case index(String)

    /// The `FROM` clause's indexing: `NOT INDEXED` walks the rowid b-tree; `INDEXED BY` the key's index.
    var hint: String {
        switch self {
        case .rowid: "NOT INDEXED"
        case let .index(name): "INDEXED BY \(SQL.quote(name))"
        }
    }

    /// Finds the path for `column` of `table` in `schema` (`src` or `main`), or throws naming the
    /// plan path and what is missing.
    static func find(database: Database, schema: String, table: String, column: String?,
                     planPath: String, entity: String) throws -> KeyAccess {
        let quotedTable = SQL.quote(table)
        let columns = try database.rows("PRAGMA \(schema).table_info(\(quotedTable))")
        guard !columns.isEmpty else {
            let side = schema == "src" ? "source" : "destination"
            throw MigrationError(.invalidPlan, "\(planPath).table: the \(side) store has no table \"\(table)\"", entity: entity)
        }
        guard let column, !["rowid", "_rowid_", "oid"].contains(column.lowercased()) else { return .rowid }
        // table_info: cid, name, type, notnull, dflt_value, pk
        guard let info = columns.first(where: { $0[1].text?.lowercased() == column.lowercased() }) else {
            let names = columns.compactMap { $0[1].text }
            throw MigrationError(.invalidPlan,
                "\(planPath).key: table \"\(table)\" has no column \"\(column)\"\(MigrationPlan.suggestion(for: column, among: names))",
                entity: entity)
        }
        let primaryKeyColumns = columns.filter { ($0[5].integer ?? 0) > 0 }
        if primaryKeyColumns.count == 1, info[5].integer == 1, info[2].text?.uppercased() == "INTEGER" {
            return .rowid
        }
        // Only the source is walked; a destination key needs uniqueness, not NOT NULL (the
        // engine writes every key).
        let notNull = info[3].integer == 1 || schema == "main"
        // index_list: seq, name, unique, origin, partial
        for index in try database.rows("PRAGMA \(schema).index_list(\(quotedTable))") {
            guard index[2].integer == 1, index[4].integer == 0, let name = index[1].text else { continue }
            let indexed = try database.rows("PRAGMA \(schema).index_info(\(SQL.quote(name)))")
            if indexed.count == 1, indexed[0][2].text?.lowercased() == column.lowercased() {
                guard notNull else {
                    throw MigrationError(.invalidPlan,
                        "\(planPath).key: column \"\(column)\" of \"\(table)\" is unique but may be NULL; rows with a NULL key could not be migrated. Declare it NOT NULL or use the rowid",
                        entity: entity)
                }
                return .index(name)
            }
        }
        throw MigrationError(.invalidPlan,
            schema == "main"
                ? "\(planPath).key: column \"\(column)\" of \"\(table)\" is neither the rowid (INTEGER PRIMARY KEY) nor covered by a unique index; the destination key needs one, so that keys cannot collide and the largest is found at once"
                : "\(planPath).key: column \"\(column)\" of \"\(table)\" is neither the rowid (INTEGER PRIMARY KEY) nor covered by a unique index; batches walk the table in key order and need one",
            entity: entity)
    }
}
