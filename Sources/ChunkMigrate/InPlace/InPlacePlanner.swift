import Foundation

/// The steps of an in-place migration (``InPlaceMigration``), worked out from the copy path's plan
/// and the two schemas: the store's (`main`) and the target's (`tgt`).
final class InPlacePlanner {
    typealias Step = InPlaceMigration.Step

    init(database: Database, plan: MigrationPlan, storePath: String, targetPath: String) {
        self.database = database
        self.plan = plan
        self.storePath = storePath
        self.targetPath = targetPath
    }

    /// Destination tables a step changes or makes.
    private var touchedTables: [String] = []
    /// Of ``touchedTables``, those whose rows, keys and values stay as they were, with the
    /// columns the steps write into them (columns added, derived values computed), in capitals.
    private var keptTables: [String: Set<String>] = [:]

    let database: Database
    let plan: MigrationPlan
    let storePath: String
    let targetPath: String

    private func refuse(_ why: String, entity: String? = nil) -> MigrationError {
        MigrationError(.invalidPlan, "this migration needs the copy path (run without --in-place): \(why)", entity: entity, file: storePath)
    }

    /// The steps, the tables of the migrated store they change, and of those, the ones whose rows
    /// they keep with the columns they write into them (for the check at the end, which reads
    /// only what changed).
    func steps() throws -> (steps: [Step], touched: [String], kept: [String: Set<String>]) {
        defer {
            for table in temporaryTables { try? database.execute("DROP TABLE temp.\(SQL.quote(table))") }
            temporaryTables = []
        }
        do {
            let steps = try build()
            let touched = Set(touchedTables.map { $0.uppercased() })
            return (steps, touched.sorted(), keptTables)
        } catch let error as SQLiteError {
            throw MigrationError(
                .store, "cannot work out the in-place steps: \(error.message)", file: storePath, sql: error.sql, cause: error)
        }
    }

    private func build() throws -> [Step] {
        let plain = plan.coreData == nil
        var readers: [String: String] = [:]
        for (index, entity) in plan.entities.enumerated() {
            let name = "entities[\(index)] (\(entity.name))"
            if entity.keys != .preserve, entity.destination.key != nil || plain {
                throw refuse("\(name) gives its rows new keys", entity: entity.name)
            }
            if entity.distinct != nil { throw refuse("\(name) is de-duplicated", entity: entity.name) }
            if !entity.relationships.isEmpty { throw refuse("\(name) resolves relationships through the ID map", entity: entity.name) }
            if entity.columns.values.contains(where: { $0.contains("coredata_external_") }) {
                throw refuse("\(name) converts external binary data", entity: entity.name)
            }
            let expressions = Array(entity.columns.values) + [entity.source.where].compactMap { $0 }
            if expressions.contains(where: { $0.range(of: #"\bmain\."#, options: [.regularExpression, .caseInsensitive]) != nil }) {
                throw refuse("\(name) reads the destination (main.), which in place is the store being migrated", entity: entity.name)
            }
            if try database.tableSchema(entity.source.table, in: "main")?.isWithoutRowid == true {
                throw refuse(
                    "\(name) reads \(entity.source.table), a WITHOUT ROWID table, which in place walks by rowid", entity: entity.name)
            }
            if let other = readers[entity.source.table.uppercased()] {
                throw refuse("\(other) and \(entity.name) both read table \(entity.source.table)", entity: entity.name)
            }
            readers[entity.source.table.uppercased()] = entity.name
        }
        for schema in ["main", "tgt"]
        where try database.scalar("SELECT count(*) FROM \(schema).sqlite_schema WHERE sql LIKE 'CREATE VIRTUAL TABLE%'").integer ?? 0 > 0 {
            throw refuse("the \(schema == "main" ? "store" : "target") has R-tree indexes (virtual tables)")
        }
        let writtenOut: MigrationPlan
        if plain {
            writtenOut = plan
        } else {
            // Each entity's number in the store and in the target, by name: from their models,
            // or where a store carries none (written before iOS 10), from its Z_PRIMARYKEY, as
            // the rows were numbered.
            func numbers(_ schema: String, _ file: String) throws -> [String: Int64] {
                if let model = try CoreDataModel.read(database, schema: schema, file: file) {
                    return Dictionary(
                        try CoreDataLayout(model: model).entities.values.map { ($0.name, $0.number) }, uniquingKeysWith: { a, _ in a })
                }
                return Dictionary(
                    try CoreDataEntities.read(database, schema: schema, file: file).entities.values.map { ($0.name, $0.number) },
                    uniquingKeysWith: { a, _ in a })
            }
            writtenOut = try CoreDataStepComposition.entityNumbersWrittenOut(
                plan, from: try numbers("main", storePath),
                to: try numbers("tgt", targetPath), step: nil)
        }

        // The sets of keys of a table's rows of some entities that a step reads from its own
        // table (`ZPARENT IN (SELECT kept.Z_PK FROM src.ZMESSAGE AS kept WHERE kept.Z_ENT IN (10))`, a
        // to-one kept where its target is of the right entity): taken once, before anything
        // changes, as the copy path reads them from the untouched source.
        var snapshots: [(name: String, match: String, sql: String)] = []
        var written = writtenOut
        for index in written.entities.indices {
            let own = written.entities[index].source.table
            func snapshotting(_ expression: String) -> String {
                var result = expression
                let pattern =
                    #"\(SELECT kept\.Z_PK FROM src\.("[^"]+"|[A-Za-z_][A-Za-z0-9_]*) AS kept WHERE kept\.Z_ENT IN \(([0-9, ]+)\)\)"#
                while let range = result.range(of: pattern, options: .regularExpression) {
                    let match = String(result[range])
                    let table = match.replacingOccurrences(of: #"^\(SELECT kept\.Z_PK FROM src\."#, with: "", options: .regularExpression)
                        .components(separatedBy: " AS kept").first!.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    guard table.caseInsensitiveCompare(own) == .orderedSame else { break }
                    let name: String
                    if let existing = snapshots.first(where: { $0.match == match }) {
                        name = existing.name
                    } else {
                        name = "_chunkmigrate_keys_\(snapshots.count + 1)"
                        snapshots.append(
                            (
                                name, match,
                                "INSERT INTO main.\(name) (k) SELECT k FROM \(match.replacingOccurrences(of: "SELECT kept.Z_PK FROM src.", with: "SELECT kept.Z_PK AS k FROM main."))"
                            ))
                    }
                    result.replaceSubrange(range, with: "(SELECT k FROM main.\(name))")
                }
                return result
            }
            written.entities[index].columns = written.entities[index].columns.mapValues(snapshotting)
            written.entities[index].source.where = written.entities[index].source.where.map(snapshotting)
        }

        func tables(_ schema: String) throws -> [String: String] {
            var result: [String: String] = [:]
            for row in try database.rows(
                "SELECT name, sql FROM \(schema).sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_chunkmigrate%' ESCAPE '\\'"
            ) {
                if let name = row[0].text { result[name.uppercased()] = row[1].text ?? "" }
            }
            return result
        }
        func columns(_ table: String, _ schema: String) throws -> [ColumnInfo] {
            try database.tableSchema(table, in: schema)?.columns ?? []
        }
        let storeTables = try tables("main"), targetTables = try tables("tgt")
        let storeEntities = plain ? nil : try CoreDataEntities.read(database, schema: "main", file: storePath)
        let bookkeeping: Set<String> = plain ? [] : ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]

        var pre: [Step] = [], adds: [Step] = [], rows: [(step: Step, reads: Set<String>)] = []
        var drops: [String] = [], columnRenames: [String] = [], tableRenames: [(from: String, to: String)] = []
        var untouched: Set<String> = [], produced: Set<String> = [], consumed: Set<String> = []
        let derivedColumns = Set((plan.coreData?.derived ?? []).map { "\($0.table).\($0.column)".uppercased() })
        // Tables whose rows and values stay as they are (columns may be added), and the columns added.
        var rowsKept: Set<String> = []
        var addedColumns: [String: Set<String>] = [:]
        // Store tables no row step changes (columns may be added or renamed, the table renamed),
        // with the table each becomes and its columns' new names, in capitals: their indexes
        // hold what they held.
        var sameRows: [String: (table: String, renames: [String: String])] = [:]

        for snapshot in snapshots {
            pre.append(
                Step(
                    label: "keys \(snapshot.name)",
                    statements: ["CREATE TABLE main.\(snapshot.name) (k INTEGER PRIMARY KEY)", snapshot.sql]))
        }
        let triggers = try database.rows("SELECT name FROM main.sqlite_schema WHERE type = 'trigger'").compactMap { $0[0].text }
        if !triggers.isEmpty {
            pre.append(Step(label: "drop the old model's triggers", statements: triggers.map { "DROP TRIGGER main.\(SQL.quote($0))" }))
        }
        let views = try database.rows("SELECT name FROM main.sqlite_schema WHERE type = 'view'").compactMap { $0[0].text }
        if !views.isEmpty {
            pre.append(Step(label: "drop the old schema's views", statements: views.map { "DROP VIEW main.\(SQL.quote($0))" }))
        }

        for entity in written.entities {
            let source = entity.source.table, destination = entity.destination.table
            guard storeTables[source.uppercased()] != nil else { throw refuse("the store has no table \(source)", entity: entity.name) }
            guard targetTables[destination.uppercased()] != nil else {
                throw refuse("the target has no table \(destination)", entity: entity.name)
            }
            if destination.uppercased() != source.uppercased(), storeTables[destination.uppercased()] != nil,
                readers[destination.uppercased()] == nil
            {
                throw refuse("the store has a table \(destination) already, which the model's \(source) becomes", entity: entity.name)
            }
            consumed.insert(source.uppercased())
            produced.insert(destination.uppercased())
            let sourceColumns = try columns(source, "main"), targetColumns = try columns(destination, "tgt")
            func sourceColumn(_ name: String) -> ColumnInfo? {
                sourceColumns.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
            }
            func isTarget(_ name: String) -> Bool { targetColumns.contains { $0.name.caseInsensitiveCompare(name) == .orderedSame } }
            // Expressions over the store's own tables.
            let expressions = entity.columns.reduce(into: [String: String]()) { result, pair in
                result[pair.key.uppercased()] = pair.value.replacingOccurrences(
                    of: #"\bsrc\."#, with: "main.", options: [.regularExpression, .caseInsensitive])
            }
            let condition = entity.source.where?.replacingOccurrences(
                of: #"\bsrc\."#, with: "main.", options: [.regularExpression, .caseInsensitive])
            let key = (entity.destination.key ?? "").uppercased()

            var kept: Set<String> = [], renamedFrom: Set<String> = [], rebuild = false
            var added: [ColumnInfo] = [], renames: [(String, String)] = [], updates: [(String, String)] = []
            for column in targetColumns {
                let name = column.name.uppercased()
                let expression = expressions[name]
                var bare = expression?.trimmingCharacters(in: CharacterSet(charactersIn: "\"() ")).uppercased()
                // A system table's entity number written as the number it has already.
                if name == "Z_ENT", let literal = bare.flatMap(Int64.init), literal == storeEntities?.root(ofTable: source)?.number {
                    bare = name
                }
                if name == key || (expression == nil && sourceColumn(column.name) != nil && name == key) {
                    if sourceColumn(column.name) == nil { rebuild = true }
                    kept.insert(name)
                    continue
                }
                if let existing = sourceColumn(column.name) {
                    if existing.type.caseInsensitiveCompare(column.type) != .orderedSame { rebuild = true }
                    kept.insert(name)
                    // A derived attribute's column, which the copy path leaves NULL for its step to
                    // fill: decided below, with the step.
                    if derivedColumns.contains("\(destination).\(column.name)".uppercased()), bare == nil || bare == "NULL" { continue }
                    if bare != name { updates.append((column.name, expression ?? column.defaultValueSQL ?? "NULL")) }
                } else if let bare, let from = sourceColumn(bare), !isTarget(bare), !renamedFrom.contains(bare),
                    from.type.caseInsensitiveCompare(column.type) == .orderedSame
                {
                    renamedFrom.insert(bare)
                    renames.append((from.name, column.name))
                } else if let expression, let read = try onlyColumnRead(expression, sourceColumns, rowOf: source),
                    !isTarget(read.name), !renamedFrom.contains(read.name.uppercased()), !kept.contains(read.name.uppercased()),
                    read.type.caseInsensitiveCompare(column.type) == .orderedSame
                {
                    // A value of one column the target does not keep (`Z2_LINKED` renumbered into
                    // `Z3_LINKED`): updated where it is, then renamed.
                    renamedFrom.insert(read.name.uppercased())
                    updates.append((read.name, expression))
                    renames.append((read.name, column.name))
                } else {
                    added.append(column)
                    if let expression, expression != "NULL" { updates.append((column.name, expression)) }
                }
            }
            // A column of the store the target does not have: only a rebuild removes it without
            // rewriting the whole table in one statement.
            if sourceColumns.contains(where: { !kept.contains($0.name.uppercased()) && !renamedFrom.contains($0.name.uppercased()) }) {
                rebuild = true
            }
            // A plain store's table whose definition changes in any way (a column, a constraint,
            // a default, a reference) is rebuilt with the target's own CREATE TABLE, so that the
            // table is the target's to the letter and its constraints hold for every row.
            if plain, Self.body(of: storeTables[source.uppercased()]) != Self.body(of: targetTables[destination.uppercased()]) {
                rebuild = true
            }

            let from = "main.\(SQL.quote(source))"
            if rebuild || !updates.isEmpty || !renames.isEmpty {
                try checkUniqueness(
                    of: destination, entity: entity.name, from: source, condition: condition, key: key,
                    storeKey: "s.\(SQL.quote(entity.source.key ?? entity.destination.key ?? "rowid"))",
                    value: { column in expressions[column.uppercased()] ?? sourceColumn(column).map { "s.\(SQL.quote($0.name))" } })
            }
            if rebuild {
                let temporary = "_chunkmigrate_new_\(destination)"
                guard let sql = targetTables[destination.uppercased()],
                    let range = sql.range(of: #"^CREATE TABLE\s+("[^"]+"|\S+)"#, options: [.regularExpression, .caseInsensitive])
                else {
                    throw refuse("the target's table \(destination) has no CREATE TABLE statement", entity: entity.name)
                }
                adds.append(
                    Step(label: "create \(temporary)", statements: ["CREATE TABLE main.\(SQL.quote(temporary))" + sql[range.upperBound...]])
                )
                // The key as it is in the store (a plain store's key may be named anew); a rowid
                // table without a named key keeps its rowids.
                let storeKey = "s.\(SQL.quote(entity.source.key ?? entity.destination.key ?? "rowid"))"
                // Columns the plan does not fill are left to their defaults, as the copy path leaves them.
                let filled = targetColumns.filter { $0.name.uppercased() == key || expressions[$0.name.uppercased()] != nil }
                var names = filled.map(\.name)
                var values = filled.map { column -> String in
                    column.name.uppercased() == key ? storeKey : "(\(expressions[column.name.uppercased()]!))"
                }
                if entity.destination.key == nil, let shape = try database.tableSchema(destination, in: "tgt"), !shape.isWithoutRowid,
                    shape.rowidAlias == nil
                {
                    names.insert("rowid", at: 0)
                    values.insert(storeKey, at: 0)
                }
                rows.append(
                    (
                        Step(
                            label: "rebuild \(destination)", table: source,
                            statements: [
                                "INSERT INTO main.\(SQL.quote(temporary)) (\(names.map(SQL.quote).joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) "
                                    + "FROM \(from) AS s WHERE s.rowid > ?1 AND s.rowid <= ?2" + (condition.map { " AND (\($0))" } ?? ""),
                                "DELETE FROM \(from) WHERE rowid > ?1 AND rowid <= ?2",
                            ]), try reads(values, where: condition, rowOf: source)
                    ))
                drops.append(source)
                tableRenames.append((temporary, destination))
                touchedTables.append(destination)
                continue
            }
            if !added.isEmpty {
                adds.append(
                    Step(
                        label: "add columns to \(source)",
                        statements: added.map { "ALTER TABLE \(from) ADD COLUMN \(SQL.quote($0.name)) \($0.type)" }))
            }
            if let condition {
                rows.append(
                    (
                        Step(
                            label: "leave out rows of \(source)", table: source,
                            statements: [
                                "DELETE FROM \(from) AS s WHERE s.rowid > ?1 AND s.rowid <= ?2 AND NOT ifnull((\(condition)), 0)"
                            ]), try reads([], where: condition, rowOf: source)
                    ))
            }
            if !updates.isEmpty {
                let assignments = updates.map { "\(SQL.quote($0.0)) = (\($0.1))" }
                rows.append(
                    (
                        Step(
                            label: "update \(source)", table: source,
                            statements: [
                                "UPDATE \(from) AS s SET \(assignments.joined(separator: ", ")) WHERE s.rowid > ?1 AND s.rowid <= ?2"
                            ]), try reads(updates.map(\.1), where: nil, rowOf: source)
                    ))
            }
            columnRenames += renames.map { "ALTER TABLE \(from) RENAME COLUMN \(SQL.quote($0.0)) TO \(SQL.quote($0.1))" }
            if updates.isEmpty && condition == nil {
                sameRows[source.uppercased()] = (
                    destination.uppercased(),
                    Dictionary(renames.map { ($0.0.uppercased(), $0.1.uppercased()) }, uniquingKeysWith: { a, _ in a })
                )
            }
            if source.uppercased() != destination.uppercased() {
                tableRenames.append((source, destination))
            }
            if source.uppercased() == destination.uppercased(), updates.isEmpty && renames.isEmpty && condition == nil {
                rowsKept.insert(destination.uppercased())
                addedColumns[destination.uppercased()] = Set(added.map { $0.name.uppercased() })
            }
            if source.uppercased() == destination.uppercased(), added.isEmpty && updates.isEmpty && renames.isEmpty && condition == nil {
                untouched.insert(source.uppercased())
            } else {
                touchedTables.append(destination)
            }
        }

        // Tables the plan does not read go, as the copy path leaves them behind; tables of the
        // target no step makes are created empty.
        for (name, _) in storeTables where !consumed.contains(name) && !bookkeeping.contains(name) {
            drops.append(
                try database.scalar("SELECT name FROM main.sqlite_schema WHERE type = 'table' AND upper(name) = ?1", .text(name)).text
                    ?? name)
        }
        let createdTables = targetTables.filter { !produced.contains($0.key) && !bookkeeping.contains($0.key) }
        touchedTables += createdTables.keys
        // A derived value is computed but where it stays right: its column was in the store
        // already, and no table it reads (its own included) has rows or values that change.
        let derivedValues = (plan.coreData?.derived ?? []).filter { value in
            let table = value.table.uppercased()
            guard rowsKept.contains(table), addedColumns[table]?.contains(value.column.uppercased()) == false else { return true }
            // The tables it reads as SQLite resolves them; where the store cannot answer yet (a
            // table or column the change makes), it is computed.
            guard let read = try? database.tablesRead(in: "main", preparing: "SELECT (\(value.value)) FROM main.\(SQL.quote(value.table))")
            else {
                return true
            }
            return !read.allSatisfy { rowsKept.contains($0.uppercased()) }
        }
        touchedTables += derivedValues.map(\.table)
        for table in Set(touchedTables.map { $0.uppercased() }) where rowsKept.contains(table) {
            keptTables[table] = (addedColumns[table] ?? []).union(
                derivedValues.filter { $0.table.uppercased() == table }.map { $0.column.uppercased() })
        }
        // Where a computed one fills only some rows of its table (an entity of a tree), the
        // others are NULL, as the copy path leaves them.
        for value in derivedValues
        where value.rows != nil && addedColumns[value.table.uppercased()]?.contains(value.column.uppercased()) != true {
            let table = "main.\(SQL.quote(value.table))"
            rows.append(
                (
                    Step(
                        label: "clear \(value.attribute)", table: value.table,
                        statements: [
                            "UPDATE \(table) SET \(SQL.quote(value.column)) = NULL WHERE rowid > ?1 AND rowid <= ?2"
                        ]), []
                ))
        }
        let created = createdTables.map(\.value).sorted()

        // Rows steps in an order where a step reading another table runs before any step that
        // changes that table.
        // A step reading its own table would see the rows its earlier batches changed (or, in a
        // rebuild, deleted), where the copy path reads them as they were.
        for (step, reads) in rows {
            if let table = step.table, reads.contains(table.uppercased()),
                let entity = written.entities.first(where: { $0.source.table.caseInsensitiveCompare(table) == .orderedSame })
            {
                throw refuse(
                    "\(entity.name) reads other rows of \(table), its own table, which a batch changes as it goes", entity: entity.name)
            }
        }
        var ordered: [Step] = []
        var pending = rows
        while !pending.isEmpty {
            guard
                let next = pending.indices.first(where: { index in
                    let table = pending[index].step.table?.uppercased() ?? ""
                    return !pending.indices.contains {
                        $0 != index && pending[$0].reads.contains(table) && pending[$0].step.table?.uppercased() != table
                    }
                })
            else {
                throw refuse(
                    "tables read each other's values while both change: \(pending.compactMap(\.step.table).joined(separator: ", "))")
            }
            ordered.append(pending.remove(at: next).step)
        }

        // Indexes: the store's go (but on tables that do not change and that the target has as
        // they are), the target's are built at the end. An index of a table whose rows stay that
        // indexes what one of the target's does, column for column, is that index under another
        // name (a join table renamed with its columns): it is taken as it is and renamed (SQLite
        // renames no index), not dropped and built again.
        let storeIndexes = try database.rows("SELECT name, tbl_name, sql FROM main.sqlite_schema WHERE type = 'index' AND sql IS NOT NULL")
        let targetIndexes = try database.rows(
            "SELECT name, sql, tbl_name FROM tgt.sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY rowid")
        var keptIndexes: Set<String> = []
        // The target's indexes taken from the store, with the store's names.
        var takenIndexes: [String: String] = [:]
        var others: [(name: String, table: String)] = []
        for index in storeIndexes {
            guard let name = index[0].text, let table = index[1].text?.uppercased() else { continue }
            if untouched.contains(table), targetIndexes.contains(where: { $0[0].text == name && $0[1].text == index[2].text }) {
                keptIndexes.insert(name)
            } else {
                others.append((name, table))
            }
        }
        let keptAsTheyAre = keptIndexes
        // Those of the same name first, then any.
        for sameName in [true, false] {
            for (name, table) in others where !takenIndexes.values.contains(name) {
                guard let same = sameRows[table],
                    let signature = try Self.indexSignature(name, in: "main", of: database, renaming: same.renames),
                    let target = try targetIndexes.first(where: { row in
                        guard let targetName = row[0].text, !keptIndexes.contains(targetName), !sameName || targetName == name,
                            row[2].text?.uppercased() == same.table
                        else { return false }
                        return try Self.indexSignature(targetName, in: "tgt", of: database) == signature
                    })?[0].text
                else { continue }
                keptIndexes.insert(target)
                takenIndexes[target] = name
            }
        }
        // A name the store's indexes still hold when the index steps run is not taken: such
        // an index is built.
        while let (target, _) = takenIndexes.first(where: { target, old in
            target.uppercased() != old.uppercased()
                && (keptAsTheyAre.union(takenIndexes.values)).contains { $0.uppercased() == target.uppercased() }
        }) {
            takenIndexes[target] = nil
            keptIndexes.remove(target)
        }
        let dropIndexes = others.map(\.name).filter { !takenIndexes.values.contains($0) }.map { name in
            (name: name, sql: "DROP INDEX main.\(SQL.quote(name))")
        }
        // One index a transaction: dropping one journals its pages, so the disk a step needs
        // beyond the store is the largest index, not all of them.
        pre += dropIndexes.map { Step(label: "drop index \($0.name)", statements: [$0.sql]) }
        var post: [Step] = []
        if !drops.isEmpty || !snapshots.isEmpty || !columnRenames.isEmpty || !tableRenames.isEmpty || !created.isEmpty {
            // Through names of the job's own, so that two tables may take each other's names.
            var statements = (drops + snapshots.map(\.name)).map { "DROP TABLE main.\(SQL.quote($0))" } + columnRenames
            statements += tableRenames.map { "ALTER TABLE main.\(SQL.quote($0.from)) RENAME TO \(SQL.quote("_chunkmigrate_mv_" + $0.to))" }
            statements += tableRenames.map { "ALTER TABLE main.\(SQL.quote("_chunkmigrate_mv_" + $0.to)) RENAME TO \(SQL.quote($0.to))" }
            statements += created
            post.append(Step(label: "drop, rename and create tables", statements: statements))
        }
        // Core Data's indexes on `Z_ENT` first, while the check beside the job may still read
        // the rows (``CoreDataJobPart/buildOrder(_:)``).
        let builds = targetIndexes.compactMap { row -> Step? in
            guard let name = row[0].text, let sql = row[1].text, !keptIndexes.contains(name) else { return nil }
            return Step(label: "index \(name)", statements: [sql], afterRows: true, index: name)
        }
        // Those taken from the store first: each is a write of the schema, not a build.
        let taken = targetIndexes.compactMap { row -> Step? in
            guard let name = row[0].text, let sql = row[1].text, let old = takenIndexes[name] else { return nil }
            return Step(label: "index \(name)", statements: [sql], afterRows: true, index: name, takes: old)
        }
        let indexSteps =
            taken + builds.filter { !CheckpointStore.sortsWithHelper($0.statements[0]) }
            + builds.filter { CheckpointStore.sortsWithHelper($0.statements[0]) }
        let derived = derivedValues.map { value in
            Step(
                label: "derive \(value.attribute)", table: value.table,
                statements: [
                    "UPDATE main.\(SQL.quote(value.table)) SET \(SQL.quote(value.column)) = \(value.value) WHERE rowid > ?1 AND rowid <= ?2"
                        + (value.rows.map { " AND (\($0))" } ?? "")
                ], afterRows: true)
        }
        var last = try plain ? finishPlain() : finish(written)
        last.afterRows = true
        return pre + adds + ordered + post + indexSteps + derived + [last]
    }

    /// What the index `name` of `schema` holds, as SQLite reads its declaration: whether it is
    /// unique, and each term's column (its name after `renaming`, in capitals), order, collation
    /// and whether it is a key; nil for an index with an expression or a `WHERE`, or none. Two
    /// indexes of the same rows with the same signature hold the same entries.
    static func indexSignature(
        _ name: String, in schema: String, of database: Database, renaming renames: [String: String] = [:]
    ) throws(SQLiteError) -> String? {
        guard
            let table = try database.scalar(
                "SELECT tbl_name FROM \(schema).sqlite_schema WHERE type = 'index' AND name = ?1", .text(name)
            ).text,
            let list = try database.rows(
                "SELECT \"unique\", partial FROM pragma_index_list(?1, ?2) WHERE name = ?3", .text(table), .text(schema), .text(name)
            ).first, list[1].integer == 0
        else { return nil }
        var terms: [String] = []
        for term in try database.rows(
            "SELECT cid, name, \"desc\", coll, key FROM pragma_index_xinfo(?1, ?2) ORDER BY seqno", .text(name), .text(schema))
        {
            let column = term[0].integer ?? -2
            guard column >= -1 else { return nil }
            let named = column == -1 ? "rowid" : (term[1].text?.uppercased()).map { renames[$0] ?? $0 } ?? "?"
            terms.append("\(named) \(term[2].integer ?? 0) \(term[3].text?.uppercased() ?? "") \(term[4].integer ?? 0)")
        }
        return "unique \(list[0].integer ?? 0): " + terms.joined(separator: ", ")
    }

    /// A CREATE TABLE statement after the table's name, spaces made one: what two tables are
    /// declared as, whatever their names.
    static func body(of sql: String?) -> String? {
        guard let sql, let range = sql.range(of: #"^CREATE TABLE\s+("[^"]+"|\S+)"#, options: [.regularExpression, .caseInsensitive]) else {
            return sql
        }
        return sql[range.upperBound...].split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// A plain store's tables as the target declares them, each by name and definition: a store
    /// whose tables are these is at the target's schema.
    static func tables(_ schema: String, in database: Database) throws(SQLiteError) -> [String: String] {
        var result: [String: String] = [:]
        for row in try database.rows(
            "SELECT name, sql FROM \(schema).sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
        {
            if let name = row[0].text { result[name.uppercased()] = body(of: row[1].text) ?? "" }
        }
        return result
    }

    /// The last step of a plain store: the target's views and triggers.
    private func finishPlain() throws -> Step {
        // Views first (a trigger may be INSTEAD OF one), each kind in the order the target made them.
        let statements = try database.rows(
            """
            SELECT sql FROM tgt.sqlite_schema WHERE type IN ('trigger', 'view') AND sql IS NOT NULL
            ORDER BY CASE type WHEN 'view' THEN 0 ELSE 1 END, rowid
            """
        ).compactMap { $0[0].text }
        return Step(label: "the new schema's triggers and views", statements: statements)
    }

    /// Before anything is written: the rows as the job will leave them meet every unique index
    /// and constraint the target has on `table` (the copy path finds a duplicate in the batch that
    /// writes it, with the old store intact; in place would find it at the end). NULLs are
    /// distinct in SQLite's unique indexes, so a tuple with one is never a duplicate.
    private func checkUniqueness(
        of table: String, entity: String, from source: String, condition: String?, key: String,
        storeKey: String, value: (String) -> String?
    ) throws {
        let from = "main.\(SQL.quote(source))"
        let indexes = try database.rows("SELECT name, partial FROM pragma_index_list(?1, 'tgt') WHERE \"unique\" = 1", .text(table))
        for index in indexes where index[1].integer == 0 {
            guard let name = index[0].text else { continue }
            let columns = try database.rows(
                "SELECT cid, name, coll FROM pragma_index_xinfo(?1, 'tgt') WHERE key = 1 ORDER BY seqno", .text(name))
            var terms: [String] = []
            // The store's columns each term is, with its collation, while every term is one.
            var storeColumns: [(column: String, collation: String)]? = []
            for column in columns {
                guard (column[0].integer ?? -1) >= 0, let columnName = column[1].text else { terms = []; break }
                let expression = columnName.uppercased() == key ? storeKey : (value(columnName) ?? "NULL")
                let collation = column[2].text ?? "BINARY"
                terms.append("(\(expression)) COLLATE \(SQL.quote(collation))")
                if let bare = try storeColumn(expression, of: source) {
                    storeColumns?.append((bare, collation.uppercased()))
                } else {
                    storeColumns = nil
                }
            }
            // An index on an expression, or on the key alone, is left to SQLite.
            guard !terms.isEmpty, !(columns.count == 1 && columns[0][1].text?.uppercased() == key) else { continue }
            // Columns the store holds unique already, with the same collations, stay unique.
            if let storeColumns, try storeHoldsUnique(source, storeColumns) { continue }
            let filled = terms.map { "(\($0)) IS NOT NULL" } + [condition.map { "(\($0))" }].compactMap { $0 }
            let duplicate = try database.rows(
                """
                SELECT \(terms.joined(separator: ", ")), count(*) FROM \(from) AS s WHERE \(filled.joined(separator: " AND "))
                GROUP BY \(terms.indices.map { String($0 + 1) }.joined(separator: ", ")) HAVING count(*) > 1 LIMIT 1
                """
            ).first
            if let duplicate {
                let values = duplicate.dropLast().map { "\($0)" }.joined(separator: ", ")
                throw MigrationError(
                    .batch,
                    "the migrated rows would break the target's unique index \(name) on \(table): \(duplicate.last?.integer ?? 2) rows would have (\(values)); fix those rows (nothing was written)",
                    entity: entity, file: storePath)
            }
        }
    }

    /// The column of the store's `table` that `expression` is, bare or as `s."C"`; nil for any
    /// other expression.
    private func storeColumn(_ expression: String, of table: String) throws -> String? {
        var name = expression.trimmingCharacters(in: .whitespaces)
        if name.hasPrefix("s.") { name.removeFirst(2) }
        if name.hasPrefix("\""), name.hasSuffix("\""), name.count > 2 {
            name = String(name.dropFirst().dropLast())
            guard !name.contains("\"") else { return nil }
        } else {
            guard name.first.map({ $0.isLetter || $0 == "_" }) == true, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" })
            else { return nil }
        }
        let known = try database.rows(
            "SELECT name FROM pragma_table_info(?1, 'main') WHERE upper(name) = upper(?2)", .text(table), .text(name))
        return known.first?[0].text
    }

    /// Whether a unique index of the store's `table`, on all its rows, has exactly `columns` as
    /// its key, each with the same collation.
    private func storeHoldsUnique(_ table: String, _ columns: [(column: String, collation: String)]) throws -> Bool {
        let wanted = Set(columns.map { "\($0.column.uppercased()) \($0.collation)" })
        for index in try database.rows("SELECT name FROM pragma_index_list(?1, 'main') WHERE \"unique\" = 1 AND partial = 0", .text(table))
        {
            guard let name = index[0].text else { continue }
            let key = try database.rows(
                "SELECT upper(name) || ' ' || upper(coll), cid FROM pragma_index_xinfo(?1, 'main') WHERE key = 1", .text(name))
            guard key.allSatisfy({ ($0[1].integer ?? -1) >= 0 }) else { continue }
            if Set(key.compactMap { $0[0].text }) == wanted && key.count == columns.count { return true }
        }
        return false
    }

    /// The one column of the row an expression reads, where it reads exactly one and no other table.
    private func onlyColumnRead(_ expression: String, _ columns: [ColumnInfo], rowOf table: String) throws -> ColumnInfo? {
        guard try reads([expression], where: nil, rowOf: table).isEmpty else { return nil }
        var found: Set<String> = []
        _ = try? SQLIdentifiers.replacing(in: expression) { name, qualifier in
            if qualifier == nil || qualifier?.lowercased() == "s",
                columns.contains(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame })
            {
                found.insert(name.uppercased())
            }
            return nil
        }
        guard found.count == 1 else { return nil }
        return columns.first { $0.name.uppercased() == found.first! }
    }

    /// The store's tables (in capitals) that expressions over a row of `table` read besides
    /// the row itself, as SQLite resolves them (``Database/tablesRead(in:preparing:)``): the
    /// row is given by an empty temporary table of the same columns, so that a read of `table`
    /// in the result is a read of its other rows. The job's own key sets count as no table.
    private func reads(_ expressions: [String], where condition: String?, rowOf table: String) throws -> Set<String> {
        let row = "_chunkmigrate_row_\(table)"
        if !temporaryTables.contains(row) {
            try database.execute("CREATE TEMP TABLE \(SQL.quote(row)) AS SELECT * FROM main.\(SQL.quote(table)) WHERE 0")
            temporaryTables.insert(row)
        }
        let keySets = #"\bmain\.(_chunkmigrate_keys_[0-9]+)\b"#
        var keyTables: Set<String> = []
        for text in expressions + [condition ?? ""] {
            var rest = text[...]
            while let range = rest.range(of: keySets, options: .regularExpression) {
                keyTables.insert(String(rest[range].dropFirst("main.".count)))
                rest = rest[range.upperBound...]
            }
        }
        for name in keyTables where !temporaryTables.contains(name) {
            try database.execute("CREATE TEMP TABLE \(SQL.quote(name)) (k INTEGER PRIMARY KEY)")
            temporaryTables.insert(name)
        }
        func prepared(_ text: String) -> String {
            text.replacingOccurrences(of: keySets, with: "temp.$1", options: .regularExpression)
        }
        let values = expressions.isEmpty ? "1" : expressions.map { "(\(prepared($0)))" }.joined(separator: ", ")
        let sql = "SELECT \(values) FROM temp.\(SQL.quote(row)) AS s" + (condition.map { " WHERE (\(prepared($0)))" } ?? "")
        do {
            return Set(try database.tablesRead(in: "main", preparing: sql).map { $0.uppercased() })
        } catch {
            throw MigrationError(
                .invalidPlan, "SQLite rejects an expression over \(table): \(error.message)", file: storePath, sql: sql, cause: error)
        }
    }

    /// Temporary tables made to read expressions by (``reads(_:where:rowOf:)``), dropped once the
    /// steps are worked out: the job's statements must find the store's tables by their names.
    private var temporaryTables: Set<String> = []

    /// The last step, one transaction: the target's bookkeeping with the store's identity, its
    /// model cache and triggers; the job's tables gone.
    private func finish(_ plan: MigrationPlan) throws -> Step {
        let store = try CoreDataEntities.read(database, schema: "main", file: storePath)
        let target = try CoreDataEntities.read(database, schema: "tgt", file: targetPath)
        var statements = [
            "DELETE FROM main.Z_PRIMARYKEY",
            "INSERT INTO main.Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM tgt.Z_PRIMARYKEY",
        ]
        // Z_MAX ahead of the keys: the store's high-water mark, or the largest key, whichever is larger.
        for entity in plan.entities {
            guard let to = target.root(ofTable: entity.destination.table) else { continue }
            let old = store.root(ofTable: entity.source.table)?.max ?? 0
            statements.append(
                "UPDATE main.Z_PRIMARYKEY SET Z_MAX = max(Z_MAX, \(old), (SELECT ifnull(max(Z_PK), 0) FROM main.\(SQL.quote(entity.destination.table)))) WHERE Z_ENT = \(to.number)"
            )
        }
        for entity in store.system.values {
            guard let to = target.systemEntity(named: entity.name) else { continue }
            statements.append("UPDATE main.Z_PRIMARYKEY SET Z_MAX = max(Z_MAX, \(entity.max)) WHERE Z_ENT = \(to.number)")
        }
        // The target's metadata with the store's identity and the app's own keys.
        let own = try CoreDataMetadata.read(database, schema: "main", file: storePath)
        let new = try CoreDataMetadata.read(database, schema: "tgt", file: targetPath)
        guard let uuid = own.uuid ?? own.storeUUID else { throw MigrationError(.store, "Z_METADATA names no store UUID", file: storePath) }
        var plist = new.plist ?? [:]
        if plist["NSStoreUUID"] != nil { plist["NSStoreUUID"] = uuid }
        for (key, value) in own.plist ?? [:] where !CoreDataMetadata.isCoreDataKey(key) { plist[key] = value }
        let bytes: Data
        do { bytes = try CoreDataMetadata.encoded(plist) } catch {
            throw MigrationError(.store, "cannot encode the migrated store's metadata: \(error)", file: storePath, cause: error)
        }
        statements += [
            "DELETE FROM main.Z_METADATA",
            "INSERT INTO main.Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (\(new.version), '\(uuid.replacingOccurrences(of: "'", with: "''"))', x'\(bytes.map { String(format: "%02x", $0) }.joined())')",
        ]
        let hasCache = try database.scalar("SELECT count(*) FROM main.sqlite_schema WHERE name = 'Z_MODELCACHE'").integer == 1
        if try database.scalar("SELECT count(*) FROM tgt.sqlite_schema WHERE name = 'Z_MODELCACHE'").integer == 1 {
            if !hasCache, let sql = try database.scalar("SELECT sql FROM tgt.sqlite_schema WHERE name = 'Z_MODELCACHE'").text {
                statements.append(sql)
            }
            statements += ["DELETE FROM main.Z_MODELCACHE", "INSERT INTO main.Z_MODELCACHE SELECT * FROM tgt.Z_MODELCACHE"]
        }
        statements += try database.rows("SELECT sql FROM tgt.sqlite_schema WHERE type = 'trigger' ORDER BY name").compactMap { $0[0].text }
        return Step(label: "the new model's bookkeeping", statements: statements)
    }
}
