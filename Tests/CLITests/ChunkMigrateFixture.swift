import Foundation
import Testing
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs the built `chunkmigrate` with `arguments`, and with `environment` on top of this
/// process's environment.
func chunkmigrate(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
    try BuiltProduct.run("chunkmigrate", arguments, environment: environment)
}

/// Runs the built `chunkmigrate` with `arguments`.
func chunkmigrate(_ arguments: String...) throws -> CommandResult {
    try chunkmigrate(arguments)
}

/// A demo store written by `chunkmigrate generate` into a test's directory, and the files of
/// the jobs that migrate it.
///
/// Every job runs with `--batch-size 200`, so a store of 3000 messages gives 15 Message batches
/// (source keys `i * 3 - i % 2` for message `i`, so batch `b` ends at source key `600 * b`).
struct DemoWorkspace {
    /// The test's directory.
    let directory: String
    /// `store/source.sqlite`, `store/destination-schema.sql`, `store/plan.json`.
    let source: String
    let schema: String
    let plan: String
    /// Messages in the store.
    let messages: Int

    static let batchSize = 200

    /// Generates the store into `directory/store`.
    static func generate(in directory: String, messages: Int = 3000) throws -> DemoWorkspace {
        let store = directory + "/store"
        let result = try chunkmigrate("generate", "--messages", String(messages), store)
        guard result.exitCode == 0, !result.killedBySignal else {
            throw CLITestError("chunkmigrate generate failed: \(result)")
        }
        return DemoWorkspace(
            directory: directory, source: store + "/source.sqlite",
            schema: store + "/destination-schema.sql", plan: store + "/plan.json", messages: messages)
    }

    /// `directory/NAME.sqlite` and `directory/NAME.journal`.
    func destination(_ name: String) -> String { directory + "/" + name + ".sqlite" }
    func journal(_ name: String) -> String { directory + "/" + name + ".journal" }

    /// The arguments of `chunkmigrate run` into the job `name` (`NAME.sqlite`, `NAME.journal`).
    func runArguments(_ name: String, source: String? = nil, plan: String? = nil) -> [String] {
        [
            "run", "--source", source ?? self.source, "--destination", destination(name), "--schema", schema,
            "--plan", plan ?? self.plan, "--journal", journal(name), "--batch-size", String(Self.batchSize), "--quiet",
        ]
    }

    /// Runs the job `name` with `chunkmigrate run`.
    func run(
        _ name: String, source: String? = nil, plan: String? = nil,
        environment: [String: String] = [:]
    ) throws -> CommandResult {
        try chunkmigrate(runArguments(name, source: source, plan: plan), environment: environment)
    }

    /// Runs the job `name` until the crash point `point` (`after-commit:Message:3`) kills it.
    /// Throws when the process was not killed by SIGKILL.
    func kill(_ name: String, at point: String) throws {
        let result = try run(name, environment: ["CHUNKMIGRATE_KILL_AT": point])
        guard result.signal == SIGKILL else {
            throw CLITestError("chunkmigrate run with CHUNKMIGRATE_KILL_AT=\(point) was not killed by SIGKILL: \(result)")
        }
    }

    /// Runs the job `name` without interruption; throws unless it completes.
    @discardableResult
    func complete(_ name: String, source: String? = nil, plan: String? = nil) throws -> CommandResult {
        let result = try run(name, source: source, plan: plan)
        guard result.exitCode == 0, !result.killedBySignal else {
            throw CLITestError("chunkmigrate run \(name) failed: \(result)")
        }
        return result
    }

    /// The plan as a JSON object, to change and write back with ``writePlan(_:to:)``.
    func planObject() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: plan))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw CLITestError("plan.json is not a JSON object")
        }
        return object
    }

    /// Writes a plan object to `directory/NAME`, on one line unless `pretty`; returns the path.
    func writePlan(_ object: [String: Any], to name: String, pretty: Bool = true) throws -> String {
        let path = directory + "/" + name
        try JSONSerialization.data(withJSONObject: object, options: pretty ? [.sortedKeys, .prettyPrinted] : [])
            .write(to: URL(fileURLWithPath: path))
        return path
    }
}

/// Changes entity `index`'s relationship `column` of a plan object.
func changeRelationship(
    _ plan: inout [String: Any], entity index: Int, column: String,
    _ change: (inout [String: Any]) -> Void
) {
    var entities = plan["entities"] as! [[String: Any]]
    var relationships = entities[index]["relationships"] as! [String: Any]
    var relationship = relationships[column] as! [String: Any]
    change(&relationship)
    relationships[column] = relationship
    entities[index]["relationships"] = relationships
    plan["entities"] = entities
}

/// Reads SQLite stores with the `sqlite3` command-line tool, opened read-only so that a read
/// never changes what it looks at (a killed job's destination keeps its WAL for the resume).
enum SQLiteShell {
    /// The `sqlite3` tool on the `PATH`.
    static func executable() throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent("sqlite3")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw CLITestError("the sqlite3 command-line tool is not on the PATH; install it (apt-get install sqlite3)")
    }

    /// The rows `sql` returns from the store at `path`, one line each, values in SQL literal form
    /// (`'text'`, `NULL`, `12`) separated by commas.
    static func query(_ path: String, _ sql: String) throws -> [String] {
        guard FileManager.default.fileExists(atPath: path) else { throw CLITestError("no store at \(path)") }
        let result = try runExecutable(try executable(), ["-readonly", "-batch", "-quote", path, sql])
        guard result.exitCode == 0, !result.killedBySignal, result.stderr.isEmpty else {
            throw CLITestError("sqlite3 \(path) \"\(sql)\" failed: \(result)")
        }
        return lines(result.stdout)
    }

    /// The one integer `sql` returns.
    static func integer(_ path: String, _ sql: String) throws -> Int64 {
        let rows = try query(path, sql)
        guard rows.count == 1, let value = Int64(rows[0]) else {
            throw CLITestError("sqlite3 \(path) \"\(sql)\" returned \(rows), not one integer")
        }
        return value
    }

    /// Changes the store at `path` (a test's own copy, never a job's source while it runs).
    static func execute(_ path: String, _ sql: String) throws {
        let result = try runExecutable(try executable(), ["-batch", path, sql])
        guard result.exitCode == 0, !result.killedBySignal, result.stderr.isEmpty else {
            throw CLITestError("sqlite3 \(path) \"\(sql)\" failed: \(result)")
        }
    }

    /// The names of the tables of the store at `path`, sorted.
    static func tables(_ path: String) throws -> [String] {
        try query(path, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "'")) }
    }

    /// Every table of the store with every row, `SELECT rowid, * ... ORDER BY rowid`, and the
    /// `CREATE` statement of each table: two stores with the same dump hold the same data.
    static func dump(_ path: String) throws -> [String: [String]] {
        var dump: [String: [String]] = [:]
        for table in try tables(path) {
            let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            dump[table] =
                try query(path, "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = '\(table)'")
                + query(path, "SELECT rowid, * FROM \(quoted) ORDER BY rowid")
        }
        return dump
    }
}

/// The bytes of a file and the names of the files next to it, to show that a run did not write it
/// or leave a `-wal`, `-shm` or `-journal` file beside it.
struct FileSnapshot: Equatable {
    var bytes: Data
    var siblings: [String]

    init(_ path: String) throws {
        bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let folder = (path as NSString).deletingLastPathComponent
        siblings = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
    }
}

/// The bytes of every file under a directory, by relative path: two equal snapshots mean nothing
/// in it was written.
func directorySnapshot(_ path: String) throws -> [String: Data] {
    var files: [String: Data] = [:]
    guard let enumerator = FileManager.default.enumerator(atPath: path) else {
        throw CLITestError("cannot list \(path)")
    }
    while let relative = enumerator.nextObject() as? String {
        var isDirectory: ObjCBool = false
        let full = path + "/" + relative
        if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
            files[relative] = try Data(contentsOf: URL(fileURLWithPath: full))
        }
    }
    return files
}

/// `chunkmigrate status --json`, decoded.
struct JobStatusReport: Decodable, Equatable {
    struct Entity: Decodable, Equatable {
        var name: String
        var batches: UInt64
        var rowsRead: Int64
        var rowsWritten: Int64
        var rowsSkipped: Int64
        var cursor: Int64?
        var complete: Bool
    }

    var jobID: String
    var state: String
    var source: String
    var destination: String
    var entities: [Entity]
    var lastFailure: String?

    func entity(_ name: String) throws -> Entity {
        guard let entity = entities.first(where: { $0.name == name }) else {
            throw CLITestError("the status has no entity \(name): \(entities.map(\.name))")
        }
        return entity
    }

    /// Runs `chunkmigrate status JOURNAL --json` and decodes what it prints.
    static func read(_ journal: String) throws -> JobStatusReport {
        let result = try chunkmigrate("status", journal, "--json")
        guard result.exitCode == 0, !result.killedBySignal else {
            throw CLITestError("chunkmigrate status --json failed: \(result)")
        }
        return try JSONDecoder().decode(JobStatusReport.self, from: Data(result.stdout.utf8))
    }
}
