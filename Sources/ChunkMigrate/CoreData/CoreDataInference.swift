import Foundation

/// Infers a plan between two Core Data stores (see ``MigrationPlan/infer(source:destination:options:)``),
/// on a connection with the destination as `main` and the source attached as `src`.
struct CoreDataInference {
    let database: Database
    let sourcePath: String
    let destinationPath: String
    let options: InferenceOptions
    private var decisions: [String] = []
    /// Destination entity table -> the source table it is copied from and the filter that leaves
    /// rows out, for the join tables that refer to its rows.
    private var rowFilters: [String: (source: String, filter: String)] = [:]
    private var notes: [String] = []

    init(database: Database, sourcePath: String, destinationPath: String, options: InferenceOptions) {
        self.database = database
        self.sourcePath = sourcePath
        self.destinationPath = destinationPath
        self.options = options
    }

    mutating func infer() throws -> InferredPlan {
        var source = try CoreDataLayout.read(database, schema: "src", file: sourcePath)
        var destination = try CoreDataLayout.read(database, schema: "main", file: destinationPath)
        if let model = options.sourceModel { source = source.refined(with: model) }
        if let model = options.destinationModel { destination = destination.refined(with: model) }
        // Renames: given, or the destination model's renamingIdentifiers.
        var renames = options.renames
        for entity in options.destinationModel?.entities ?? [] {
            if let old = entity.renamingIdentifier, old != entity.name, renames[entity.name] == nil, source.entity(named: old) != nil {
                renames[entity.name] = old
            }
        }

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
            entities.append(try entity(into: table, from: from, mapped: Set(sourceEntities), sourceOf: sourceOf,
                                       source: source, destination: destination))
        }
        if options.keys == .allocate {
            try allocateKeys(&entities, sourceOf: sourceOf, source: source, destination: destination)
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
                                 mapped: Set<Int64>, sourceOf: [Int64: Int64], source: CoreDataLayout,
                                 destination: CoreDataLayout) throws -> EntityMapping {
        let rootName = destination.entities[table.root]!.name
        var sourceColumns = Dictionary(from.columns.map { ($0.name.uppercased(), $0) }, uniquingKeysWith: { a, _ in a })
        // Attributes and relationships the destination model says were renamed.
        for number in destination.descendants(of: table.root) {
            guard let name = destination.entities[number]?.name,
                  let entity = options.destinationModel?.entity(named: name) else { continue }
            for property in entity.properties {
                guard let old = property.renamingIdentifier, old != property.name,
                      let column = sourceColumns["Z" + old.uppercased()] else { continue }
                sourceColumns["Z" + property.name.uppercased()] = column
                decisions.append("\(table.name).Z\(property.name.uppercased()): renamed from \(column.name) (renamingIdentifier)")
            }
        }
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
                    columns[column.name] = "coredata_entity(\(SQL.identifier(old)))"
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
        fillDefaults(&columns, table: table, destination: destination)
        for column in from.columns where !used.contains(column.name.uppercased()) {
            notes.append("\(from.name).\(column.name): no counterpart in \(table.name); not copied")
        }
        // Source sub-entities with no counterpart here are left out by name: only the source
        // entities mapped into this destination tree (a sub-entity that became a root of its own
        // is copied by that root's entity, not this one).
        let sourceTree = source.descendants(of: from.root)
        let kept = sourceTree.intersection(mapped)
        var entityFilter: String?
        if kept.count < sourceTree.count {
            let names = kept.compactMap { source.entities[$0]?.name }.sorted().map { "'\($0.replacingOccurrences(of: "'", with: "''"))'" }
            entityFilter = "Z_ENT IN (SELECT Z_ENT FROM src.Z_PRIMARYKEY WHERE Z_NAME IN (\(names.joined(separator: ", "))))"
        }
        let conditions = [entityFilter].compactMap { $0 } + (try checkNewUniqueness(table, from: from, entityFilter: entityFilter))
        let condition = conditions.isEmpty ? nil : conditions.joined(separator: " AND ")
        if let condition { rowFilters[table.name] = (from.name, condition) }
        decisions.append("table \(from.name) -> \(table.name) (entity tree \(rootName)): \(columns.count) columns, keys preserved")
        return EntityMapping(name: rootName, source: .init(table: from.name, key: "Z_PK", where: condition),
                             destination: .init(table: table.name, key: "Z_PK"), keys: .preserve, columns: columns)
    }

    /// Under `allocate`: every to-one column and join-table key through the ID map of its
    /// target's entity tree, which needs every target; the polymorphic columns stay
    /// `coredata_entity()`.
    private mutating func allocateKeys(_ entities: inout [EntityMapping], sourceOf: [Int64: Int64],
                                       source: CoreDataLayout, destination: CoreDataLayout) throws {
        func planEntity(of number: Int64) -> String? {
            destination.entities[number].flatMap { destination.entities[$0.root]?.name }
                .flatMap { name in entities.contains { $0.name == name } ? name : nil }
        }
        var unknown: [String] = []
        for index in entities.indices {
            entities[index].keys = .allocate
            if let table = destination.table(named: entities[index].destination.table) {
                for toOne in table.toOnes {
                    guard let from = entities[index].columns[toOne.column] else { continue }
                    guard let target = toOne.target, let name = planEntity(of: target) else {
                        unknown.append("\(table.name).\(toOne.column)")
                        continue
                    }
                    entities[index].columns[toOne.column] = nil
                    entities[index].relationships[toOne.column] = .init(from: from, to: name)
                }
            } else if let join = destination.joinTables.first(where: { $0.name == entities[index].destination.table }) {
                for column in join.columns where !column.isOrder {
                    guard let from = entities[index].columns[column.name], let name = planEntity(of: column.entity) else { continue }
                    entities[index].columns[column.name] = nil
                    entities[index].relationships[column.name] = .init(from: from, to: name)
                }
            }
        }
        guard unknown.isEmpty else {
            throw MigrationError(.invalidPlan,
                "keys allocate: the target of \(unknown.joined(separator: ", ")) is unknown from the stores alone (an indexed attribute, or a to-one named unlike its target); give the models (--model-from, --model-to) or keep the keys (preserve)",
                file: destinationPath)
        }
        decisions.append("keys allocated after each table's largest key; to-one and join-table keys through the ID map (missing: fail)")
        notes.append("keys allocated: the destination keeps its own store UUID, since object-ID URIs saved before the migration would name other objects")
    }

    /// What lightweight migration does for a non-optional attribute with a default value in the
    /// destination model: a new column takes the default, an existing one keeps its values and
    /// takes the default where they are NULL. Only in rows of the entity that has the attribute
    /// (and its sub-entities), named by the source's entity names when the tree holds others.
    private mutating func fillDefaults(_ columns: inout [String: String], table: CoreDataLayout.EntityTable,
                                       destination: CoreDataLayout) {
        guard let model = options.destinationModel else { return }
        let tree = destination.descendants(of: table.root)
        for number in tree.sorted() {
            guard let entity = destination.entities[number], let modelEntity = model.entity(named: entity.name) else { continue }
            for attribute in modelEntity.properties where attribute.destination == nil && !attribute.isOptional {
                guard let literal = attribute.defaultLiteral,
                      let column = table.columns.first(where: { $0.name.uppercased() == "Z" + attribute.name.uppercased() })?.name
                else { continue }
                let value = columns[column].map { "ifnull(\($0), \(literal))" } ?? literal
                let owners = destination.descendants(of: number)
                if owners == tree {
                    columns[column] = value
                } else {
                    // The rows of this entity: those whose destination entity number is one of its tree's.
                    let numbers = owners.sorted().map(String.init).joined(separator: ", ")
                    columns[column] = "CASE WHEN coredata_entity(Z_ENT) IN (\(numbers)) THEN \(value) ELSE \(columns[column] ?? "NULL") END"
                }
                decisions.append("\(table.name).\(column): non-optional with default \(literal) in \(entity.name): NULLs take the default")
            }
        }
    }

    /// The expression copying `old` into `new`: the column itself, or a conversion where the
    /// declared type changed between numeric types.
    private mutating func conversion(from old: CoreDataLayout.Column, to new: CoreDataLayout.Column, table: String) throws -> String {
        let quoted = SQL.identifier(old.name)
        let from = ColumnInfo.affinity(of: old.type), to = ColumnInfo.affinity(of: new.type)
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

    /// Reports a uniqueness constraint of the destination that the source table did not have,
    /// with the number of source rows that violate it. Those rows fail their batch, naming the
    /// row; with ``InferenceOptions/keepFirstDuplicate`` the returned filters keep the first row
    /// of each value in source-key order instead, and the report counts the rows left out.
    private mutating func checkNewUniqueness(_ table: CoreDataLayout.EntityTable, from: CoreDataLayout.EntityTable,
                                             entityFilter: String?) throws -> [String] {
        var filters: [String] = []
        let inTree = entityFilter.map { " AND \($0)" } ?? ""
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
                SELECT ifnull(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM src.\(SQL.quote(from.name)) WHERE \(nonNull)\(inTree)
                                                   GROUP BY \(quoted) HAVING count(*) > 1)
                """).integer ?? 0
            if duplicates == 0 {
                notes.append("\(table.name)(\(list)): a new uniqueness constraint; the source's rows satisfy it")
            } else if options.keepFirstDuplicate {
                let same = columns.map { "t.\(SQL.quote($0)) = s.\(SQL.quote($0))" }.joined(separator: " AND ")
                let anyNull = columns.map { "s.\(SQL.quote($0)) IS NULL" }.joined(separator: " OR ")
                let treeOfT = entityFilter.map { " AND t.\($0)" } ?? ""
                filters.append("(\(anyNull) OR s.Z_PK = (SELECT min(t.Z_PK) FROM src.\(SQL.quote(from.name)) AS t WHERE \(same)\(treeOfT)))")
                notes.append("\(table.name)(\(list)): a new uniqueness constraint that \(duplicates) rows of the source violate; the first row of each value (in key order) is kept and these \(duplicates) are not copied, nor the join-table rows that refer to them; to-one references to them stay as they are")
                let single = try CoreDataLayout.singleColumnIndexes(database, schema: "src", table: from.name)
                let indexed = from.uniqueIndexes.contains { $0.first?.uppercased() == columns[0].uppercased() }
                    || single.contains { $0.uppercased() == columns[0].uppercased() }
                if !indexed {
                    notes.append("\(from.name).\(columns[0]): the source has no index on it, so keeping the first row of each value reads the table once per row; on a large store add the index to a copy of the source first")
                }
            } else {
                notes.append("\(table.name)(\(list)): a new uniqueness constraint that \(duplicates) rows of the source violate: the batch that meets one fails, naming its source key (infer with keep-first duplicates to keep the first row of each value instead)")
            }
        }
        return filters
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
        var filters: [String] = []
        for column in join.columns where !column.isOrder {
            // A join row whose key refers to a row the plan leaves out is left out with it.
            guard let entity = sourceOf[column.entity], let table = destination.entities[column.entity]?.table,
                  let copied = rowFilters[table],
                  let old = from.columns.first(where: { $0.entity == entity && $0.relationship == column.relationship && !$0.isOrder }) else { continue }
            filters.append("\(SQL.identifier(old.name)) IN (SELECT s.Z_PK FROM src.\(SQL.quote(copied.source)) AS s WHERE \(copied.filter))")
        }
        if !filters.isEmpty { decisions.append("join table \(from.name): rows that refer to rows left out are left out") }
        for column in join.columns {
            guard let entity = sourceOf[column.entity],
                  let old = from.columns.first(where: { $0.entity == entity && $0.relationship == column.relationship && $0.isOrder == column.isOrder }) else {
                notes.append("join table \(join.name): column \(column.name) has no counterpart in \(from.name); the table is not copied")
                return nil
            }
            columns[column.name] = SQL.identifier(old.name)
        }
        let renamed = from.name == join.name && columns.allSatisfy({ $0.key == $0.value }) ? "" : " (columns \(columns.sorted { $0.key < $1.key }.map { "\($0.value) -> \($0.key)" }.joined(separator: ", ")))"
        decisions.append("join table \(from.name) -> \(join.name)\(renamed)")
        return EntityMapping(name: join.name,
                             source: .init(table: from.name, where: filters.isEmpty ? nil : filters.joined(separator: " AND ")),
                             destination: .init(table: join.name), columns: columns)
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
