import Foundation

extension CoreDataLayout {
    /// The tables of a store that are not the model's entity or join tables.
    package struct OtherTables: Sendable, Equatable {
        /// Persistent history (`ACHANGE`, `ATRANSACTION`, `ATRANSACTIONSTRING`): entities 16001+
        /// of `Z_PRIMARYKEY`.
        package var history: [String] = []
        /// CloudKit mirroring (`ANSCK...`): entities 16001+ of `Z_PRIMARYKEY`, beside history.
        package var mirroring: [String] = []
        /// R-tree fetch indexes (`Z_RT_<Entity>_<index>`) and their shadow tables, which Core Data
        /// keeps by triggers.
        package var fetchIndexes: [String] = []
        /// Anything else: tables Core Data did not make.
        package var unknown: [String] = []
    }

    /// The layout checked against the store open as `schema` in `database`: every entity has the
    /// number `Z_PRIMARYKEY` gives it, every table and column the model implies is there with its
    /// type, and no column of an entity or join table is left unexplained.
    ///
    /// - Parameter known: the store's entities where the caller read them already (the check
    ///   does, and while a job copies it must not read `Z_PRIMARYKEY`, which the job writes).
    /// - Returns: the layout, and the store's other tables.
    /// - Throws: ``MigrationError`` naming `file`, the entity, the property and the column where the
    ///   store does not fit its model (a model edited after the store was written, or the wrong
    ///   model given).
    func resolved(against database: Database, schema: String, file: String, entities known: CoreDataEntities? = nil) throws -> (
        CoreDataLayout, OtherTables
    ) {
        var resolved = self
        let tableNames: [String]
        var primaryKeys: [[SQLiteValue]] = []
        do {
            tableNames = try database.rows(
                "SELECT name FROM \(schema).sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ).compactMap { $0[0].text }
            if let known {
                primaryKeys = known.entities.values.sorted { $0.number < $1.number }.map {
                    [.integer($0.number), .text($0.name), .integer($0.parent ?? 0)]
                }
            } else if tableNames.contains("Z_PRIMARYKEY") {
                primaryKeys = try database.rows(
                    "SELECT Z_ENT, Z_NAME, Z_SUPER FROM \(schema).Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_ENT")
            }
        } catch {
            throw MigrationError(.store, "cannot read the store's schema: \(error.message)", file: file, sql: error.sql, cause: error)
        }
        guard tableNames.contains("Z_PRIMARYKEY") else {
            throw MigrationError(.store, "not a Core Data store: it has no Z_PRIMARYKEY table", file: file)
        }
        try checkEntityNumbers(primaryKeys, file: file)
        let byUpperName = Dictionary(tableNames.map { ($0.uppercased(), $0) }, uniquingKeysWith: { a, _ in a })
        var claimed = Self.bookkeepingTables

        for table in tables.values.sorted(by: { $0.root < $1.root }) {
            let rootName = entities[table.root]?.name ?? table.name
            guard let real = byUpperName[table.name.uppercased()] else {
                throw MigrationError(.store, "the store has no table \(table.name) for entity \(rootName) of its model", file: file)
            }
            claimed.insert(real)
            let columns = try Self.columns(database, schema: schema, table: real, file: file)
            for column in table.columns {
                guard let found = columns.first(where: { $0.name.caseInsensitiveCompare(column.name) == .orderedSame }) else {
                    throw MigrationError(
                        .store,
                        "\(real) has no column \(column.name) for \(describe(column.role, root: rootName)) of the store's model: the store does not fit the model (was the model edited after the store was written?)",
                        file: file)
                }
                guard found.type.caseInsensitiveCompare(column.type) == .orderedSame else {
                    throw MigrationError(
                        .store,
                        "\(real).\(found.name) is declared \(found.type) but \(describe(column.role, root: rootName)) is stored as \(column.type): the store does not fit its model",
                        file: file)
                }
            }
            for column in columns where table.column(named: column.name) == nil {
                throw MigrationError(
                    .store,
                    "\(real).\(column.name) belongs to no property of entity \(rootName) or its sub-entities in the store's model: the store does not fit the model (was the model edited after the store was written?)",
                    file: file)
            }
            resolved.tables[table.root]?.name = real
            for number in descendants(of: table.root) { resolved.entities[number]?.table = real }
        }

        for (index, join) in joinTables.enumerated() {
            guard let real = byUpperName[join.name.uppercased()] else {
                let sides = join.sides.compactMap { side in side.property.map { "\(side.entity).\($0)" } }.joined(separator: " and ")
                throw MigrationError(
                    .store, "the store has no join table \(join.name) for the many-to-many \(sides) of its model", file: file)
            }
            claimed.insert(real)
            let columns = try Self.columns(database, schema: schema, table: real, file: file).map { $0.name.uppercased() }
            guard Set(columns) == Set(join.columns.map { $0.uppercased() }) else {
                throw MigrationError(
                    .store,
                    "join table \(real) has columns \(columns.joined(separator: ", ")) where its model implies \(join.columns.joined(separator: ", "))",
                    file: file)
            }
            resolved.joinTables[index].name = real
        }

        var others = OtherTables()
        for name in tableNames where !claimed.contains(name) {
            if name.hasPrefix("_chunkmigrate_") { continue }
            if ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"].contains(name.uppercased()) {
                others.history.append(name)
            } else if name.uppercased().hasPrefix("ANSCK") {
                others.mirroring.append(name)
            } else if name.hasPrefix("Z_RT_") {
                others.fetchIndexes.append(name)
            } else {
                others.unknown.append(name)
            }
        }
        return (resolved, others)
    }

    /// `Z_PRIMARYKEY` must number the model's entities as Core Data does. A row that names an
    /// entity as it was before a rename, with the number and parent the model gives the entity
    /// now, is the entity's: Core Data reads `Z_PRIMARYKEY` by number, never by name
    /// (`CoreDataEntities/staleNames`).
    private func checkEntityNumbers(_ rows: [[SQLiteValue]], file: String) throws {
        var stored: [String: (Int64, Int64)] = [:]
        for row in rows {
            guard let number = row[0].integer, let name = row[1].text else { continue }
            stored[name] = (number, row[2].integer ?? 0)
        }
        for entity in entities.values where stored[entity.name] == nil {
            guard
                let stale = stored.first(where: { self.entity(named: $0.key) == nil && $0.value == (entity.number, entity.parent ?? 0) })?
                    .key
            else { continue }
            stored[entity.name] = stored.removeValue(forKey: stale)
        }
        for entity in entities.values.sorted(by: { $0.number < $1.number }) {
            guard let (number, parent) = stored[entity.name] else {
                throw MigrationError(
                    .store, "Z_PRIMARYKEY does not list entity \(entity.name) of the store's model: the store does not fit the model",
                    file: file)
            }
            guard number == entity.number, parent == (entity.parent ?? 0) else {
                throw MigrationError(
                    .store,
                    "Z_PRIMARYKEY numbers entity \(entity.name) \(number) (parent \(parent)) where its model gives \(entity.number) (parent \(entity.parent ?? 0)): the store does not fit the model",
                    file: file)
            }
        }
        if let extra = stored.keys.sorted().first(where: { entity(named: $0) == nil }) {
            throw MigrationError(.store, "Z_PRIMARYKEY lists entity \(extra), which the store's model does not have", file: file)
        }
    }

    /// What a column holds, in the user's words.
    func describe(_ role: Column.Role, root: String) -> String {
        switch role {
        case .key: "the key of \(root)"
        case .entityNumber: "the entity number of \(root)"
        case .version: "the version of \(root)"
        case let .attribute(entity, property): "attribute \(entity).\(property)"
        case let .toOne(entity, property): "relationship \(entity).\(property)"
        case let .toOneEntity(entity, property): "the target entity of \(entity).\(property)"
        case let .toOneOrder(entity, property): "the order of \(entity).\(property) in its inverse"
        case let .toManyOwner(entity, property): "the owner of \(entity).\(property)"
        case let .toManyOrder(entity, property): "the order of \(entity).\(property)"
        }
    }

    static func columns(_ database: Database, schema: String, table: String, file: String) throws -> [ColumnInfo] {
        do {
            return try database.tableSchema(table, in: schema)?.columns ?? []
        } catch {
            throw MigrationError(.store, "cannot read table \(table): \(error.message)", file: file, sql: error.sql, cause: error)
        }
    }
}
