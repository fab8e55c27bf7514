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

    /// `; did you mean "title"?` when SQLite's message names a column close to one of `names`.
    static func nearName(in message: String, among names: [String]) -> String {
        guard let range = message.range(of: "no such column: ") else { return "" }
        var name = String(message[range.upperBound...])
        if let dot = name.lastIndex(of: ".") { name = String(name[name.index(after: dot)...]) }
        return MigrationPlan.suggestion(for: name, among: names)
    }
}
