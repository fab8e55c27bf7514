import Foundation

/// The SQLite layout Core Data gives a model: entity numbers, the table of each entity tree and
/// what each of its columns holds, and the many-to-many join tables. Derived from the model
/// alone, as Core Data names it (``init(model:)``), then checked against a real store's schema
/// when a job or a check reads one.
///
/// Core Data's naming, as every real store in the test fixtures shows it:
/// - **Entity numbers** (`Z_ENT`): the entity hierarchies in name order (case-insensitively),
///   each entity followed by its sub-entities, numbered from 1.
/// - **Tables**: one per root entity, `Z` + the root's name in capitals, holding its whole tree:
///   `Z_PK`, `Z_ENT`, `Z_OPT`, then a column per stored attribute and to-one relationship that an
///   entity of the tree declares: `Z` + the name in capitals. Same-named properties of entities of
///   one tree (siblings) each get their own column, numbered in entity order: `ZTITLE`,
///   `ZTITLE1`, `ZTITLE2`.
/// - **To-one relationships**: the target's key in `Z<NAME>`; when the target entity has
///   sub-entities, its entity number in `Z<n>_<NAME>` (n the target's number); when the inverse is
///   an ordered to-many, the position in it in `Z_FOK_<NAME>`.
/// - **To-many relationships without an inverse**: the owner's key in the target's table,
///   `Z<n><NAME>` (n the owner's number).
/// - **Many-to-many**: a join table `Z_<n><NAME>` named after the side met first when the
///   entities are walked in name order (n the number of the entity declaring it), with one key
///   column per side, `Z_<n><NAME>` (n the number of the entity whose keys it holds, NAME the
///   relationship leading to them, numbered like columns when two relationships to one entity
///   share a name), `Z_FOK_...` beside a side that is ordered, and `REFLEXIVE` for the other side
///   of a relationship that is its own inverse.
public struct CoreDataLayout: Sendable {
    /// An entity: its number and where its rows live.
    public struct Entity: Sendable, Equatable {
        /// `Z_ENT`.
        public var number: Int64
        /// The entity's name.
        public var name: String
        /// The parent entity's number; `nil` for a root.
        public var parent: Int64?
        /// The root entity's number (itself for a root).
        public var root: Int64
        /// The table holding the tree's rows.
        public var table: String
    }

    /// A column of an entity table, and what it holds.
    public struct Column: Sendable, Equatable {
        /// What a column holds.
        public enum Role: Sendable, Equatable {
            /// `Z_PK`, the key.
            case key
            /// `Z_ENT`, the row's entity number.
            case entityNumber
            /// `Z_OPT`, the optimistic-locking version.
            case version
            /// An attribute of `entity` (the entity declaring it).
            case attribute(entity: String, property: String)
            /// A to-one relationship's target key.
            case toOne(entity: String, property: String)
            /// A to-one relationship's target entity number (the target has sub-entities).
            case toOneEntity(entity: String, property: String)
            /// A to-one relationship's position in its inverse, an ordered to-many.
            case toOneOrder(entity: String, property: String)
            /// The owner's key of a to-many relationship without an inverse (`entity.property`),
            /// in the target's table.
            case toManyOwner(entity: String, property: String)
            /// The position in such a relationship when it is ordered.
            case toManyOrder(entity: String, property: String)
        }
        /// The column's name.
        public var name: String
        /// The type Core Data declares.
        public var type: String
        /// What it holds.
        public var role: Role
    }

    /// One entity tree's table.
    public struct EntityTable: Sendable {
        /// The root entity's number.
        public var root: Int64
        /// The table's name.
        public var name: String
        /// The columns, `Z_PK`, `Z_ENT` and `Z_OPT` first.
        public var columns: [Column]

        /// The column named `name` (case-insensitively, as SQLite).
        public func column(named name: String) -> Column? {
            columns.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
        }

        /// The column holding `role`.
        public func column(for role: Column.Role) -> Column? { columns.first { $0.role == role } }
    }

    /// A many-to-many relationship's join table.
    public struct JoinTable: Sendable, Equatable {
        /// One side: the relationship leading to the entity whose keys a column holds.
        public struct Side: Sendable, Equatable {
            /// The key column: keys of ``target``.
            public var column: String
            /// The number of the entity whose keys the column holds (the relationship's
            /// destination).
            public var target: Int64
            /// The entity declaring the relationship.
            public var entity: String
            /// The relationship (`nil` for the `REFLEXIVE` column of a relationship that is its
            /// own inverse).
            public var property: String?
            /// The order column, when the relationship is ordered.
            public var order: String?
        }
        /// The table's name.
        public var name: String
        /// The name Core Data gives it when the other side is met first: for a relationship and
        /// its inverse declared in one entity tree, which side names the table depends on the
        /// order of the entities' properties, which only the store tells.
        public var alternativeName: String?
        /// The two sides.
        public var sides: [Side]

        /// All column names, keys then orders.
        public var columns: [String] { sides.map(\.column) + sides.compactMap(\.order) }
    }

    /// The model the layout is derived from.
    public let model: CoreDataModel
    /// Entities by number.
    public internal(set) var entities: [Int64: Entity] = [:]
    /// Entity tables by root number.
    public internal(set) var tables: [Int64: EntityTable] = [:]
    /// The join tables.
    public internal(set) var joinTables: [JoinTable] = []

    /// Core Data's bookkeeping tables.
    static let bookkeepingTables: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]

    /// The entity named `name`.
    public func entity(named name: String) -> Entity? { entities.values.first { $0.name == name } }

    /// The entity with `number` and every entity below it.
    public func descendants(of number: Int64) -> Set<Int64> {
        guard let name = entities[number]?.name else { return [] }
        return Set(model.descendants(of: name).compactMap { entity(named: $0)?.number })
    }

    /// The entity table named `name`, if it is one.
    public func table(named name: String) -> EntityTable? {
        tables.values.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// The table of the entity named `entity`.
    public func table(of entity: String) -> EntityTable? {
        self.entity(named: entity).flatMap { tables[$0.root] }
    }

    /// The column holding property `property` of entity `entity` (declared by it or inherited).
    public func column(of property: String, entity: String) -> Column? {
        guard let declared = model.property(property, of: entity), let table = table(of: entity) else { return nil }
        let role: Column.Role = declared.property.attribute != nil
            ? .attribute(entity: declared.declaredBy, property: property) : .toOne(entity: declared.declaredBy, property: property)
        return table.column(for: role)
    }

    /// The join table of a many-to-many relationship, `property` of `entity` (either side).
    public func joinTable(of property: String, entity: String) -> JoinTable? {
        guard let declaredBy = model.property(property, of: entity)?.declaredBy else { return nil }
        return joinTables.first { table in table.sides.contains { $0.entity == declaredBy && $0.property == property } }
    }

    /// The layout Core Data gives `model`.
    ///
    /// - Throws: ``MigrationError`` naming the entity and property of what Core Data could not
    ///   lay out either (a composite attribute, which this version does not lay out).
    public init(model: CoreDataModel) throws {
        self.model = model
        let order = Self.entityOrder(model)
        var numbers: [String: Int64] = [:]
        for (index, name) in order.enumerated() { numbers[name] = Int64(index + 1) }
        for name in order {
            let root = model.root(of: name)
            entities[numbers[name]!] = Entity(number: numbers[name]!, name: name,
                                              parent: model.entity(named: name)?.parent.flatMap { numbers[$0] },
                                              root: numbers[root]!, table: "Z" + root.uppercased())
        }
        try layOutEntityTables(order: order, numbers: numbers)
        try layOutJoinTables(numbers: numbers)
    }

    /// Entity trees in name order, each entity followed by its sub-entities (Core Data's `Z_ENT`).
    static func entityOrder(_ model: CoreDataModel) -> [String] {
        func sorted(_ names: [String]) -> [String] {
            names.sorted { a, b in
                let order = a.caseInsensitiveCompare(b)
                return order == .orderedSame ? a < b : order == .orderedAscending
            }
        }
        var result: [String] = []
        func visit(_ name: String) {
            result.append(name)
            for child in sorted(model.entities.filter { $0.parent == name }.map(\.name)) { visit(child) }
        }
        for root in sorted(model.entities.filter { $0.parent == nil }.map(\.name)) { visit(root) }
        return result
    }

    private mutating func layOutEntityTables(order: [String], numbers: [String: Int64]) throws {
        let hasSubentities = Set(model.entities.compactMap(\.parent))
        for rootName in order where model.entity(named: rootName)?.parent == nil {
            let root = numbers[rootName]!
            var used: [String: Int] = [:]
            var columns = [Column(name: "Z_PK", type: "INTEGER", role: .key),
                           Column(name: "Z_ENT", type: "INTEGER", role: .entityNumber),
                           Column(name: "Z_OPT", type: "INTEGER", role: .version)]
            for name in order where model.root(of: name) == rootName {
                guard let entity = model.entity(named: name) else { continue }
                for property in entity.properties.sorted(by: { $0.name < $1.name }) where !property.isTransient {
                    if case let .relationship(relationship) = property.kind, relationship.isToMany { continue }
                    let base = property.name.uppercased()
                    let count = used[base, default: 0]
                    used[base] = count + 1
                    let columnName = count == 0 ? base : base + String(count)
                    switch property.kind {
                    case let .attribute(attribute):
                        guard attribute.type != .composite else {
                            throw MigrationError(.store, "attribute \(name).\(property.name) is a composite attribute, which this version does not lay out")
                        }
                        columns.append(Column(name: "Z" + columnName, type: attribute.type.columnType,
                                              role: .attribute(entity: name, property: property.name)))
                    case let .relationship(relationship):
                        columns.append(Column(name: "Z" + columnName, type: "INTEGER", role: .toOne(entity: name, property: property.name)))
                        if hasSubentities.contains(relationship.destination), let target = numbers[relationship.destination] {
                            columns.append(Column(name: "Z\(target)_\(columnName)", type: "INTEGER",
                                                  role: .toOneEntity(entity: name, property: property.name)))
                        }
                        if let inverse = relationship.inverse,
                           let other = model.property(inverse, of: relationship.destination)?.property.relationship,
                           other.isToMany, other.isOrdered {
                            columns.append(Column(name: "Z_FOK_" + columnName, type: "INTEGER",
                                                  role: .toOneOrder(entity: name, property: property.name)))
                        }
                    }
                }
            }
            tables[root] = EntityTable(root: root, name: "Z" + rootName.uppercased(), columns: columns)
        }
        // A to-many without an inverse keeps its owner's key in the target's table.
        for name in order {
            guard let entity = model.entity(named: name) else { continue }
            for property in entity.properties.sorted(by: { $0.name < $1.name }) where !property.isTransient {
                guard let relationship = property.relationship, relationship.isToMany, relationship.inverse == nil,
                      let targetRoot = numbers[model.root(of: relationship.destination)], let owner = numbers[name] else { continue }
                let base = "\(owner)\(property.name.uppercased())"
                tables[targetRoot]?.columns.append(Column(name: "Z" + base, type: "INTEGER", role: .toManyOwner(entity: name, property: property.name)))
                if relationship.isOrdered {
                    tables[targetRoot]?.columns.append(Column(name: "Z_FOK_" + base, type: "INTEGER", role: .toManyOrder(entity: name, property: property.name)))
                }
            }
        }
    }

    /// A many-to-many relationship: both sides to-many (or one relationship that is its own
    /// inverse), stored.
    private func isManyToMany(_ property: CoreDataModel.Property) -> Bool {
        guard let relationship = property.relationship, relationship.isToMany, !property.isTransient,
              let inverse = relationship.inverse,
              let other = model.property(inverse, of: relationship.destination)?.property.relationship else { return false }
        return other.isToMany
    }

    private mutating func layOutJoinTables(numbers: [String: Int64]) throws {
        let byName = model.entities.map(\.name).sorted { a, b in
            let order = a.caseInsensitiveCompare(b)
            return order == .orderedSame ? a < b : order == .orderedAscending
        }
        // Every property each entity has, its inherited ones too, in the model's order.
        let walk: [(declaredBy: String, property: CoreDataModel.Property)] = byName.flatMap { name in
            model.allProperties(of: name).filter { isManyToMany($0.property) }
        }
        struct Key: Hashable { var entity: String; var property: String }
        // The key column of each relationship, numbered when two lead to one entity by one name.
        var keyColumns: [Key: String] = [:]
        var usedColumns: Set<String> = []
        for (declaredBy, property) in walk where keyColumns[Key(entity: declaredBy, property: property.name)] == nil {
            guard let destination = property.relationship?.destination, let target = numbers[destination] else { continue }
            let base = "Z_\(target)\(property.name.uppercased())"
            var column = base, count = 0
            while usedColumns.contains(column) { count += 1; column = base + String(count) }
            usedColumns.insert(column)
            keyColumns[Key(entity: declaredBy, property: property.name)] = column
        }
        var laidOut: Set<Key> = []
        for (declaredBy, property) in walk where !laidOut.contains(Key(entity: declaredBy, property: property.name)) {
            guard let relationship = property.relationship, let inverseName = relationship.inverse,
                  let inverse = model.property(inverseName, of: relationship.destination),
                  let owner = numbers[declaredBy], let target = numbers[relationship.destination],
                  let column = keyColumns[Key(entity: declaredBy, property: property.name)] else { continue }
            let me = Key(entity: declaredBy, property: property.name)
            let other = Key(entity: inverse.declaredBy, property: inverseName)
            laidOut.insert(me)
            laidOut.insert(other)
            let name = "Z_\(owner)\(property.name.uppercased())"
            let order = relationship.isOrdered ? "Z_FOK_" + column.dropFirst(2) : nil
            if me == other {
                joinTables.append(JoinTable(name: name, sides: [
                    .init(column: column, target: target, entity: declaredBy, property: property.name, order: order),
                    .init(column: "REFLEXIVE", target: target, entity: declaredBy, property: nil,
                          order: relationship.isOrdered ? "FOK_REFLEXIVE" : nil),
                ]))
                continue
            }
            guard let inverseColumn = keyColumns[other], let inverseTarget = numbers[inverse.property.relationship?.destination ?? ""] else { continue }
            let inverseOrder = inverse.property.relationship?.isOrdered == true ? "Z_FOK_" + inverseColumn.dropFirst(2) : nil
            // Both sides of one entity: which names the table depends on the order of the
            // entity's properties; the store tells (resolved(against:)).
            let alternative = inverse.declaredBy == declaredBy || model.root(of: inverse.declaredBy) == model.root(of: declaredBy)
                ? numbers[inverse.declaredBy].map { "Z_\($0)\(inverseName.uppercased())" } : nil
            joinTables.append(JoinTable(name: name, alternativeName: alternative == name ? nil : alternative, sides: [
                .init(column: inverseColumn, target: inverseTarget, entity: inverse.declaredBy, property: inverseName, order: inverseOrder),
                .init(column: column, target: target, entity: declaredBy, property: property.name, order: order),
            ]))
        }
    }
}
