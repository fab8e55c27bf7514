import Foundation
import MigrationJournal

/// What a Core Data plan adds to a job, on the engine's connection (destination `main`, source
/// `src`): the `coredata_entity` function, the start-of-job bookkeeping (store identity, `Z_MAX`
/// from the source) and the `Z_MAX` update inside each batch's transaction.
final class CoreDataBookkeeping {
    let source: CoreDataEntities
    let destination: CoreDataEntities
    /// Source entity number -> destination entity number.
    let numbers: [Int64: Int64]
    /// Per plan entity: the statement raising `Z_MAX` of the destination root it writes, if any.
    private var raiseMax: [Int: Statement] = [:]
    private let plan: MigrationPlan
    private let database: Database
    private let sourcePath: String
    /// Where the bookkeeping says what it did not do, or carried as it was.
    var logger: ((String) -> Void)? {
        didSet { finishing.logger = logger }
    }
    /// How many values naming an external file that the source does not have were read into a
    /// row as NULL (an attribute that no longer keeps values in files).
    let missingExternalFiles = Locked(0)
    /// The steps after the copy: derived values, external files, R-tree indexes, triggers.
    let finishing: CoreDataFinishing
    /// The destination's tables of system entities (history, CloudKit mirroring), in capitals.
    var systemTables: Set<String> { Set(destination.system.values.map { $0.table.uppercased() }) }

    init(
        database: Database, plan: MigrationPlan, mapping: CoreDataMapping, resolver: Resolver,
        sourcePath: String, destinationPath: String
    ) throws {
        self.database = database
        self.plan = plan
        self.sourcePath = sourcePath
        source = try CoreDataEntities.read(database, schema: "src", file: sourcePath)
        destination = try CoreDataEntities.read(database, schema: "main", file: destinationPath)
        var numbers: [Int64: Int64] = [:]
        for (destinationName, sourceName) in mapping.entities.sorted(by: { $0.key < $1.key }) {
            let path = "coreData.entities.\(destinationName)"
            guard let to = destination.entity(named: destinationName) else {
                throw MigrationError(
                    .invalidPlan,
                    "\(path): the destination model has no entity \"\(destinationName)\"\(MigrationPlan.suggestion(for: destinationName, among: destination.entities.values.map(\.name)))",
                    file: destinationPath)
            }
            guard let from = source.entity(named: sourceName) else {
                throw MigrationError(
                    .invalidPlan,
                    "\(path): the source model has no entity \"\(sourceName)\"\(MigrationPlan.suggestion(for: sourceName, among: source.entities.values.map(\.name)))",
                    file: sourcePath)
            }
            if let other = numbers[from.number] {
                throw MigrationError(
                    .invalidPlan,
                    "\(path): source entity \(sourceName) is already mapped to \(destination.entities[other]?.name ?? "\(other)")")
            }
            numbers[from.number] = to.number
        }
        self.numbers = numbers
        finishing = CoreDataFinishing(database: database, plan: plan, sourcePath: sourcePath)

        // Z_MAX of the destination root each entity writes, raised to the table's largest key.
        for (index, entity) in plan.entities.enumerated() {
            guard let table = destination.root(ofTable: entity.destination.table) else { continue }
            let name = "main." + SQL.quote(table.table)
            raiseMax[index] = try database.prepare(
                """
                UPDATE main.Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM \(name))
                WHERE Z_ENT = \(table.number) AND Z_MAX < (SELECT max(Z_PK) FROM \(name))
                """)
        }

        // The destination's number of an entity by name: for entities no source entity maps to
        // (a de-duplicated Author made of Book.authorName).
        let destinationNumbers = Dictionary(destination.entities.values.map { ($0.name, $0.number) }, uniquingKeysWith: min)
        try database.createFunction("coredata_entity_number", argumentCount: 1, deterministic: true) { call in
            guard case let .text(name) = call.value(0) else { return call.resultNull() }
            guard let number = destinationNumbers[name] else {
                let message = "coredata_entity_number: the destination model has no entity \"\(name)\""
                throw MigrationError(.batch, message, sourceKey: resolver.batchKeys.last)
            }
            call.result(number)
        }
        let sourceNames = source.entities
        var lookup = numbers
        // System entities (history, CloudKit mirroring) by name: they may be numbered apart.
        for entity in source.system.values {
            if let other = destination.systemEntity(named: entity.name) { lookup[entity.number] = other.number }
        }
        try database.createFunction("coredata_entity", argumentCount: 1, deterministic: true) { call in
            guard !call.isNull(0) else { return call.resultNull() }
            let number = call.int64(0)
            guard let mapped = lookup[number] else {
                let name =
                    sourceNames[number].map { "\($0.name) (\(number))" } ?? "\(number), which the source's Z_PRIMARYKEY does not list"
                let message =
                    "source entity \(name) has no counterpart in the destination model; map it in coreData.entities or leave its rows out with a where filter"
                // The row being written is the last one the batch took (its key is taken first).
                throw MigrationError(.batch, message, sourceKey: resolver.batchKeys.last)
            }
            call.result(mapped)
        }
        try Self.registerDerivationFunctions(on: database)
        try Self.registerExternalDataFunctions(on: database, sourcePath: sourcePath, missing: missingExternalFiles)
        try Self.registerTriggerStandIns(on: database)
    }

    /// Stand-ins for the functions of Core Data's own connections that the destination's
    /// triggers call (`NSCoreDataDATriggerUpdatedAffectedObjectValue`, ...), so that statements
    /// writing their tables can be prepared when the triggers are there: once a job has put them
    /// back, before it records its end. A stand-in fails when called: no row is written with the
    /// triggers there.
    static func registerTriggerStandIns(on database: Database) throws(SQLiteError) {
        let own: Set<String> = ["NSCoreDataNow", "NSCoreDataCanonical", "NSCoreDataToUpper", "NSCoreDataToLower"]
        var names: Set<String> = []
        for row in try database.rows("SELECT sql FROM main.sqlite_schema WHERE type = 'trigger' AND sql IS NOT NULL") {
            guard let sql = row[0].text else { continue }
            var rest = sql[...]
            while let match = rest.range(of: #"\b(NSCoreData|NSPersistentHistory)[A-Za-z0-9_]*\s*\("#, options: .regularExpression) {
                let name = rest[match].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                if !own.contains(String(name)) { names.insert(String(name)) }
                rest = rest[match.upperBound...]
            }
        }
        for name in names.sorted() {
            try database.createFunction(name, argumentCount: -1, deterministic: false) { _ in
                throw MigrationError(.batch, "\(name) is Core Data's, called by a trigger of the destination while chunkmigrate writes it")
            }
        }
    }

    /// The functions converting a binary attribute between external storage and none:
    /// `coredata_external_value(v, 'Entity.attribute')` is the bytes themselves (`0x01` + bytes inline, or the file
    /// `0x02` + name + `0x00` names in the source's external data folder), and
    /// `coredata_external_inline(v)` marks bytes as held inline (`0x01` + bytes).
    ///
    /// - Parameter missing: counts the values whose file the source does not have (read as NULL).
    static func registerExternalDataFunctions(on database: Database, sourcePath: String, missing: Locked<Int>) throws(SQLiteError) {
        let folder = CoreDataFinishing.externalDataFolder(of: sourcePath)
        try database.createFunction("coredata_external_value", argumentCount: 2, deterministic: true) { call in
            guard case let .blob(bytes) = call.value(0) else { return call.result(call.value(0)) }
            switch bytes.first {
            case 0x01:
                call.result(.blob(Array(bytes.dropFirst())))
            case 0x02:
                let name = CoreDataFinishing.externalFileName(bytes) ?? ""
                let file = folder.appendingPathComponent(name)
                // A file the source does not have: no value, as Core Data reads none there. One
                // that does not read (a failing device) fails the batch, never a NULL.
                let data: [UInt8]?
                do throws(JournalError) {
                    data = name.contains("/") ? nil : try FileIO.read(file.path)
                } catch {
                    guard error.code == .notFound else {
                        throw MigrationError(
                            .store, "cannot read the external file \(name): \(error.message)", file: file.path, cause: error)
                    }
                    data = nil
                }
                guard let data else {
                    missing.withLock { $0 += 1 }
                    return call.resultNull()
                }
                call.result(.blob(data))
            default:
                call.result(.blob(bytes))
            }
        }
        try database.createFunction("coredata_external_inline", argumentCount: 1, deterministic: true) { call in
            switch call.value(0) {
            case .null: call.resultNull()
            case let .blob(bytes): call.result(.blob([0x01] + bytes))
            case let .text(text): call.result(.blob([0x01] + Array(text.utf8)))
            case let other: call.result(other)
            }
        }
    }

    /// The functions Core Data's derivation SQL calls, as Core Data defines them:
    /// `NSCoreDataNow()` (seconds since 2001-01-01, a date as Core Data stores one),
    /// `NSCoreDataCanonical(s)` (folded for case and diacritics, as `canonical:` compares),
    /// `NSCoreDataToUpper(s)`, `NSCoreDataToLower(s)`.
    static func registerDerivationFunctions(on database: Database) throws(SQLiteError) {
        try database.createFunction("NSCoreDataNow", argumentCount: 0, deterministic: false) { call in
            call.result(.real(Date().timeIntervalSinceReferenceDate))
        }
        let text: [(String, (String) -> String)] = [
            ("NSCoreDataCanonical", { $0.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }),
            ("NSCoreDataToUpper", { $0.uppercased() }),
            ("NSCoreDataToLower", { $0.lowercased() }),
        ]
        for (name, transform) in text {
            try database.createFunction(name, argumentCount: 1, deterministic: true) { call in
                guard case let .text(value) = call.value(0) else { return call.result(call.value(0)) }
                call.result(.text(transform(value)))
            }
        }
    }

    /// Inside the transaction that records a new job: raises each preserved-key root's `Z_MAX` to the source's, and gives the
    /// destination the source's store UUID.
    func start() throws {
        // History and CloudKit mirroring the plan carries take the place of what the new store's
        // container wrote when it set them up: the source's state is the one that goes on.
        for entity in plan.entities where systemTables.contains(entity.destination.table.uppercased()) {
            try database.execute("DELETE FROM main.\(SQL.quote(entity.destination.table))")
        }
        // Core Data's triggers are out of the way until every row is in (CoreDataFinishing), and
        // its R-tree indexes are filled from the rows then.
        for index in try database.rows(
            """
            SELECT name FROM main.sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%' AND sql LIKE '%USING RTREE%'
            """
        ).compactMap({ $0[0].text }) {
            try database.execute("DELETE FROM main.\(SQL.quote(index))")
        }
        for entity in plan.entities where entity.keys == .preserve {
            guard let to = destination.root(ofTable: entity.destination.table),
                let from = source.root(ofTable: entity.source.table)
            else { continue }
            try database.execute("UPDATE main.Z_PRIMARYKEY SET Z_MAX = \(from.max) WHERE Z_ENT = \(to.number) AND Z_MAX < \(from.max)")
        }
        // Numbering of history transactions and CloudKit bookkeeping never goes back under the
        // source's, copied or not: a consumer's token names a transaction number.
        for from in source.system.values {
            guard let to = destination.systemEntity(named: from.name) else { continue }
            try database.execute("UPDATE main.Z_PRIMARYKEY SET Z_MAX = \(from.max) WHERE Z_ENT = \(to.number) AND Z_MAX < \(from.max)")
        }
        // Object-ID URIs name the store UUID and the key: they keep pointing at the same objects
        // only where the keys of the source's entities are kept. The app's metadata keys follow
        // the data either way.
        try CoreDataMetadata.adoptIdentity(database, sourcePath: sourcePath, destinationPath: database.path, keepUUID: keepsObjectIDs)
        if !keepsObjectIDs {
            logger?(
                "the destination keeps its own store UUID: keys of source entities are allocated anew, so object-ID URIs saved before the migration must not name the new objects"
            )
        }
    }

    /// Whether every entity of the source copied into the destination keeps its keys: new
    /// entities (a de-duplicated Author) may allocate theirs, since no URI names them yet.
    var keepsObjectIDs: Bool {
        let mapped = Set(numbers.values)
        return plan.entities.allSatisfy { entity in
            guard entity.keys == .allocate, let table = destination.root(ofTable: entity.destination.table) else { return true }
            return destination.descendants(of: table.number).isDisjoint(with: mapped)
        }
    }

    /// Inside a batch's transaction, after its rows are written: raises `Z_MAX` of the root the
    /// entity writes so that no key of the table is above it.
    func afterBatch(entity index: Int) throws(SQLiteError) {
        guard let statement = raiseMax[index] else { return }
        defer { statement.reset() }
        try statement.bind([])
        try statement.step()
    }
}
