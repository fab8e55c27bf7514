import Foundation

/// Every check of a plan against the two stores, made before a job writes anything: a plan error
/// names the plan path and, where a name is close to a real one, suggests it.
///
/// A plan is checked in three steps, in this order:
/// 1. ``MigrationPlan/validate()`` (`MigrationPlan+Validation.swift`): what needs no store (names
///    present and unique, relationship targets that exist, policies the engine can honour).
/// 2. ``check(entity:)``, here, for each entity: the tables exist and have a key the batches can
///    walk in key order (``KeyAccess``); the columns, expressions and filters exist and SQLite
///    accepts them; nothing is mapped onto the destination's key; no value would silently change
///    type affinity; deferred relationships can hold the NULL they start with; no NOT NULL
///    column is left unmapped.
/// 3. After the engine prepares an entity's statements: ``checkWalksInKeyOrder(_:)``, SQLite's own
///    query plan walks the source in key order without sorting. A statement SQLite refuses to
///    prepare is reported by the engine as a plan error (`Engine.prepare()`).
struct PlanCheck {
    let plan: MigrationPlan
    let order: ExecutionOrder
    let stores: Stores

    private var database: Database { stores.database }

    /// Checks one entity against both stores, and returns how its batches walk the source table
    /// and find the destination's largest key.
    func check(entity index: Int) throws -> (source: KeyAccess, destination: KeyAccess) {
        let entity = plan.entities[index]
        let path = "entities[\(index)]"
        let source = try table(entity.source.table, of: stores.source, planPath: path + ".source", entity: entity)
        let sourceAccess = try keyAccess(
            entity.source.key, of: source, named: entity.source.table, in: stores.source,
            planPath: path + ".source", entity: entity)
        let destination = try table(entity.destination.table, of: stores.destination, planPath: path + ".destination", entity: entity)
        let destinationAccess = try keyAccess(
            entity.destination.key, of: destination, named: entity.destination.table,
            in: stores.destination, planPath: path + ".destination", entity: entity)
        let tables = EntityTables(entity: entity, index: index, path: path, source: source, destination: destination)
        try checkKeyIsNotMapped(tables)
        try checkFilter(tables)
        try checkColumns(tables)
        try checkRelationships(tables)
        try checkDistinct(tables)
        try checkUnmappedColumns(tables)
        return (sourceAccess, destinationAccess)
    }

    /// Refuses an entity whose prepared batch statement SQLite would run by sorting the source
    /// rows: a batch needs the rows in the key's own order, one at a time.
    func checkWalksInKeyOrder(_ copier: EntityCopier) throws {
        guard try copier.walksInKeyOrder(database: database) else {
            throw MigrationError(
                .invalidPlan,
                "SQLite would sort the rows of \(copier.entity.source.table) instead of reading them in key order; batches need the key's own order",
                entity: copier.entity.name, sql: copier.insertSQL)
        }
    }

    // MARK: Tables and keys

    /// One entity and the two tables it reads and writes, as the stores describe them.
    struct EntityTables {
        let entity: EntityMapping
        let index: Int
        let path: String
        let source: TableSchema
        let destination: TableSchema

        var sourceNames: [String] { source.columns.map(\.name) }
        var destinationNames: [String] { destination.columns.map(\.name) }
        var sourceFrom: String { "src.\(SQL.quote(entity.source.table)) AS s" }

        func invalid(_ message: String, column: String? = nil) -> MigrationError {
            MigrationError(.invalidPlan, message, entity: entity.name, column: column)
        }

        /// Refuses a destination column the table does not have, suggesting a close name.
        func requireDestinationColumn(_ column: String, at path: String) throws {
            guard destination.column(named: column) == nil else { return }
            throw invalid(
                "\(path): the destination table \"\(entity.destination.table)\" has no column \"\(column)\"\(MigrationPlan.suggestion(for: column, among: destinationNames))",
                column: column)
        }
    }

    /// The table named by the plan, or an error naming the plan path when the store has none.
    private func table(_ name: String, of store: StoreSchema, planPath: String, entity: EntityMapping) throws -> TableSchema {
        guard let table = try store.table(name) else {
            throw MigrationError(.invalidPlan, "\(planPath).table: the \(store.word) store has no table \"\(name)\"", entity: entity.name)
        }
        return table
    }

    /// How a batch walks `table` by `column` in key order: the rowid, or a unique index on the
    /// column alone; refused, naming the plan path and what is missing, when there is neither.
    /// Only the source is walked, so only a source key must be NOT NULL; a destination key needs
    /// uniqueness (the engine writes every key).
    func keyAccess(
        _ column: String?, of table: TableSchema, named name: String, in store: StoreSchema,
        planPath: String, entity: EntityMapping
    ) throws -> KeyAccess {
        guard let column, !TableSchema.rowidNames.contains(column.lowercased()) else { return .rowid }
        guard let info = table.column(named: column) else {
            throw MigrationError(
                .invalidPlan,
                "\(planPath).key: table \"\(name)\" has no column \"\(column)\"\(MigrationPlan.suggestion(for: column, among: table.columns.map(\.name)))",
                entity: entity.name)
        }
        if table.isRowid(column) { return .rowid }
        if let index = table.uniqueIndex(on: column) {
            guard info.isNotNull || !store.isSource else {
                throw MigrationError(
                    .invalidPlan,
                    "\(planPath).key: column \"\(column)\" of \"\(name)\" is unique but may be NULL; rows with a NULL key could not be migrated. Declare it NOT NULL or use the rowid",
                    entity: entity.name)
            }
            return .index(index.name)
        }
        throw MigrationError(
            .invalidPlan,
            store.isSource
                ? "\(planPath).key: column \"\(column)\" of \"\(name)\" is neither the rowid (INTEGER PRIMARY KEY) nor covered by a unique index; batches walk the table in key order and need one"
                : "\(planPath).key: column \"\(column)\" of \"\(name)\" is neither the rowid (INTEGER PRIMARY KEY) nor covered by a unique index; the destination key needs one, so that keys cannot collide and the largest is found at once",
            entity: entity.name)
    }

    /// Refuses a column or relationship mapped onto the destination's key under any name SQLite
    /// gives it (it would overwrite the key the engine allocates, and the ID map would point
    /// elsewhere), and two mapped onto one column.
    private func checkKeyIsNotMapped(_ tables: EntityTables) throws {
        let entity = tables.entity, path = tables.path
        let keyNames = tables.destination.names(ofKey: entity.destination.key)
        var mapped: [String: String] = [:]
        for (kind, names) in [("columns", entity.sortedColumns.map(\.column)), ("relationships", entity.sortedRelationships.map(\.column))]
        {
            for name in names {
                if keyNames.contains(name.lowercased()) {
                    throw tables.invalid(
                        "\(path).\(kind).\(name): \"\(name)\" is the destination's key, which the engine fills (keys: \(entity.keys)); remove it from the plan",
                        column: name)
                }
                if let other = mapped[name.lowercased()] {
                    throw tables.invalid(
                        "\(path).\(kind).\(name): destination column \"\(name)\" is already mapped as \(other) (SQLite column names ignore case)",
                        column: name)
                }
                mapped[name.lowercased()] = "\(path).\(kind).\(name)"
            }
        }
    }

    // MARK: Expressions

    /// The source filter: SQLite accepts it, and it reads no destination table by accident.
    private func checkFilter(_ tables: EntityTables) throws {
        guard let condition = tables.entity.source.where else { return }
        let sql = "SELECT 1 FROM \(tables.sourceFrom) WHERE (\(condition)) LIMIT 0"
        try checkPrepares(sql, text: condition, at: "\(tables.path).source.where", tables)
        try refuseUnqualifiedDestinationReads(sql: sql, text: condition, path: "\(tables.path).source.where", entity: tables.entity)
    }

    /// Each column: no silent change of affinity, a destination column that exists, a sound
    /// `plist_value` key path, an expression SQLite accepts that reads no destination table by
    /// accident.
    private func checkColumns(_ tables: EntityTables) throws {
        for (column, expression) in tables.entity.sortedColumns {
            let path = "\(tables.path).columns.\(column)"
            try checkAffinity(column: column, expression: expression, path: path, tables)
            try tables.requireDestinationColumn(column, at: path)
            if let problem = Self.keyPathProblem(in: expression) {
                throw tables.invalid("\(path): \(problem)", column: column)
            }
            let sql = "SELECT (\(expression)) FROM \(tables.sourceFrom) LIMIT 0"
            try checkPrepares(sql, text: expression, at: path, column: column, tables)
            try refuseUnqualifiedDestinationReads(sql: sql, text: expression, path: path, entity: tables.entity)
        }
    }

    /// Each relationship: a destination column that exists; its source column (or, to a
    /// de-duplicated entity, its expression); and a nullable column where the relationship is
    /// written as NULL first and set by the fix-up pass.
    private func checkRelationships(_ tables: EntityTables) throws {
        let entity = tables.entity
        for (column, relationship) in entity.sortedRelationships {
            let path = "\(tables.path).relationships.\(column)"
            try tables.requireDestinationColumn(column, at: path)
            if plan.isDistinct(relationship.to) {
                // By value: `from` is an expression over the source row.
                try checkPrepares(
                    "SELECT (\(relationship.from)) FROM \(tables.sourceFrom) LIMIT 0", text: relationship.from,
                    at: path + ".from", column: column, tables)
                continue
            }
            guard tables.source.column(named: relationship.from) != nil else {
                throw tables.invalid(
                    "\(path).from: the source table \"\(entity.source.table)\" has no column \"\(relationship.from)\"\(MigrationPlan.suggestion(for: relationship.from, among: tables.sourceNames))",
                    column: column)
            }
            if order.isDeferred(entity: tables.index, column: column), tables.destination.column(named: column)?.isNotNull == true {
                throw tables.invalid(
                    "\(path): this relationship refers to its own entity or closes a cycle, so it is written as NULL and set by the fix-up pass, but destination column \"\(column)\" is NOT NULL; make it nullable",
                    column: column)
            }
        }
    }

    /// A de-duplicated entity: its natural-key column exists, and SQLite accepts its value.
    private func checkDistinct(_ tables: EntityTables) throws {
        guard let distinct = tables.entity.distinct else { return }
        try tables.requireDestinationColumn(distinct.destination, at: "\(tables.path).distinct.destination")
        try checkPrepares(
            "SELECT (\(distinct.source)) FROM \(tables.sourceFrom) LIMIT 0", text: distinct.source,
            at: "\(tables.path).distinct.source", tables)
    }

    /// Refuses a destination column that would reject every row: NOT NULL, no default, not the
    /// key, and not mapped.
    private func checkUnmappedColumns(_ tables: EntityTables) throws {
        let entity = tables.entity
        let destinationKey = entity.destination.key?.lowercased()
        for info in tables.destination.columns {
            let name = info.name
            guard info.isNotNull, info.defaultValueSQL == nil, info.primaryKeyIndex == 0,
                name.lowercased() != destinationKey,
                !entity.columns.keys.contains(where: { $0.lowercased() == name.lowercased() }),
                !entity.relationships.keys.contains(where: { $0.lowercased() == name.lowercased() }),
                entity.distinct?.destination.lowercased() != name.lowercased()
            else { continue }
            throw tables.invalid(
                "\(tables.path).columns: destination column \"\(name)\" of \"\(entity.destination.table)\" is NOT NULL with no default, and the plan does not map it; every row would be rejected",
                column: name)
        }
    }

    /// Prepares `sql` (which holds the plan's `text`), or throws SQLiteError's reason at `path`,
    /// with a close source column when SQLite names one it does not know.
    private func checkPrepares(_ sql: String, text: String, at path: String, column: String? = nil, _ tables: EntityTables) throws {
        do {
            _ = try database.prepare(sql)
        } catch {
            throw tables.invalid(
                "\(path): SQLite rejects \"\(text)\": \(error.message)\(Self.nearName(in: error.message, among: tables.sourceNames))",
                column: column)
        }
    }

    /// An expression or filter that names a table without a schema reads the destination (`main`)
    /// when it has a table of that name, not the source: refused unless it says `main.` itself.
    func refuseUnqualifiedDestinationReads(sql: String, text: String, path: String, entity: EntityMapping) throws {
        let tables = try database.tablesRead(in: "main", preparing: sql)
        guard !tables.isEmpty, !text.lowercased().contains("main.") else { return }
        throw MigrationError(
            .invalidPlan,
            "\(path): \"\(text)\" reads \(tables.sorted().map { "\"\($0)\"" }.joined(separator: ", ")) from the destination; name the source's tables as src.<table> (or main.<table> if the destination is meant)",
            entity: entity.name)
    }

    /// SQLite converts a value to the type affinity of the column it is written to, silently. When a
    /// column is copied as it is (the expression is a bare source column), a conversion that would
    /// change data is refused: text into an INTEGER, REAL or NUMERIC column (`'007'` would become
    /// `7`, `'1e3'` would become `1000`), and numbers into a TEXT column (`1.0` would become `'1.0'`
    /// and no longer compare equal to the number). To convert on purpose, say so in the expression
    /// (`CAST(code AS INTEGER)`); `--verify-checksums` catches conversions of any expression.
    private func checkAffinity(column: String, expression: String, path: String, _ tables: EntityTables) throws {
        let bare = expression.trimmingCharacters(in: .whitespaces)
            .trimmingCharacters(in: CharacterSet(charactersIn: "\"`[]")).lowercased()
        guard let source = tables.source.column(named: bare), let destination = tables.destination.column(named: column) else { return }
        let from = source.affinity
        let to = destination.affinity
        let changes =
            (from == "TEXT" && ["INTEGER", "REAL", "NUMERIC"].contains(to))
            || (["INTEGER", "REAL", "NUMERIC"].contains(from) && to == "TEXT")
        guard changes else { return }
        throw MigrationError(
            .invalidPlan,
            "\(path): source column \"\(source.name)\" has \(from) affinity and destination column \"\(column)\" \(to) affinity; SQLite would silently convert values (text such as '007' into 7, or numbers into text). Write the conversion in the expression if it is intended, e.g. CAST(\(source.name) AS \(to))",
            entity: tables.entity.name, column: column)
    }

    // MARK: Wording

    /// What is wrong with a literal key path given to `plist_value` in `expression`, if anything:
    /// an empty path, or an empty component (`'address..city'`). A path to a key that rows do not
    /// have is not an error (the value is NULL); the plan check cannot see the rows' keys.
    static func keyPathProblem(in expression: String) -> String? {
        guard let pattern = try? NSRegularExpression(pattern: #"plist_value\s*\([^,]*,\s*'([^']*)'\s*\)"#, options: [.caseInsensitive])
        else {
            return nil
        }
        let range = NSRange(expression.startIndex..., in: expression)
        for match in pattern.matches(in: expression, range: range) {
            guard let found = Range(match.range(at: 1), in: expression) else { continue }
            let keyPath = String(expression[found])
            if keyPath.isEmpty || keyPath.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
                return
                    "plist_value key path '\(keyPath)' is empty or has an empty component; write keys separated by single dots ('address.city', 'lines.0')"
            }
        }
        return nil
    }

    /// `; did you mean "title"?` when SQLite's message names a column close to one of `names`.
    static func nearName(in message: String, among names: [String]) -> String {
        guard let range = message.range(of: "no such column: ") else { return "" }
        var name = String(message[range.upperBound...])
        if let dot = name.lastIndex(of: ".") { name = String(name[name.index(after: dot)...]) }
        return MigrationPlan.suggestion(for: name, among: names)
    }
}
