import MigrationJournal

/// The state behind the SQL functions a batch calls: the ID map, the batch being written, the
/// relationships, and the counters validation reads. Confined to the engine's thread.
final class Resolver {
    /// A relationship as the engine resolves it.
    struct Relationship {
        /// The index and the name of the entity the relationship belongs to.
        var owner: UInt32
        var entity: String
        var column: String
        var sourceColumn: String
        var target: UInt32
        var targetName: String
        var policy: EntityMapping.MissingPolicy
        var deferred: Bool
        /// Whether the relationship refers to its own entity. Rows are written in source-key
        /// order, so a reference to a smaller key that is not resolved when the row is written
        /// never will be: its policy applies at once, and only references to larger keys wait
        /// for the fix-up pass.
        var isSelfReference: Bool { target == owner }
    }

    // The state below is read and written once or more per row, only on the engine's thread,
    // and never through overlapping accesses: `@exclusivity(unchecked)` spares each access the
    // runtime's exclusivity bookkeeping (a thread-local lookup), about 3% of a batch's CPU.

    let idMap: IDMap
    @exclusivity(unchecked) var relationships: [Relationship] = []

    /// The batch being written: its entity, the source keys taken so far (ascending, as rows flow
    /// through the INSERT in key order), and where their destination keys start.
    @exclusivity(unchecked) var batchEntity: UInt32 = .max
    @exclusivity(unchecked) var batchKeys: [Int64] = []
    @exclusivity(unchecked) var batchBase: Int64 = 0
    @exclusivity(unchecked) var batchMapping: IDMapSegment.Mapping = .allocate
    /// Rows the batch's filter looked at (kept or skipped).
    @exclusivity(unchecked) var scanned = 0
    @exclusivity(unchecked) var skipped = 0

    /// The last foreign key each relationship resolved in the running batch and its destination
    /// key, so that `cm_keep` and the `cm_ref` of the same row resolve a `skip` relationship once.
    @exclusivity(unchecked) private var lastResolved: [(foreignKey: Int64, destination: Int64)?] = []

    /// The self-references the running batch deferred (a row's reference to a larger key), for
    /// the fix-up pass to read instead of scanning the source again: at most ``deferralLimit``
    /// (24 bytes each, 1.5 MB at most), past which, or at a foreign key that is not an integer,
    /// the batch records none and ``deferralsOverflowed`` is set.
    struct Deferral {
        var relationship: Int
        var own: Int64
        var foreignKey: Int64
    }
    static let defaultDeferralLimit = 65_536
    var deferralLimit = Resolver.defaultDeferralLimit
    @exclusivity(unchecked) var deferrals: [Deferral] = []
    @exclusivity(unchecked) var deferralsOverflowed = false

    /// The order-independent digest `cm_digest` accumulates: the wrapping sum of one hash per row.
    @exclusivity(unchecked) var digest: UInt64 = 0

    /// Counters of the running statement.
    @exclusivity(unchecked) var nulled = 0
    @exclusivity(unchecked) var deferred = 0
    @exclusivity(unchecked) var updated = 0

    /// De-duplicated entities: the statement finding a value's destination key (`?1` the value),
    /// by entity index, and the values the running batch has kept.
    var naturalKeys: [UInt32: Statement] = [:]
    private var batchValues: Set<SQLiteValue> = []

    init(idMap: IDMap) {
        self.idMap = idMap
    }

    func beginBatch(entity: UInt32, base: Int64, mapping: IDMapSegment.Mapping, capacity: Int) {
        batchEntity = entity
        // The same buffer batch after batch: a new one per batch would be mapped and faulted in
        // afresh each time (the CLI keeps glibc's mmap threshold fixed).
        batchKeys.removeAll(keepingCapacity: true)
        batchKeys.reserveCapacity(capacity)
        batchBase = base
        batchMapping = mapping
        scanned = 0
        skipped = 0
        batchValues = []
        deferrals.removeAll(keepingCapacity: true)
        deferralsOverflowed = false
        lastResolved = Array(repeating: nil, count: relationships.count)
        resetCounters()
    }

    /// The destination key of a de-duplicated entity's row with natural-key value `value`.
    private func naturalKey(_ value: SQLiteValue, entity: UInt32) throws(SQLiteError) -> Int64? {
        guard let statement = naturalKeys[entity] else { return nil }
        defer { statement.reset() }
        try statement.bind([value])
        guard try statement.step(), !statement.isNull(at: 0) else { return nil }
        return statement.int64(at: 0)
    }

    func resetCounters() {
        nulled = 0
        deferred = 0
        updated = 0
    }

    /// Gives back the memory of the batches' keys once the copy is over: the fix-up pass, which
    /// takes no keys, and the index builds after it (which sort in that much) have it instead.
    /// A batch after it (a job resumed into its copy) reserves it again.
    func releaseBatchMemory() {
        batchKeys = []
        deferrals = []
    }

    /// Where the running batch took source key `key`, if it did.
    private func positionInBatch(_ key: Int64) -> Int? {
        guard let last = batchKeys.last, key <= last else { return nil }
        var low = 0
        var high = batchKeys.count
        while low < high {
            let middle = (low + high) / 2
            if batchKeys[middle] < key { low = middle + 1 } else { high = middle }
        }
        return batchKeys[low] == key ? low : nil
    }

    /// The destination key of `key` if the running batch, of `entity`, has already taken it.
    private func takenInBatch(_ key: Int64, entity: UInt32) -> Int64? {
        guard entity == batchEntity, let position = positionInBatch(key) else { return nil }
        return batchMapping == .allocate ? batchBase + Int64(position) : key
    }

    /// The destination key of a target's source key: from the ID map of committed batches, or
    /// from the keys the running batch has taken (a self-reference to an earlier row).
    func resolve(_ key: Int64, entity: UInt32) throws(JournalError) -> Int64? {
        if let mapped = try idMap.destination(of: key, entity: entity) { return mapped }
        return takenInBatch(key, entity: entity)
    }

    /// `resolve` for relationship `index`, remembering the answer for the row's next call.
    @inline(__always) private func resolve(_ key: Int64, relationship index: Int) throws(JournalError) -> Int64? {
        if let last = lastResolved[index], last.foreignKey == key { return last.destination }
        guard let mapped = try resolve(key, entity: relationships[index].target) else { return nil }
        lastResolved[index] = (key, mapped)
        return mapped
    }

    /// Records that the row with source key `key` is written and returns its destination key.
    @inline(__always) private func take(_ key: Int64) -> Int64 {
        batchKeys.append(key)
        return batchMapping == .allocate ? batchBase + Int64(batchKeys.count - 1) : key
    }

    /// The result of a `cm_ref(relationship, foreign key, row's source key)` call: the target's
    /// destination key, or NULL when it is missing and may be (deferred, `null`, `skip`); throws
    /// for a missing one under `fail`.
    @inline(__always) private func reference(_ call: FunctionCall) throws {
        guard !call.isNull(1) else { return call.resultNull() }
        // Fields are read in place: copying the relationship would retain its strings per row.
        let index = Int(call.int64(0))
        let foreignKey = call.int64(1)
        if let mapped = try resolve(foreignKey, relationship: index) {
            return call.result(mapped)
        }
        if relationships[index].deferred && !(relationships[index].isSelfReference && foreignKey <= call.int64(2)) {
            deferred += 1
            if relationships[index].isSelfReference && !deferralsOverflowed {
                if deferrals.count < deferralLimit && call.isInteger(1) {
                    deferrals.append(Deferral(relationship: index, own: call.int64(2), foreignKey: foreignKey))
                } else {
                    deferralsOverflowed = true
                    deferrals.removeAll(keepingCapacity: true)
                }
            }
            return call.resultNull()
        }
        switch relationships[index].policy {
        case .null, .skip:
            nulled += 1
            call.resultNull()
        case .fail:
            throw missingMapping(relationship: index, foreignKey: foreignKey, row: call.int64(2))
        }
    }

    /// Registers the engine's functions on the destination connection: `cm_take(k)`,
    /// `cm_keep(k, rel, fk, ...)`, `cm_ref(rel, fk, k)`, `cm_take_ref(rel, fk, k)`,
    /// `cm_source_of(entity, d)`, `cm_fix(rel, fk, d)`, and those of the checksum.
    /// They capture the resolver strongly: the connection owns them, and the resolver does not
    /// own the connection.
    func register(on database: Database) throws(SQLiteError) {
        try registerBatchFunctions(on: database)
        try registerChecksumFunctions(on: database)
        try registerFixupFunctions(on: database)
    }

    /// The functions of a batch's `INSERT ... SELECT`: recording rows (`cm_take`, `cm_keep`,
    /// `cm_new`) and resolving relationships (`cm_natural`, `cm_ref`, `cm_take_ref`).
    private func registerBatchFunctions(on database: Database) throws(SQLiteError) {
        // The row with source key k is written: record it and return its destination key.
        try database.createFunction("cm_take", argumentCount: 1, deterministic: false) { [self] call in
            call.result(take(call.int64(0)))
        }
        // The batch's filter saw the row with source key k: keep it unless a `skip` relationship
        // (given as pairs of relationship index and foreign key) has no mapping.
        try database.createFunction("cm_keep", argumentCount: -1, deterministic: false) { [self] call in
            scanned += 1
            var argument = 1
            while argument + 1 < call.count {
                if !call.isNull(argument + 1) {
                    if try resolve(call.int64(argument + 1), relationship: Int(call.int64(argument))) == nil {
                        skipped += 1
                        return call.result(0)
                    }
                }
                argument += 2
            }
            call.result(1)
        }
        // A de-duplicated entity's row with natural-key value v: 1 when v is not NULL and neither
        // the batch so far nor the destination has it (the row is kept), else 0.
        try database.createFunction("cm_new", argumentCount: 2, deterministic: false) { [self] call in
            guard !call.isNull(1) else { return call.result(0) }
            let value = call.value(1)
            if batchValues.contains(value) { return call.result(0) }
            if try naturalKey(value, entity: UInt32(call.int64(0))) != nil { return call.result(0) }
            batchValues.insert(value)
            call.result(1)
        }
        // A relationship to a de-duplicated entity: the destination key of the row whose natural
        // key is v, or, when there is none, the relationship's missing policy.
        try database.createFunction("cm_natural", argumentCount: 3, deterministic: false) { [self] call in
            guard !call.isNull(1) else { return call.resultNull() }
            let index = Int(call.int64(0))
            let value = call.value(1)
            if let key = try naturalKey(value, entity: relationships[index].target) { return call.result(key) }
            guard relationships[index].policy == .fail else {
                nulled += 1
                return call.resultNull()
            }
            let relationship = relationships[index]
            let error = MigrationError(
                .missingMapping,
                "\(value) has no row in \(relationship.targetName) (missing: fail); fix the source row, or set \"missing\" to \"null\"",
                entity: relationship.entity, sourceKey: call.int64(2), column: relationship.column)
            throw error
        }
        try database.createFunction("cm_ref", argumentCount: 3, deterministic: false) { [self] call in
            try reference(call)
        }
        // The row's first relationship where the row's destination key needs no call (it is the
        // source key, or SQLite's next rowid): records the row as `cm_take` does, then resolves
        // like `cm_ref`, so that a reference to the row itself finds it.
        try database.createFunction("cm_take_ref", argumentCount: 3, deterministic: false) { [self] call in
            _ = take(call.int64(2))
            try reference(call)
        }
    }

    /// The functions of a batch's checksum (`--verify-checksums`).
    private func registerChecksumFunctions(on database: Database) throws(SQLiteError) {
        // For the checksum of a batch: the row's destination key, whether it was taken, the value a
        // relationship column was given when the row was written (a self-reference sees the rows
        // taken up to and including its own), and a digest of a row's values.
        try database.createFunction("cm_taken", argumentCount: 1, deterministic: false) { [self] call in
            call.result(positionInBatch(call.int64(0)) == nil ? 0 : 1)
        }
        try database.createFunction("cm_dest", argumentCount: 1, deterministic: false) { [self] call in
            let key = call.int64(0)
            guard let destination = takenInBatch(key, entity: batchEntity) else { return call.resultNull() }
            call.result(destination)
        }
        try database.createFunction("cm_lookup", argumentCount: 3, deterministic: false) { [self] call in
            guard !call.isNull(1) else { return call.resultNull() }
            let target = relationships[Int(call.int64(0))].target
            let foreignKey = call.int64(1)
            if let mapped = try idMap.destination(of: foreignKey, entity: target) { return call.result(mapped) }
            if target == batchEntity && foreignKey <= call.int64(2),
                let mapped = takenInBatch(foreignKey, entity: batchEntity)
            {
                return call.result(mapped)
            }
            call.resultNull()
        }
        try database.createFunction("cm_hash", argumentCount: -1, deterministic: false) { call in
            call.result(Int64(bitPattern: RowHash(call).value))
        }
        try database.createFunction("cm_digest", argumentCount: -1, deterministic: false) { [self] call in
            digest &+= RowHash(call).value
            call.resultNull()
        }
    }

    /// The functions of the fix-up pass: `cm_destination_of`, `cm_source_of` and `cm_fix`.
    private func registerFixupFunctions(on database: Database) throws(SQLiteError) {
        // The destination key of a committed row of an entity, from its source key.
        try database.createFunction("cm_destination_of", argumentCount: 2, deterministic: false) { [self] call in
            if let destination = try idMap.destination(of: call.int64(1), entity: UInt32(call.int64(0))) {
                call.result(destination)
            } else {
                call.resultNull()
            }
        }
        try database.createFunction("cm_source_of", argumentCount: 2, deterministic: false) { [self] call in
            if let source = try idMap.source(ofDestination: call.int64(1), entity: UInt32(call.int64(0))) {
                call.result(source)
            } else {
                call.resultNull()
            }
        }
        try database.createFunction("cm_fix", argumentCount: 3, deterministic: false) { [self] call in
            guard !call.isNull(1) else { return call.resultNull() }
            let index = Int(call.int64(0))
            let foreignKey = call.int64(1)
            if let mapped = try idMap.destination(of: foreignKey, entity: relationships[index].target) {
                updated += 1
                return call.result(mapped)
            }
            switch relationships[index].policy {
            case .null, .skip:
                nulled += 1
                call.resultNull()
            case .fail:
                let row = try? idMap.source(ofDestination: call.int64(2), entity: relationships[index].owner)
                throw missingMapping(relationship: index, foreignKey: foreignKey, row: row ?? nil)
            }
        }
    }

    /// The failure of a relationship with policy `fail` whose target key has no mapping; `row` is
    /// the source key of the row that refers to it.
    private func missingMapping(relationship index: Int, foreignKey: Int64, row: Int64?) -> MigrationError {
        let relationship = relationships[index]
        let error = MigrationError(
            .missingMapping,
            "source \(relationship.sourceColumn) \(foreignKey) has no mapping in \(relationship.targetName) (missing: fail); fix the source row, or set \"missing\" to \"null\"\(relationship.deferred ? "" : " or \"skip\"")",
            entity: relationship.entity, sourceKey: row, column: relationship.column)
        return error
    }
}

/// FNV-1a over a row's values, each tagged with its storage class, so that `1`, `1.0` and `'1'`
/// hash differently.
struct RowHash {
    private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325

    /// The hash of every argument of a function call.
    init(_ call: FunctionCall) {
        for index in 0..<call.count { add(call.value(index)) }
    }

    private mutating func byte(_ byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }

    private mutating func word(_ word: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { byte(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
    }

    mutating func add(_ item: SQLiteValue) {
        switch item {
        case .null: byte(0)
        case let .integer(integer): byte(1); word(UInt64(bitPattern: integer))
        case let .real(real): byte(2); word(real.bitPattern)
        case let .text(text): byte(3); word(UInt64(text.utf8.count)); for unit in text.utf8 { byte(unit) }
        case let .blob(bytes): byte(4); word(UInt64(bytes.count)); for unit in bytes { byte(unit) }
        }
    }
}
