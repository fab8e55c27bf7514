extension Database {
    /// Reads the description of `table` in `schema` (`main`, `src`) from SQLite's PRAGMAs; `nil`
    /// when there is no such table. Every PRAGMA row of the library is read here, by column name.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/pragma.html#pragma_table_info>
    func tableSchema(_ table: String, in schema: String) throws(SQLiteError) -> TableSchema? {
        let quoted = SQL.quote(table)
        let columns = try records("PRAGMA \(schema).table_info(\(quoted))").map { row in
            ColumnInfo(
                name: row["name"]?.text ?? "", type: row["type"]?.text ?? "",
                isNotNull: row["notnull"]?.integer == 1,
                defaultValueSQL: row["dflt_value"]?.text,
                primaryKeyIndex: Int(row["pk"]?.integer ?? 0))
        }
        guard !columns.isEmpty else { return nil }
        var indexes: [IndexInfo] = []
        for row in try records("PRAGMA \(schema).index_list(\(quoted))") {
            guard let name = row["name"]?.text else { continue }
            let indexed = try records("PRAGMA \(schema).index_info(\(SQL.quote(name)))")
            indexes.append(
                IndexInfo(
                    name: name, columns: indexed.compactMap { $0["name"]?.text },
                    isUnique: row["unique"]?.integer == 1,
                    origin: IndexInfo.Origin(rawValue: row["origin"]?.text ?? "") ?? .createIndex,
                    isPartial: row["partial"]?.integer == 1))
        }
        // One row per column of a key; rows of one key share its `id`, in `seq` order.
        var foreignKeys: [Int64: ForeignKeyInfo] = [:]
        for row in try records("PRAGMA \(schema).foreign_key_list(\(quoted))") {
            guard let id = row["id"]?.integer, let from = row["from"]?.text else { continue }
            foreignKeys[id, default: ForeignKeyInfo(destinationTable: row["table"]?.text ?? "", mapping: [])]
                .mapping.append((from, row["to"]?.text))
        }
        let declared = try rows(
            "SELECT name, sql FROM \(schema).sqlite_schema WHERE type IN ('table', 'view') AND name = ?1 COLLATE NOCASE",
            .text(table)
        ).first
        return TableSchema(
            name: declared?[0].text ?? table, sql: declared?[1].text ?? "", columns: columns, indexes: indexes,
            foreignKeys: foreignKeys.keys.sorted().compactMap { foreignKeys[$0] })
    }

    /// Every row of a query, each as values by column name.
    func records(_ sql: String) throws(SQLiteError) -> [[String: SQLiteValue]] {
        let statement = try prepare(sql)
        let names = (0..<statement.columnCount).map { statement.columnName(at: $0) }
        var rows: [[String: SQLiteValue]] = []
        while try statement.step() {
            rows.append(Dictionary(names.indices.map { (names[$0], statement.value(at: $0)) }, uniquingKeysWith: { a, _ in a }))
        }
        return rows
    }
}
