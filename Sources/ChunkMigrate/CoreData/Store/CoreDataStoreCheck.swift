import Foundation

/// The invariants Core Data relies on when it opens a store, checked on the store's rows against
/// its model (the store's own model cache, or one given):
///
/// - the store's schema is the layout its model implies (``CoreDataLayout``);
/// - every `Z_ENT` of an entity table belongs to that table's entity tree;
/// - `Z_PRIMARYKEY.Z_MAX` of every root entity is at least the largest `Z_PK` of its table (or
///   the next insert would reuse a key);
/// - a required attribute or to-one has a value in every row of the entities that have it (values
///   in rows of other entities, which Core Data never reads and its own in-place migrations leave
///   behind, are reported as notes, not violations);
/// - every to-one key points at an existing row of the relationship's destination entity or one
///   of its sub-entities, its polymorphic `Z<n>_<REL>` column holds that row's `Z_ENT` (and is
///   NULL exactly when the key is), and its order column (`Z_FOK_`) has a value exactly when the
///   key has, distinct within each owner;
/// - every join-table key points at an existing row of its side's entity, and order columns are
///   set and distinct within each owner;
/// - the metadata property list decodes, its `NSStoreUUID` is `Z_UUID`, and its version hashes
///   name every entity of `Z_PRIMARYKEY`.
///
/// A store without a model cache, checked without a model, gets the checks that need none
/// (entity numbers, `Z_MAX`, metadata) and says what it did not check.
///
/// ```swift
/// let report = try CoreDataStoreCheck.run(store: url)
/// if !report.isValid { print(report.violations.joined(separator: "\n")) }
/// ```
public enum CoreDataStoreCheck {
    /// What a check found.
    public struct Report: Sendable, Codable {
        /// Each violation, naming the table, the column, how many rows and the first key.
        public var violations: [String]
        /// How many checks ran (one per invariant and table or column).
        public var checked: Int
        /// What could not be checked, and why (a store without a model).
        public var unchecked: [String]
        /// What was found that Core Data does not rely on, one line each: values in columns of
        /// properties their row's entity does not have, which Core Data never reads (its own
        /// in-place migrations leave them, an added column's default in every row of the table).
        public var notes: [String] = []
        /// Whether every invariant holds.
        public var isValid: Bool { violations.isEmpty }
    }

    /// Checks the store at `store`, opened read-only (a WAL store's `-wal` file, when there is one,
    /// is read as Core Data would).
    ///
    /// - Parameter model: the store's model; its own model cache when `nil`.
    /// - Throws: ``MigrationError`` naming the file when it is not a readable Core Data store, or
    ///   its model cache is damaged.
    public static func run(store: URL, model: CoreDataModel? = nil) throws -> Report {
        guard FileManager.default.fileExists(atPath: store.path) else {
            throw MigrationError(.store, "the store does not exist", file: store.path)
        }
        let database: Database
        do {
            // Read-only, and immutable when no process has the WAL store open: no -wal or -shm
            // file appears next to the store checked.
            database = try Database(path: store.path, mode: .source)
            _ = try database.scalar("SELECT count(*) FROM sqlite_schema")
        } catch {
            throw MigrationError(.store, "not a readable SQLite store: \(error.message)", file: store.path)
        }
        do {
            let model = try model ?? CoreDataModel.read(database, schema: "main", file: store.path)
            return try check(database, model: model, file: store.path)
        } catch let error as SQLiteError {
            throw MigrationError(.store, "cannot read the store as a Core Data store: \(error.message)", file: store.path, sql: error.sql)
        }
    }

    /// Checks the store open as `main` in `database`.
    static func check(_ database: Database, model: CoreDataModel?, file: String) throws -> Report {
        var check = Checker(database: database, entities: try CoreDataEntities.read(database, file: file))
        try check.entityTrees()
        try check.metadata(file: file)
        guard let model else {
            check.report.unchecked.append("the store has no model cache and no model was given: attributes, relationships and join tables were not checked (give the model)")
            return check.report
        }
        let layout: CoreDataLayout
        do {
            layout = try CoreDataLayout(model: model).resolved(against: database, schema: "main", file: file).0
        } catch let error as MigrationError {
            check.report.violations.append(error.message)
            return check.report
        }
        try check.columns(layout)
        try check.joinTables(layout)
        return check.report
    }
}

/// The checks, one function per invariant, adding to one report.
private struct Checker {
    let database: Database
    let entities: CoreDataEntities
    var report = CoreDataStoreCheck.Report(violations: [], checked: 0, unchecked: [])

    func list(_ numbers: Set<Int64>) -> String { numbers.sorted().map(String.init).joined(separator: ", ") }
    func first(_ key: Int64?) -> String { key.map { ", the first with Z_PK \($0)" } ?? "" }

    /// The count and smallest key of the rows `sql` selects (`count(*), min(...)`).
    mutating func count(_ sql: String) throws -> (Int64, Int64?) {
        report.checked += 1
        let row = try database.rows(sql)[0]
        return (row[0].integer ?? 0, row[1].integer)
    }

    /// Every row's `Z_ENT` in its table's tree, and `Z_MAX` ahead of every key.
    mutating func entityTrees() throws {
        for root in entities.entities.values.filter({ $0.parent == nil }).sorted(by: { $0.table < $1.table }) {
            guard try database.tableSchema(root.table, in: "main") != nil else { continue }
            let name = SQL.quote(root.table)
            let tree = entities.descendants(of: root.number)
            let (stray, strayKey) = try count("SELECT count(*), min(Z_PK) FROM \(name) WHERE Z_ENT IS NULL OR Z_ENT NOT IN (\(list(tree)))")
            if stray > 0 {
                report.violations.append("\(root.table): \(stray) rows have a Z_ENT outside the entity tree of \(root.name) (\(list(tree)))\(first(strayKey))")
            }
            let (_, largest) = try count("SELECT count(*), max(Z_PK) FROM \(name)")
            if let largest, root.max < largest {
                report.violations.append("Z_PRIMARYKEY: Z_MAX of \(root.name) is \(root.max) but \(root.table) holds key \(largest); the next insert would reuse a key")
            }
        }
    }

    /// Each column of each entity table, by what it holds.
    mutating func columns(_ layout: CoreDataLayout) throws {
        for table in layout.tables.values.sorted(by: { $0.name < $1.name }) {
            for column in table.columns {
                switch column.role {
                case .key, .entityNumber, .version:
                    continue
                case let .attribute(owner, property):
                    try onlyInOwners(column, owner: owner, table: table, layout)
                    if let declared = layout.model.entity(named: owner)?.property(named: property), !declared.isOptional,
                       declared.attribute?.derivation == nil {
                        try required(column, owner: owner, property: property, table: table, layout)
                    }
                case let .toOne(owner, property):
                    try onlyInOwners(column, owner: owner, table: table, layout)
                    guard let declared = layout.model.entity(named: owner)?.property(named: property),
                          let relationship = declared.relationship else { continue }
                    if !declared.isOptional { try required(column, owner: owner, property: property, table: table, layout) }
                    try target(column, relationship: relationship, owner: owner, property: property, table: table, layout)
                case .toOneEntity, .toOneOrder, .toManyOwner, .toManyOrder:
                    continue   // checked with their key column
                }
            }
        }
    }

    /// Values in a column in rows of entities without its property: a note.
    mutating func onlyInOwners(_ column: CoreDataLayout.Column, owner: String, table: CoreDataLayout.EntityTable,
                               _ layout: CoreDataLayout) throws {
        guard let number = layout.entity(named: owner)?.number else { return }
        let owners = layout.descendants(of: number)
        guard owners != layout.descendants(of: table.root) else { return }
        let (stray, key) = try count("""
            SELECT count(*), min(Z_PK) FROM \(SQL.quote(table.name)) WHERE \(SQL.quote(column.name)) IS NOT NULL AND Z_ENT NOT IN (\(list(owners)))
            """)
        if stray > 0 {
            report.notes.append("\(table.name).\(column.name): \(stray) rows of entities without \(layout.describe(column.role, root: owner)) hold a value, which Core Data does not read\(first(key))")
        }
    }

    /// A required attribute or to-one has a value in every row of its entities.
    mutating func required(_ column: CoreDataLayout.Column, owner: String, property: String, table: CoreDataLayout.EntityTable,
                           _ layout: CoreDataLayout) throws {
        guard let number = layout.entity(named: owner)?.number else { return }
        let (missing, key) = try count("""
            SELECT count(*), min(Z_PK) FROM \(SQL.quote(table.name)) WHERE \(SQL.quote(column.name)) IS NULL AND Z_ENT IN (\(list(layout.descendants(of: number))))
            """)
        if missing > 0 {
            report.violations.append("\(table.name).\(column.name): \(missing) rows of \(owner) have no value for the required \(owner).\(property)\(first(key))")
        }
    }

    /// A to-one's key points at a row of its destination; its entity and order columns agree.
    mutating func target(_ column: CoreDataLayout.Column, relationship: CoreDataModel.Relationship, owner: String, property: String,
                         table: CoreDataLayout.EntityTable, _ layout: CoreDataLayout) throws {
        guard let destination = layout.entity(named: relationship.destination), let targetTable = layout.tables[destination.root] else { return }
        let name = SQL.quote(table.name), key = "s." + SQL.quote(column.name)
        let entityColumn = table.column(for: .toOneEntity(entity: owner, property: property))
        var wrong = "t.Z_PK IS NULL OR t.Z_ENT NOT IN (\(list(layout.descendants(of: destination.number))))"
        if let entityColumn { wrong += " OR s.\(SQL.quote(entityColumn.name)) IS NOT t.Z_ENT" }
        let (dangling, danglingKey) = try count("""
            SELECT count(*), min(s.Z_PK) FROM \(name) AS s LEFT JOIN \(SQL.quote(targetTable.name)) AS t ON t.Z_PK = \(key)
            WHERE \(key) IS NOT NULL AND (\(wrong))
            """)
        if dangling > 0 {
            report.violations.append("\(table.name).\(column.name): \(dangling) rows point at no row of \(relationship.destination)\(entityColumn.map { " or disagree with \($0.name)" } ?? "")\(first(danglingKey))")
        }
        if let entityColumn {
            let (orphan, orphanKey) = try count(
                "SELECT count(*), min(Z_PK) FROM \(name) WHERE \(SQL.quote(column.name)) IS NULL AND \(SQL.quote(entityColumn.name)) IS NOT NULL")
            if orphan > 0 {
                report.violations.append("\(table.name).\(entityColumn.name): \(orphan) rows name an entity while \(column.name) is NULL\(first(orphanKey))")
            }
        }
        if let order = table.column(for: .toOneOrder(entity: owner, property: property)) {
            let (unordered, unorderedKey) = try count("""
                SELECT count(*), min(Z_PK) FROM \(name) WHERE (\(SQL.quote(column.name)) IS NULL) <> (\(SQL.quote(order.name)) IS NULL)
                """)
            if unordered > 0 {
                report.violations.append("\(table.name).\(order.name): \(unordered) rows have an order without a key in \(column.name), or a key without an order\(first(unorderedKey))")
            }
            try distinctOrders(table: table.name, owner: column.name, order: order.name)
        }
    }

    /// Within one owner, no two rows share a position.
    mutating func distinctOrders(table: String, owner: String, order: String) throws {
        let (shared, _) = try count("""
            SELECT count(*), NULL FROM (SELECT 1 FROM \(SQL.quote(table)) WHERE \(SQL.quote(owner)) IS NOT NULL
                                        GROUP BY \(SQL.quote(owner)), \(SQL.quote(order)) HAVING count(*) > 1)
            """)
        if shared > 0 {
            report.violations.append("\(table).\(order): \(shared) positions are shared by two rows of one \(owner)")
        }
    }

    /// Every join-table key points at a row of its side's entity; order columns are set.
    mutating func joinTables(_ layout: CoreDataLayout) throws {
        for join in layout.joinTables.sorted(by: { $0.name < $1.name }) {
            for (index, side) in join.sides.enumerated() {
                guard let entity = layout.entities[side.target], let table = layout.tables[entity.root] else { continue }
                let (dangling, _) = try count("""
                    SELECT count(*), NULL FROM \(SQL.quote(join.name)) AS j
                    WHERE NOT EXISTS (SELECT 1 FROM \(SQL.quote(table.name)) AS t
                                      WHERE t.Z_PK = j.\(SQL.quote(side.column)) AND t.Z_ENT IN (\(list(layout.descendants(of: side.target))))) 
                    """)
                if dangling > 0 {
                    report.violations.append("\(join.name).\(side.column): \(dangling) rows point at no row of \(entity.name)")
                }
                guard let order = side.order else { continue }
                let (unordered, _) = try count("SELECT count(*), NULL FROM \(SQL.quote(join.name)) WHERE \(SQL.quote(order)) IS NULL")
                if unordered > 0 {
                    report.violations.append("\(join.name).\(order): \(unordered) rows have no position")
                }
                let owner = join.sides[1 - index].column
                try distinctOrders(table: join.name, owner: owner, order: order)
            }
        }
    }

    /// The metadata decodes, keeps one UUID, and names every entity.
    mutating func metadata(file: String) throws {
        report.checked += 1
        do {
            let metadata = try CoreDataMetadata.read(database, file: file)
            if let uuid = metadata.uuid, let stored = metadata.storeUUID, stored != uuid {
                report.violations.append("Z_METADATA: NSStoreUUID \(stored) differs from Z_UUID \(uuid)")
            }
            let missing = Set(entities.entities.values.map(\.name)).subtracting(metadata.hashedEntities ?? [])
            if metadata.hashedEntities != nil, !missing.isEmpty {
                report.violations.append("Z_METADATA: the model's version hashes do not name \(missing.sorted().joined(separator: ", "))")
            }
        } catch let error as MigrationError {
            report.violations.append(error.message)
        }
    }
}
