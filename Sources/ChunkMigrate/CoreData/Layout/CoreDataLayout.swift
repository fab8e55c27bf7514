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
/// - **Many-to-many**: Core Data pairs each relationship with its inverse in one walk
///   (`NSSQLEntity._generateInverseRelationshipsAndMore`): the entities in name order, and each
///   entity's properties, inherited ones too, in the bucket order of the hash table Core Data
///   keeps them in (`CoreDataPropertyOrder`: set by the hashes of the property names and by
///   how many there are). The side of a many-to-many met first
///   (`NSSQLManyToMany._setInverseManyToMany`) names the join table `Z_<n><NAME>` (n the number
///   of the entity declaring it, NAME its name in capitals), so a relationship and its inverse on
///   one entity name it from whichever comes first in that table. Each side has a key column
///   holding the keys of the entity declaring it: `Z_<n><INVERSE>`, n that entity's number,
///   INVERSE the name of the other side in capitals, made unique within the entity's tree as
///   column names are (`Z_3KEYASSETS`, then `Z_3KEYASSETS1`), the side met second named first;
///   beside it `Z_FOK_<n><INVERSE>` when the other side is ordered. A relationship that is its
///   own inverse has one key column and `REFLEXIVE` (and `FOK_REFLEXIVE` when ordered).
///
/// Every fixture store with a model cache (`CoreDataLayoutTests`) has exactly this layout:
/// Photos libraries of macOS 10.15 to 26.1, the stores of the services inside them, 59 versions of
/// a messenger's store, and the apps' stores.
package struct CoreDataLayout: Sendable {
    /// An entity: its number and where its rows live.
    package struct Entity: Sendable, Equatable {
        /// `Z_ENT`.
        package var number: Int64
        /// The entity's name.
        package var name: String
        /// The parent entity's number; `nil` for a root.
        package var parent: Int64?
        /// The root entity's number (itself for a root).
        package var root: Int64
        /// The table holding the tree's rows.
        package var table: String
    }

    /// A column of an entity table, and what it holds.
    package struct Column: Sendable, Equatable {
        /// What a column holds.
        package enum Role: Sendable, Equatable {
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
        package var name: String
        /// The type Core Data declares.
        package var type: String
        /// What it holds.
        package var role: Role
    }

    /// One entity tree's table.
    package struct EntityTable: Sendable {
        /// The root entity's number.
        package var root: Int64
        /// The table's name.
        package var name: String
        /// The columns, `Z_PK`, `Z_ENT` and `Z_OPT` first.
        package var columns: [Column]

        /// The column named `name` (case-insensitively, as SQLite).
        package func column(named name: String) -> Column? {
            columns.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
        }

        /// The column holding `role`.
        package func column(for role: Column.Role) -> Column? { columns.first { $0.role == role } }
    }

    /// A many-to-many relationship's join table.
    package struct JoinTable: Sendable, Equatable {
        /// One side: the relationship leading to the entity whose keys a column holds.
        package struct Side: Sendable, Equatable {
            /// The key column: keys of ``target``.
            package var column: String
            /// The number of the entity whose keys the column holds (the relationship's
            /// destination).
            package var target: Int64
            /// The entity declaring the relationship.
            package var entity: String
            /// The relationship (`nil` for the `REFLEXIVE` column of a relationship that is its
            /// own inverse).
            package var property: String?
            /// The order column, when the relationship is ordered.
            package var order: String?
        }
        /// The table's name.
        package var name: String
        /// The two sides.
        package var sides: [Side]

        /// All column names, keys then orders.
        package var columns: [String] { sides.map(\.column) + sides.compactMap(\.order) }
    }

    /// The model the layout is derived from.
    package let model: CoreDataModel
    /// Entities by number.
    package internal(set) var entities: [Int64: Entity] = [:]
    /// Entity tables by root number.
    package internal(set) var tables: [Int64: EntityTable] = [:]
    /// The join tables.
    package internal(set) var joinTables: [JoinTable] = []

    /// Core Data's bookkeeping tables.
    static let bookkeepingTables: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]

    /// The entity named `name`.
    package func entity(named name: String) -> Entity? { entities.values.first { $0.name == name } }

    /// The entity with `number` and every entity below it.
    package func descendants(of number: Int64) -> Set<Int64> {
        guard let name = entities[number]?.name else { return [] }
        return Set(model.descendants(of: name).compactMap { entity(named: $0)?.number })
    }

    /// The entity table named `name`, if it is one.
    package func table(named name: String) -> EntityTable? {
        tables.values.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// The table of the entity named `entity`.
    package func table(of entity: String) -> EntityTable? {
        self.entity(named: entity).flatMap { tables[$0.root] }
    }

    /// The column holding property `property` of entity `entity` (declared by it or inherited).
    package func column(of property: String, entity: String) -> Column? {
        guard let declared = model.property(property, of: entity), let table = table(of: entity) else { return nil }
        let role: Column.Role =
            declared.property.attribute != nil
            ? .attribute(entity: declared.declaredBy, property: property) : .toOne(entity: declared.declaredBy, property: property)
        return table.column(for: role)
    }

    /// The join table of a many-to-many relationship, `property` of `entity` (either side).
    package func joinTable(of property: String, entity: String) -> JoinTable? {
        guard let declaredBy = model.property(property, of: entity)?.declaredBy else { return nil }
        return joinTables.first { table in table.sides.contains { $0.entity == declaredBy && $0.property == property } }
    }

    /// The layout Core Data gives `model`.
    ///
    /// - Throws: ``MigrationError`` naming the entity and property of what Core Data could not
    ///   lay out either (a composite attribute, which this version does not lay out).
    package init(model: CoreDataModel) throws {
        self.model = model
        let order = Self.entityOrder(model)
        var numbers: [String: Int64] = [:]
        for (index, name) in order.enumerated() { numbers[name] = Int64(index + 1) }
        // Each entity by name, and the root of its tree, found once: a model of a few hundred
        // entities looked up entity by entity made this quadratic in them, or worse.
        let byName = Dictionary(model.entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var roots: [String: String] = [:]
        for name in order {
            let parent = byName[name]?.parent
            // `order` lists each parent before its sub-entities.
            let root = parent.flatMap { roots[$0] } ?? name
            roots[name] = root
            entities[numbers[name]!] = Entity(
                number: numbers[name]!, name: name, parent: parent.flatMap { numbers[$0] },
                root: numbers[root]!, table: "Z" + root.uppercased())
        }
        try layOutEntityTables(order: order, numbers: numbers, entities: byName, roots: roots)
        layOutJoinTables(numbers: numbers)
    }

    /// Entity trees in name order, each entity followed by its sub-entities (Core Data's `Z_ENT`).
    static func entityOrder(_ model: CoreDataModel) -> [String] {
        func sorted(_ names: [String]) -> [String] {
            names.sorted { a, b in
                let order = a.caseInsensitiveCompare(b)
                return order == .orderedSame ? a < b : order == .orderedAscending
            }
        }
        let children = Dictionary(grouping: model.entities.filter { $0.parent != nil }, by: { $0.parent! }).mapValues {
            sorted($0.map(\.name))
        }
        var result: [String] = []
        func visit(_ name: String) {
            result.append(name)
            for child in children[name] ?? [] { visit(child) }
        }
        for root in sorted(model.entities.filter { $0.parent == nil }.map(\.name)) { visit(root) }
        return result
    }

    private mutating func layOutEntityTables(
        order: [String], numbers: [String: Int64], entities byName: [String: CoreDataModel.Entity],
        roots: [String: String]
    ) throws {
        let hasSubentities = Set(model.entities.compactMap(\.parent))
        let members = Dictionary(grouping: order, by: { roots[$0] ?? $0 })
        for rootName in order where byName[rootName]?.parent == nil {
            let root = numbers[rootName]!
            var used: [String: Int] = [:]
            var columns = [
                Column(name: "Z_PK", type: "INTEGER", role: .key),
                Column(name: "Z_ENT", type: "INTEGER", role: .entityNumber),
                Column(name: "Z_OPT", type: "INTEGER", role: .version),
            ]
            for name in members[rootName] ?? [] {
                guard let entity = byName[name] else { continue }
                for property in entity.properties.sorted(by: { $0.name < $1.name }) where !property.isTransient {
                    if case let .relationship(relationship) = property.kind, relationship.isToMany { continue }
                    let base = property.name.uppercased()
                    let count = used[base, default: 0]
                    used[base] = count + 1
                    let columnName = count == 0 ? base : base + String(count)
                    switch property.kind {
                    case let .attribute(attribute):
                        guard attribute.type != .composite else {
                            throw MigrationError(
                                .store, "attribute \(name).\(property.name) is a composite attribute, which this version does not lay out")
                        }
                        columns.append(
                            Column(
                                name: "Z" + columnName, type: attribute.type.columnType,
                                role: .attribute(entity: name, property: property.name)))
                    case let .relationship(relationship):
                        columns.append(Column(name: "Z" + columnName, type: "INTEGER", role: .toOne(entity: name, property: property.name)))
                        if hasSubentities.contains(relationship.destination), let target = numbers[relationship.destination] {
                            columns.append(
                                Column(
                                    name: "Z\(target)_\(columnName)", type: "INTEGER",
                                    role: .toOneEntity(entity: name, property: property.name)))
                        }
                        if let inverse = relationship.inverse,
                            let other = model.property(inverse, of: relationship.destination)?.property.relationship,
                            other.isToMany, other.isOrdered
                        {
                            columns.append(
                                Column(
                                    name: "Z_FOK_" + columnName, type: "INTEGER",
                                    role: .toOneOrder(entity: name, property: property.name)))
                        }
                    }
                }
            }
            tables[root] = EntityTable(root: root, name: "Z" + rootName.uppercased(), columns: columns)
        }
        // A to-many without an inverse keeps its owner's key in the target's table.
        for name in order {
            guard let entity = byName[name] else { continue }
            for property in entity.properties.sorted(by: { $0.name < $1.name }) where !property.isTransient {
                guard let relationship = property.relationship, relationship.isToMany, relationship.inverse == nil,
                    let targetRoot = roots[relationship.destination].flatMap({ numbers[$0] }), let owner = numbers[name]
                else { continue }
                let base = "\(owner)\(property.name.uppercased())"
                tables[targetRoot]?.columns.append(
                    Column(name: "Z" + base, type: "INTEGER", role: .toManyOwner(entity: name, property: property.name)))
                if relationship.isOrdered {
                    tables[targetRoot]?.columns.append(
                        Column(name: "Z_FOK_" + base, type: "INTEGER", role: .toManyOrder(entity: name, property: property.name)))
                }
            }
        }
    }
}
