import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The disk a job needs at its peak, worked out before its first row is written, against the free
/// space of the destination's file system.
///
/// A copied table takes in the destination about the pages it takes in the source: its rows, and
/// an index for each of its source indexes (SQLite's `dbstat`, page by page; where that is not
/// compiled in, the table's share of the file by rows). On top: the journal (its ID map, about two
/// bytes a key where keys are allocated), and when the job builds the destination's indexes at
/// the end, the sorter's temporary file for the largest of them where the temporary directory is
/// on the same file system.
///
/// ```swift
/// let estimate = try SpaceEstimate.of(plan: plan, source: oldURL, destination: newURL)
/// if !estimate.fits { print(estimate) }   // needs 1.2 GB, 512 MB free
/// ```
public struct SpaceEstimate: Sendable, Codable, Equatable, CustomStringConvertible {
    /// The destination's growth: the copied tables and their indexes.
    public var destinationBytes: Int64
    /// The journal directory: the ID map's segments and the log.
    public var journalBytes: Int64
    /// The sorter's temporary file for the largest index the job builds at the end, where it is
    /// on the destination's file system.
    public var indexBuildBytes: Int64
    /// For a Core Data plan: what an in-place migration of the source would need beyond the store
    /// (``InPlaceMigration``): the largest index it drops (one a transaction, each journaled) and a
    /// batch; `nil` for another plan.
    public var inPlaceBytes: Int64?
    /// Free bytes on the destination's file system (for an app: the capacity available for
    /// important use on Apple platforms).
    public var freeBytes: Int64
    /// Whether the figures are a bound rather than the estimate: where the file system has room
    /// for 3.5 times the source's file, a job starts without walking the source's pages
    /// (`upperBound(source:freeBytes:)`).
    public var isUpperBound = false

    /// The peak extra bytes of the job.
    public var neededBytes: Int64 { destinationBytes + journalBytes + indexBuildBytes }
    /// Whether the job fits, with 5% of the estimate to spare.
    public var fits: Bool { neededBytes + neededBytes / 20 <= freeBytes }

    public var description: String {
        if isUpperBound {
            return "needs at most \(Self.bytes(neededBytes)) (3.5 times the source's file), \(Self.bytes(freeBytes)) free"
        }
        return
            "needs \(Self.bytes(neededBytes)) (destination \(Self.bytes(destinationBytes)), journal \(Self.bytes(journalBytes)), index builds \(Self.bytes(indexBuildBytes))), \(Self.bytes(freeBytes)) free"
            + (inPlaceBytes.map {
                "; in place (--in-place) it would need about \(Self.bytes($0)) beside the store, which \($0 + $0 / 20 <= freeBytes ? "fits" : "does not fit either")"
            } ?? "")
    }

    /// Bytes for a person: `512 MB`, `1.2 GB`.
    public static func bytes(_ count: Int64) -> String {
        let megabytes = Double(count) / 1_048_576
        if megabytes >= 1024 { return String(format: "%.1f GB", megabytes / 1024) }
        if megabytes >= 10 { return "\(Int(megabytes.rounded())) MB" }
        return String(format: "%.1f MB", megabytes)
    }

    /// The estimate for `plan` from `source` into `destination` (which must exist).
    ///
    /// - Throws: ``MigrationError`` naming the file when a store cannot be read.
    public static func of(plan: MigrationPlan, source: URL, destination: URL, options: MigrationOptions = MigrationOptions()) throws
        -> SpaceEstimate
    {
        let stores = try Stores.open(source: source.path, destination: destination.path, schema: nil, options: options)
        return try of(plan: plan, stores: stores, options: options)
    }

    /// A bound on the same premise as the estimate, that the destination's rows take the room
    /// the source's take (values an expression makes longer, or columns the source does not
    /// have, can take more): the destination's rows and indexes take no more pages than the
    /// source's file, the sorter's file no more than that, the WAL a Core Data job's check
    /// keeps while the indexes are built no more either, and the ID map under half of it (two
    /// bytes a key, a key per four bytes of the file at most): 3.5 times the file.
    static func upperBound(source: String, freeBytes: Int64) -> SpaceEstimate? {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: source)[.size] as? NSNumber)?.int64Value else { return nil }
        return SpaceEstimate(
            destinationBytes: size, journalBytes: size / 2 + 64 * 1024, indexBuildBytes: 2 * size, inPlaceBytes: nil,
            freeBytes: freeBytes, isUpperBound: true)
    }

    /// The estimate on a job's two stores; with `boundWhereItFits`, the bound instead where the
    /// file system has room for it (a job about to start: the page walk is a few percent of
    /// the copy's time, spent only where the space may be short).
    static func of(plan: MigrationPlan, stores: Stores, options: MigrationOptions, boundWhereItFits: Bool = false) throws -> SpaceEstimate {
        if boundWhereItFits {
            let folder = URL(fileURLWithPath: stores.database.path).deletingLastPathComponent().path
            let free = options.freeSpace?(folder) ?? freeBytes(at: folder)
            let source = (try? stores.database.scalar("SELECT file FROM pragma_database_list WHERE name = 'src'").text) ?? nil
            if let source, let bound = upperBound(source: source, freeBytes: free), bound.fits { return bound }
        }
        let database = stores.database
        let sizes = try sourceSizes(database)
        var destination: Int64 = 0, largestIndex: Int64 = 0, journal: Int64 = 64 * 1024
        let indexes: [[SQLiteValue]]
        do {
            indexes = try database.rows("SELECT name, tbl_name FROM src.sqlite_schema WHERE type = 'index'")
            // A table the source does not have is the plan check's to name, after this.
            let tables = Set(try database.rows("SELECT lower(name) FROM src.sqlite_schema WHERE type = 'table'").compactMap { $0[0].text })
            for table in Set(plan.entities.map { $0.source.table.lowercased() }) {
                destination += sizes[table] ?? 0
                for index in indexes where index[1].text?.lowercased() == table {
                    let size = sizes[index[0].text?.lowercased() ?? ""] ?? 0
                    destination += size
                    largestIndex = max(largestIndex, size)
                }
            }
            // The ID map: about two bytes a key where keys are allocated, next to nothing where
            // they are kept (a segment holds a run of keys in a few bytes).
            for entity in plan.entities where tables.contains(entity.source.table.lowercased()) {
                let keys = try database.scalar("SELECT count(*) FROM src.\(SQL.quote(entity.source.table))").integer ?? 0
                journal += entity.keys == .allocate ? keys * 2 : keys / 8
            }
        } catch {
            throw MigrationError(
                .store, "cannot estimate the space the job needs: \(error.message)", file: database.path, sql: error.sql, cause: error)
        }
        let folder = URL(fileURLWithPath: database.path).deletingLastPathComponent().path
        let temporary = ProcessInfo.processInfo.environment["SQLITE_TMPDIR"] ?? ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let sameVolume = volume(of: folder) != nil && volume(of: folder) == volume(of: temporary)
        // In place, on the source's own volume: the largest of its indexes, and a batch.
        let sourceIndexes = indexes.compactMap { sizes[$0[0].text?.lowercased() ?? ""] }
        let total = sizes.values.reduce(0, +)
        let inPlace = plan.coreData == nil ? nil : (sourceIndexes.max() ?? 0) + min(4 * 1_048_576, total / 50)
        return SpaceEstimate(
            destinationBytes: destination, journalBytes: journal,
            indexBuildBytes: options.defersIndexes && sameVolume ? largestIndex : 0,
            inPlaceBytes: inPlace, freeBytes: options.freeSpace?(folder) ?? freeBytes(at: folder))
    }

    /// Bytes per table and index of the source (`src`), by lowercased name: SQLite's `dbstat`
    /// page by page, or where it is not compiled in, each table's share of the file by rows.
    static func sourceSizes(_ database: Database) throws -> [String: Int64] {
        var sizes: [String: Int64] = [:]
        do {
            // Aggregated per table and index (SQLite 3.31+): a walk of the pages, about a
            // seventieth of the copy's time. Its pages (`pageno`, a 64-bit count) times the page
            // size: its bytes (`pgsize`) are a 32-bit sum, which wraps for a table of over 2 GiB
            // (50M Core Data items: the 6.8 GB item table read as -1.8 GB).
            let pageSize = try database.scalar("PRAGMA src.page_size").integer ?? 4096
            for row in try database.rows("SELECT name, pageno FROM dbstat('src', 1)") {
                if let name = row[0].text { sizes[name.lowercased()] = (row[1].integer ?? 0) * pageSize }
            }
            return sizes
        } catch {
            // No dbstat: estimated below.
        }
        do {
            let pageSize = try database.scalar("PRAGMA src.page_size").integer ?? 4096
            let pages = try database.scalar("PRAGMA src.page_count").integer ?? 0
            let tables = try database.rows("SELECT name FROM src.sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                .compactMap { $0[0].text }
            var counts: [String: Int64] = [:]
            for table in tables {
                counts[table.lowercased()] = try database.scalar("SELECT count(*) FROM src.\(SQL.quote(table))").integer ?? 0
            }
            let total = max(1, counts.values.reduce(0, +))
            for (table, count) in counts { sizes[table] = pages * pageSize * count / total }
            return sizes
        } catch {
            throw MigrationError(
                .store, "cannot estimate the space the job needs: \(error.message)", file: database.path, sql: error.sql, cause: error)
        }
    }

    /// Free bytes of the file system holding `path`: on Apple platforms, the capacity available
    /// for important use (what the system would free for it); elsewhere `statvfs`'s blocks
    /// available to an unprivileged user.
    public static func freeBytes(at path: String) -> Int64 {
        #if os(iOS) || os(macOS) || os(tvOS) || os(watchOS) || os(visionOS)
            if let values = try? URL(fileURLWithPath: path).resourceValues(forKeys: [.volumeAvailableCapacityForImportantUsageKey]),
                let capacity = values.volumeAvailableCapacityForImportantUsage
            {
                return capacity
            }
        #endif
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return Int64.max }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }

    /// The device of the file system holding `path`.
    static func volume(of path: String) -> UInt64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt64(info.st_dev)
    }
}
