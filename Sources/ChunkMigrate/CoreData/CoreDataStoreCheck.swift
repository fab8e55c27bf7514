import Foundation

/// The invariants Core Data relies on when it opens a store, checked on the store's rows:
///
/// - every `Z_ENT` of an entity table belongs to that table's entity tree;
/// - `Z_PRIMARYKEY.Z_MAX` of every root entity is at least the largest `Z_PK` of its table (or
///   the next insert would reuse a key);
/// - every to-one key whose target the layout tells points at an existing row of the target
///   entity or one of its sub-entities, and a polymorphic `Z<n>_<REL>` column holds that row's
///   `Z_ENT` (and is NULL exactly when the key is);
/// - every join-table key points at an existing row of the column's entity;
/// - the metadata property list decodes, its `NSStoreUUID` is `Z_UUID`, and its version hashes
///   name every entity of `Z_PRIMARYKEY`.
///
/// ```swift
/// let report = try CoreDataStoreCheck.run(store: url)
/// if !report.isValid { print(report.violations.joined(separator: "\n")) }
/// ```
public enum CoreDataStoreCheck {
    /// What a check found.
    public struct Report: Sendable, Codable {
        /// Each violation, naming the table, the column, how many rows and the first source key.
        public var violations: [String]
        /// What was checked, one line per invariant and table.
        public var checked: Int
        /// To-one columns whose target the store's layout does not tell, so they were not checked.
        public var unchecked: [String]
        /// Whether every invariant holds.
        public var isValid: Bool { violations.isEmpty }
    }

    /// Checks the store at `store`, opened read-only (a WAL store's `-wal` file, when there is one,
    /// is read as Core Data would).
    ///
    /// - Throws: ``MigrationError`` naming the file when it is not a readable Core Data store.
    public static func run(store: URL) throws -> Report {
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
            return try check(database, file: store.path)
        } catch let error as SQLiteError {
            throw MigrationError(.store, "cannot read the store as a Core Data store: \(error.message)", file: store.path, sql: error.sql)
        }
    }

    /// Checks the store open as `main` in `database`.
    static func check(_ database: Database, file: String) throws -> Report {
        let layout = try CoreDataLayout.read(database, file: file)
        var report = Report(violations: [], checked: 0, unchecked: [])
        func count(_ sql: String) throws -> (Int64, Int64?) {
            report.checked += 1
            let row = try database.rows(sql)[0]
            return (row[0].integer ?? 0, row[1].integer)
        }
        func list(_ numbers: Set<Int64>) -> String { numbers.sorted().map(String.init).joined(separator: ", ") }
        func first(_ key: Int64?) -> String { key.map { ", the first with Z_PK \($0)" } ?? "" }

        for table in layout.tables.values.sorted(by: { $0.name < $1.name }) {
            let name = SQL.quote(table.name)
            let tree = layout.descendants(of: table.root)
            let (stray, strayKey) = try count("SELECT count(*), min(Z_PK) FROM \(name) WHERE Z_ENT IS NULL OR Z_ENT NOT IN (\(list(tree)))")
            if stray > 0 {
                report.violations.append("\(table.name): \(stray) rows have a Z_ENT outside the entity tree of \(layout.entities[table.root]!.name) (\(list(tree)))\(first(strayKey))")
            }
            let largest = try database.scalar("SELECT max(Z_PK) FROM \(name)").integer ?? 0
            report.checked += 1
            if let root = layout.entities[table.root], root.max < largest {
                report.violations.append("Z_PRIMARYKEY: Z_MAX of \(root.name) is \(root.max) but \(table.name) holds key \(largest); the next insert would reuse a key")
            }
            for toOne in table.toOnes {
                guard let target = toOne.target, let targetEntity = layout.entities[target],
                      let targetTable = layout.tables[targetEntity.root] else {
                    report.unchecked.append("\(table.name).\(toOne.column)")
                    continue
                }
                let allowed = layout.descendants(of: target)
                let column = "s." + SQL.quote(toOne.column)
                var wrong = "t.Z_PK IS NULL OR t.Z_ENT NOT IN (\(list(allowed)))"
                if let entityColumn = toOne.entityColumn { wrong += " OR s.\(SQL.quote(entityColumn)) IS NOT t.Z_ENT" }
                let (dangling, danglingKey) = try count("""
                    SELECT count(*), min(s.Z_PK) FROM \(name) AS s LEFT JOIN \(SQL.quote(targetTable.name)) AS t ON t.Z_PK = \(column)
                    WHERE \(column) IS NOT NULL AND (\(wrong))
                    """)
                if dangling > 0 {
                    report.violations.append("\(table.name).\(toOne.column): \(dangling) rows point at no row of \(targetEntity.name)\(toOne.entityColumn.map { " or disagree with \($0)" } ?? "")\(first(danglingKey))")
                }
                if let entityColumn = toOne.entityColumn {
                    let (orphan, orphanKey) = try count(
                        "SELECT count(*), min(Z_PK) FROM \(name) WHERE \(SQL.quote(toOne.column)) IS NULL AND \(SQL.quote(entityColumn)) IS NOT NULL")
                    if orphan > 0 {
                        report.violations.append("\(table.name).\(entityColumn): \(orphan) rows name an entity while \(toOne.column) is NULL\(first(orphanKey))")
                    }
                }
            }
        }
        for join in layout.joinTables.sorted(by: { $0.name < $1.name }) {
            for column in join.columns where !column.isOrder {
                guard let entity = layout.entities[column.entity], let table = layout.tables[entity.root] else { continue }
                let (dangling, _) = try count("""
                    SELECT count(*), NULL FROM \(SQL.quote(join.name)) AS j
                    WHERE NOT EXISTS (SELECT 1 FROM \(SQL.quote(table.name)) AS t
                                      WHERE t.Z_PK = j.\(SQL.quote(column.name)) AND t.Z_ENT IN (\(list(layout.descendants(of: column.entity))))) 
                    """)
                if dangling > 0 {
                    report.violations.append("\(join.name).\(column.name): \(dangling) rows point at no row of \(entity.name)")
                }
            }
        }
        report.checked += 1
        do {
            let metadata = try CoreDataMetadata.read(database, file: file)
            if let uuid = metadata.uuid, let stored = metadata.storeUUID, stored != uuid {
                report.violations.append("Z_METADATA: NSStoreUUID \(stored) differs from Z_UUID \(uuid)")
            }
            let missing = Set(layout.entities.values.map(\.name)).subtracting(metadata.hashedEntities ?? [])
            if metadata.hashedEntities != nil, !missing.isEmpty {
                report.violations.append("Z_METADATA: the model's version hashes do not name \(missing.sorted().joined(separator: ", "))")
            }
        } catch let error as MigrationError {
            report.violations.append(error.message)
        }
        return report
    }
}
