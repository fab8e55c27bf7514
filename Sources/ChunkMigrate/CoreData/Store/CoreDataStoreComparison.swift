import Foundation

/// Two Core Data stores of one model compared by content, keys aside: every row of every entity
/// matched by its identity, every attribute's value, and every relationship by the identity of the
/// rows it points at.
///
/// The way to prove a migration before it meets millions of rows: migrate a small sample store
/// with Core Data (a mapping model, a custom policy) on a Mac, migrate a copy of the same sample
/// with chunkmigrate, and compare the two. Core Data gives the rows new keys in a heavyweight
/// migration, so keys say nothing: a row is found by its identifying attributes, given, or found
/// in this order:
/// - a uniqueness constraint of the model made of attributes;
/// - one attribute whose values are all there and all different in both stores (UUIDs, names);
/// - all its attributes together (rows alike are then counted, not told apart).
///
/// Each entity is compared with a sorted statement per store, merged as they are read: memory
/// does not grow with the stores.
public enum CoreDataStoreComparison {
    /// One difference between the stores.
    public struct Difference: Sendable, Codable, Equatable {
        /// What differs.
        public enum Kind: String, Sendable, Codable {
            /// A row of the first store that the second lacks.
            case missing
            /// A row of the second store that the first lacks.
            case extra
            /// An attribute whose value differs.
            case value
            /// A relationship that points at other rows.
            case relationship
        }
        /// What differs.
        public var kind: Kind
        /// The entity.
        public var entity: String
        /// The row, by its identity (`name = 'Ann'`).
        public var row: String
        /// The attribute or relationship, for a value or a relationship.
        public var property: String?
        /// What the first store holds, as an SQL literal or the identities of the rows pointed at.
        public var first: String?
        /// What the second store holds, as ``first`` says it.
        public var second: String?

        /// The difference in words.
        public var line: String {
            switch kind {
            case .missing: "\(entity) \(row): in the first store only"
            case .extra: "\(entity) \(row): in the second store only"
            case .value: "\(entity) \(row): \(property ?? "") is \(first ?? "NULL") in the first store, \(second ?? "NULL") in the second"
            case .relationship:
                "\(entity) \(row): \(property ?? "") points at \(first ?? "nothing") in the first store, \(second ?? "nothing") in the second"
            }
        }
    }

    /// What a comparison found.
    public struct Report: Sendable, Codable {
        /// Each entity compared and how its rows are identified (`name`, `all attributes`).
        public var identities: [String: String] = [:]
        /// Rows compared, in the first store.
        public var rows: Int = 0
        /// The differences, at most the limit given per entity.
        public var differences: [Difference] = []
        /// Differences found, per entity, where more than the limit.
        public var more: [String: Int] = [:]
        /// Whether the stores hold the same content.
        public var isEqual: Bool { differences.isEmpty }
    }

    /// Compares store `first` with store `second`, both Core Data stores of the same model.
    ///
    /// - Parameters:
    ///   - first: a store, opened read-only.
    ///   - second: the store to compare it with, opened read-only.
    ///   - given: entity name -> its identifying attributes, where the ones found are not
    ///     the ones meant.
    ///   - model: the stores' model, for stores without a model cache; `nil` reads the first
    ///     store's.
    ///   - limit: the differences reported per entity (one at least); the rest are counted.
    /// - Returns: the differences, each naming the entity, the row and the property.
    /// - Throws: ``MigrationError`` naming the store when it cannot be read, has no model, or
    ///   does not fit the model, and naming the entity and attribute of an identity given that
    ///   the model does not have.
    public static func run(
        _ first: URL, _ second: URL, identities given: [String: [String]] = [:], model: CoreDataModel? = nil,
        limit: Int = 20
    ) throws -> Report {
        let database: Database
        do {
            database = try Database(path: first.path, mode: .source)
            try database.attach(Database.readOnlyURI(second.path), as: "b")
        } catch {
            throw MigrationError(.store, "cannot open the stores: \(error.message)", file: first.path, cause: error)
        }
        guard let model = try model ?? CoreDataModel.read(database, schema: "main", file: first.path) else {
            throw MigrationError(.store, "the store has no model cache: give its model (--model)", file: first.path)
        }
        let layout = try CoreDataLayout(model: model)
        let stores = [
            try layout.resolved(against: database, schema: "main", file: first.path).0,
            try layout.resolved(against: database, schema: "b", file: second.path).0,
        ]
        for (entity, attributes) in given {
            guard model.entity(named: entity) != nil else {
                throw MigrationError(
                    .invalidPlan,
                    "--identify \(entity): the model has no entity \(entity)\(MigrationPlan.suggestion(for: entity, among: model.entities.map(\.name)))"
                )
            }
            for name in attributes where model.property(name, of: entity)?.property.attribute == nil {
                throw MigrationError(
                    .invalidPlan, "--identify \(entity): entity \(entity) has no attribute \(name)", entity: entity, column: name)
            }
        }
        var comparison = Comparison(database: database, layouts: stores, limit: max(limit, 1))
        for entity in model.entities.sorted(by: { $0.name < $1.name }) {
            let attributes = try given[entity.name] ?? comparison.identity(of: entity.name)
            comparison.identities[entity.name] = attributes
            comparison.report.identities[entity.name] = attributes.isEmpty ? "all attributes" : attributes.joined(separator: ", ")
        }
        for entity in model.entities.sorted(by: { $0.name < $1.name }) where !entity.isAbstract {
            try comparison.compare(entity.name)
        }
        return comparison.report
    }

    /// The state of one comparison: the connection (the first store as `main`, the second as
    /// `b`), each store's layout, the identities chosen.
    private struct Comparison {
        let database: Database
        let layouts: [CoreDataLayout]
        let limit: Int
        var identities: [String: [String]] = [:]
        var report = Report()
        static let schemas = ["main", "b"]
        static let separator = "char(31)"

        var model: CoreDataModel { layouts[0].model }

        /// The attributes that identify the rows of `entity`: a uniqueness constraint of
        /// attributes, else one attribute present and distinct in both stores, else none (all).
        func identity(of entity: String) throws -> [String] {
            let attributes = model.allProperties(of: entity).filter { $0.property.attribute != nil && !$0.property.isTransient }
            if let constraint = model.lineage(of: entity).lazy.flatMap(\.uniquenessConstraints)
                .first(where: { names in names.allSatisfy { name in attributes.contains { $0.property.name == name } } })
            {
                return constraint
            }
            // Identifiers and names first, then dates and numbers; never a Boolean (two values),
            // nor bytes.
            let ranked = attributes.filter { rank($0.property) != nil }.sorted { rank($0.property)! < rank($1.property)! }
            for candidate in ranked {
                var distinct = true
                for (index, layout) in layouts.enumerated() {
                    guard let table = layout.table(of: entity), let column = layout.column(of: candidate.property.name, entity: entity),
                        let number = layout.entity(named: entity)?.number
                    else { distinct = false; break }
                    let counts = try query(
                        "SELECT count(*), count(\(SQL.quote(column.name))), count(DISTINCT \(SQL.quote(column.name))) FROM \(Self.schemas[index]).\(SQL.quote(table.name)) WHERE Z_ENT = \(number)"
                    )
                    guard let row = counts.first, row[0] == row[1], row[1] == row[2] else { distinct = false; break }
                }
                if distinct { return [candidate.property.name] }
            }
            return []
        }

        private func rank(_ property: CoreDataModel.Property) -> Int? {
            switch property.attribute?.type {
            case .uuid?: 0
            case .string?, .uri?: 1
            case .date?: 2
            case .integer16?, .integer32?, .integer64?, .double?, .float?, .decimal?: 3
            default: nil
            }
        }

        private func query(_ sql: String) throws -> [[SQLiteValue]] {
            do { return try database.rows(sql) } catch {
                throw MigrationError(.store, "cannot read the stores: \(error.message)", sql: sql, cause: error)
            }
        }

        /// The SQL of the identity of the row `alias` of `layout`'s table holding `entity`'s tree:
        /// its entity's name and identifying values, `NULL` where no row is.
        func identityExpression(ofTree entity: String, alias: String, layout: CoreDataLayout) -> String {
            guard let number = layout.entity(named: entity)?.number else { return "NULL" }
            let cases = layout.descendants(of: number).sorted().compactMap { member -> String? in
                guard let name = layout.entities[member]?.name else { return nil }
                return "WHEN \(member) THEN \(SQL.literal(name + " ")) || \(values(of: name, alias: alias, layout: layout))"
            }
            return "CASE \(alias).Z_ENT \(cases.joined(separator: " ")) END"
        }

        /// The identifying values of a row of `entity`, as one text.
        func values(of entity: String, alias: String, layout: CoreDataLayout) -> String {
            var names = identities[entity] ?? []
            if names.isEmpty {
                names = model.allProperties(of: entity).filter { $0.property.attribute != nil && !$0.property.isTransient }.map(
                    \.property.name
                ).sorted()
            }
            let parts = names.map { name in
                layout.column(of: name, entity: entity).map { "\(SQL.literal(name + " = ")) || quote(\(alias).\(SQL.quote($0.name)))" }
                    ?? "'?'"
            }
            return parts.isEmpty ? "''" : parts.joined(separator: " || ', ' || ")
        }

        /// Compares the rows of exactly `entity` in the two stores.
        mutating func compare(_ entity: String) throws {
            let attributes = model.allProperties(of: entity).filter { $0.property.attribute != nil && !$0.property.isTransient }
                .map(\.property.name).sorted()
            let relationships = model.allProperties(of: entity).filter {
                $0.property.relationship != nil && !$0.property.isTransient && compares($0.property.name, of: entity)
            }
            .map(\.property.name).sorted()
            var statements: [Statement] = []
            for (index, layout) in layouts.enumerated() {
                let schema = Self.schemas[index]
                guard let table = layout.table(of: entity), let number = layout.entity(named: entity)?.number else { return }
                var columns = [values(of: entity, alias: "s", layout: layout)]
                for name in attributes {
                    columns.append(layout.column(of: name, entity: entity).map { "quote(s.\(SQL.quote($0.name)))" } ?? "NULL")
                }
                for name in relationships { columns.append(targets(name, of: entity, layout: layout, schema: schema)) }
                // In the order of the identity, then of every value: rows alike pair up in turn.
                let order = (1...columns.count).map(String.init).joined(separator: ", ")
                let sql =
                    "SELECT \(columns.joined(separator: ", ")) FROM \(schema).\(SQL.quote(table.name)) AS s WHERE s.Z_ENT = \(number) ORDER BY \(order)"
                do { statements.append(try database.prepare(sql)) } catch {
                    throw MigrationError(
                        .store, "cannot read \(entity) of the \(index == 0 ? "first" : "second") store: \(error.message)", entity: entity,
                        sql: sql, cause: error)
                }
            }
            let names = attributes + relationships
            var found = 0
            func note(_ difference: Difference) {
                found += 1
                if found <= limit { report.differences.append(difference) }
            }
            func next(_ index: Int) throws -> [String?]? {
                do {
                    guard try statements[index].step() else { return nil }
                } catch {
                    throw MigrationError(
                        .store, "cannot read \(entity) of the \(index == 0 ? "first" : "second") store: \(error.message)", entity: entity,
                        cause: error)
                }
                return (0..<(names.count + 1)).map { column in statements[index].value(at: column).text }
            }
            // Text compared as SQLite orders it, byte by byte (Swift's `<` and `==` would take
            // canonically equivalent strings for one).
            func before(_ x: String?, _ y: String?) -> Bool { Array((x ?? "").utf8).lexicographicallyPrecedes((y ?? "").utf8) }
            func same(_ x: String?, _ y: String?) -> Bool { x.map { Array($0.utf8) } == y.map { Array($0.utf8) } }
            var a = try next(0), b = try next(1)
            while a != nil || b != nil {
                let keyA = a?[0] ?? nil, keyB = b?[0] ?? nil
                if let rowA = a, b == nil || before(keyA, keyB) {
                    report.rows += 1
                    note(Difference(kind: .missing, entity: entity, row: rowA[0] ?? "", property: nil, first: nil, second: nil))
                    a = try next(0)
                } else if let rowB = b, a == nil || before(keyB, keyA) {
                    note(Difference(kind: .extra, entity: entity, row: rowB[0] ?? "", property: nil, first: nil, second: nil))
                    b = try next(1)
                } else if let rowA = a, let rowB = b {
                    report.rows += 1
                    for (offset, name) in names.enumerated() where !same(rowA[offset + 1], rowB[offset + 1]) {
                        note(
                            Difference(
                                kind: offset < attributes.count ? .value : .relationship, entity: entity, row: rowA[0] ?? "",
                                property: name, first: rowA[offset + 1], second: rowB[offset + 1]))
                    }
                    a = try next(0)
                    b = try next(1)
                }
            }
            if found > limit { report.more[entity] = found - limit }
        }

        /// Whether relationship `name` of `entity` is compared from this side: a to-one, a
        /// to-many without a to-one inverse (or ordered), one side of a many-to-many.
        func compares(_ name: String, of entity: String) -> Bool {
            guard let relationship = model.property(name, of: entity)?.property.relationship else { return false }
            guard relationship.isToMany else { return true }
            guard let inverse = relationship.inverse, let other = model.property(inverse, of: relationship.destination),
                let otherRelationship = other.property.relationship
            else { return true }
            if !otherRelationship.isToMany { return relationship.isOrdered }
            // One side of a many-to-many, by the entities declaring the two: every entity that
            // inherits the side compares it.
            let declaredBy = model.property(name, of: entity)?.declaredBy ?? entity
            return "\(declaredBy).\(name)" <= "\(other.declaredBy).\(inverse)"
        }

        /// The SQL of the identities of the rows relationship `name` of the row `s` points at: one
        /// for a to-one, the list (sorted, or in order for an ordered one) for a to-many.
        func targets(_ name: String, of entity: String, layout: CoreDataLayout, schema: String) -> String {
            guard let declared = model.property(name, of: entity), let relationship = declared.property.relationship,
                let targetTable = layout.table(of: relationship.destination)
            else { return "NULL" }
            let target = identityExpression(ofTree: relationship.destination, alias: "x", layout: layout)
            let from = "\(schema).\(SQL.quote(targetTable.name)) AS x"
            if !relationship.isToMany {
                guard let column = layout.column(of: name, entity: entity) else { return "NULL" }
                return "(SELECT \(target) FROM \(from) WHERE x.Z_PK = s.\(SQL.quote(column.name)))"
            }
            // The pairs: a join table, the inverse's key in the target's table, or the owner's.
            var pairs = "", order: String?
            if let join = layout.joinTable(of: name, entity: entity),
                let mine = join.sides.first(where: { $0.entity == declared.declaredBy && $0.property == name }),
                let other = join.sides.first(where: { $0 != mine }) ?? join.sides.first
            {
                pairs =
                    "\(schema).\(SQL.quote(join.name)) AS j JOIN \(from) ON x.Z_PK = j.\(SQL.quote(mine.column)) WHERE j.\(SQL.quote(other.column)) = s.Z_PK"
                order = mine.order.map { "j.\(SQL.quote($0))" }
            } else if let inverse = relationship.inverse, let inverseDeclared = model.property(inverse, of: relationship.destination),
                let key = targetTable.column(for: .toOne(entity: inverseDeclared.declaredBy, property: inverse))
            {
                pairs = "\(from) WHERE x.\(SQL.quote(key.name)) = s.Z_PK"
                order = targetTable.column(for: .toOneOrder(entity: inverseDeclared.declaredBy, property: inverse)).map {
                    "x.\(SQL.quote($0.name))"
                }
            } else if let owner = targetTable.column(for: .toManyOwner(entity: declared.declaredBy, property: name)) {
                pairs = "\(from) WHERE x.\(SQL.quote(owner.name)) = s.Z_PK"
                order = targetTable.column(for: .toManyOrder(entity: declared.declaredBy, property: name)).map { "x.\(SQL.quote($0.name))" }
            } else {
                return "NULL"
            }
            let ordering = relationship.isOrdered ? (order.map { "\($0), t" } ?? "t") : "t"
            return "(SELECT group_concat(t, '; ') FROM (SELECT \(target) AS t FROM \(pairs) ORDER BY \(ordering)))"
        }
    }
}
