import Foundation
import Testing
@testable import ChunkMigrate

/// Core Data stores for tests: models written as the XML Xcode saves, stores created from them as
/// Core Data creates them (``CoreDataEmptyStore``), fixture stores emptied the way Core Data
/// creates a new store.
enum CoreDataTesting {
    /// A model from the `<entity>` elements of its XML.
    static func model(_ entities: String, identifier: String = "") throws -> CoreDataModel {
        let xml = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" userDefinedModelVersionIdentifier="\(identifier)">
            \(entities)
            </model>
            """
        return try CoreDataModel(xml: Data(xml.utf8), file: "test model")
    }

    /// An empty store of `model` at `url`, then `rows` (SQL) run on it (without its triggers) and
    /// every root's `Z_MAX` raised to its table's largest key.
    @discardableResult
    static func store(_ model: CoreDataModel, at url: URL, uuid: String, metadata: [String: String] = [:], rows: String = "") throws -> URL
    {
        try CoreDataEmptyStore.create(at: url, model: model, uuid: uuid, metadata: metadata)
        let database = try Database(path: url.path, mode: .readWrite)
        // Core Data's triggers (derived attributes) call functions of its own connections: the
        // rows go in without them, with the values given.
        let triggers = try database.rows("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'")
        try database.execute(
            "BEGIN; " + triggers.map { "DROP TRIGGER \(SQL.quote($0[0].text!));" }.joined() + " \(rows); "
                + triggers.map { $0[1].text! + ";" }.joined() + " COMMIT;")
        let layout = try CoreDataLayout(model: model)
        for table in layout.tables.values {
            try database.execute(
                "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT ifnull(max(Z_PK), 0) FROM \(table.name)) WHERE Z_ENT = \(table.root)")
        }
        return url
    }

    /// A copy of `store` emptied the way Core Data creates a new store of the same model: entity
    /// and join tables empty, every `Z_MAX` 0, a new store UUID, only Core Data's own metadata
    /// keys. The model cache stays.
    static func emptiedCopy(of store: URL, named name: String, in folder: TemporaryFolder) throws -> URL {
        let copy = folder.path(name)
        try FileManager.default.copyItem(at: store, to: copy)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: store.path + suffix) {
            try FileManager.default.copyItem(atPath: store.path + suffix, toPath: copy.path + suffix)
        }
        let database = try Database(path: copy.path, mode: .readWrite)
        let tables = try database.rows(
            """
            SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
            AND name NOT IN ('Z_PRIMARYKEY', 'Z_METADATA', 'Z_MODELCACHE')
            """
        ).compactMap { $0[0].text }.filter { !shadowTables(in: database).contains($0) }
        // The store's triggers call functions only Core Data's connections have: out of the way
        // while the rows go, then back as they were.
        let triggers = try database.rows("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'")
        let uuid = UUID().uuidString
        try database.execute(
            "BEGIN; " + triggers.map { "DROP TRIGGER \(SQL.quote($0[0].text!));" }.joined()
                + tables.map { "DELETE FROM \(SQL.quote($0));" }.joined()
                + " UPDATE Z_PRIMARYKEY SET Z_MAX = 0; UPDATE Z_METADATA SET Z_UUID = '\(uuid)';"
                + triggers.map { $0[1].text! + ";" }.joined() + " COMMIT;")
        let metadata = try CoreDataMetadata.read(database, file: copy.path)
        if var plist = metadata.plist {
            plist = plist.filter { CoreDataMetadata.isCoreDataKey($0.key) }
            if plist["NSStoreUUID"] != nil { plist["NSStoreUUID"] = uuid }
            let statement = try database.prepare("UPDATE Z_METADATA SET Z_PLIST = ?1")
            try statement.bind([.blob(Array(try CoreDataMetadata.encoded(plist)))])
            _ = try statement.step()
        }
        return copy
    }

    /// Writes a file into `store`'s external data folder for each value kept in one that the
    /// store's rows name (the fixtures come without their `_SUPPORT` folders): the name's bytes,
    /// so that each file's content tells which it is.
    ///
    /// - Returns: the names of the files.
    @discardableResult
    static func provideExternalFiles(for store: URL) throws -> [String] {
        let database = try Database(path: store.path, mode: .source)
        guard let model = try CoreDataModel.read(store: store) else { return [] }
        let (layout, _) = try CoreDataLayout(model: model).resolved(against: database, schema: "main", file: store.path)
        let folder = CoreDataFinishing.externalDataFolder(of: store.path)
        var names: [String] = []
        for entity in model.entities {
            for property in entity.properties where property.attribute?.allowsExternalStorage == true {
                guard let table = layout.table(of: entity.name), let column = layout.column(of: property.name, entity: entity.name) else {
                    continue
                }
                for row in try database.rows(
                    "SELECT \(column.name) FROM \(table.name) WHERE \(column.name) >= x'02' AND \(column.name) < x'03'")
                {
                    guard case let .blob(bytes) = row[0], let name = CoreDataFinishing.externalFileName(bytes) else { continue }
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    try Data(name.utf8).write(to: folder.appendingPathComponent(name))
                    names.append(name)
                }
            }
        }
        return names.sorted()
    }

    /// The files of `store`'s external data folder, by name.
    static func externalFiles(of store: URL) -> [String] {
        let folder = CoreDataFinishing.externalDataFolder(of: store.path)
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// The tables SQLite keeps an R-tree's nodes in (`<index>_node`, `_parent`, `_rowid`), whose
    /// bytes depend on the order rows came in: the index's rows are compared instead.
    static func shadowTables(in database: Database) -> Set<String> {
        let virtual =
            (try? database.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")
                .compactMap { $0[0].text }) ?? []
        return Set(virtual.flatMap { name in ["_node", "_parent", "_rowid"].map { name + $0 } })
    }

    /// Every table of `store` but the model cache, each table's rows in a canonical order (every
    /// column), the triggers' SQL (as `(triggers)`), and the metadata as its decoded property
    /// list: what must equal between a store Core Data migrated and the same store migrated by
    /// chunkmigrate.
    static func contents(_ store: URL) throws -> [String: [[SQLiteValue]]] {
        let database = try Database(path: store.path, mode: .source)
        var result: [String: [[SQLiteValue]]] = [:]
        let tables = try database.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .compactMap { $0[0].text }
        result["(triggers)"] = try database.rows("SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name")
        let shadows = shadowTables(in: database)
        for table in tables where table != "Z_MODELCACHE" && table != "Z_METADATA" && !shadows.contains(table) {
            let columns = try database.rows("SELECT name FROM pragma_table_info(?1) ORDER BY name", .text(table)).compactMap { $0[0].text }
            let list = columns.map(SQL.quote).joined(separator: ", ")
            result[table] = try database.rows("SELECT \(list) FROM \(SQL.quote(table)) ORDER BY \(list)")
        }
        let metadata = try CoreDataMetadata.read(database, file: store.path)
        result["Z_METADATA"] = [
            [
                .integer(metadata.version), metadata.uuid.map(SQLiteValue.text) ?? .null,
                .text(describe(metadata.plist ?? [:])),
            ]
        ]
        return result
    }

    /// A property list as text with its keys sorted, so that two equal lists compare equal.
    static func describe(_ value: Any) -> String {
        switch value {
        case let dictionary as [String: Any]:
            return "{" + dictionary.keys.sorted().map { "\($0)=\(describe(dictionary[$0]!))" }.joined(separator: ", ") + "}"
        case let array as [Any]:
            return "[" + array.map(describe).joined(separator: ", ") + "]"
        case let data as Data:
            return "<" + data.map { String(format: "%02x", $0) }.joined() + ">"
        default:
            return "\(value)"
        }
    }

    /// The first difference between two stores' contents, in words, or `nil`.
    static func difference(_ ours: [String: [[SQLiteValue]]], _ theirs: [String: [[SQLiteValue]]]) -> String? {
        if Set(ours.keys) != Set(theirs.keys) {
            return "tables differ: \(Set(ours.keys).symmetricDifference(theirs.keys).sorted())"
        }
        for table in theirs.keys.sorted() where ours[table] != theirs[table] {
            let a = ours[table]!, b = theirs[table]!
            let first = zip(a, b).first { $0 != $1 }
            return "\(table): \(a.count) rows against \(b.count); first differing row: \(first.map { "\($0.0) against \($0.1)" } ?? "-")"
        }
        return nil
    }
}
