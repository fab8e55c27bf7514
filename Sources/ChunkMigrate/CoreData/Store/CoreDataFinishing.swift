import Foundation

/// What a Core Data job does once every row is in and the indexes are built, each step batch by
/// batch of a table's keys with its progress committed in the destination
/// (``CheckpointStore/step(_:in:)``), so that a kill at any point resumes where it stopped:
///
/// 1. **derived values** the plan computes (``CoreDataMapping/derived``): `UPDATE` of one range
///    of keys at a time, with Core Data's own derivation SQL (`CoreDataDerivation`), or from the
///    values the job's check computed with the same SQL while the job built its indexes
///    (``precomputed``);
/// 2. **external binary data** (``CoreDataMapping/externalData``): the files the copied rows
///    name, hard-linked (or copied, where the two folders are on different volumes) from the
///    source's `.<store>_SUPPORT/_EXTERNAL_DATA/` into the destination's, each under a temporary
///    name first, then renamed, so a file is whole or absent;
/// 3. **R-tree fetch indexes** (`Z_RT_<Entity>_<index>`): filled from their entity's rows by the
///    statement of the trigger that keeps them (its `INSERT ... VALUES (NEW.x, ...)` run as
///    `INSERT ... SELECT x, ... FROM` the table);
/// 4. **triggers**: every trigger the destination had at the start, created again exactly as it
///    was, in one transaction.
final class CoreDataFinishing {
    /// One step and what it works on.
    enum Step {
        case derived(CoreDataMapping.DerivedValue)
        case externalData(CoreDataMapping.ExternalData)
        case fetchIndex(FetchIndexFill)
        /// An R-tree fetch index the store keeps without its triggers, its rows copied from the
        /// source's index of the same name as they were.
        case fetchIndexCopy(String)
        case triggers

        /// The table the step works on; `nil` for the triggers, which span the store.
        var table: String? {
            switch self {
            case let .derived(value): value.table
            case let .externalData(data): data.table
            case let .fetchIndex(fill): fill.table
            case let .fetchIndexCopy(index): index
            case .triggers: nil
            }
        }

        /// The step as the job reports it.
        var name: String {
            switch self {
            case let .derived(value): "derive \(value.attribute)"
            case let .externalData(data): "files \(data.attribute)"
            case let .fetchIndex(fill): "rtree \(fill.index)"
            case let .fetchIndexCopy(index): "rtree \(index)"
            case .triggers: "triggers"
            }
        }
    }

    /// How an R-tree fetch index is filled from its entity's table, read from the trigger that
    /// keeps it on insert.
    struct FetchIndexFill: Equatable {
        /// The virtual table, and the entity table it indexes.
        var index: String
        var table: String
        /// Its columns, and the value of each for a row of the table.
        var columns: String
        var values: String
        /// The trigger's `WHEN` condition over the row, if any.
        var condition: String?

        init(index: String, table: String, columns: String, values: String, condition: String? = nil) {
            self.index = index
            self.table = table
            self.columns = columns
            self.values = values
            self.condition = condition
        }

        /// Reads Core Data's R-tree insert trigger:
        /// `CREATE TRIGGER Z_RT_..._INSERT AFTER INSERT ON ZASSET FOR EACH ROW BEGIN INSERT OR
        /// REPLACE INTO Z_RT_... (Z_PK, ...) VALUES (NEW.Z_PK, NEW.ZLATITUDE, ...) ; END`;
        /// `nil` for a trigger of another form.
        init?(trigger sql: String, table: String) {
            let text = sql.replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
            let pattern =
                #"^CREATE TRIGGER \S+ AFTER INSERT ON \S+ FOR EACH ROW(?: WHEN (.+?))? BEGIN INSERT (?:OR REPLACE )?INTO (\S+) ?\((.+?)\) VALUES ?\((.+)\) ?; ?END$"#
            guard let regex = try? NSRegularExpression(pattern: pattern, options: [.caseInsensitive]),
                let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text))
            else { return nil }
            func group(_ index: Int) -> String? {
                Range(match.range(at: index), in: text).map { String(text[$0]) }
            }
            guard let index = group(2), let columns = group(3), let values = group(4) else { return nil }
            func rowValues(_ expression: String) -> String {
                expression.replacingOccurrences(of: #"\bNEW\."#, with: "", options: [.regularExpression, .caseInsensitive])
            }
            // A name as the trigger spells it, quoted or not.
            self.index = index.trimmingCharacters(in: CharacterSet(charactersIn: "\"`[]"))
            self.table = table
            self.columns = columns
            self.values = rowValues(values)
            self.condition = group(1).map(rowValues)
        }
    }

    private let database: Database
    private let plan: MigrationPlan
    private let sourcePath: String
    /// Where what the job carried as it was is said (a missing external file).
    var logger: ((String) -> Void)?
    /// Where a derived value's values are computed already, when they are: a file and its
    /// table (`cm_k`, a row's key; `cm_v`, its value), which the step then writes instead of
    /// computing them (the job's check computes them on another thread while the job builds
    /// its indexes, ``CoreDataStoreCheck/Overlapped/expectedValues(for:)``).
    var precomputed: ((CoreDataMapping.DerivedValue) -> (file: String, table: String)?)?

    init(database: Database, plan: MigrationPlan, sourcePath: String) {
        self.database = database
        self.plan = plan
        self.sourcePath = sourcePath
    }

    /// The steps, in order; the R-tree fills are read from the triggers the job deferred.
    func steps() throws -> [Step] {
        guard let coreData = plan.coreData else { return [] }
        var steps = coreData.derived.map(Step.derived) + coreData.externalData.map(Step.externalData)
        let triggers = try sqlite { () throws(SQLiteError) in try CheckpointStore.deferredTriggers(in: database) }
        for trigger in triggers where try isFetchIndexInsert(trigger.sql) {
            guard let fill = FetchIndexFill(trigger: trigger.sql, table: trigger.table) else {
                throw MigrationError(
                    .store,
                    "trigger \(trigger.name) keeps an R-tree index, but not in the form Core Data writes (INSERT ... VALUES (NEW.column, ...)); the index cannot be filled from its table",
                    file: database.path, sql: trigger.sql)
            }
            steps.append(.fetchIndex(fill))
        }
        steps += try fetchIndexesWithoutTriggers(
            filled: Set(
                steps.compactMap { step in
                    if case let .fetchIndex(fill) = step { return fill.index.uppercased() }
                    return nil
                })
        ).map(Step.fetchIndexCopy)
        if !triggers.isEmpty { steps.append(.triggers) }
        return steps
    }

    /// The destination's R-tree fetch indexes that no trigger keeps (a store can keep one so:
    /// macOS 26.1's Photos does), whose rows are copied from the source's index of the same
    /// name, as Core Data's migration leaves them, where the plan keeps every key. Those the job
    /// cannot carry are said, and left empty.
    private func fetchIndexesWithoutTriggers(filled: Set<String>) throws -> [String] {
        let (destination, source) = try sqlite { () throws(SQLiteError) -> ([String], Set<String>) in
            let query =
                "SELECT name FROM %@.sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%%' AND sql LIKE '%%USING RTREE%%' ORDER BY name"
            return (
                try database.rows(String(format: query, "main")).compactMap { $0[0].text },
                Set(try database.rows(String(format: query, "src")).compactMap { $0[0].text?.uppercased() })
            )
        }
        let keysKept = plan.entities.allSatisfy { $0.keys == .preserve || $0.destination.key == nil }
        var copied: [String] = []
        for index in destination where !filled.contains(index.uppercased()) {
            guard source.contains(index.uppercased()) else { continue }
            guard keysKept else {
                logger?(
                    "the R-tree index \(index) is kept without triggers, and the plan gives keys anew: its rows are not carried (Core Data rebuilds the index when it next writes the entity)"
                )
                continue
            }
            copied.append(index)
        }
        return copied
    }

    /// Whether `sql` is an insert trigger writing into an R-tree virtual table.
    private func isFetchIndexInsert(_ sql: String) throws -> Bool {
        let text = sql.replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
        guard text.range(of: " AFTER INSERT ON ", options: .caseInsensitive) != nil,
            let into = text.range(of: #"INTO (\S+?)[ (]"#, options: [.regularExpression, .caseInsensitive])
        else { return false }
        let target = text[into].dropFirst(5).dropLast().trimmingCharacters(in: .whitespaces)
        let definition = try sqlite { () throws(SQLiteError) in
            try database.scalar("SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ?1 COLLATE NOCASE", .text(target)).text
        }
        return definition?.range(of: #"USING\s+RTREE"#, options: [.regularExpression, .caseInsensitive]) != nil
    }

    /// Whether `step` is done already (a resumed job).
    func isDone(_ step: Step) throws -> Bool {
        try sqlite { () throws(SQLiteError) in try CheckpointStore.step(step.name, in: database).done }
    }

    /// Runs one batch of `step`, of up to `size` keys, and commits it with its progress.
    ///
    /// - Returns: whether the step is done.
    func runBatch(_ step: Step, size: Int) throws -> Bool {
        switch step {
        case let .derived(value):
            // The same values either way: computed here, or read where they were computed.
            let computed = precomputed?(value).flatMap(attachComputed)
            defer { if computed != nil { try? database.execute("DETACH DATABASE \(Self.computedSchema)") } }
            func batch(_ values: String) throws -> Bool {
                try rangeBatch(
                    step, table: value.table, size: size, what: "the derived attribute \(value.attribute)",
                    entity: value.attribute, column: value.column
                ) { first, last in
                    "UPDATE main.\(SQL.quote(value.table)) SET \(SQL.quote(value.column)) = \(values) WHERE Z_PK > \(first) AND Z_PK <= \(last)"
                        + (value.rows.map { " AND (\($0))" } ?? "")
                }
            }
            guard let computed else { return try batch(value.value) }
            do {
                return try batch(computed)
            } catch  where SQLiteError.isSchemaChanged(error) {
                // The check adds a table to the file of values with each value it computes; where
                // SQLite gave up preparing the batch over it, the batch, rolled back, computes
                // its values itself.
                return try batch(value.value)
            }
        case let .fetchIndex(fill):
            return try rangeBatch(step, table: fill.table, size: size, what: "the R-tree index \(fill.index)", entity: nil, column: nil) {
                first, last in
                "INSERT OR REPLACE INTO main.\(SQL.quote(fill.index)) (\(fill.columns)) SELECT \(fill.values) FROM main.\(SQL.quote(fill.table)) "
                    + "WHERE Z_PK > \(first) AND Z_PK <= \(last)" + (fill.condition.map { " AND (\($0))" } ?? "")
            }
        case let .fetchIndexCopy(index):
            return try fetchIndexCopyBatch(step, index: index, size: size)
        case let .externalData(data):
            return try externalDataBatch(step, data, size: size)
        case .triggers:
            try sqlite { () throws(SQLiteError) in try CheckpointStore.restoreTriggers(in: database) }
            return true
        }
    }

    /// One batch of an R-tree index's rows copied from the source's, by rowid (its first column,
    /// the entity's key).
    private func fetchIndexCopyBatch(_ step: Step, index: String, size: Int) throws -> Bool {
        let sql = """
            INSERT OR REPLACE INTO main.\(SQL.quote(index)) SELECT * FROM src.\(SQL.quote(index))
            WHERE rowid > ?1 AND rowid <= ?2
            """
        do {
            return try database.inTransaction(.immediate) { () throws(SQLiteError) -> Bool in
                let cursor = try CheckpointStore.step(step.name, in: database).cursor ?? Int64.min
                let last = try database.scalar(
                    "SELECT rowid FROM src.\(SQL.quote(index)) WHERE rowid > ?1 ORDER BY rowid LIMIT 1 OFFSET ?2",
                    .integer(cursor), .integer(Int64(max(1, size) - 1))
                ).integer
                var end = last
                if end == nil {
                    end = try database.scalar("SELECT max(rowid) FROM src.\(SQL.quote(index)) WHERE rowid > ?1", .integer(cursor)).integer
                }
                if let end { _ = try database.rows(sql, .integer(cursor), .integer(end)) }
                try CheckpointStore.saveStep(step.name, cursor: end ?? cursor, done: last == nil, in: database)
                return last == nil
            }
        } catch {
            throw MigrationError(
                .batch, "cannot copy the rows of the R-tree index \(index): \(error.message)", file: database.path,
                sql: sql, cause: error)
        }
    }

    /// The schema a file of computed values is attached as.
    static let computedSchema = "cm_computed"

    /// Attaches the file of computed values, read-only, and returns the value of a row of the
    /// derived value's table (`(SELECT cm_v FROM ...)`), or nil when the file cannot be attached
    /// (gone with the check that made it).
    private func attachComputed(_ computed: (file: String, table: String)) -> String? {
        do {
            try database.attach(Database.readOnlyURI(computed.file), as: Self.computedSchema)
        } catch {
            return nil
        }
        return "(SELECT e.cm_v FROM \(Self.computedSchema).\(SQL.quote(computed.table)) AS e WHERE e.cm_k = Z_PK)"
    }

    /// One batch of an `UPDATE`/`INSERT` over the keys of `table` after the step's cursor.
    private func rangeBatch(
        _ step: Step, table: String, size: Int, what: String, entity: String?, column: String?,
        statement: (Int64, Int64) -> String
    ) throws -> Bool {
        var sql: String?
        do {
            return try database.inTransaction(.immediate) { () throws(SQLiteError) -> Bool in
                let cursor = try CheckpointStore.step(step.name, in: database).cursor ?? Int64.min
                let quoted = "main.\(SQL.quote(table))"
                var last = try database.scalar(
                    "SELECT Z_PK FROM \(quoted) WHERE Z_PK > ?1 ORDER BY Z_PK LIMIT 1 OFFSET ?2",
                    .integer(cursor), .integer(Int64(max(1, size) - 1))
                ).integer
                let done = last == nil
                if last == nil { last = try database.scalar("SELECT max(Z_PK) FROM \(quoted) WHERE Z_PK > ?1", .integer(cursor)).integer }
                if let last {
                    sql = statement(cursor, last)
                    try database.execute(sql!)
                }
                try CheckpointStore.saveStep(step.name, cursor: last ?? cursor, done: done, in: database)
                return done
            }
        } catch {
            throw MigrationError(
                .batch, "cannot fill \(what): \(error.message)", entity: entity?.split(separator: ".").first.map(String.init),
                column: column, file: database.path, sql: sql ?? error.sql, cause: error)
        }
    }

    // MARK: External binary data

    /// The folder Core Data keeps a store's external binary data in: `.<name>_SUPPORT/_EXTERNAL_DATA`
    /// beside it (`name` without its extension).
    static func externalDataFolder(of store: String) -> URL {
        let url = URL(fileURLWithPath: store)
        return url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.deletingPathExtension().lastPathComponent)_SUPPORT/_EXTERNAL_DATA", isDirectory: true)
    }

    /// The file name a value refers to: `0x02` + the name + `0x00` (Core Data writes an uppercase
    /// UUID); `nil` for a value held inline (`0x01` + the bytes).
    static func externalFileName(_ value: [UInt8]) -> String? {
        guard value.first == 0x02 else { return nil }
        let name = value.dropFirst().prefix { $0 != 0 }
        return String(decoding: name, as: UTF8.self)
    }

    private func externalDataBatch(_ step: Step, _ data: CoreDataMapping.ExternalData, size: Int) throws -> Bool {
        let entity = data.attribute.split(separator: ".").first.map(String.init)
        let (cursor, rows) = try sqlite { () throws(SQLiteError) -> (Int64?, [[SQLiteValue]]) in
            let cursor = try CheckpointStore.step(step.name, in: database).cursor
            let rows = try database.rows(
                """
                SELECT Z_PK, \(SQL.quote(data.column)) FROM main.\(SQL.quote(data.table))
                WHERE Z_PK > ?1 AND \(SQL.quote(data.column)) >= x'02' AND \(SQL.quote(data.column)) < x'03' ORDER BY Z_PK LIMIT ?2
                """, .integer(cursor ?? Int64.min), .integer(Int64(max(1, size))))
            return (cursor, rows)
        }
        let from = Self.externalDataFolder(of: sourcePath), to = Self.externalDataFolder(of: database.path)
        // The rows' keys are the source's where the plan keeps them; else they are named as the
        // destination's.
        let keysPreserved =
            plan.entities.first { $0.destination.table.caseInsensitiveCompare(data.table) == .orderedSame }?.keys == .preserve
        if !rows.isEmpty {
            do { try FileManager.default.createDirectory(at: to, withIntermediateDirectories: true) } catch {
                throw MigrationError(
                    .store, "cannot create the folder for external binary data: \(error.localizedDescription)",
                    file: to.path, cause: error)
            }
        }
        var missing: [(name: String, row: Row)] = []
        for row in rows {
            guard let key = row[0].integer, case let .blob(bytes) = row[1], let name = Self.externalFileName(bytes) else { continue }
            let row = Row(entity: entity, attribute: data.attribute, column: data.column, key: key, keyIsSource: keysPreserved)
            guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
                throw MigrationError(
                    .store, "\(data.attribute) of \(row.described) names an external file \"\(name)\", which is not a file name",
                    entity: entity, sourceKey: row.sourceKey, column: data.column, file: sourcePath)
            }
            if try !Self.carry(name, from: from, to: to, row: row) { missing.append((name, row)) }
        }
        // A reference whose file the source does not have is carried as it is, as Core Data's
        // own migration carries it: the app reads no value there before and after alike.
        if let first = missing.first {
            logger?(
                "\(missing.count) external files named by \(data.attribute) are missing from the source's \(from.path): the references are carried as they are, as Core Data's migration carries them (the first: \(first.name), \(first.row.described))"
            )
        }
        let done = rows.count < max(1, size)
        let last = rows.last?[0].integer ?? cursor
        try sqlite { () throws(SQLiteError) in
            try database.inTransaction(.immediate) { () throws(SQLiteError) in
                try CheckpointStore.saveStep(step.name, cursor: last, done: done, in: database)
            }
        }
        return done
    }

    /// The row whose value names a file, for the messages about it.
    struct Row {
        var entity: String?
        var attribute: String
        var column: String
        var key: Int64
        /// Whether `key` is the source's too (the plan keeps the keys).
        var keyIsSource: Bool

        var described: String { keyIsSource ? "the row with key \(key)" : "the row with destination key \(key)" }
        var sourceKey: Int64? { keyIsSource ? key : nil }
    }

    /// Puts the file `name` of `from` into `to`: nothing when a file of the same size is there
    /// (carried by a run that was killed after it), else a hard link or a copy under a temporary
    /// name, then renamed, and the folder synced.
    ///
    /// - Returns: `false` when `from` has no such file: the reference is then carried as it is.
    static func carry(_ name: String, from: URL, to: URL, row: Row) throws -> Bool {
        let source = from.appendingPathComponent(name), destination = to.appendingPathComponent(name)
        let files = FileManager.default
        guard let attributes = try? files.attributesOfItem(atPath: source.path), let size = (attributes[.size] as? NSNumber)?.int64Value
        else {
            return false
        }
        if let existing = try? files.attributesOfItem(atPath: destination.path), (existing[.size] as? NSNumber)?.int64Value == size {
            return true
        }
        let temporary = to.appendingPathComponent(".\(name).chunkmigrate")
        do {
            try? files.removeItem(at: temporary)
            do { try files.linkItem(at: source, to: temporary) } catch {
                try files.copyItem(at: source, to: temporary)
                let handle = try FileHandle(forWritingTo: temporary)
                try handle.synchronize()
                try handle.close()
            }
            if files.fileExists(atPath: destination.path) { try files.removeItem(at: destination) }
            try files.moveItem(at: temporary, to: destination)
            // The new name durable before the step's cursor passes the row.
            let folder = open(to.path, O_RDONLY)
            if folder >= 0 { _ = fsync(folder); close(folder) }
            return true
        } catch {
            throw MigrationError(
                .store, "cannot carry the external file \(name) of \(row.attribute) (\(row.described)) over: \(error.localizedDescription)",
                entity: row.entity, sourceKey: row.sourceKey, column: row.column, file: destination.path, cause: error)
        }
    }

    /// Runs `body`, reporting an SQLite error as one of the destination.
    private func sqlite<T>(_ body: () throws(SQLiteError) -> T) throws -> T {
        do { return try body() } catch {
            throw MigrationError(.store, error.message, file: database.path, sql: error.sql, cause: error)
        }
    }
}
