import Foundation

/// An empty store of a model, as Core Data creates one: the model's layout (`CoreDataLayout`)
/// as tables and indexes, `Z_PRIMARYKEY` with every entity at `Z_MAX` 0, `Z_METADATA` and
/// `Z_MODELCACHE`, in a WAL file with 4 KiB pages and incremental auto-vacuum.
///
/// For tests and tools where Core Data is not at hand; on a device Core Data creates the
/// destination. The metadata's entity version hashes (`NSStoreModelVersionHashes`) and their
/// digest (`NSStoreModelVersionHashesDigest`) are Core Data's own (`CoreDataVersionHashes`,
/// which says the little it does not model), so Core Data recognises the store's model by them.
/// What it cannot reproduce exactly:
/// - the model cache is the archive ``CoreDataModel`` writes, which chunkmigrate reads back and
///   Core Data's own decoder does not expect;
/// - columns come in Core Data's order as far as the fixtures show it (by kind: integers, reals
///   and dates, strings, data; then by entity and name), and indexes as Core Data names them for
///   to-one keys, `Z_ENT`, join tables and uniqueness constraints; indexed attributes and fetch
///   indexes are not written;
/// - derived attributes get Core Data's triggers (`CoreDataDerivation`), but those of `@sum`,
///   `@min` and `@max`, which are not written.
///
/// ```swift
/// try CoreDataEmptyStore.create(at: storeURL, model: model)
/// ```
public enum CoreDataEmptyStore {
    /// Writes an empty store of `model` at `url`, which must not exist.
    ///
    /// - Parameters:
    ///   - url: where the store is written.
    ///   - model: the model whose schema, entities and metadata the store gets.
    ///   - uuid: the store UUID (`Z_UUID`, `NSStoreUUID`); a new one when `nil`.
    ///   - metadata: further metadata keys (an app's own).
    ///   - persistentHistory: whether the store tracks persistent history, as one Core Data
    ///     creates with `NSPersistentHistoryTrackingKey`: the tables `ACHANGE`, `ATRANSACTION`,
    ///     `ATRANSACTIONSTRING` and their entities 16001-16003 in `Z_PRIMARYKEY`.
    /// - Throws: ``MigrationError`` naming the file when it exists or cannot be written, or what
    ///   of the model cannot be laid out.
    public static func create(
        at url: URL, model: CoreDataModel, uuid: String? = nil,
        metadata: [String: String] = [:], persistentHistory: Bool = false
    ) throws {
        guard !FileManager.default.fileExists(atPath: url.path) else {
            throw MigrationError(.store, "the store already exists", file: url.path)
        }
        let layout = try CoreDataLayout(model: model)
        let uuid = uuid ?? UUID().uuidString
        do {
            let database = try Database(path: url.path, mode: .readWriteCreate)
            try database.execute("PRAGMA page_size = 4096; PRAGMA auto_vacuum = INCREMENTAL;")
            try database.inTransaction {
                try database.execute(try schema(layout))
                let entity = try database.prepare("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?1, ?2, ?3, 0)")
                for entry in layout.entities.values.sorted(by: { $0.number < $1.number }) {
                    try entity.bind([.integer(entry.number), .text(entry.name), .integer(entry.parent ?? 0)])
                    _ = try entity.step()
                    entity.reset()
                }
                if persistentHistory { try database.execute(historySchema) }
                let row = try database.prepare("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?1, ?2)")
                try row.bind([.text(uuid), .blob(Array(try metadataPlist(layout, uuid: uuid, extra: metadata)))])
                _ = try row.step()
                let cache = try database.prepare("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?1)")
                try cache.bind([.blob(RawDeflate.deflate(model.archived()))])
                _ = try cache.step()
            }
            try database.execute("PRAGMA journal_mode = WAL;")
        } catch let error as SQLiteError {
            throw MigrationError(.store, "cannot write the empty store: \(error.message)", file: url.path, sql: error.sql, cause: error)
        } catch let error as MigrationError {
            throw error
        } catch {
            throw MigrationError(.store, "cannot write the empty store's metadata: \(error)", file: url.path, cause: error)
        }
    }

    /// The tables and indexes of `layout`, as Core Data writes them.
    static func schema(_ layout: CoreDataLayout) throws -> String {
        var statements = [
            "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);",
            "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);",
            "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB);",
        ]
        let order = CoreDataLayout.entityOrder(layout.model)
        for table in layout.tables.values.sorted(by: { $0.root < $1.root }) {
            let columns = table.columns.enumerated().sorted { a, b in
                let ka = columnOrder(a.element, order: order), kb = columnOrder(b.element, order: order)
                return ka != kb ? ka.lexicographicallyPrecedes(kb) : a.offset < b.offset
            }.map(\.element)
            let definitions = columns.map { column -> String in
                column.role == CoreDataLayout.Column.Role.key ? "Z_PK INTEGER PRIMARY KEY" : "\(column.name) \(column.type)"
            }
            statements.append("CREATE TABLE \(table.name) ( \(definitions.joined(separator: ", ")) );")
            for column in table.columns {
                switch column.role {
                case .toOne, .toManyOwner:
                    statements.append("CREATE INDEX \(table.name)_\(column.name)_INDEX ON \(table.name) (\(column.name));")
                default:
                    break
                }
            }
            if layout.descendants(of: table.root).count > 1 {
                statements.append("CREATE INDEX \(table.name)_Z_ENT_INDEX ON \(table.name) (Z_ENT);")
            }
            for number in layout.descendants(of: table.root).sorted() {
                guard let entity = layout.entities[number].flatMap({ layout.model.entity(named: $0.name) }) else { continue }
                for constraint in entity.uniquenessConstraints {
                    let names = constraint.compactMap { layout.column(of: $0, entity: entity.name)?.name }
                    guard names.count == constraint.count else { continue }
                    let columns = names.map { "\($0) COLLATE BINARY ASC" }.joined(separator: ", ")
                    statements.append(
                        "CREATE UNIQUE INDEX Z_\(entity.name)_UNIQUE_\(constraint.joined(separator: "_")) ON \(table.name) (\(columns));")
                }
            }
        }
        for join in layout.joinTables {
            let keys = join.sides.map(\.column)
            let definitions = keys.map { "\($0) INTEGER" } + join.sides.compactMap(\.order).map { "\($0) INTEGER" }
            statements.append(
                "CREATE TABLE \(join.name) ( \(definitions.joined(separator: ", ")), PRIMARY KEY (\(keys.joined(separator: ", "))) );")
            statements.append("CREATE INDEX \(join.name)_\(keys[1])_INDEX ON \(join.name) (\(keys[1]), \(keys[0]));")
        }
        for entity in layout.model.entities {
            for property in entity.properties where property.attribute?.derivation != nil && !property.isTransient {
                statements += try CoreDataDerivation(entity: entity.name, attribute: property.name, layout: layout).triggers.map {
                    $0 + ";"
                }
            }
        }
        return statements.joined(separator: "\n")
    }

    /// Persistent history's tables and entities, as Core Data writes them (macOS 13 / iOS 16).
    static let historySchema = """
        CREATE TABLE ACHANGE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER, ZENTITY INTEGER, ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB );
        CREATE TABLE ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB );
        CREATE TABLE ATRANSACTIONSTRING ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
        CREATE INDEX ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID);
        CREATE INDEX ATRANSACTION_ZAUTHORTS_INDEX ON ATRANSACTION (ZAUTHORTS);
        CREATE INDEX ATRANSACTION_ZBUNDLEIDTS_INDEX ON ATRANSACTION (ZBUNDLEIDTS);
        CREATE INDEX ATRANSACTION_ZCONTEXTNAMETS_INDEX ON ATRANSACTION (ZCONTEXTNAMETS);
        CREATE INDEX ATRANSACTION_ZPROCESSIDTS_INDEX ON ATRANSACTION (ZPROCESSIDTS);
        CREATE INDEX Z_TRANSACTION_TransactionAuthorIndex ON ATRANSACTION (ZAUTHOR COLLATE BINARY ASC);
        CREATE INDEX Z_TRANSACTION_TransactionTimestampIndex ON ATRANSACTION (ZTIMESTAMP COLLATE BINARY ASC);
        CREATE UNIQUE INDEX Z_TRANSACTIONSTRING_UNIQUE_NAME ON ATRANSACTIONSTRING (ZNAME COLLATE BINARY ASC);
        INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (16001, 'CHANGE', 0, 0), (16002, 'TRANSACTION', 0, 0),
            (16003, 'TRANSACTIONSTRING', 0, 0);
        """

    /// Core Data's column order within a table: integers (attributes before relationships),
    /// then reals and dates, strings, and data; within each, by entity.
    private static func columnOrder(_ column: CoreDataLayout.Column, order: [String]) -> [Int] {
        let kind: Int
        switch column.type {
        case "INTEGER": kind = 0
        case "FLOAT", "TIMESTAMP", "DECIMAL": kind = 1
        case "VARCHAR": kind = 2
        default: kind = 3
        }
        let entity: String?
        var isRelationship = 0
        switch column.role {
        case .key, .entityNumber, .version: return [-1]
        case let .attribute(name, _): entity = name
        case let .toOne(name, _), let .toOneEntity(name, _), let .toOneOrder(name, _): entity = name; isRelationship = 1
        case let .toManyOwner(name, _), let .toManyOrder(name, _): entity = name; isRelationship = 2
        }
        return [kind, entity.flatMap { order.firstIndex(of: $0) } ?? 0, isRelationship]
    }

    /// `Z_PLIST`: the keys Core Data writes, in a fixed order so that equal inputs give equal bytes.
    /// The hashes and their digest are Core Data's, the keys a Core Data of the
    /// `NSPersistenceFrameworkVersion` written here (1000) writes: the digest since 973 (macOS 10.15,
    /// iOS 13), not yet `NSStoreModelVersionChecksumKey` (since 1321, macOS 14 and iOS 17).
    package static func metadataPlist(_ layout: CoreDataLayout, uuid: String, extra: [String: String]) throws -> Data {
        let versionHashes = CoreDataVersionHashes(model: layout.model)
        var plist: [String: Any] = [
            "NSStoreType": "SQLite", "NSStoreUUID": uuid,
            "NSStoreModelVersionHashes": versionHashes.entities.mapValues { Data($0) },
            "NSStoreModelVersionHashesDigest": versionHashes.digest,
            "NSStoreModelVersionHashesVersion": 3, "NSPersistenceFrameworkVersion": 1000,
            "NSStoreModelVersionIdentifiers": layout.model.versionIdentifiers.isEmpty ? [""] : layout.model.versionIdentifiers,
            "_NSAutoVacuumLevel": "2",
        ]
        for (key, value) in extra { plist[key] = value }
        return try CoreDataMetadata.encoded(plist)
    }
}
