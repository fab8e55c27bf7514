import Foundation

/// A Core Data store's metadata: the one row of `Z_METADATA`, whose `Z_PLIST` is a binary property
/// list (the model's version hashes, `NSStoreUUID`, `NSStoreType`, ...). Read and written with
/// Foundation's `PropertyListSerialization`.
package struct CoreDataMetadata: @unchecked Sendable {
    /// `Z_METADATA.Z_VERSION`.
    package var version: Int64
    /// `Z_METADATA.Z_UUID`.
    package var uuid: String?
    /// The decoded property list; `nil` when `Z_PLIST` is NULL (seen in real stores).
    package var plist: [String: Any]?

    /// `NSStoreUUID` in the property list, where it is kept there too (Core Data keeps the store
    /// UUID in `Z_UUID` and adds it to the metadata it returns).
    package var storeUUID: String? { plist?["NSStoreUUID"] as? String }
    /// `NSPersistenceFrameworkVersion`: the version of the Core Data that last wrote the
    /// metadata (that created the store, or migrated it), `nil` where it is not there.
    package var frameworkVersion: Int? { (plist?["NSPersistenceFrameworkVersion"] as? NSNumber)?.intValue }
    /// The entity names of `NSStoreModelVersionHashes`, `nil` without a property list.
    package var hashedEntities: Set<String>? {
        (plist?["NSStoreModelVersionHashes"] as? [String: Any]).map { Set($0.keys) }
    }

    /// Reads the metadata of the store open as `schema`.
    ///
    /// - Throws: ``MigrationError`` naming `file` when the table has no row or the property list
    ///   does not decode.
    static func read(_ database: Database, schema: String = "main", file: String) throws -> CoreDataMetadata {
        let rows = try database.rows("SELECT Z_VERSION, Z_UUID, Z_PLIST FROM \(schema).Z_METADATA ORDER BY Z_VERSION LIMIT 1")
        guard let row = rows.first else {
            throw MigrationError(.store, "Z_METADATA has no row: the store's metadata is missing", file: file)
        }
        if row[2] == .null {
            return CoreDataMetadata(version: row[0].integer ?? 1, uuid: row[1].text, plist: nil)
        }
        guard case let .blob(bytes) = row[2] else {
            throw MigrationError(.store, "Z_METADATA.Z_PLIST is not a property list blob", file: file)
        }
        let decoded: Any
        do {
            decoded = try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil)
        } catch {
            throw MigrationError(.store, "Z_METADATA.Z_PLIST does not decode as a property list: \(error)", file: file, cause: error)
        }
        guard let dictionary = decoded as? [String: Any] else {
            throw MigrationError(.store, "Z_METADATA.Z_PLIST is a property list but not a dictionary", file: file)
        }
        return CoreDataMetadata(version: row[0].integer ?? 1, uuid: row[1].text, plist: dictionary)
    }

    /// Whether a metadata key is Core Data's own (`NSStoreModelVersionHashes`, `NSStoreType`,
    /// `_NSAutoVacuumLevel`, ...), which describes the model and the file and so belongs to the
    /// new store, rather than one the app set with `setMetadata` (a sync token, an object URI),
    /// which belongs to the data. Core Data's keys all start with `NS` or `_NS`.
    static func isCoreDataKey(_ key: String) -> Bool { key.hasPrefix("NS") || key.hasPrefix("_NS") }

    /// Gives the destination (`main`) the source's (`src`) identity: its store UUID, in `Z_UUID`
    /// and, where the property list holds one, in its `NSStoreUUID`, and every metadata key the
    /// app set (``isCoreDataKey(_:)`` false). Core Data's own keys in the destination's metadata
    /// (the new model's version hashes and identifiers) stay. Object-ID URIs contain the store
    /// UUID, so URIs the app saved, in its own files or in these keys, keep pointing at the same
    /// objects.
    ///
    /// - Parameter keepUUID: `false` when the keys are allocated anew: then the destination keeps
    ///   its own UUID (old URIs must not name new objects) and takes only the app's keys.
    static func adoptIdentity(_ database: Database, sourcePath: String, destinationPath: String, keepUUID: Bool = true) throws {
        let source = try read(database, schema: "src", file: sourcePath)
        let destination = try read(database, schema: "main", file: destinationPath)
        var uuid = destination.uuid
        if keepUUID {
            guard let sourceUUID = source.uuid ?? source.storeUUID else {
                throw MigrationError(.store, "Z_METADATA names no store UUID", file: sourcePath)
            }
            uuid = sourceUUID
            let setUUID = try database.prepare("UPDATE main.Z_METADATA SET Z_UUID = ?1 WHERE Z_VERSION = ?2")
            try setUUID.bind([.text(sourceUUID), .integer(destination.version)])
            _ = try setUUID.step()
        }
        // The property list is rewritten only where something in it changes; otherwise its bytes stay.
        var dictionary = destination.plist ?? [:]
        var changed = false
        if keepUUID, destination.plist != nil, let stored = dictionary["NSStoreUUID"] as? String, stored != uuid {
            dictionary["NSStoreUUID"] = uuid
            changed = true
        }
        for (key, value) in source.plist ?? [:] where !isCoreDataKey(key) {
            dictionary[key] = value
            changed = true
        }
        guard changed else { return }
        let bytes: Data
        do {
            bytes = try encoded(dictionary)
        } catch {
            throw MigrationError(.store, "cannot encode the destination's metadata: \(error)", file: destinationPath, cause: error)
        }
        let setPlist = try database.prepare("UPDATE main.Z_METADATA SET Z_PLIST = ?1 WHERE Z_VERSION = ?2")
        try setPlist.bind([.blob(Array(bytes)), .integer(destination.version)])
        _ = try setPlist.step()
    }

    /// A property list as a binary plist, keys in sorted order. `PropertyListSerialization` writes
    /// a dictionary's keys in its hash order, which differs from one process to the next on Linux,
    /// so a job resumed in another process would write other bytes for the same metadata; Foundation's
    /// `PropertyListEncoder` writes a keyed container in the order its keys are encoded.
    static func encoded(_ plist: [String: Any]) throws -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return try encoder.encode(PlistValue(plist))
    }
}

/// A decoded property-list value, encodable in a fixed order (see `CoreDataMetadata/encoded(_:)`).
private struct PlistValue: Encodable {
    let value: Any
    init(_ value: Any) { self.value = value }

    func encode(to encoder: any Encoder) throws {
        switch value {
        case let dictionary as [String: Any]:
            var container = encoder.container(keyedBy: PropertyListKey.self)
            for key in dictionary.keys.sorted() {
                try container.encode(PlistValue(dictionary[key]!), forKey: PropertyListKey(stringValue: key))
            }
        case let array as [Any]:
            var container = encoder.unkeyedContainer()
            for element in array { try container.encode(PlistValue(element)) }
        case let text as String:
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case let data as Data:
            var container = encoder.singleValueContainer()
            try container.encode(data)
        case let date as Date:
            var container = encoder.singleValueContainer()
            try container.encode(date)
        case let number as NSNumber:
            // A property list's booleans are NSNumbers of type "c" (char), its reals "d" or "f".
            var container = encoder.singleValueContainer()
            switch String(cString: number.objCType) {
            case "c", "B": try container.encode(number.boolValue)
            case "d", "f": try container.encode(number.doubleValue)
            default: try container.encode(number.int64Value)
            }
        default:
            throw EncodingError.invalidValue(value, .init(codingPath: encoder.codingPath, debugDescription: "not a property-list value"))
        }
    }
}

/// A dictionary key of a property list written with `PropertyListEncoder`, for dictionaries whose
/// keys are only known at run time.
struct PropertyListKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
