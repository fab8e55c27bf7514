import Foundation

extension CoreDataLayout {
    /// A many-to-many relationship: both sides to-many (or one relationship that is its own
    /// inverse), stored.
    func isManyToMany(_ property: CoreDataModel.Property) -> Bool {
        guard let relationship = property.relationship, relationship.isToMany, !property.isTransient,
            let inverse = relationship.inverse,
            let other = model.property(inverse, of: relationship.destination)?.property.relationship
        else { return false }
        return other.isToMany
    }

    /// The entities in the order Core Data walks them to pair relationships with their inverses:
    /// by name.
    static func walkOrder(_ model: CoreDataModel) -> [String] {
        model.entities.map(\.name).sorted { a, b in
            let order = a.caseInsensitiveCompare(b)
            return order == .orderedSame ? a < b : order == .orderedAscending
        }
    }

    /// The property mapping of `entity` as Core Data builds it (`NSSQLEntity._generateProperties`),
    /// in the hash table that keeps its order: a sub-entity starts from its parent's, a root from
    /// `_ent`, `_pk`, `_opt`; then the entity's own stored attributes, then its own stored
    /// relationships, a to-one after `_` + its key column (and `_` + its entity column), each
    /// group in the bucket order of the entity description's own table of them (a 10.5 table of
    /// all its attributes, or relationships, filled here in the model's order, the root's first).
    func mappingTable(of entity: String, parentTable: CoreDataPropertyOrder.Table?) -> CoreDataPropertyOrder.Table {
        var table = CoreDataPropertyOrder.Table()
        guard let description = model.entity(named: entity) else { return table }
        if let parentTable {
            for key in parentTable.keys { table.insert(key) }
        } else {
            for key in ["_ent", "_pk", "_opt"] { table.insert(key) }
        }
        let all = model.allProperties(of: entity).map(\.property)
        let columns =
            self.table(of: entity)?.columns.filter { column in
                switch column.role {
                case let .toOne(owner, _), let .toOneEntity(owner, _): owner == entity
                default: false
                }
            } ?? []
        for attributes in [true, false] {
            var byName = CoreDataPropertyOrder.Table()
            for property in all where (property.attribute != nil) == attributes { byName.insert(property.name) }
            for name in byName.keys {
                guard let property = description.property(named: name), !property.isTransient else { continue }
                if let relationship = property.relationship, !relationship.isToMany {
                    for column in columns
                    where column.role == .toOne(entity: entity, property: name)
                        || column.role == .toOneEntity(entity: entity, property: name)
                    {
                        table.insert("_" + column.name)
                    }
                }
                table.insert(name)
            }
        }
        return table
    }

    /// The keys of the property mapping of `entity` when Core Data's walk reaches it, in the order
    /// of its table: those of its ``mappingTable(of:parentTable:)`` and what the walks of the
    /// entities met before added (`walked`, each entity with its sub-entities in `descendants`):
    /// the order column of a to-one whose inverse is ordered, added by the walk of an ancestor to
    /// it and its sub-entities; the owner columns of a to-many without inverse, added to its
    /// target and the target's sub-entities by the first walk that meets the to-many.
    func mappingKeys(
        of entity: String, table base: CoreDataPropertyOrder.Table, walked: Set<String>,
        descendants: [String: Set<String>]
    ) -> [String] {
        var table = base
        let ancestors = model.lineage(of: entity).dropFirst().map(\.name)
        for column in self.table(of: entity)?.columns ?? [] {
            switch column.role {
            case let .toOneOrder(owner, _):
                let having = descendants[owner] ?? []
                if ancestors.contains(where: { walked.contains($0) && having.contains($0) }) { table.insert("_" + column.name) }
            case let .toManyOwner(owner, _), let .toManyOrder(owner, _):
                if !(descendants[owner] ?? []).isDisjoint(with: walked) { table.insert("_" + column.name) }
            default:
                break
            }
        }
        return table.keys
    }

    /// The join tables, named as Core Data names them: the entities are walked by name, each
    /// entity's properties in Core Data's order (``CoreDataPropertyOrder``), and the first side of
    /// a many-to-many met names the table, `Z_<n><NAME>` (n the number of the entity declaring
    /// it). Each side's key column holds the keys of the entity declaring it: `Z_<n><INVERSE>`,
    /// n that entity's number, INVERSE the name of the other side, numbered (`1`, `2`, ...) when
    /// the base is taken already in that entity tree; the column of the side met second is named
    /// first. A side whose other side is ordered has `Z_FOK_<n><INVERSE>` beside it. A
    /// relationship that is its own inverse has one key column and `REFLEXIVE` (and
    /// `FOK_REFLEXIVE` when ordered).
    mutating func layOutJoinTables(numbers: [String: Int64]) {
        struct Key: Hashable { var entity: String; var property: String }
        // Core Data's uniqueNameWithBase: per entity tree, how many times each base was taken.
        var taken: [String: [String: Int]] = [:]
        func unique(_ base: String, in entity: String) -> String {
            let root = model.root(of: entity)
            guard let count = taken[root, default: [:]][base] else {
                taken[root, default: [:]][base] = 0
                return base
            }
            var next = count + 1
            while taken[root, default: [:]][base + String(next)] != nil { next += 1 }
            taken[root, default: [:]][base] = next
            return base + String(next)
        }
        var tables: [String: CoreDataPropertyOrder.Table] = [:]
        for entity in Self.entityOrder(model) {
            tables[entity] = mappingTable(of: entity, parentTable: model.entity(named: entity)?.parent.flatMap { tables[$0] })
        }
        let descendants = Dictionary(model.entities.map { ($0.name, Set(model.descendants(of: $0.name))) }, uniquingKeysWith: { a, _ in a })
        var laidOut: Set<Key> = []
        var walked: Set<String> = []
        for entity in Self.walkOrder(model) {
            let properties = Dictionary(model.allProperties(of: entity).map { ($0.property.name, $0) }, uniquingKeysWith: { a, _ in a })
            let keys = mappingKeys(of: entity, table: tables[entity] ?? .init(), walked: walked, descendants: descendants)
            walked.insert(entity)
            for name in CoreDataPropertyOrder.order(keys, count: keys.count) {
                guard let (declaredBy, property) = properties[name], isManyToMany(property),
                    !laidOut.contains(Key(entity: declaredBy, property: name)),
                    let relationship = property.relationship, let inverseName = relationship.inverse,
                    let inverse = model.property(inverseName, of: relationship.destination),
                    let owner = numbers[declaredBy], let target = numbers[relationship.destination],
                    let other = numbers[inverse.declaredBy], let inverseRelationship = inverse.property.relationship,
                    let inverseTarget = numbers[inverseRelationship.destination]
                else { continue }
                let me = Key(entity: declaredBy, property: name), them = Key(entity: inverse.declaredBy, property: inverseName)
                laidOut.formUnion([me, them])
                let table = "Z_\(owner)\(name.uppercased())"
                if me == them {
                    let column = unique("Z_\(owner)\(name.uppercased())", in: declaredBy)
                    let order = relationship.isOrdered ? unique("Z_FOK_\(owner)\(name.uppercased())", in: declaredBy) : nil
                    joinTables.append(
                        JoinTable(
                            name: table,
                            sides: [
                                .init(column: column, target: target, entity: declaredBy, property: name, order: order),
                                .init(
                                    column: "REFLEXIVE", target: target, entity: declaredBy, property: nil,
                                    order: relationship.isOrdered ? "FOK_REFLEXIVE" : nil),
                            ]))
                    continue
                }
                // Core Data names the column of the side met second first (NSSQLManyToMany's
                // _setInverseManyToMany: recurses into the inverse before naming its own). A
                // relationship's column holds the keys of the entity declaring it, so it is the
                // other side's column here.
                let secondColumn = unique("Z_\(other)\(name.uppercased())", in: inverse.declaredBy)
                let secondOrder = relationship.isOrdered ? unique("Z_FOK_\(other)\(name.uppercased())", in: inverse.declaredBy) : nil
                let firstColumn = unique("Z_\(owner)\(inverseName.uppercased())", in: declaredBy)
                let firstOrder = inverseRelationship.isOrdered ? unique("Z_FOK_\(owner)\(inverseName.uppercased())", in: declaredBy) : nil
                joinTables.append(
                    JoinTable(
                        name: table,
                        sides: [
                            .init(
                                column: firstColumn, target: inverseTarget, entity: inverse.declaredBy, property: inverseName,
                                order: firstOrder),
                            .init(column: secondColumn, target: target, entity: declaredBy, property: name, order: secondOrder),
                        ]))
            }
        }
    }
}
