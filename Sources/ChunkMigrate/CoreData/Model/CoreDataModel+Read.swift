import Foundation
import MigrationJournal

extension CoreDataModel {
    /// Reads a model file: an `.xcdatamodel` folder or its `contents` XML, a compiled `.mom`, or
    /// a store (an SQLite file), whose model is its model cache (``read(store:)``).
    ///
    /// - Throws: ``MigrationError`` naming the file when it cannot be read or is not a model, or
    ///   is a store without a model cache.
    public static func read(contentsOf url: URL) throws -> CoreDataModel {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
        let file = exists && isDirectory.boolValue ? url.appendingPathComponent("contents") : url
        let data: Data
        do { data = Data(try FileIO.read(file.path)) } catch {
            let reason =
                error.code != .notFound
                ? error.message
                : isDirectory.boolValue
                    ? "a folder without a contents file: give an .xcdatamodel folder, its contents, or a .mom file" : "no such file"
            throw MigrationError(.store, "cannot read the model (\(reason))", file: file.path, cause: error)
        }
        if data.starts(with: Array("bplist".utf8)) {
            return try CoreDataModel(archive: Array(data), file: file.path)
        }
        if data.starts(with: Array("SQLite format 3\0".utf8)) {
            guard let model = try read(store: file) else {
                throw MigrationError(
                    .store,
                    "the store has no model cache (Z_MODELCACHE, written since iOS 10): give its model as an .xcdatamodel folder or a compiled .mom",
                    file: file.path)
            }
            return model
        }
        return try CoreDataModel(xml: data, file: file.path)
    }

    /// Reads the model a store was written with from its model cache (`Z_MODELCACHE`), or `nil`
    /// when the store has none (stores written before iOS 10, or with the cache emptied).
    ///
    /// - Throws: ``MigrationError`` naming the store when it cannot be opened, or when its cache
    ///   is there but does not decode: a damaged cache is never mistaken for a missing one.
    public static func read(store url: URL) throws -> CoreDataModel? {
        let database: Database
        do {
            database = try Database(path: url.path, mode: .source)
        } catch {
            throw MigrationError(.store, "cannot open the store: \(error.message)", file: url.path, cause: error)
        }
        return try read(database, schema: "main", file: url.path)
    }

    /// Reads the model cache of the store open as `schema` in `database`.
    static func read(_ database: Database, schema: String, file: String) throws -> CoreDataModel? {
        let rows: [[SQLiteValue]]
        do {
            guard
                try database.scalar("SELECT count(*) FROM \(schema).sqlite_schema WHERE type = 'table' AND name = 'Z_MODELCACHE'").integer
                    == 1
            else {
                return nil
            }
            rows = try database.rows("SELECT Z_CONTENT FROM \(schema).Z_MODELCACHE")
        } catch {
            throw MigrationError(.store, "cannot read the model cache: \(error.message)", file: file, sql: error.sql, cause: error)
        }
        guard let row = rows.first, rows.count == 1 else {
            if rows.isEmpty { return nil }
            throw MigrationError(.store, "Z_MODELCACHE holds \(rows.count) rows; Core Data writes one", file: file)
        }
        guard case let .blob(compressed) = row[0] else {
            if row[0] == .null { return nil }
            throw MigrationError(.store, "Z_MODELCACHE.Z_CONTENT is not a blob, so not a model cache", file: file)
        }
        let archive: [UInt8]
        do {
            archive = try RawDeflate.inflate(compressed)
        } catch {
            throw MigrationError(
                .store,
                "Z_MODELCACHE.Z_CONTENT does not inflate as raw DEFLATE to a model cache (\(error); the largest known inflates to 374 kB): the model cache is damaged or not Core Data's",
                file: file, cause: error)
        }
        do {
            return try CoreDataModel(archive: archive, file: file)
        } catch let error as MigrationError {
            throw MigrationError(.store, "Z_MODELCACHE: \(error.message)", file: file, cause: error)
        }
    }
}
