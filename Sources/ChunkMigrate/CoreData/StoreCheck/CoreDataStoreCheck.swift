import Foundation

/// The invariants Core Data relies on when it opens a store, checked on the store's rows against
/// its model (the store's own model cache, or one given):
///
/// - the store's schema is the layout its model implies (`CoreDataLayout`);
/// - every `Z_ENT` of an entity table belongs to that table's entity tree;
/// - `Z_PRIMARYKEY.Z_MAX` of every root entity is at least the largest `Z_PK` of its table (or
///   the next insert would reuse a key);
/// - a required attribute or to-one has a value in every row of the entities that have it (values
///   in rows of other entities, which Core Data never reads and its own in-place migrations leave
///   behind, are reported as notes, not violations);
/// - every to-one key points at an existing row of the relationship's destination entity or one
///   of its sub-entities, its polymorphic `Z<n>_<REL>` column holds that row's `Z_ENT` (and is
///   NULL exactly when the key is), and its order column (`Z_FOK_`) has a value exactly when the
///   key has;
/// - every join-table key points at an existing row of its side's entity, and its order columns
///   are set;
/// - the metadata property list decodes, its `NSStoreUUID` is `Z_UUID`, and its version hashes
///   name every entity of `Z_PRIMARYKEY`;
/// - `Z_MAX` of persistent history and CloudKit mirroring is at least their tables' largest key
///   (a history token names a transaction number);
/// - every derived attribute holds what its derivation gives (but `now()`), and the triggers
///   Core Data keeps it with are there;
/// - every R-tree fetch index has its triggers and holds every row of its entity;
/// - every value of a binary attribute kept in a file names a file of the store's
///   `.<store>_SUPPORT/_EXTERNAL_DATA/`.
///
/// A store without a model cache, checked without a model, gets the checks that need none
/// (entity numbers, `Z_MAX`, metadata) and says what it did not check. The conditions on a
/// table's own rows, and the lookups of its to-ones with a polymorphic column, are counted in one
/// pass over it, so the check reads each table once; then each other to-one's and each join-table
/// side's distinct keys are looked up once (or found in one pass over their table beside them).
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
        /// The violations that can be compared with another store's, each with what it is about
        /// (``Finding``); a violation not among them (a layout that does not fit, a check that
        /// could not run) is never compared.
        public var findings: [Finding] = []
        /// Anomalies of the migrated store that its source already had, the same invariant on the
        /// same rows (`carryingOver(from:)`): Core Data migrates a store as it is, so they are
        /// carried as they were, and are no violation of the migration.
        public var carried: [String] = []
        /// Whether every invariant holds.
        public var isValid: Bool { violations.isEmpty }

        /// Creates a report.
        public init(
            violations: [String], checked: Int, unchecked: [String], notes: [String] = [],
            findings: [Finding] = [], carried: [String] = []
        ) {
            self.violations = violations
            self.checked = checked
            self.unchecked = unchecked
            self.notes = notes
            self.findings = findings
            self.carried = carried
        }

        /// Adds a violation that can be compared with another store's.
        mutating func add(_ finding: Finding) {
            violations.append(finding.line)
            findings.append(finding)
        }
    }

    /// A violation, with what it is about in the model's words: the invariant, the entity and
    /// property (or index, or join table side), how many rows break it and which, so that the
    /// same invariant can be looked up in another store of another model (the source of a
    /// migration).
    public struct Finding: Sendable, Codable, Equatable {
        /// The invariant broken.
        public enum Kind: String, Sendable, Codable {
            /// Rows whose `Z_ENT` is outside their table's entity tree (`entity`: the root).
            case entityOutsideTree
            /// `Z_MAX` of `entity` behind its table's keys.
            case maxBehind
            /// A required attribute or to-one without a value.
            case required
            /// A polymorphic column with a value where its key has none.
            case entityWithoutKey
            /// An order column set without its key, or a key without its order.
            case orderWithoutKey
            /// A to-one key pointing at no row of its destination (or disagreeing with its
            /// polymorphic column).
            case dangling
            /// A join-table key pointing at no row (`entity`.`property`: the side's relationship).
            case danglingJoin
            /// A join table's order column without a value.
            case joinWithoutOrder
            /// A derived attribute's trigger missing.
            case derivedTrigger
            /// A derived attribute's values other than its derivation gives.
            case derivedValues
            /// An R-tree fetch index without its triggers (`property`: the index).
            case fetchIndexTriggers
            /// Rows of an entity missing from its R-tree fetch index (`property`: the index).
            case fetchIndexRows
            /// Values naming an external file that is not there.
            case externalFile
        }

        /// The invariant.
        public var kind: Kind
        /// The entity it is about (the declaring entity for a property).
        public var entity: String?
        /// The property, or the index.
        public var property: String?
        /// How many rows (or values) break it.
        public var count: Int64
        /// The keys (`Z_PK`) of the rows breaking it, in order, when it is about rows and they
        /// are at most `Finding.keyLimit`; empty otherwise.
        public var keys: [Int64]
        /// The report's line.
        public var line: String
        /// Where it is: the table and column, and for a key that points nowhere, the table it
        /// points into; `nil` where the finding is not about one column.
        public var table: String?
        public var column: String?
        public var targetTable: String?

        /// The most keys a finding keeps.
        static let keyLimit = 1_000

        /// Creates a finding.
        public init(
            _ kind: Kind, entity: String?, property: String? = nil, count: Int64, keys: [Int64] = [], line: String,
            table: String? = nil, column: String? = nil, targetTable: String? = nil
        ) {
            self.kind = kind
            self.entity = entity
            self.property = property
            self.count = count
            self.keys = keys
            self.line = line
            self.table = table
            self.column = column
            self.targetTable = targetTable
        }
    }

    /// Checks the store at `store`, opened read-only (a WAL store's `-wal` file, when there is one,
    /// is read as Core Data would).
    ///
    /// - Parameters:
    ///   - store: the store's file.
    ///   - model: the store's model; its own model cache when `nil`.
    ///   - tables: only the tables a job touched (by name, any case), where the rest was checked
    ///     before and did not change; every table when `nil`.
    /// - Throws: ``MigrationError`` naming the file when it is not a readable Core Data store, or
    ///   its model cache is damaged.
    public static func run(store: URL, model: CoreDataModel? = nil, tables: Set<String>? = nil) throws -> Report {
        try run(store: store, model: model, tables: tables, kept: [:])
    }

    /// ``run(store:model:tables:)``, where of `tables`, those in `kept` (in capitals) had their
    /// rows, keys and values kept, and only the columns `kept` names for them written (columns
    /// added, derived values computed): their rows are checked, but not the keys into them from
    /// tables not checked, nor a derived value in a column not written whose derivation reads
    /// no table whose rows changed.
    ///
    /// `done`: the checks a check beside the job ran already (``Overlapped/Given``), left out.
    static func run(
        store: URL, model: CoreDataModel?, tables: Set<String>?, kept: [String: Set<String>], done: Set<String> = []
    ) throws -> Report {
        guard FileManager.default.fileExists(atPath: store.path) else {
            throw MigrationError(.store, "the store does not exist", file: store.path)
        }
        if InPlaceMigration.isHalfMigrated(store) {
            throw MigrationError(.store, InPlaceMigration.halfMigratedMessage(store.path), file: store.path)
        }
        let database: Database
        do {
            // Read-only, and immutable when no process has the WAL store open: no -wal or -shm
            // file appears next to the store checked.
            database = try Database(path: store.path, mode: .source)
            _ = try database.scalar("SELECT count(*) FROM sqlite_schema")
        } catch {
            throw MigrationError(.store, "not a readable SQLite store: \(error.message)", file: store.path, cause: error)
        }
        do {
            let model = try model ?? CoreDataModel.read(database, schema: "main", file: store.path)
            return try check(
                database, model: model, file: store.path, tables: tables.map { Set($0.map { $0.uppercased() }) }, kept: kept, done: done
            ).report
        } catch let error as SQLiteError {
            throw MigrationError(
                .store, "cannot read the store as a Core Data store: \(error.message)", file: store.path, sql: error.sql, cause: error)
        }
    }

    /// Which checks to run: all of them, or one of two parts that a job runs at different
    /// times (``rows`` as soon as the rows are in, alongside the index builds; ``rest`` at the end).
    enum Part {
        case all
        /// The layout, every table's rows, every to-one and join-table key: what no later step
        /// of a job changes, and most of the time.
        case rows
        /// The key lookups the rows part left for an index the job builds after it (`postponed`).
        case postponed
        /// What of the rows part reads only tables the job has finished writing (`readable`),
        /// while it copies the others: each such table's conditions on its rows (but `Z_MAX`:
        /// `Z_PRIMARYKEY` is a table the job writes), the key lookups between two such tables
        /// that need no index the job builds later, and such join tables. The rows part then
        /// leaves out what this part did (`done`). A job in place runs it over every table once
        /// its rows are in, but the tables it still derives values into (`unfinished`), whose
        /// conditions wait for the rest (``Overlapped/Given``).
        case early
        /// The metadata, system tables, R-tree fetch indexes, derived values and external files.
        case rest
    }

    /// Checks the store open as `main` in `database`.
    ///
    /// - Parameter postponed: `TABLE.COLUMN` (in capitals) of the key lookups that wait for an
    ///   index the job has not built yet: left out of ``Part/rows`` and made in ``Part/rest``,
    ///   where the index makes them cheap.
    ///   - derivedDone: `Entity.attribute` of the derived attributes whose values were compared
    ///     already (``ExpectedValues``): ``Part/rest`` checks only their triggers.
    static func check(
        _ database: Database, model: CoreDataModel?, file: String, tables: Set<String>? = nil, kept: [String: Set<String>] = [:],
        part: Part = .all, postponed: Set<String> = [], derivedDone: Set<String> = []
    ) throws -> Report {
        try check(
            database, model: model, file: file, tables: tables, kept: kept, part: part, postponed: postponed, derivedDone: derivedDone
        ).report
    }

    /// ``check(_:model:file:tables:part:postponed:derivedDone:)``, and which of its checks ran
    /// (tables' conditions, key lookups, join-table sides), for a later part to leave out.
    ///
    /// - Parameters:
    ///   - readable: for ``Part/early``, the tables (in capitals) the job no longer writes.
    ///   - entities: the store's entities, when the caller read them (``Part/early`` reads no
    ///     table the job writes, and `Z_PRIMARYKEY` is one).
    ///   - done: the checks an ``Part/early`` part ran already.
    ///   - unfinished: for ``Part/early``, tables (in capitals) whose own conditions it leaves
    ///     to a later part, though it may look keys up in them: the job still writes derived
    ///     values into them.
    ///   - attempt: runs each statement over the rows (a job's check runs one again where it
    ///     stopped to let the job write); as it is when nil.
    static func check(
        _ database: Database, model: CoreDataModel?, file: String, tables: Set<String>? = nil, kept: [String: Set<String>] = [:],
        part: Part = .all, postponed: Set<String> = [], derivedDone: Set<String> = [], readable: Set<String> = [],
        entities known: CoreDataEntities? = nil, done: Set<String> = [], unfinished: Set<String> = [],
        attempt: ((() throws -> [[SQLiteValue]]) throws -> [[SQLiteValue]])? = nil
    ) throws -> (report: Report, ran: Set<String>) {
        // What the check reads of the schema, read in one snapshot: a job that checks the store
        // it writes builds indexes meanwhile, and a schema read across its commits can fail.
        let (entities, tablesPresent, resolved) = try database.inTransaction {
            () throws -> (CoreDataEntities, Set<String>, Result<CoreDataLayout, MigrationError>?) in
            let entities = try known ?? CoreDataEntities.read(database, file: file)
            let tables = Set(try database.rows("SELECT upper(name) FROM main.sqlite_schema WHERE type = 'table'").compactMap { $0[0].text })
            guard let model else { return (entities, tables, nil) }
            do {
                return (
                    entities, tables,
                    .success(try CoreDataLayout(model: model).resolved(against: database, schema: "main", file: file, entities: entities).0)
                )
            } catch let error as MigrationError {
                return (entities, tables, .failure(error))
            }
        }
        var check = Checker(
            database: database, entities: entities, only: tables, kept: kept, tablesPresent: tablesPresent,
            part: part, postponed: postponed, derivedDone: derivedDone, readable: readable, unfinished: unfinished, done: done)
        if let attempt { check.attempt = attempt }
        let rows = part == .all || part == .rows, rest = part == .all || part == .rest
        if rest { try check.metadata(file: file) }
        var layout: CoreDataLayout?
        if let resolved {
            switch resolved {
            case let .success(resolved): layout = resolved
            case let .failure(error):
                // A schema another connection kept changing is no finding about the store.
                if SQLiteError.isSchemaChanged(error) { throw error }
                if rows { check.report.violations.append(error.message) }
            }
        } else if rows {
            check.report.unchecked.append(
                "the store has no model cache and no model was given: attributes, relationships and join tables were not checked (give the model)"
            )
        }
        if rows || (part == .early && layout != nil) { try check.tables(layout) }
        if rest {
            try check.systemTables()
            try check.fetchIndexes()
        }
        if let layout {
            // Each runs its key lookups in the part they belong to (``Checker/runsNow(_:_:)``).
            try check.targets(layout)
            try check.joinTables(layout)
            if rest {
                try check.derived(layout)
                try check.externalData(layout, file: file)
            }
        }
        return (check.report, check.ran)
    }
}

extension CoreDataStoreCheck {
    /// The report's line for `count` rows holding another value than `derivation` gives, or nil.
    static func wrongDerivedValues(_ count: Int64, first key: Int64?, derivation: CoreDataDerivation, entity: String) -> String? {
        guard count > 0 else { return nil }
        return
            "\(derivation.table).\(derivation.column): \(count) rows hold another value than the derived attribute \(entity).\(derivation.attribute) gives (\(derivation.expression))\(key.map { ", the first with Z_PK \($0)" } ?? "")"
    }

    /// A derived attribute's values as its derivation gives them, computed by the check of a
    /// job while the job builds its last indexes, and compared with what the job wrote once it
    /// is done. The job writes these values where its plan derives the attribute as the model
    /// does (``matches(_:)``) instead of computing them a second time: the same SQL over the
    /// same rows, since the job writes nothing the derivation reads from the moment the indexes
    /// it reads are built (``all(in:layout:)`` makes sure of it). The comparison then shows that
    /// every row holds its value (a row the job's batches missed, a value converted otherwise);
    /// `check-coredata`, run apart, computes the derivation again over the finished store.
    struct ExpectedValues {
        /// `Entity.attribute`, as ``CoreDataStoreCheck/check(_:model:file:tables:part:postponed:derivedDone:)`` names it.
        let key: String
        let entity: String
        let derivation: CoreDataDerivation
        /// The columns it reads, `TABLE.COLUMN` in capitals: its values are computed once the
        /// indexes on them are built.
        let columns: Set<String>
        /// The table holding the values (`cm_k`, the row's key; `cm_v`, its value).
        let table: String

        /// The derived attributes whose values can be computed before the job writes them: every
        /// one but `now()` and those reading a column the job's last steps write (another derived
        /// value, a value kept in a file).
        static func all(in database: Database, layout: CoreDataLayout) throws -> [ExpectedValues] {
            var written: Set<String> = []
            var candidates: [(String, CoreDataDerivation)] = []
            for entity in layout.model.entities.sorted(by: { $0.name < $1.name }) {
                for property in entity.properties where !property.isTransient {
                    guard let attribute = property.attribute, attribute.derivation != nil || attribute.allowsExternalStorage,
                        let table = layout.table(of: entity.name), let column = layout.column(of: property.name, entity: entity.name)
                    else { continue }
                    written.insert("\(table.name).\(column.name)".uppercased())
                    guard attribute.derivation != nil,
                        let derivation = try? CoreDataDerivation(entity: entity.name, attribute: property.name, layout: layout),
                        derivation.value != "NSCoreDataNow()"
                    else { continue }
                    candidates.append(("\(entity.name).\(property.name)", derivation))
                }
            }
            try CoreDataBookkeeping.registerDerivationFunctions(on: database)
            var all: [ExpectedValues] = []
            for (key, derivation) in candidates {
                guard let read = try? CoreDataDerivation.columnsRead(by: derivation.value, of: derivation.table, in: database),
                    read.isDisjoint(with: written)
                else { continue }
                all.append(
                    ExpectedValues(
                        key: key, entity: String(key.prefix { $0 != "." }), derivation: derivation,
                        columns: read, table: "cm_expected_\(all.count)"))
            }
            return all
        }

        /// Computes the values into a table of the schema `values` of `database` (its temporary
        /// one, or a file attached to it), from the store it has open as `main` (the derivation
        /// names its other tables bare). The value
        /// column has the derived column's declared type: the values convert as the job's
        /// `UPDATE` converts them (a number derived into a text column is stored as text), and
        /// the comparison is the one the check makes at the end.
        func compute(in database: Database, values: String = "temp") throws {
            let name = "\(values).\(SQL.quote(table))"
            let type = try database.tableSchema(derivation.table, in: "main")?.column(named: derivation.column)?.type ?? ""
            try database.execute(
                """
                DROP TABLE IF EXISTS \(name);
                CREATE \(values == "temp" ? "TEMP " : "")TABLE \(name) (cm_k INTEGER PRIMARY KEY, cm_v \(type));
                INSERT INTO \(name) SELECT Z_PK, \(derivation.value) FROM main.\(SQL.quote(derivation.table))\(derivation.rows.map { " WHERE \($0)" } ?? "");
                """)
        }

        /// The report's line when the job wrote other values (or a row it has no value for), or nil.
        func compare(in database: Database, values: String = "temp") throws -> String? {
            let rows = derivation.rows.map { "(\($0)) AND " } ?? ""
            let row = try database.rows(
                """
                SELECT count(*), min(t.Z_PK) FROM main.\(SQL.quote(derivation.table)) AS t LEFT JOIN \(values).\(SQL.quote(table)) AS e ON e.cm_k = t.Z_PK
                WHERE \(rows)(e.cm_k IS NULL OR t.\(SQL.quote(derivation.column)) IS NOT e.cm_v)
                """)[0]
            return CoreDataStoreCheck.wrongDerivedValues(row[0].integer ?? 0, first: row[1].integer, derivation: derivation, entity: entity)
        }

        /// Whether the plan's `value` derives the same values into the same rows: the job may
        /// then write these.
        func matches(_ value: CoreDataMapping.DerivedValue) -> Bool {
            value.table.caseInsensitiveCompare(derivation.table) == .orderedSame
                && value.column.caseInsensitiveCompare(derivation.column) == .orderedSame
                && value.value == derivation.value && value.rows == derivation.rows
        }
    }
}

extension CoreDataStoreCheck {
    /// Whether the distinct keys of a join table's `column` are checked against `table` faster in
    /// one pass over both in key order (SQLite merges the two sorted sides of an `EXCEPT`) than
    /// by one lookup each: where the keys are many for the table's size. A lookup costs about
    /// 280 ns, a row of the pass 10 ns of the join table and 120 ns of the table
    /// (Tools/BENCHMARKS.md); the keys are estimated from the distinct share of the first
    /// 10,000 in order, the rows from the join table's last rowid and the table's key span.
    static func passesOver(_ table: String, forKeysOf column: String, in join: String, database: Database) throws -> Bool {
        let quoted = SQL.quote(table), key = SQL.quote(column)
        guard let rows = try? database.scalar("SELECT max(rowid) FROM \(SQL.quote(join))").integer, rows > 0,
            let span = try database.scalar("SELECT (SELECT max(Z_PK) FROM \(quoted)) - (SELECT min(Z_PK) FROM \(quoted)) + 1").integer,
            let sample = try database.rows(
                "SELECT count(DISTINCT k), count(*) FROM (SELECT \(key) AS k FROM \(SQL.quote(join)) ORDER BY 1 LIMIT 10000)"
            ).first,
            let distinct = sample[0].integer, let sampled = sample[1].integer, sampled > 0
        else { return false }
        let keys = Double(rows) * Double(distinct) / Double(sampled)
        return keys * 28 > Double(rows) + 12 * Double(span)
    }
}

extension CoreDataStoreCheck {
    /// SQL true where `expression` is one of `numbers`, NULL where it is NULL (as `IN (...)`):
    /// each number compared one by one, but a run of more than four consecutive ones a `BETWEEN`
    /// that also asks for a whole number (`3.5` is between 3 and 5, and in no list of them).
    /// SQLite looks a value up in an `IN` list through a temporary index, which costs a row of a
    /// table pass several times what the comparisons do (0.41 s of CPU over 1M rows for three
    /// numbers, against 0.15 s compared one by one).
    static func member(_ expression: String, of numbers: Set<Int64>) -> String {
        var runs: [(Int64, Int64)] = []
        for number in numbers.sorted() {
            if let last = runs.last, last.1 &+ 1 == number { runs[runs.count - 1].1 = number } else { runs.append((number, number)) }
        }
        guard !runs.isEmpty else { return "(\(expression) IN ())" }
        let terms = runs.flatMap { low, high -> [String] in
            if high - low < 4 { return (low...high).map { "\(expression) = \($0)" } }
            return ["(\(expression) BETWEEN \(low) AND \(high) AND \(expression) = CAST(\(expression) AS INTEGER))"]
        }
        return "(" + terms.joined(separator: " OR ") + ")"
    }

    /// The ranges of keys a statement over a table of keys `low` through `high` reads one after
    /// another, each a statement of its own (that a job's check runs again alone where it
    /// stopped to let the job write): the first from the smallest key there
    /// can be, the last to the largest, so that they cover every key; at most
    /// ``rangesPerTable``, and where there are more than one, each of at least ``keysPerRange``
    /// keys.
    static func ranges(low: Int64?, high: Int64?) -> [(Int64, Int64)] {
        guard let low, let high, high > low else { return [(.min, .max)] }
        // Every key there can be is one more than UInt64 holds: as many as it holds.
        let span = max(UInt64(bitPattern: high &- low) &+ 1, UInt64(bitPattern: high &- low))
        let count = Int(min(UInt64(rangesPerTable), max(1, span / UInt64(keysPerRange))))
        let size = span / UInt64(count)
        return (0..<count).map { index in
            let start = index == 0 ? Int64.min : low &+ Int64(bitPattern: size * UInt64(index))
            let end = index == count - 1 ? Int64.max : low &+ Int64(bitPattern: size * UInt64(index + 1)) &- 1
            return (start, end)
        }
    }

    /// ``ranges(low:high:)`` as conditions on a value `$K`, with their arguments, that together
    /// hold every value but NULL: the first has no lower bound, the last no upper one, and each
    /// ends where the next starts (`$K < ?2`), so that a real between two integers, or a text
    /// or blob (after every number), is in one of them too.
    static func rangeConditions(low: Int64?, high: Int64?) -> [(sql: String, arguments: [SQLiteValue])] {
        let ranges = ranges(low: low, high: high)
        guard ranges.count > 1 else { return [("$K IS NOT NULL", [])] }
        return ranges.enumerated().map { index, range in
            if index == 0 { return ("$K < ?1", [.integer(range.1 &+ 1)]) }
            if index == ranges.count - 1 { return ("$K >= ?1", [.integer(range.0)]) }
            return ("$K >= ?1 AND $K < ?2", [.integer(range.0), .integer(range.1 &+ 1)])
        }
    }

    /// The smallest and largest key of `table` (quoted), each read off one end of the table: a
    /// query with both aggregates would read every row.
    static func bounds(of table: String) -> String {
        "SELECT (SELECT min(Z_PK) FROM \(table)), (SELECT max(Z_PK) FROM \(table))"
    }

    /// How many keys a range holds at least, and how many ranges a table has at most
    /// (``ranges(low:high:)``): a statement over 65,536 rows takes tens of milliseconds, all a
    /// job waits for when the check's read holds its write up.
    static let keysPerRange: Int64 = 65_536
    static let rangesPerTable = 64
}

extension CoreDataStoreCheck.Report {
    /// This report and another, of other checks of the same store, as one.
    func merged(with other: Self) -> Self {
        Self(
            violations: violations + other.violations, checked: checked + other.checked,
            unchecked: unchecked + other.unchecked, notes: notes + other.notes,
            findings: findings + other.findings, carried: carried + other.carried)
    }
}

/// The checks, adding to one report: one pass over each entity table for every condition on its
/// own rows (and its polymorphic to-ones), then the distinct keys of each other to-one and of
/// each join-table side.
private struct Checker {
    let database: Database
    let entities: CoreDataEntities
    /// The tables to check (in capitals); all when `nil`.
    let only: Set<String>?
    /// Of those, the tables whose rows, keys and values stay as they were, with the only columns
    /// written into them (in capitals): the keys into them and their derived values are checked
    /// only where something they read was written.
    let kept: [String: Set<String>]
    /// The store's tables (in capitals).
    let tablesPresent: Set<String>
    /// The part of the check this is, and the key lookups postponed to its rest.
    let part: CoreDataStoreCheck.Part
    let postponed: Set<String>
    /// The derived attributes (`Entity.attribute`) whose values were compared already.
    let derivedDone: Set<String>
    /// For ``CoreDataStoreCheck/Part/early``, the tables it may read (in capitals).
    let readable: Set<String>
    /// For ``CoreDataStoreCheck/Part/early``, the tables whose own conditions it leaves to a
    /// later part (in capitals).
    var unfinished: Set<String> = []
    /// The checks an early part ran, which this part leaves out: `T:TABLE` for a table's
    /// conditions, `K:TABLE.COLUMN` for a to-one's lookups, `J:TABLE.COLUMN` for a join-table side.
    let done: Set<String>
    var report = CoreDataStoreCheck.Report(violations: [], checked: 0, unchecked: [])
    /// The checks this part ran, named as in ``done``.
    var ran: Set<String> = []
    /// Runs each statement over the rows: as it is, or where the check reads a store a job is
    /// writing, again from its start when it stopped to let the job write
    /// (``CoreDataStoreCheck/Overlapped``). A statement over many rows is made in ranges of keys
    /// (``CoreDataStoreCheck/ranges(low:high:)``), so that such a stop loses one range.
    var attempt: (_ statement: () throws -> [[SQLiteValue]]) throws -> [[SQLiteValue]] = { try $0() }

    /// Whether `table` is among those checked.
    func includes(_ table: String) -> Bool { only.map { $0.contains(table.uppercased()) } ?? true }

    /// Whether `column` of `table` was written: any column of a table checked, but of a table
    /// whose rows were kept, only one named in ``kept``.
    func includes(_ table: String, _ column: String?) -> Bool {
        guard includes(table), let columns = kept[table.uppercased()] else { return includes(table) }
        return column.map { columns.contains($0.uppercased()) } ?? false
    }

    /// Whether the rows of `table` are among what is checked, their keys and entity numbers
    /// included: a table checked whose rows were not kept.
    func includesRows(_ table: String) -> Bool { includes(table) && kept[table.uppercased()] == nil }

    /// Whether this part may read `tables`: all of them but in the early part, which reads only
    /// the tables the job has finished.
    func mayRead(_ tables: String...) -> Bool { part != .early || tables.allSatisfy { readable.contains($0.uppercased()) } }

    /// Whether the key lookups of `table.column` run in this part: in the rows part unless
    /// postponed until the index on them is built, in the rest only then.
    func runsNow(_ table: String, _ column: String) -> Bool {
        let isPostponed = postponed.contains("\(table).\(column)".uppercased())
        switch part {
        case .all: return true
        case .rows, .early: return !isPostponed
        case .postponed: return isPostponed
        case .rest: return false
        }
    }

    /// A condition on a table's rows, and what it means when rows meet it.
    struct Condition {
        /// SQL over the row: true for a row that breaks the invariant.
        var sql: String
        /// Whether it is a note (Core Data does not rely on it) rather than a violation.
        var isNote = false
        /// The invariant, and the entity and property it is about (``CoreDataStoreCheck/Finding``).
        var kind: CoreDataStoreCheck.Finding.Kind
        var entity: String?
        var property: String?
        /// The column it is about, and for a key, the table it points into.
        var column: String? = nil
        var targetTable: String? = nil
        /// The report's line, given how many rows and the first one's key (", the first with Z_PK 7").
        var line: (_ count: Int64, _ first: String) -> String
    }

    func list(_ numbers: Set<Int64>) -> String { numbers.sorted().map(String.init).joined(separator: ", ") }
    func first(_ key: Int64?) -> String { key.map { ", the first with Z_PK \($0)" } ?? "" }

    func member(_ expression: String, of numbers: Set<Int64>) -> String { CoreDataStoreCheck.member(expression, of: numbers) }

    /// The rows of a query, through ``attempt``.
    func rows(_ sql: String, _ arguments: SQLiteValue...) throws -> [[SQLiteValue]] { try rows(sql, arguments: arguments) }

    func rows(_ sql: String, arguments: [SQLiteValue]) throws -> [[SQLiteValue]] {
        try attempt { try database.rows(sql, arguments: arguments) }
    }

    /// The conditions on `key` (`s.Z_PK`) that read `table` in ranges of keys: one each of
    /// ``CoreDataStoreCheck/rangeConditions(low:high:)`` where `Z_PK` is the table's rowid (every
    /// key an integer, found in its b-tree), else one that reads every row.
    func keyRanges(of table: String, _ key: String, _ bounds: [SQLiteValue]) throws -> [(sql: String, arguments: [SQLiteValue])] {
        let ranges = CoreDataStoreCheck.rangeConditions(low: bounds[0].integer, high: bounds[1].integer)
        // A table of one range is read whole, without asking what its key is.
        guard ranges.count > 1, try keyIsRowid(table) else { return [("1", [])] }
        return ranges.map { ($0.sql.replacingOccurrences(of: "$K", with: key), $0.arguments) }
    }

    /// Whether `table`'s `Z_PK` is its rowid: its only primary key column, declared `INTEGER`,
    /// and no index of its own (`INTEGER PRIMARY KEY DESC` and `WITHOUT ROWID` have one).
    func keyIsRowid(_ table: String) throws -> Bool {
        try database.scalar(
            """
            SELECT (SELECT count(*) FROM pragma_table_info(?1) WHERE pk > 0) = 1
               AND EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE upper(name) = 'Z_PK' AND upper(type) = 'INTEGER' AND pk = 1)
               AND NOT EXISTS (SELECT 1 FROM pragma_index_list(?1) WHERE origin = 'pk')
            """, .text(table)
        ).integer == 1
    }

    /// Whether an index of `table` (its primary key's included) has `column` first.
    func leadsIndex(_ table: String, _ column: String) throws -> Bool {
        try database.scalar(
            """
            SELECT EXISTS (SELECT 1 FROM pragma_index_list(?1) AS l, pragma_index_info(l.name) AS i
                           WHERE i.seqno = 0 AND upper(i.name) = upper(?2))
            """, .text(table), .text(column)
        ).integer == 1
    }

    /// The count and smallest key of the rows `sql` selects (`count(*), min(...)`).
    mutating func count(_ sql: String) throws -> (Int64, Int64?) {
        report.checked += 1
        let row = try rows(sql)[0]
        return (row[0].integer ?? 0, row[1].integer)
    }

    /// Each entity table in one pass: every `Z_ENT` in the tree, `Z_MAX` ahead of every key, and
    /// with the model, each column's conditions (``conditions(of:_:)``).
    mutating func tables(_ layout: CoreDataLayout?) throws {
        for root in entities.entities.values.filter({ $0.parent == nil }).sorted(by: { $0.table < $1.table }) {
            guard includes(root.table), tablesPresent.contains(root.table.uppercased()), mayRead(root.table),
                part != .early || !unfinished.contains(root.table.uppercased())
            else { continue }
            let name = SQL.quote(root.table)
            let id = "T:" + root.table.uppercased()
            // The early part leaves Z_MAX to the rows part, which reads it alone where the
            // conditions were counted already.
            if done.contains(id) {
                guard part != .early else { continue }
                report.checked += 1
                checkMax(of: root, largest: try database.scalar("SELECT max(Z_PK) FROM \(name)").integer)
                continue
            }
            let numbers = entities.descendants(of: root.number), tree = list(numbers)
            var conditions = [
                Condition(sql: "Z_ENT IS NULL OR NOT \(member("Z_ENT", of: numbers))", kind: .entityOutsideTree, entity: root.name) {
                    count, first in
                    "\(root.table): \(count) rows have a Z_ENT outside the entity tree of \(root.name) (\(tree))\(first)"
                }
            ]
            var lookups: [String] = []
            if let layout, let table = layout.tables[root.number] {
                conditions += self.conditions(of: table, layout)
                // The to-ones with a polymorphic column read every row anyway: in the same pass.
                for lookup in polymorphicLookups(of: table, layout) where !done.contains(lookup.id) && mayRead(lookup.target) {
                    conditions.append(lookup.condition)
                    lookups.append(lookup.id)
                }
            }
            // The rows breaking any condition, counted in ranges of keys: none in a store that
            // holds, and then no condition needs a count of its own. The table is `s` (its
            // columns also bare).
            let bounds = try rows(CoreDataStoreCheck.bounds(of: name))[0]
            let anyBroken = conditions.map { "(\($0.sql))" }.joined(separator: " OR ")
            var broken: Int64 = 0
            for range in try keyRanges(of: root.table, "s.Z_PK", bounds) {
                broken +=
                    try rows(
                        "SELECT count(*) FROM \(name) AS s NOT INDEXED WHERE \(range.sql) AND (\(anyBroken))", arguments: range.arguments)[
                        0][0]
                    .integer ?? 0
            }
            // Else each condition's count, counted with FILTER rather than CASE: a third of the
            // time per row; the first key only where a condition holds.
            let counts =
                broken == 0
                ? []
                : try rows("SELECT \(conditions.map { "count(*) FILTER (WHERE \($0.sql))" }.joined(separator: ", ")) FROM \(name) AS s")[0]
            report.checked += conditions.count
            ran.formUnion(lookups)
            if part == .early {
                ran.insert(id)
            } else {
                report.checked += 1
                checkMax(of: root, largest: bounds[1].integer)
            }
            for (index, condition) in conditions.enumerated() where !counts.isEmpty {
                guard let count = counts[index].integer, count > 0 else { continue }
                let keys = try self.keys(from: name, where: condition.sql, count: count)
                let line = condition.line(count, first(keys.first))
                if condition.isNote {
                    report.notes.append(line)
                } else {
                    report.add(
                        CoreDataStoreCheck.Finding(
                            condition.kind, entity: condition.entity, property: condition.property, count: count,
                            keys: count <= CoreDataStoreCheck.Finding.keyLimit ? keys : [], line: line,
                            table: root.table, column: condition.column ?? "Z_ENT", targetTable: condition.targetTable))
                }
            }
        }
    }

    /// The keys of `table`'s rows (`s`) that meet `condition`, in order: every one where they are
    /// at most ``CoreDataStoreCheck/Finding/keyLimit``, else the first.
    mutating func keys(from table: String, where condition: String, count: Int64) throws -> [Int64] {
        let limit = count <= CoreDataStoreCheck.Finding.keyLimit ? count : 1
        return try rows("SELECT Z_PK FROM \(table) AS s WHERE \(condition) ORDER BY Z_PK LIMIT \(limit)").compactMap {
            $0[0].integer
        }
    }

    /// The to-one whose key `column` holds: its owner, property and destination entity. A
    /// to-many without inverse keeps its owner's key in its destination's table.
    func toOne(_ column: CoreDataLayout.Column, _ layout: CoreDataLayout) -> (owner: String, property: String, target: String)? {
        switch column.role {
        case let .toOne(entity, name):
            guard let relationship = layout.model.entity(named: entity)?.property(named: name)?.relationship else { return nil }
            return (entity, name, relationship.destination)
        case let .toManyOwner(entity, name):
            return (entity, name, entity)
        default:
            return nil
        }
    }

    /// The key lookups of `table`'s to-ones with a polymorphic column (`Z<n>_<REL>`), as
    /// conditions on its rows (`s`) for its one pass: a key that points at no row of the
    /// destination entity's tree, or at one whose `Z_ENT` the polymorphic column does not hold.
    func polymorphicLookups(of table: CoreDataLayout.EntityTable, _ layout: CoreDataLayout) -> [(
        id: String, target: String, condition: Condition
    )] {
        var lookups: [(id: String, target: String, condition: Condition)] = []
        for column in table.columns {
            guard let (owner, property, target) = toOne(column, layout),
                let entityColumn = table.column(for: .toOneEntity(entity: owner, property: property)),
                let destination = layout.entity(named: target), let targetTable = layout.tables[destination.root]
            else { continue }
            let key = "s." + SQL.quote(column.name)
            let sql = """
                \(key) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM \(SQL.quote(targetTable.name)) AS t WHERE t.Z_PK = \(key) \
                AND \(member("t.Z_ENT", of: layout.descendants(of: destination.number))) AND t.Z_ENT IS s.\(SQL.quote(entityColumn.name)))
                """
            lookups.append(
                (
                    "K:\(table.name).\(column.name)".uppercased(), targetTable.name,
                    Condition(
                        sql: sql, kind: .dangling, entity: owner, property: property, column: column.name, targetTable: targetTable.name
                    ) { count, first in
                        "\(table.name).\(column.name): \(count) rows point at no row of \(target) or disagree with \(entityColumn.name)\(first)"
                    }
                ))
        }
        return lookups
    }

    /// `Z_MAX` of `root` at least `largest`, its table's largest key.
    mutating func checkMax(of root: CoreDataEntities.Entity, largest: Int64?) {
        if let largest, root.max < largest {
            report.add(
                CoreDataStoreCheck.Finding(
                    .maxBehind, entity: root.name, count: 1,
                    line:
                        "Z_PRIMARYKEY: Z_MAX of \(root.name) is \(root.max) but \(root.table) holds key \(largest); the next insert would reuse a key"
                ))
        }
    }

    /// What each column of an entity table must hold, as conditions on its rows: a required
    /// attribute or to-one has a value in every row of its entities; a polymorphic column is NULL
    /// with its key; an order column has a value exactly with its key. Values in rows of entities
    /// without the property are notes.
    func conditions(of table: CoreDataLayout.EntityTable, _ layout: CoreDataLayout) -> [Condition] {
        var conditions: [Condition] = []
        let all = layout.descendants(of: table.root)
        for column in table.columns {
            let quoted = SQL.quote(column.name)
            switch column.role {
            case let .attribute(owner, property), let .toOne(owner, property):
                guard let number = layout.entity(named: owner)?.number,
                    let declared = layout.model.entity(named: owner)?.property(named: property)
                else { continue }
                let owners = layout.descendants(of: number)
                if owners != all {
                    conditions.append(
                        Condition(
                            sql: "\(quoted) IS NOT NULL AND NOT \(member("Z_ENT", of: owners))", isNote: true,
                            kind: .required, entity: owner, property: property, column: column.name
                        ) { count, first in
                            "\(table.name).\(column.name): \(count) rows of entities without \(layout.describe(column.role, root: owner)) hold a value, which Core Data does not read\(first)"
                        })
                }
                if !declared.isOptional, declared.attribute?.derivation == nil {
                    conditions.append(
                        Condition(
                            sql: "\(quoted) IS NULL AND \(member("Z_ENT", of: owners))", kind: .required, entity: owner, property: property,
                            column: column.name
                        ) { count, first in
                            "\(table.name).\(column.name): \(count) rows of \(owner) have no value for the required \(owner).\(property)\(first)"
                        })
                }
                guard case .toOne = column.role else { continue }
                if let entityColumn = table.column(for: .toOneEntity(entity: owner, property: property)) {
                    conditions.append(
                        Condition(
                            sql: "\(quoted) IS NULL AND \(SQL.quote(entityColumn.name)) IS NOT NULL",
                            kind: .entityWithoutKey, entity: owner, property: property, column: entityColumn.name
                        ) { count, first in
                            "\(table.name).\(entityColumn.name): \(count) rows name an entity while \(column.name) is NULL\(first)"
                        })
                }
                if let order = table.column(for: .toOneOrder(entity: owner, property: property)) {
                    conditions.append(
                        Condition(
                            sql: "(\(quoted) IS NULL) <> (\(SQL.quote(order.name)) IS NULL)",
                            kind: .orderWithoutKey, entity: owner, property: property, column: order.name
                        ) { count, first in
                            "\(table.name).\(order.name): \(count) rows have an order without a key in \(column.name), or a key without an order\(first)"
                        })
                }
            default:
                continue
            }
        }
        return conditions
    }

    /// Every to-one's key points at a row of its destination, whose `Z_ENT` its polymorphic
    /// column holds.
    mutating func targets(_ layout: CoreDataLayout) throws {
        for table in layout.tables.values.sorted(by: { $0.name < $1.name }) {
            for column in table.columns {
                // A to-one's key, or the owner's key of a to-many without inverse (in its target's table).
                guard let (owner, property, target) = toOne(column, layout) else { continue }
                guard let destination = layout.entity(named: target), let targetTable = layout.tables[destination.root],
                    includes(table.name, column.name) || includesRows(targetTable.name)
                else { continue }
                let id = "K:\(table.name).\(column.name)".uppercased()
                // Those the pass over the table's rows looked up already left out.
                guard !done.contains(id), !ran.contains(id), mayRead(table.name, targetTable.name) else { continue }
                let key = "s." + SQL.quote(column.name)
                let entityColumn = table.column(for: .toOneEntity(entity: owner, property: property))
                // With a polymorphic column every row is read anyway, index or not: never postponed.
                if entityColumn == nil ? !runsNow(table.name, column.name) : !(part == .all || part == .rows || part == .early) { continue }
                ran.insert(id)
                if entityColumn != nil, let lookup = polymorphicLookups(of: table, layout).first(where: { $0.id == id }) {
                    // Where the pass over the table's rows could not make it (its destination's
                    // table not readable yet), the same condition alone.
                    let (dangling, _) = try count("SELECT count(*), NULL FROM \(SQL.quote(table.name)) AS s WHERE \(lookup.condition.sql)")
                    if dangling > 0 { try addDangling(lookup.condition, count: dangling, table: table.name) }
                    continue
                }
                let allowed = member("t.Z_ENT", of: layout.descendants(of: destination.number))
                if entityColumn == nil {
                    // Each distinct key once, from the to-one's index (Core Data indexes every
                    // to-one); the rows, only when one points nowhere.
                    let (wrongKeys, _) = try count(
                        """
                        SELECT count(*), NULL FROM (SELECT DISTINCT \(SQL.quote(column.name)) AS k FROM \(SQL.quote(table.name))
                                                    WHERE \(SQL.quote(column.name)) IS NOT NULL) AS s
                        WHERE NOT EXISTS (SELECT 1 FROM \(SQL.quote(targetTable.name)) AS t WHERE t.Z_PK = s.k AND \(allowed))
                        """)
                    guard wrongKeys > 0 else { continue }
                }
                // The rows whose key the lookup above found wrong, by the same condition.
                let condition = Condition(
                    sql: """
                        \(key) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM \(SQL.quote(targetTable.name)) AS t WHERE t.Z_PK = \(key) AND \(allowed))
                        """, kind: .dangling, entity: owner, property: property, column: column.name, targetTable: targetTable.name
                ) { count, first in
                    "\(table.name).\(column.name): \(count) rows point at no row of \(target)\(first)"
                }
                let (dangling, _) = try count("SELECT count(*), NULL FROM \(SQL.quote(table.name)) AS s WHERE \(condition.sql)")
                if dangling > 0 { try addDangling(condition, count: dangling, table: table.name) }
            }
        }
    }

    /// A violation of `condition` by `count` rows of `table`, with their keys.
    mutating func addDangling(_ condition: Condition, count: Int64, table: String) throws {
        let keys = try self.keys(from: SQL.quote(table), where: condition.sql, count: count)
        report.add(
            CoreDataStoreCheck.Finding(
                condition.kind, entity: condition.entity, property: condition.property, count: count,
                keys: count <= CoreDataStoreCheck.Finding.keyLimit ? keys : [], line: condition.line(count, first(keys.first)),
                table: table, column: condition.column, targetTable: condition.targetTable))
    }

    /// Every join-table key points at a row of its side's entity; order columns are set.
    mutating func joinTables(_ layout: CoreDataLayout) throws {
        for join in layout.joinTables.sorted(by: { $0.name < $1.name }) {
            for side in join.sides {
                guard let entity = layout.entities[side.target], let table = layout.tables[entity.root],
                    includes(join.name, side.column) || includesRows(table.name), runsNow(join.name, side.column)
                else { continue }
                let id = "J:\(join.name).\(side.column)".uppercased()
                guard !done.contains(id), mayRead(join.name, table.name) else { continue }
                ran.insert(id)
                // Each distinct key once (the join table's primary key and index give them in
                // order), looked up, or where the keys reach much of the table, found in one pass
                // over it in key order beside them, in ranges of keys; a NULL key points nowhere
                // too. The rows, only when one points nowhere.
                let numbers = layout.descendants(of: side.target)
                let allowed = member("Z_ENT", of: numbers), allowedTarget = member("t.Z_ENT", of: numbers)
                let column = SQL.quote(side.column), joinTable = SQL.quote(join.name), target = SQL.quote(table.name)
                let passes = try CoreDataStoreCheck.passesOver(table.name, forKeysOf: side.column, in: join.name, database: database)
                let bounds = try rows(CoreDataStoreCheck.bounds(of: target))[0]
                report.checked += 1
                // In ranges where the join table's keys come in order from an index and the
                // table's from its rowid, each range's condition on both sides the same; the NULL
                // keys, which no range holds, looked for apart. Else in one statement.
                var ranges = CoreDataStoreCheck.rangeConditions(low: bounds[0].integer, high: bounds[1].integer)
                var wrongKeys: Int64 = 0
                if ranges.count > 1, try leadsIndex(join.name, side.column), try keyIsRowid(table.name) {
                    wrongKeys = try rows("SELECT EXISTS (SELECT 1 FROM \(joinTable) WHERE \(column) IS NULL)")[0][0].integer ?? 0
                } else {
                    ranges = [("1", [])]
                }
                for range in ranges where wrongKeys == 0 {
                    let keys = range.sql.replacingOccurrences(of: "$K", with: column)
                    let rowKeys = range.sql.replacingOccurrences(of: "$K", with: "Z_PK")
                    wrongKeys +=
                        try rows(
                            passes
                                ? """
                                SELECT count(*) FROM (SELECT \(column) FROM \(joinTable) WHERE \(keys)
                                                      EXCEPT SELECT Z_PK FROM \(target) NOT INDEXED WHERE \(rowKeys) AND \(allowed) ORDER BY 1)
                                """
                                : """
                                SELECT count(*) FROM (SELECT DISTINCT \(column) AS k FROM \(joinTable) WHERE \(keys)) AS j
                                WHERE NOT EXISTS (SELECT 1 FROM \(target) AS t WHERE t.Z_PK = j.k AND \(allowedTarget))
                                """, arguments: range.arguments)[0][0].integer ?? 0
                }
                let dangling =
                    wrongKeys == 0
                    ? 0
                    : try rows(
                        """
                        SELECT count(*) FROM \(joinTable) AS j
                        WHERE NOT EXISTS (SELECT 1 FROM \(target) AS t WHERE t.Z_PK = j.\(column) AND \(allowedTarget))
                        """
                    )[0][0].integer ?? 0
                if dangling > 0 {
                    report.add(
                        CoreDataStoreCheck.Finding(
                            .danglingJoin, entity: side.entity, property: side.property ?? "REFLEXIVE", count: dangling,
                            line: "\(join.name).\(side.column): \(dangling) rows point at no row of \(entity.name)",
                            table: join.name, column: side.column, targetTable: table.name))
                }
                guard let order = side.order else { continue }
                let (unordered, _) = try count("SELECT count(*), NULL FROM \(SQL.quote(join.name)) WHERE \(SQL.quote(order)) IS NULL")
                if unordered > 0 {
                    report.add(
                        CoreDataStoreCheck.Finding(
                            .joinWithoutOrder, entity: side.entity, property: side.property ?? "REFLEXIVE", count: unordered,
                            line: "\(join.name).\(order): \(unordered) rows have no position", table: join.name, column: order))
                }
            }
        }
    }

    /// `Z_MAX` of each system entity (history, CloudKit mirroring) ahead of its table's keys.
    mutating func systemTables() throws {
        for entity in entities.system.values.sorted(by: { $0.number < $1.number }) {
            guard tablesPresent.contains(entity.table.uppercased()) else { continue }
            report.checked += 1
            if let largest = try database.scalar("SELECT max(Z_PK) FROM \(SQL.quote(entity.table))").integer, entity.max < largest {
                report.add(
                    CoreDataStoreCheck.Finding(
                        .maxBehind, entity: entity.name, count: 1,
                        line:
                            "Z_PRIMARYKEY: Z_MAX of \(entity.name) is \(entity.max) but \(entity.table) holds key \(largest); the next \(entity.name.lowercased()) would reuse a number a history token may name"
                    ))
            }
        }
    }

    /// Each derived attribute's values are what its derivation gives, and its triggers are there.
    mutating func derived(_ layout: CoreDataLayout) throws {
        let triggers = Set(try database.rows("SELECT name FROM sqlite_schema WHERE type = 'trigger'").compactMap { $0[0].text })
        try CoreDataBookkeeping.registerDerivationFunctions(on: database)
        for entity in layout.model.entities.sorted(by: { $0.name < $1.name }) {
            for property in entity.properties where property.attribute?.derivation != nil && !property.isTransient {
                let derivation: CoreDataDerivation
                do { derivation = try CoreDataDerivation(entity: entity.name, attribute: property.name, layout: layout) } catch let error
                    as MigrationError
                {
                    report.unchecked.append(error.message)
                    continue
                }
                guard includes(derivation.table) else { continue }
                let names = derivation.triggers.compactMap { $0.split(separator: " ").dropFirst(5).first.map(String.init) }
                report.checked += 1
                if let missing = names.first(where: { !triggers.contains($0) }) {
                    report.add(
                        CoreDataStoreCheck.Finding(
                            .derivedTrigger, entity: entity.name, property: property.name, count: 1,
                            line:
                                "\(derivation.table).\(derivation.column): trigger \(missing) of the derived attribute \(entity.name).\(property.name) is missing; the value would no longer follow changes"
                        ))
                }
                guard derivation.value != "NSCoreDataNow()", !derivedDone.contains("\(entity.name).\(property.name)") else { continue }
                // Where the job kept the derived column and every row it reads, the values are as
                // they were.
                if !includes(derivation.table, derivation.column),
                    let read = try? database.tablesRead(
                        in: "main", preparing: "SELECT (\(derivation.value)) FROM main.\(SQL.quote(derivation.table))"),
                    read.allSatisfy({ kept[$0.uppercased()] != nil || !includes($0) })
                {
                    continue
                }
                let rows = derivation.rows.map { " AND (\($0))" } ?? ""
                let (wrong, key) = try count(
                    """
                    SELECT count(*), min(Z_PK) FROM \(SQL.quote(derivation.table))
                    WHERE \(SQL.quote(derivation.column)) IS NOT \(derivation.value)\(rows)
                    """)
                if let line = CoreDataStoreCheck.wrongDerivedValues(wrong, first: key, derivation: derivation, entity: entity.name) {
                    report.add(
                        CoreDataStoreCheck.Finding(.derivedValues, entity: entity.name, property: property.name, count: wrong, line: line))
                }
            }
        }
    }

    /// Each R-tree fetch index has its three triggers and holds every row of its entity.
    mutating func fetchIndexes() throws {
        let indexes = try database.rows(
            """
            SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%' AND sql LIKE '%USING RTREE%' ORDER BY name
            """
        ).compactMap { $0[0].text }
        for index in indexes {
            report.checked += 1
            let triggers = try database.rows(
                "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger' AND name IN (?1, ?2, ?3)",
                .text(index + "_INSERT"), .text(index + "_UPDATE"), .text(index + "_DELETE"))
            guard triggers.count == 3 else {
                report.add(
                    CoreDataStoreCheck.Finding(
                        .fetchIndexTriggers, entity: nil, property: index, count: Int64(3 - triggers.count),
                        line:
                            "\(index): the R-tree index has \(triggers.count) of its 3 triggers (\(index)_INSERT, _UPDATE, _DELETE); it would no longer follow its entity's rows"
                    ))
                continue
            }
            guard let insert = triggers.first(where: { $0[0].text == index + "_INSERT" }), let table = insert[1].text,
                let sql = insert[2].text,
                let fill = CoreDataFinishing.FetchIndexFill(trigger: sql, table: table)
            else { continue }
            let (missing, key) = try count(
                """
                SELECT count(*), min(Z_PK) FROM \(SQL.quote(table)) WHERE Z_PK NOT IN (SELECT Z_PK FROM \(SQL.quote(index)))\(fill.condition.map { " AND (\($0))" } ?? "")
                """)
            if missing > 0 {
                report.add(
                    CoreDataStoreCheck.Finding(
                        .fetchIndexRows, entity: nil, property: index, count: missing,
                        line: "\(index): \(missing) rows of \(table) are missing from the R-tree index\(first(key))"))
            }
        }
    }

    /// Every value kept in a file names a file of the store's external data folder.
    mutating func externalData(_ layout: CoreDataLayout, file: String) throws {
        let folder = CoreDataFinishing.externalDataFolder(of: file)
        for entity in layout.model.entities.sorted(by: { $0.name < $1.name }) {
            for property in entity.properties where property.attribute?.allowsExternalStorage == true && !property.isTransient {
                guard let table = layout.table(of: entity.name),
                    let column = layout.column(of: property.name, entity: entity.name), includes(table.name, column.name)
                else { continue }
                report.checked += 1
                let statement = try database.prepare(
                    """
                    SELECT Z_PK, \(SQL.quote(column.name)) FROM \(SQL.quote(table.name))
                    WHERE \(SQL.quote(column.name)) >= x'02' AND \(SQL.quote(column.name)) < x'03' ORDER BY Z_PK
                    """)
                var missing = 0, firstMissing: (Int64, String)?, missingKeys: [Int64] = []
                while try statement.step() {
                    guard case let .blob(bytes) = statement.value(at: 1), let name = CoreDataFinishing.externalFileName(bytes) else {
                        continue
                    }
                    if name.isEmpty || name.contains("/")
                        || !FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path)
                    {
                        missing += 1
                        if firstMissing == nil { firstMissing = (statement.int64(at: 0), name) }
                        if missingKeys.count <= CoreDataStoreCheck.Finding.keyLimit { missingKeys.append(statement.int64(at: 0)) }
                    }
                }
                if let (key, name) = firstMissing {
                    report.add(
                        CoreDataStoreCheck.Finding(
                            .externalFile, entity: entity.name, property: property.name, count: Int64(missing),
                            keys: missing <= CoreDataStoreCheck.Finding.keyLimit ? missingKeys : [],
                            line:
                                "\(table.name).\(column.name): \(missing) values of \(entity.name).\(property.name) name a file missing from \(folder.path), the first \(name) (Z_PK \(key))",
                            table: table.name, column: column.name))
                }
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
