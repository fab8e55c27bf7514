import Foundation

extension Engine {
    /// Checks one entity of the plan against both stores before anything is prepared, so that an
    /// error names the plan path and, where a name is close to a real one, suggests it: columns that
    /// exist, expressions and filters SQLite accepts, source columns of relationships, deferred
    /// relationships whose destination column can hold the NULL they start with, and destination
    /// columns that would reject every row (NOT NULL, no default, not mapped).
    func checkAgainstStores(entity: EntityMapping, index: Int) throws {
        let path = "entities[\(index)]"
        // table_info rows: cid, name, type, notnull, dflt_value, pk
        let sourceColumns = try database.rows("PRAGMA src.table_info(\(SQL.quote(entity.source.table)))")
        let destinationColumns = try database.rows("PRAGMA main.table_info(\(SQL.quote(entity.destination.table)))")
        let sourceNames = sourceColumns.compactMap { $0[1].text }
        let destinationNames = destinationColumns.compactMap { $0[1].text }
        func invalid(_ message: String, column: String? = nil) -> MigrationError {
            MigrationError(.invalidPlan, message, entity: entity.name, column: column)
        }
        func hasDestinationColumn(_ name: String) -> Bool {
            destinationNames.contains { $0.lowercased() == name.lowercased() }
        }
        let sourceFrom = "src.\(SQL.quote(entity.source.table)) AS s"

        if let condition = entity.source.where {
            do {
                _ = try database.prepare("SELECT 1 FROM \(sourceFrom) WHERE (\(condition)) LIMIT 0")
            } catch {
                throw invalid("\(path).source.where: SQLite rejects \"\(condition)\": \(error.message)\(Self.nearName(in: error.message, among: sourceNames))")
            }
        }
        for (column, expression) in entity.sortedColumns {
            try checkAffinity(column: column, expression: expression, path: "\(path).columns.\(column)",
                              sourceColumns: sourceColumns, destinationColumns: destinationColumns, entity: entity)
            guard hasDestinationColumn(column) else {
                throw invalid("\(path).columns.\(column): the destination table \"\(entity.destination.table)\" has no column \"\(column)\"\(MigrationPlan.suggestion(for: column, among: destinationNames))",
                              column: column)
            }
            do {
                _ = try database.prepare("SELECT (\(expression)) FROM \(sourceFrom) LIMIT 0")
            } catch {
                throw invalid("\(path).columns.\(column): SQLite rejects \"\(expression)\": \(error.message)\(Self.nearName(in: error.message, among: sourceNames))",
                              column: column)
            }
        }
        for (column, relationship) in entity.sortedRelationships {
            guard hasDestinationColumn(column) else {
                throw invalid("\(path).relationships.\(column): the destination table \"\(entity.destination.table)\" has no column \"\(column)\"\(MigrationPlan.suggestion(for: column, among: destinationNames))",
                              column: column)
            }
            guard sourceNames.contains(where: { $0.lowercased() == relationship.from.lowercased() }) else {
                throw invalid("\(path).relationships.\(column).from: the source table \"\(entity.source.table)\" has no column \"\(relationship.from)\"\(MigrationPlan.suggestion(for: relationship.from, among: sourceNames))",
                              column: column)
            }
            if order.isDeferred(entity: index, column: column),
               let info = destinationColumns.first(where: { $0[1].text?.lowercased() == column.lowercased() }), info[3].integer == 1 {
                throw invalid("\(path).relationships.\(column): this relationship refers to its own entity or closes a cycle, so it is written as NULL and set by the fix-up pass, but destination column \"\(column)\" is NOT NULL; make it nullable",
                              column: column)
            }
        }
        let destinationKey = entity.destination.key?.lowercased()
        for info in destinationColumns {
            guard let name = info[1].text, info[3].integer == 1, info[4] == .null, info[5].integer == 0,
                  name.lowercased() != destinationKey,
                  !(entity.columns ?? [:]).keys.contains(where: { $0.lowercased() == name.lowercased() }),
                  !(entity.relationships ?? [:]).keys.contains(where: { $0.lowercased() == name.lowercased() })
            else { continue }
            throw invalid("\(path).columns: destination column \"\(name)\" of \"\(entity.destination.table)\" is NOT NULL with no default, and the plan does not map it; every row would be rejected",
                          column: name)
        }
    }

    /// SQLite converts a value to the type affinity of the column it is written to, silently. When a
    /// column is copied as it is (the expression is a bare source column), a conversion that would
    /// change data is refused: text into an INTEGER, REAL or NUMERIC column (`'007'` would become
    /// `7`, `'1e3'` would become `1000`), and numbers into a TEXT column (`1.0` would become `'1.0'`
    /// and no longer compare equal to the number). To convert on purpose, say so in the expression
    /// (`CAST(code AS INTEGER)`); `--verify-checksums` catches conversions of any expression.
    func checkAffinity(column: String, expression: String, path: String, sourceColumns: [[SQLiteValue]],
                       destinationColumns: [[SQLiteValue]], entity: EntityMapping) throws {
        let bare = expression.trimmingCharacters(in: .whitespaces)
            .trimmingCharacters(in: CharacterSet(charactersIn: "\"`[]")).lowercased()
        guard let source = sourceColumns.first(where: { $0[1].text?.lowercased() == bare }),
              let destination = destinationColumns.first(where: { $0[1].text?.lowercased() == column.lowercased() })
        else { return }
        let from = Self.affinity(of: source[2].text ?? "")
        let to = Self.affinity(of: destination[2].text ?? "")
        let changes = (from == "TEXT" && ["INTEGER", "REAL", "NUMERIC"].contains(to))
            || (["INTEGER", "REAL", "NUMERIC"].contains(from) && to == "TEXT")
        guard changes else { return }
        throw MigrationError(.invalidPlan,
            "\(path): source column \"\(source[1].text ?? bare)\" has \(from) affinity and destination column \"\(column)\" \(to) affinity; SQLite would silently convert values (text such as '007' into 7, or numbers into text). Write the conversion in the expression if it is intended, e.g. CAST(\(source[1].text ?? bare) AS \(to))",
            entity: entity.name, column: column)
    }

    /// A declared type's affinity, by SQLite's rules (https://www.sqlite.org/datatype3.html#determination_of_column_affinity).
    static func affinity(of declared: String) -> String {
        let type = declared.uppercased()
        if type.contains("INT") { return "INTEGER" }
        if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return "TEXT" }
        if type.contains("BLOB") || type.isEmpty { return "BLOB" }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return "REAL" }
        return "NUMERIC"
    }

    /// `; did you mean "title"?` when SQLite's message names a column close to one of `names`.
    static func nearName(in message: String, among names: [String]) -> String {
        guard let range = message.range(of: "no such column: ") else { return "" }
        var name = String(message[range.upperBound...])
        if let dot = name.lastIndex(of: ".") { name = String(name[name.index(after: dot)...]) }
        return MigrationPlan.suggestion(for: name, among: names)
    }
}
