import Foundation

/// Infers a plan between two Core Data stores (see ``MigrationPlan/infer(source:destination:renames:)``),
/// on a connection with the destination as `main` and the source attached as `src`.
struct CoreDataInference {
    let database: Database
    let sourcePath: String
    let destinationPath: String
    let renames: [String: String]
    private var decisions: [String] = []
    private var notes: [String] = []

    init(database: Database, sourcePath: String, destinationPath: String, renames: [String: String]) {
        self.database = database
        self.sourcePath = sourcePath
        self.destinationPath = destinationPath
        self.renames = renames
    }

    mutating func infer() throws -> InferredPlan {
        let source = try CoreDataLayout.read(database, schema: "src", file: sourcePath)
        let destination = try CoreDataLayout.read(database, schema: "main", file: destinationPath)

        // Entities by name, renames given by the caller.
        var sourceOf: [Int64: Int64] = [:]
        for entity in destination.entities.values.sorted(by: { $0.number < $1.number }) {
            let name = renames[entity.name] ?? entity.name
            if let from = source.entity(named: name) {
                sourceOf[entity.number] = from.number
                let renamed = name == entity.name ? "" : " (renamed from \(name))"
                decisions.append("entity \(entity.name)\(renamed): number \(from.number) -> \(entity.number)")
            } else if renames[entity.name] != nil {
                throw MigrationError(.invalidPlan, "renames: the source model has no entity \"\(name)\" (for \(entity.name))",
                                     file: sourcePath)
            } else {
                notes.append("entity \(entity.name) (\(entity.number)): new in the destination model; left empty")
            }
        }
        let mapped = Set(sourceOf.values)
        for entity in source.entities.values.sorted(by: { $0.number < $1.number }) where !mapped.contains(entity.number) {
            let rows = try count(schema: "src", table: entity.table, entities: [entity.number])
            notes.append("entity \(entity.name) (\(entity.number)): no counterpart in the destination model; its \(rows) rows are not copied")
        }
        guard !sourceOf.isEmpty else {
            throw MigrationError(.store, "the two stores' models have no entity in common: they are not two versions of one model",
                                 file: destinationPath)
        }

        var entities: [EntityMapping] = []
        for table in destination.tables.values.sorted(by: { $0.name < $1.name }) {
            let tree = destination.descendants(of: table.root)
            let sourceEntities = tree.compactMap { sourceOf[$0] }
            guard !sourceEntities.isEmpty else { continue }
            let sourceRoots = Set(sourceEntities.compactMap { source.entities[$0]?.root })
            guard sourceRoots.count == 1, let sourceRoot = sourceRoots.first, let from = source.tables[sourceRoot] else {
                let names = sourceRoots.compactMap { source.entities[$0]?.name }.sorted()
                notes.append("table \(table.name): its entities come from several source entity trees (\(names.joined(separator: ", "))); not inferred, write these entities in the plan")
                continue
            }
            entities.append(try entity(into: table, from: from, sourceOf: sourceOf, source: source, destination: destination))
        }

        for join in destination.joinTables.sorted(by: { $0.name < $1.name }) {
            if let mapping = try joinEntity(join, sourceOf: sourceOf, source: source, destination: destination) {
                entities.append(mapping)
            }
        }
        let copiedJoins = Set(entities.map(\.source.table))
        for join in source.joinTables where !copiedJoins.contains(join.name) {
            notes.append("join table \(join.name): no counterpart in the destination model; not copied")
        }
        for table in source.historyTables {
            notes.append("\(table): persistent history is not copied (Core Data starts a new history in the migrated store)")
        }
        for table in source.otherTables {
            notes.append("table \(table): not a Core Data entity or join table; not copied")
        }
        if let external = CoreDataInference.externalDataFolder(of: sourcePath) {
            notes.append("\(external): the store keeps binary data in external files; chunkmigrate does not copy them yet and refuses to run on this store")
        }

        var names: [String: String] = [:]
        for (to, from) in sourceOf {
            if let toName = destination.entities[to]?.name, let fromName = source.entities[from]?.name { names[toName] = fromName }
        }
        return InferredPlan(plan: MigrationPlan(entities: entities, coreData: CoreDataMapping(entities: names)),
                            decisions: decisions, notes: notes)
    }

    /// The entity mapping of one destination entity tree's table.
    private mutating func entity(into table: CoreDataLayout.EntityTable, from: CoreDataLayout.EntityTable,
                                 sourceOf: [Int64: Int64], source: CoreDataLayout,
                                 destination: CoreDataLayout) throws -> EntityMapping {
        let rootName = destination.entities[table.root]!.name
        let sourceColumns = Dictionary(from.columns.map { ($0.name.uppercased(), $0) }, uniquingKeysWith: { a, _ in a })
        var columns: [String: String] = [:]
        var used: Set<String> = ["Z_PK"]
        for column in table.columns where column.name != "Z_PK" {
            let upper = column.name.uppercased()
            if upper == "Z_ENT" {
                columns[column.name] = "coredata_entity(Z_ENT)"
                used.insert("Z_ENT")
                continue
            }
            // A polymorphic entity column: Z<n>_<REL> in both, n the numbers of each model.
            if let (_, rest) = CoreDataLayout.numbered(column.name, prefix: "Z"), rest.hasPrefix("_"),
               table.toOnes.contains(where: { $0.entityColumn == column.name }) {
                let relationship = "Z" + rest.dropFirst()
                if let old = from.toOnes.first(where: { $0.column.uppercased() == relationship.uppercased() })?.entityColumn {
                    columns[column.name] = "coredata_entity(\(SQL.quote(old)))"
                    used.insert(old.uppercased())
                    if old != column.name { decisions.append("\(table.name).\(column.name): entity numbers of \(from.name).\(old)") }
                } else if let key = sourceColumns[relationship.uppercased()] {
                    // The target gained sub-entities: the entity number is the target row's.
                    let target = table.toOnes.first { $0.entityColumn == column.name }?.target
                    if let target, let targetTable = destination.entities[target].flatMap({ sourceOf[$0.root] }).flatMap({ source.entities[$0]?.table }) {
                        columns[column.name] = "(SELECT coredata_entity(t.Z_ENT) FROM src.\(SQL.quote(targetTable)) AS t WHERE t.Z_PK = s.\(SQL.quote(key.name)))"
                        decisions.append("\(table.name).\(column.name): the entity number of the row \(key.name) points at")
                    } else {
                        notes.append("\(table.name).\(column.name): a new polymorphic column whose target is unknown; write it in the plan")
                    }
                } else {
                    notes.append("\(table.name).\(column.name): no to-one \(relationship) in the source; left empty")
                }
                continue
            }
            guard let old = sourceColumns[upper] else {
                notes.append("\(table.name).\(column.name): new attribute or relationship; left empty (NULL)")
                continue
            }
            used.insert(upper)
            columns[column.name] = try conversion(from: old, to: column, table: table.name)
        }
        for column in from.columns where !used.contains(column.name.uppercased()) {
            notes.append("\(from.name).\(column.name): no counterpart in \(table.name); not copied")
        }
        try checkNewUniqueness(table, from: from)

        // Source sub-entities with no counterpart are left out by name.
        let sourceTree = source.descendants(of: from.root)
        let kept = sourceTree.filter { number in sourceOf.values.contains(number) }
        var condition: String?
        if kept.count < sourceTree.count {
            let names = kept.compactMap { source.entities[$0]?.name }.sorted().map { "'\($0.replacingOccurrences(of: "'", with: "''"))'" }
            condition = "Z_ENT IN (SELECT Z_ENT FROM src.Z_PRIMARYKEY WHERE Z_NAME IN (\(names.joined(separator: ", "))))"
        }
        decisions.append("table \(from.name) -> \(table.name) (entity tree \(rootName)): \(columns.count) columns, keys preserved")
        return EntityMapping(name: rootName, source: .init(table: from.name, key: "Z_PK", where: condition),
                             destination: .init(table: table.name, key: "Z_PK"), keys: .preserve, columns: columns)
    }

    /// The expression copying `old` into `new`: the column itself, or a conversion where the
    /// declared type changed between numeric types.
    private mutating func conversion(from old: CoreDataLayout.Column, to new: CoreDataLayout.Column, table: String) throws -> String {
        let quoted = SQL.quote(old.name)
        let from = Self.storageClass(old.type), to = Self.storageClass(new.type)
        guard from != to else { return quoted }
        switch (from, to) {
        case ("INTEGER", "REAL"), ("NUMERIC", "REAL"):
            decisions.append("\(table).\(new.name): \(old.type) -> \(new.type), CAST(... AS REAL)")
            return "CAST(\(quoted) AS REAL)"
        case ("REAL", "INTEGER"), ("NUMERIC", "INTEGER"):
            decisions.append("\(table).\(new.name): \(old.type) -> \(new.type), CAST(... AS INTEGER) (truncates toward zero)")
            return "CAST(\(quoted) AS INTEGER)"
        case ("INTEGER", "NUMERIC"), ("REAL", "NUMERIC"):
            return quoted
        default:
            notes.append("\(table).\(new.name): type change \(old.type) -> \(new.type) is not inferred (lightweight migration does not convert it either); copied as it is, write the conversion in the plan")
            return quoted
        }
    }

    /// The storage a Core Data column type holds: `INTEGER` (integers, booleans), `REAL`
    /// (`FLOAT`, `DOUBLE`), `NUMERIC` (`TIMESTAMP`, `DECIMAL`), `TEXT` (`VARCHAR`), `BLOB`.
    static func storageClass(_ type: String) -> String {
        let type = type.uppercased()
        if type.contains("INT") { return "INTEGER" }
        if type.contains("CHAR") || type.contains("TEXT") || type.contains("CLOB") { return "TEXT" }
        if type.contains("BLOB") || type.isEmpty { return "BLOB" }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return "REAL" }
        return "NUMERIC"
    }

    /// Reports a uniqueness constraint of the destination that the source table did not have,
    /// with the number of source values that violate it.
    private mutating func checkNewUniqueness(_ table: CoreDataLayout.EntityTable, from: CoreDataLayout.EntityTable) throws {
        let old = Set(from.uniqueIndexes.map { $0.map { $0.uppercased() } })
        let sourceColumns = Set(from.columns.map { $0.name.uppercased() })
        for columns in table.uniqueIndexes where !old.contains(columns.map { $0.uppercased() }) {
            let list = columns.joined(separator: ", ")
            guard columns.allSatisfy({ sourceColumns.contains($0.uppercased()) }) else {
                notes.append("\(table.name)(\(list)): a new uniqueness constraint on new columns")
                continue
            }
            let quoted = columns.map(SQL.quote).joined(separator: ", ")
            let nonNull = columns.map { "\(SQL.quote($0)) IS NOT NULL" }.joined(separator: " AND ")
            let duplicates = try database.scalar("""
                SELECT count(*) FROM (SELECT 1 FROM src.\(SQL.quote(from.name)) WHERE \(nonNull)
                                      GROUP BY \(quoted) HAVING count(*) > 1)
                """).integer ?? 0
            notes.append(duplicates == 0
                ? "\(table.name)(\(list)): a new uniqueness constraint; the source's rows satisfy it"
                : "\(table.name)(\(list)): a new uniqueness constraint that \(duplicates) values of the source's rows violate: the batch that meets a second row with one of them fails, naming its source key")
        }
    }

    /// The entity mapping of a destination join table, from the source join table that joins the
    /// same entities by the same relationship.
    private mutating func joinEntity(_ join: CoreDataLayout.JoinTable, sourceOf: [Int64: Int64],
                                     source: CoreDataLayout, destination: CoreDataLayout) throws -> EntityMapping? {
        guard let owner = sourceOf[join.entity],
              let from = source.joinTables.first(where: { $0.entity == owner && $0.relationship == join.relationship }) else {
            notes.append("join table \(join.name) (\(destination.entities[join.entity]?.name ?? "?").\(join.relationship)): no counterpart in the source; left empty")
            return nil
        }
        var columns: [String: String] = [:]
        for column in join.columns {
            guard let entity = sourceOf[column.entity],
                  let old = from.columns.first(where: { $0.entity == entity && $0.relationship == column.relationship && $0.isOrder == column.isOrder }) else {
                notes.append("join table \(join.name): column \(column.name) has no counterpart in \(from.name); the table is not copied")
                return nil
            }
            columns[column.name] = SQL.quote(old.name)
        }
        let renamed = from.name == join.name && columns.allSatisfy({ $0.key == $0.value }) ? "" : " (columns \(columns.sorted { $0.key < $1.key }.map { "\($0.value) -> \($0.key)" }.joined(separator: ", ")))"
        decisions.append("join table \(from.name) -> \(join.name)\(renamed)")
        return EntityMapping(name: join.name, source: .init(table: from.name), destination: .init(table: join.name),
                             columns: columns)
    }

    private func count(schema: String, table: String, entities: Set<Int64>) throws -> Int64 {
        guard try database.scalar("SELECT count(*) FROM \(schema).sqlite_schema WHERE name = ?1", .text(table)).integer == 1 else {
            return 0
        }
        let list = entities.map(String.init).joined(separator: ", ")
        return try database.scalar("SELECT count(*) FROM \(schema).\(SQL.quote(table)) WHERE Z_ENT IN (\(list))").integer ?? 0
    }

    /// `.NAME_SUPPORT/_EXTERNAL_DATA` next to the store when it holds files: binary attributes
    /// stored outside the store.
    static func externalDataFolder(of store: String) -> String? {
        let url = URL(fileURLWithPath: store)
        let name = url.deletingPathExtension().lastPathComponent
        let folder = url.deletingLastPathComponent().appendingPathComponent(".\(name)_SUPPORT/_EXTERNAL_DATA").path
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return files.isEmpty ? nil : folder
    }
}
