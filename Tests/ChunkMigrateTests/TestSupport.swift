import Foundation
import Logging
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// A temporary folder for one test, removed when the test ends.
final class TemporaryFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("chunkmigrate-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> URL { url.appendingPathComponent(name) }
}

/// Every row of every user table of a store, in rowid order, for comparing destinations.
func dump(_ store: URL, tables: [String]? = nil) throws -> [String: [[SQLiteValue]]] {
    let database = try Database(path: store.path, mode: .readOnly)
    let names =
        try tables
        ?? database.rows(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).compactMap { $0[0].text }
    var result: [String: [[SQLiteValue]]] = [:]
    for name in names {
        result[name] = try database.rows("SELECT rowid, * FROM \(SQL.quote(name)) ORDER BY rowid")
    }
    return result
}

/// Runs SQL on a store, creating it if needed.
func execute(_ sql: String, on store: URL) throws {
    let database = try Database(path: store.path, mode: .readWriteCreate)
    try database.execute(sql)
}

func scalar(_ sql: String, on store: URL) throws -> SQLiteValue {
    try Database(path: store.path, mode: .readOnly).scalar(sql)
}

func sha256(of file: URL) throws -> String {
    SHA256Hex.of(try Data(contentsOf: file))
}

import MigrationJournal
enum SHA256Hex {
    static func of(_ data: Data) -> String { JournalSHA256.hex(Array(data)) }
}

let quietLogger: Logger = {
    var logger = Logger(label: "chunkmigrate-tests")
    logger.logLevel = .critical
    return logger
}()

/// Starts a demo migration without running it.
func startDemo(_ files: DemoStore.Files, into destination: URL, journal: URL, batchSize: Int? = nil) throws -> MigrationJob {
    try MigrationJob.start(
        plan: DemoStore.plan, source: files.source, destination: destination, journal: journal,
        schema: DemoStore.destinationSchema, options: MigrationOptions(batchSize: batchSize),
        logger: quietLogger)
}

/// Starts and runs a demo migration to the end, returning the job.
@discardableResult
func migrateDemo(_ files: DemoStore.Files, into destination: URL, journal: URL, batchSize: Int? = nil) throws -> MigrationJob {
    let job = try startDemo(files, into: destination, journal: journal, batchSize: batchSize)
    #expect(try job.runBlocking() == .complete)
    return job
}
