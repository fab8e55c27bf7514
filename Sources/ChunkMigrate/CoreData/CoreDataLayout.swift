import Foundation

/// The Core Data layout of one store, read from its schema and its `Z_PRIMARYKEY` table: the
/// entities with their numbers and inheritance, the table of each entity tree, the to-one,
/// polymorphic and ordering columns, and the many-to-many join tables.
///
/// Everything here comes from the store itself, never from assumptions about numbering: entity
/// numbers differ between model versions of the same app, so two stores are always compared by
/// entity name.
public struct CoreDataLayout: Sendable {
    /// An entity as `Z_PRIMARYKEY` lists it.
    public struct Entity: Sendable, Equatable {
        /// `Z_ENT`: the entity's number in this store's model.
        public var number: Int64
        /// `Z_NAME`.
        public var name: String
        /// `Z_SUPER`: the parent entity's number, `nil` for a root.
        public var parent: Int64?
        /// `Z_MAX`: the largest key handed out in the root's table (0 for sub-entities).
        public var max: Int64
        /// The number of the root of the entity's inheritance tree (itself for a root).
        public var root: Int64
        /// The table holding the rows of the whole tree: `Z` + the root's name in capitals.
        public var table: String
    }

    /// A column of an entity table or a join table.
    public struct Column: Sendable, Equatable {
        /// The column's name.
        public var name: String
        /// The declared type (`INTEGER`, `VARCHAR`, `FLOAT`, `TIMESTAMP`, `BLOB`, ...).
        public var type: String
    }

    /// A to-one relationship column, `Z<REL>`, with its entity column `Z<n>_<REL>` when the
    /// destination entity has sub-entities (polymorphic).
    public struct ToOne: Sendable, Equatable {
        /// The column holding the target's key.
        public var column: String
        /// The polymorphic column holding the target row's entity number, if any.
        public var entityColumn: String?
        /// The target entity's number when the layout tells it: from the polymorphic column's
        /// name, or an entity named like the relationship. `nil` when only the model knows.
        public var target: Int64?
    }

    /// An entity tree's table.
    public struct EntityTable: Sendable {
        /// The root entity's number.
        public var root: Int64
        /// The table name.
        public var name: String
        /// Every column, in table order.
        public var columns: [Column]
        /// The to-one relationship columns.
        public var toOnes: [ToOne]
        /// Unique indexes Core Data made for uniqueness constraints: the columns of each.
        public var uniqueIndexes: [[String]]
    }

    /// A many-to-many join table, `Z_<n><REL>`: each key column `Z_<k><NAME>` holds keys of
    /// entity `k`, named after the relationship whose targets it holds.
    public struct JoinTable: Sendable {
        /// One key column.
        public struct KeyColumn: Sendable, Equatable {
            /// The column's name.
            public var name: String
            /// The entity whose keys it holds.
            public var entity: Int64
            /// The relationship part of the name (`EVENT` in `Z_10EVENT`).
            public var relationship: String
            /// Whether this is an ordering column (`Z_FOK_<k><NAME>`) rather than a key.
            public var isOrder: Bool
        }
        /// The table name.
        public var name: String
        /// The entity in the table's name.
        public var entity: Int64
        /// The relationship part of the table's name (`BOOKS` in `Z_1BOOKS`).
        public var relationship: String
        /// The key (and ordering) columns.
        public var columns: [KeyColumn]
    }

    /// The model's entities by number (persistent-history entities excluded).
    public var entities: [Int64: Entity]
    /// Entity tables by root entity number.
    public var tables: [Int64: EntityTable]
    /// The join tables.
    public var joinTables: [JoinTable]
    /// Persistent-history tables (`ACHANGE`, `ATRANSACTION`, ...), which belong to the store's
    /// history, not its model.
    public var historyTables: [String]
    /// Other tables that are neither entity tables, join tables nor Core Data's own.
    public var otherTables: [String]

    /// Core Data's bookkeeping tables.
    static let bookkeepingTables: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]
    /// `Z_PRIMARYKEY` rows from this number up are persistent-history entities (`CHANGE`,
    /// `TRANSACTION`, ...), whose tables are named `A<NAME>`.
    static let firstHistoryEntity: Int64 = 16000

    /// The entity named `name`.
    public func entity(named name: String) -> Entity? {
        entities.values.first { $0.name == name }
    }

    /// The entity with `number` and every entity below it in the inheritance tree.
    public func descendants(of number: Int64) -> Set<Int64> {
        var result: Set<Int64> = [number]
        var grew = true
        while grew {
            grew = false
            for entity in entities.values where !result.contains(entity.number) {
                if let parent = entity.parent, result.contains(parent) {
                    result.insert(entity.number)
                    grew = true
                }
            }
        }
        return result
    }

    /// The entity table named `name`, if it is one.
    public func table(named name: String) -> EntityTable? {
        tables.values.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// The layout with what the store's model says of its to-one columns: the target of each
    /// relationship (`Z<REL>` is relationship `rel` of an entity of the table's tree), and indexed
    /// attributes, which the store alone cannot tell from relationships, left out.
    public func refined(with model: CoreDataModel) -> CoreDataLayout {
        var refined = self
        for (root, table) in tables {
            var targets: [String: Int64] = [:]
            var attributes: Set<String> = []
            for number in descendants(of: root) {
                guard let name = entities[number]?.name, let entity = model.entity(named: name) else { continue }
                for (relationship, destination) in model.toOneTargets(of: name) {
                    if let target = self.entity(named: destination) { targets["Z" + relationship.uppercased()] = target.number }
                }
                for property in entity.properties where property.destination == nil {
                    attributes.insert("Z" + property.name.uppercased())
                }
            }
            var toOnes = table.toOnes.filter { targets[$0.column.uppercased()] != nil || !attributes.contains($0.column.uppercased()) }
            for index in toOnes.indices {
                if let target = targets[toOnes[index].column.uppercased()] { toOnes[index].target = target }
            }
            for column in table.columns where targets[column.name.uppercased()] != nil
            && !toOnes.contains(where: { $0.column == column.name }) {
                toOnes.append(ToOne(column: column.name, entityColumn: nil, target: targets[column.name.uppercased()]))
            }
            refined.tables[root]?.toOnes = toOnes
        }
        return refined
    }

    /// Whether the store in `database` (as schema `schema`: `main`, or `src` for an attached
    /// source) has Core Data's `Z_PRIMARYKEY` table.
    static func isCoreData(_ database: Database, schema: String = "main") throws(SQLiteError) -> Bool {
        try database.scalar(
            "SELECT count(*) FROM \(schema).sqlite_schema WHERE type = 'table' AND name = 'Z_PRIMARYKEY'").integer == 1
    }

    /// Reads the layout of the store open as `schema` in `database`.
    ///
    /// - Throws: ``MigrationError`` naming `file` when the store has no `Z_PRIMARYKEY` (not a
    ///   Core Data store) or its entity tree is inconsistent.
    static func read(_ database: Database, schema: String = "main", file: String) throws -> CoreDataLayout {
        guard try isCoreData(database, schema: schema) else {
            throw MigrationError(.store, "not a Core Data store: it has no Z_PRIMARYKEY table", file: file)
        }
        var entities: [Int64: Entity] = [:]
        for row in try database.rows("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM \(schema).Z_PRIMARYKEY ORDER BY Z_ENT") {
            guard let number = row[0].integer, let name = row[1].text else { continue }
            guard number < firstHistoryEntity else { continue }
            let parent = row[2].integer.flatMap { $0 == 0 ? nil : $0 }
            entities[number] = Entity(number: number, name: name, parent: parent, max: row[3].integer ?? 0,
                                      root: number, table: "")
        }
        for number in entities.keys {
            var root = number
            var steps = 0
            while let parent = entities[root]?.parent {
                guard entities[parent] != nil, steps < entities.count else {
                    throw MigrationError(.store, "Z_PRIMARYKEY: entity \(entities[number]!.name) (\(number)) has a parent \(parent) that is not an entity, or its tree has a cycle", file: file)
                }
                root = parent
                steps += 1
            }
            entities[number]!.root = root
            entities[number]!.table = "Z" + entities[root]!.name.uppercased()
        }

        let tableNames = try database.rows(
            "SELECT name FROM \(schema).sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).compactMap { $0[0].text }
        let byUpperName = Dictionary(tableNames.map { ($0.uppercased(), $0) }, uniquingKeysWith: { a, _ in a })
        let entityNamesUpper = Dictionary(entities.values.map { ($0.name.uppercased(), $0.number) }, uniquingKeysWith: min)

        var tables: [Int64: EntityTable] = [:]
        var claimed: Set<String> = bookkeepingTables
        for entity in entities.values where entity.parent == nil {
            guard let name = byUpperName[entity.table.uppercased()] else { continue }
            entities[entity.number]!.table = name
            claimed.insert(name)
            let columns = try Self.columns(database, schema: schema, table: name)
            var toOnes: [ToOne] = []
            let indexed = try Self.singleColumnIndexes(database, schema: schema, table: name)
            for column in columns where column.name.hasPrefix("Z") && !column.name.hasPrefix("Z_") {
                let relationship = String(column.name.dropFirst())
                // The polymorphic entity column Z<n>_<REL>, n the destination entity's number.
                let polymorphic = columns.first { other in
                    guard let (number, rest) = Self.numbered(other.name, prefix: "Z"), rest.hasPrefix("_") else { return false }
                    return rest.dropFirst() == relationship && entities[number] != nil
                }
                guard polymorphic != nil || indexed.contains(column.name) else { continue }
                guard column.type.uppercased().hasPrefix("INT") else { continue }
                var target: Int64?
                if let polymorphic, let (number, _) = Self.numbered(polymorphic.name, prefix: "Z") {
                    target = number
                } else if let named = entityNamesUpper[relationship] {
                    target = named
                }
                toOnes.append(ToOne(column: column.name, entityColumn: polymorphic?.name, target: target))
            }
            tables[entity.number] = EntityTable(
                root: entity.number, name: name, columns: columns, toOnes: toOnes,
                uniqueIndexes: try Self.uniqueIndexes(database, schema: schema, table: name))
        }

        var joinTables: [JoinTable] = []
        var history: [String] = []
        var others: [String] = []
        for name in tableNames where !claimed.contains(name) {
            if let (number, relationship) = Self.numbered(name, prefix: "Z_"), entities[number] != nil, !relationship.isEmpty {
                var keyColumns: [JoinTable.KeyColumn] = []
                for column in try Self.columns(database, schema: schema, table: name) {
                    let isOrder = column.name.hasPrefix("Z_FOK_")
                    guard let (entity, rest) = Self.numbered(column.name, prefix: isOrder ? "Z_FOK_" : "Z_") else { continue }
                    keyColumns.append(.init(name: column.name, entity: entity, relationship: rest, isOrder: isOrder))
                }
                if keyColumns.filter({ !$0.isOrder }).count == 2 {
                    joinTables.append(JoinTable(name: name, entity: number, relationship: relationship, columns: keyColumns))
                    continue
                }
            }
            if name.hasPrefix("A"), ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"].contains(name.uppercased()) {
                history.append(name)
            } else {
                others.append(name)
            }
        }
        return CoreDataLayout(entities: entities, tables: tables, joinTables: joinTables, historyTables: history,
                              otherTables: others)
    }

    /// `(12, "EVENT")` for `Z_12EVENT` with prefix `Z_`; `nil` when the name does not start with
    /// the prefix and a number.
    static func numbered(_ name: String, prefix: String) -> (Int64, String)? {
        guard name.hasPrefix(prefix) else { return nil }
        let rest = name.dropFirst(prefix.count)
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let number = Int64(digits) else { return nil }
        return (number, String(rest.dropFirst(digits.count)))
    }

    static func columns(_ database: Database, schema: String, table: String) throws(SQLiteError) -> [Column] {
        try database.tableSchema(table, in: schema)?.columns.map { Column(name: $0.name, type: $0.type) } ?? []
    }

    /// The columns that have an index of their own (Core Data indexes every to-one column as
    /// `<TABLE>_<COLUMN>_INDEX`).
    static func singleColumnIndexes(_ database: Database, schema: String, table: String) throws(SQLiteError) -> Set<String> {
        let indexes = try database.tableSchema(table, in: schema)?.indexes ?? []
        return Set(indexes.filter { $0.columns.count == 1 }.map { $0.columns[0] })
    }

    /// The column lists of the table's unique indexes, made for uniqueness constraints or
    /// `UNIQUE` columns; the rowid alias is not one.
    static func uniqueIndexes(_ database: Database, schema: String, table: String) throws(SQLiteError) -> [[String]] {
        let indexes = try database.tableSchema(table, in: schema)?.indexes ?? []
        let result = indexes.filter { $0.isUnique && $0.origin != .primaryKeyConstraint }.map(\.columns)
        return result.sorted { $0.joined(separator: ",") < $1.joined(separator: ",") }
    }
}
