import MigrationJournal

/// The state behind the SQL functions a batch calls: the ID map, the batch being written, the
/// relationships, and the counters validation reads. Confined to the engine's thread.
final class Resolver {
    /// A relationship as the engine resolves it.
    struct Relationship {
        var entity: String
        var column: String
        var sourceColumn: String
        var target: UInt32
        var targetName: String
        var policy: EntityMapping.MissingPolicy
        var deferred: Bool
    }

    let idMap: IDMap
    var relationships: [Relationship] = []

    /// The batch being written: its entity, the source keys taken so far (ascending, as rows flow
    /// through the INSERT in key order), and where their destination keys start.
    var batchEntity: UInt32 = .max
    var batchKeys: [Int64] = []
    var batchBase: Int64 = 0
    var batchMapping: IDMapSegment.Mapping = .allocate
    /// Rows the batch's filter looked at (kept or skipped), and the first and last of their keys.
    var scanned = 0
    var skipped = 0
    var firstScanned: Int64?
    var lastScanned: Int64?

    /// The order-independent digest `cm_digest` accumulates: the wrapping sum of one hash per row.
    var digest: UInt64 = 0

    /// Counters of the running statement.
    var nulled = 0
    var deferred = 0
    var updated = 0
    /// The failure a function raised, with the context SQLite's message cannot carry.
    var failure: MigrationError?

    init(idMap: IDMap) {
        self.idMap = idMap
    }

    func beginBatch(entity: UInt32, base: Int64, mapping: IDMapSegment.Mapping, capacity: Int) {
        batchEntity = entity
        batchKeys = []
        batchKeys.reserveCapacity(capacity)
        batchBase = base
        batchMapping = mapping
        scanned = 0
        skipped = 0
        firstScanned = nil
        lastScanned = nil
        resetCounters()
    }

    func resetCounters() {
        nulled = 0
        deferred = 0
        updated = 0
        failure = nil
    }

    /// The destination key of `key` if the running batch has already taken it.
    private func takenInBatch(_ key: Int64, entity: UInt32) -> Int64? {
        guard entity == batchEntity, let last = batchKeys.last, key <= last else { return nil }
        var low = 0
        var high = batchKeys.count
        while low < high {
            let middle = (low + high) / 2
            if batchKeys[middle] < key { low = middle + 1 } else { high = middle }
        }
        guard low < batchKeys.count, batchKeys[low] == key else { return nil }
        return batchMapping == .allocate ? batchBase + Int64(low) : key
    }

    /// Whether the running batch took source key `key`.
    func isTaken(_ key: Int64) -> Bool {
        var low = 0
        var high = batchKeys.count
        while low < high {
            let middle = (low + high) / 2
            if batchKeys[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low < batchKeys.count && batchKeys[low] == key
    }

    /// The destination key of a target's source key: from the ID map of committed batches, or
    /// from the keys the running batch has taken (a self-reference to an earlier row).
    func resolve(_ key: Int64, entity: UInt32) throws(JournalError) -> Int64? {
        if let mapped = try idMap.destination(of: key, entity: entity) { return mapped }
        return takenInBatch(key, entity: entity)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Registers the engine's functions on the destination connection: `cm_take(k)`,
    /// `cm_keep(k, rel, fk, ...)`, `cm_ref(rel, fk, k)`, `cm_source_of(entity, d)`, `cm_fix(rel, fk, d)`.
    /// They capture the resolver strongly: the connection owns them, and the resolver does not
    /// own the connection.
    func register(on database: Database) throws(SQLiteError) {
        // The row with source key k is written: record it and return its destination key.
        try database.createFunction("cm_take", argumentCount: 1, deterministic: false) { [self] call in
            let key = call.int64(0)
            batchKeys.append(key)
            call.result(batchMapping == .allocate ? batchBase + Int64(batchKeys.count - 1) : key)
        }
        // The batch's filter saw the row with source key k: keep it unless a `skip` relationship
        // (given as pairs of relationship index and foreign key) has no mapping.
        try database.createFunction("cm_keep", argumentCount: -1, deterministic: false) { [self] call in
            let key = call.int64(0)
            scanned += 1
            if firstScanned == nil { firstScanned = key }
            lastScanned = key
            var argument = 1
            while argument + 1 < call.count {
                if !call.isNull(argument + 1) {
                    let target = relationships[Int(call.int64(argument))].target
                    if try resolve(call.int64(argument + 1), entity: target) == nil {
                        skipped += 1
                        return call.result(0)
                    }
                }
                argument += 2
            }
            call.result(1)
        }
        try database.createFunction("cm_ref", argumentCount: 3, deterministic: false) { [self] call in
            guard !call.isNull(1) else { return call.resultNull() }
            // Fields are read in place: copying the relationship would retain its strings per row.
            let index = Int(call.int64(0))
            let foreignKey = call.int64(1)
            if let mapped = try resolve(foreignKey, entity: relationships[index].target) {
                return call.result(mapped)
            }
            if relationships[index].deferred {
                deferred += 1
                return call.resultNull()
            }
            switch relationships[index].policy {
            case .null, .skip:
                nulled += 1
                call.resultNull()
            case .fail:
                let relationship = relationships[index]
                let error = MigrationError(
                    .missingMapping,
                    "source \(relationship.sourceColumn) \(foreignKey) has no mapping in \(relationship.targetName) (missing: fail); fix the source row, or set \"missing\" to \"null\" or \"skip\"",
                    entity: relationship.entity, sourceKey: call.int64(2), column: relationship.column)
                failure = error
                throw Failure(description: error.description)
            }
        }
        // For the checksum of a batch: the row's destination key, whether it was taken, the value a
        // relationship column was given when the row was written (a self-reference sees the rows
        // taken up to and including its own), and a digest of a row's values.
        try database.createFunction("cm_taken", argumentCount: 1, deterministic: false) { [self] call in
            call.result(isTaken(call.int64(0)) ? 1 : 0)
        }
        try database.createFunction("cm_dest", argumentCount: 1, deterministic: false) { [self] call in
            let key = call.int64(0)
            guard let destination = takenInBatch(key, entity: batchEntity) else { return call.resultNull() }
            call.result(destination)
        }
        try database.createFunction("cm_lookup", argumentCount: 3, deterministic: false) { [self] call in
            guard !call.isNull(1) else { return call.resultNull() }
            let relationship = relationships[Int(call.int64(0))]
            let foreignKey = call.int64(1)
            if let mapped = try idMap.destination(of: foreignKey, entity: relationship.target) { return call.result(mapped) }
            if relationship.target == batchEntity && foreignKey <= call.int64(2),
               let mapped = takenInBatch(foreignKey, entity: batchEntity) {
                return call.result(mapped)
            }
            call.resultNull()
        }
        try database.createFunction("cm_hash", argumentCount: -1, deterministic: false) { call in
            var hash = RowHash()
            for index in 0..<call.count { hash.add(call.value(index)) }
            call.result(Int64(bitPattern: hash.value))
        }
        try database.createFunction("cm_digest", argumentCount: -1, deterministic: false) { [self] call in
            var hash = RowHash()
            for index in 0..<call.count { hash.add(call.value(index)) }
            digest &+= hash.value
            call.resultNull()
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
            let relationship = relationships[Int(call.int64(0))]
            let foreignKey = call.int64(1)
            if let mapped = try idMap.destination(of: foreignKey, entity: relationship.target) {
                updated += 1
                return call.result(mapped)
            }
            switch relationship.policy {
            case .null, .skip:
                nulled += 1
                call.resultNull()
            case .fail:
                let destination = call.int64(2)
                let source = try? idMap.source(ofDestination: destination, entity: entityIndex(of: relationship))
                let error = MigrationError(
                    .missingMapping,
                    "source \(relationship.sourceColumn) \(foreignKey) has no mapping in \(relationship.targetName) (missing: fail); fix the source row, or set \"missing\" to \"null\"",
                    entity: relationship.entity, sourceKey: source ?? nil, column: relationship.column)
                failure = error
                throw Failure(description: error.description)
            }
        }
    }

    /// Filled by the engine: entity name -> index, for messages.
    var entityIndexes: [String: UInt32] = [:]

    private func entityIndex(of relationship: Relationship) -> UInt32 {
        entityIndexes[relationship.entity] ?? 0
    }
}

/// FNV-1a over a row's values, each tagged with its storage class, so that `1`, `1.0` and `'1'`
/// hash differently.
struct RowHash {
    private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325

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
