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

        // The destination key, under every name SQLite gives it: a column mapped onto one of them
        // would overwrite the key the engine allocates, and the ID map would point elsewhere.
        var keyNames: Set<String> = []
        let integerPrimaryKey = destinationColumns.filter { ($0[5].integer ?? 0) > 0 }.count == 1
            ? destinationColumns.first { $0[5].integer == 1 && $0[2].text?.uppercased() == "INTEGER" }?[1].text?.lowercased() : nil
        let rowidNames: Set<String> = ["rowid", "oid", "_rowid_"]
        if let key = entity.destination.key?.lowercased() {
            keyNames.insert(key)
            if rowidNames.contains(key) || key == integerPrimaryKey {
                keyNames.formUnion(rowidNames)
                if let integerPrimaryKey { keyNames.insert(integerPrimaryKey) }
            }
        } else {
            keyNames.formUnion(rowidNames)
            if let integerPrimaryKey { keyNames.insert(integerPrimaryKey) }
        }
        var mapped: [String: String] = [:]
        for (kind, names) in [("columns", entity.sortedColumns.map(\.column)), ("relationships", entity.sortedRelationships.map(\.column))] {
            for name in names {
                if keyNames.contains(name.lowercased()) {
                    throw invalid("\(path).\(kind).\(name): \"\(name)\" is the destination's key, which the engine fills (keys: \(entity.keyPolicy.rawValue)); remove it from the plan",
                                  column: name)
                }
                if let other = mapped[name.lowercased()] {
                    throw invalid("\(path).\(kind).\(name): destination column \"\(name)\" is already mapped as \(other) (SQLite column names ignore case)",
                                  column: name)
                }
                mapped[name.lowercased()] = "\(path).\(kind).\(name)"
            }
        }

        if let condition = entity.source.where {
            let sql = "SELECT 1 FROM \(sourceFrom) WHERE (\(condition)) LIMIT 0"
            do {
                _ = try database.prepare(sql)
            } catch {
                throw invalid("\(path).source.where: SQLite rejects \"\(condition)\": \(error.message)\(Self.nearName(in: error.message, among: sourceNames))")
            }
            try refuseUnqualifiedDestinationReads(sql: sql, text: condition, path: "\(path).source.where", entity: entity)
        }
        for (column, expression) in entity.sortedColumns {
            try checkAffinity(column: column, expression: expression, path: "\(path).columns.\(column)",
                              sourceColumns: sourceColumns, destinationColumns: destinationColumns, entity: entity)
            guard hasDestinationColumn(column) else {
                throw invalid("\(path).columns.\(column): the destination table \"\(entity.destination.table)\" has no column \"\(column)\"\(MigrationPlan.suggestion(for: column, among: destinationNames))",
                              column: column)
            }
            if let problem = Self.keyPathProblem(in: expression) {
                throw invalid("\(path).columns.\(column): \(problem)", column: column)
            }
            let sql = "SELECT (\(expression)) FROM \(sourceFrom) LIMIT 0"
            do {
                _ = try database.prepare(sql)
            } catch {
                throw invalid("\(path).columns.\(column): SQLite rejects \"\(expression)\": \(error.message)\(Self.nearName(in: error.message, among: sourceNames))",
                              column: column)
            }
            try refuseUnqualifiedDestinationReads(sql: sql, text: expression, path: "\(path).columns.\(column)", entity: entity)
        }
        for (column, relationship) in entity.sortedRelationships {
            guard hasDestinationColumn(column) else {
                throw invalid("\(path).relationships.\(column): the destination table \"\(entity.destination.table)\" has no column \"\(column)\"\(MigrationPlan.suggestion(for: column, among: destinationNames))",
                              column: column)
            }
            if plan.isDistinct(relationship.to) {
                // By value: `from` is an expression over the source row.
                do { _ = try database.prepare("SELECT (\(relationship.from)) FROM \(sourceFrom) LIMIT 0") } catch {
                    throw invalid("\(path).relationships.\(column).from: SQLite rejects \"\(relationship.from)\": \(error.message)\(Self.nearName(in: error.message, among: sourceNames))",
                                  column: column)
                }
                continue
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
        if let distinct = entity.distinct {
            guard hasDestinationColumn(distinct.destination) else {
                throw invalid("\(path).distinct.destination: the destination table \"\(entity.destination.table)\" has no column \"\(distinct.destination)\"\(MigrationPlan.suggestion(for: distinct.destination, among: destinationNames))",
                              column: distinct.destination)
            }
            do { _ = try database.prepare("SELECT (\(distinct.source)) FROM \(sourceFrom) LIMIT 0") } catch {
                throw invalid("\(path).distinct.source: SQLite rejects \"\(distinct.source)\": \(error.message)\(Self.nearName(in: error.message, among: sourceNames))")
            }
        }
        let destinationKey = entity.destination.key?.lowercased()
        for info in destinationColumns {
            guard let name = info[1].text, info[3].integer == 1, info[4] == .null, info[5].integer == 0,
                  name.lowercased() != destinationKey,
                  !(entity.columns ?? [:]).keys.contains(where: { $0.lowercased() == name.lowercased() }),
                  !(entity.relationships ?? [:]).keys.contains(where: { $0.lowercased() == name.lowercased() }),
                  entity.distinct?.destination.lowercased() != name.lowercased()
            else { continue }
            throw invalid("\(path).columns: destination column \"\(name)\" of \"\(entity.destination.table)\" is NOT NULL with no default, and the plan does not map it; every row would be rejected",
                          column: name)
        }
    }

    /// An expression or filter that names a table without a schema reads the destination (`main`)
    /// when it has a table of that name, not the source: refused unless it says `main.` itself.
    func refuseUnqualifiedDestinationReads(sql: String, text: String, path: String, entity: EntityMapping) throws {
        let tables = try database.tablesRead(in: "main", preparing: sql)
        guard !tables.isEmpty, !text.lowercased().contains("main.") else { return }
        throw MigrationError(.invalidPlan,
            "\(path): \"\(text)\" reads \(tables.sorted().map { "\"\($0)\"" }.joined(separator: ", ")) from the destination; name the source's tables as src.<table> (or main.<table> if the destination is meant)",
            entity: entity.name)
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

    /// What is wrong with a literal key path given to `plist_value` in `expression`, if anything:
    /// an empty path, or an empty component (`'address..city'`). A path to a key that rows do not
    /// have is not an error (the value is NULL); the plan check cannot see the rows' keys.
    static func keyPathProblem(in expression: String) -> String? {
        guard let pattern = try? NSRegularExpression(pattern: #"plist_value\s*\([^,]*,\s*'([^']*)'\s*\)"#, options: [.caseInsensitive]) else {
            return nil
        }
        let range = NSRange(expression.startIndex..., in: expression)
        for match in pattern.matches(in: expression, range: range) {
            guard let found = Range(match.range(at: 1), in: expression) else { continue }
            let keyPath = String(expression[found])
            if keyPath.isEmpty || keyPath.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
                return "plist_value key path '\(keyPath)' is empty or has an empty component; write keys separated by single dots ('address.city', 'lines.0')"
            }
        }
        return nil
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
