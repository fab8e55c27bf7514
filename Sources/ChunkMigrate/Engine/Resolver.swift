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

    /// The batch being written: its kept source keys, in order, and where their destination keys start.
    var batchKeys: [Int64] = []
    var batchBase: Int64 = 0
    var batchMapping: IDMapSegment.Mapping = .allocate
    private var batchCursor = 0

    /// Counters of the running statement.
    var nulled = 0
    var deferred = 0
    var updated = 0
    /// The failure a function raised, with the context SQLite's message cannot carry.
    var failure: MigrationError?

    init(idMap: IDMap) {
        self.idMap = idMap
    }

    func beginBatch(keys: [Int64], base: Int64, mapping: IDMapSegment.Mapping) {
        batchKeys = keys
        batchBase = base
        batchMapping = mapping
        batchCursor = 0
        resetCounters()
    }

    func resetCounters() {
        nulled = 0
        deferred = 0
        updated = 0
        failure = nil
    }

    /// The position of `key` among the batch's keys. Rows arrive in key order, so the next
    /// position is tried first.
    func batchPosition(of key: Int64) -> Int? {
        if batchCursor < batchKeys.count && batchKeys[batchCursor] == key {
            batchCursor += 1
            return batchCursor - 1
        }
        var low = 0
        var high = batchKeys.count
        while low < high {
            let middle = (low + high) / 2
            if batchKeys[middle] < key { low = middle + 1 } else { high = middle }
        }
        guard low < batchKeys.count, batchKeys[low] == key else { return nil }
        batchCursor = low + 1
        return low
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Registers the engine's functions on the destination connection:
    /// `cm_batch_key(k)`, `cm_keep(k)`, `cm_ref(rel, fk, k)`, `cm_source_of(entity, d)`, `cm_fix(rel, fk, d)`.
    func register(on database: Database) throws(SQLiteError) {
        try database.createFunction("cm_batch_key", argumentCount: 1, deterministic: false) { [unowned self] call in
            let key = call.int64(0)
            guard let position = batchPosition(of: key) else {
                throw Failure(description: "source key \(key) was not selected for this batch")
            }
            call.result(batchMapping == .allocate ? batchBase + Int64(position) : key)
        }
        try database.createFunction("cm_keep", argumentCount: 1, deterministic: false) { [unowned self] call in
            call.result(batchPosition(of: call.int64(0)) == nil ? 0 : 1)
        }
        try database.createFunction("cm_ref", argumentCount: 3, deterministic: false) { [unowned self] call in
            guard !call.isNull(1) else { return call.resultNull() }
            let relationship = relationships[Int(call.int64(0))]
            let foreignKey = call.int64(1)
            if let mapped = try idMap.destination(of: foreignKey, entity: relationship.target) {
                return call.result(mapped)
            }
            if relationship.deferred {
                deferred += 1
                return call.resultNull()
            }
            switch relationship.policy {
            case .null, .skip:
                nulled += 1
                call.resultNull()
            case .fail:
                let error = MigrationError(
                    .missingMapping,
                    "source \(relationship.sourceColumn) \(foreignKey) has no mapping in \(relationship.targetName) (missing: fail); fix the source row, or set \"missing\" to \"null\" or \"skip\"",
                    entity: relationship.entity, sourceKey: call.int64(2), column: relationship.column)
                failure = error
                throw Failure(description: error.description)
            }
        }
        try database.createFunction("cm_source_of", argumentCount: 2, deterministic: false) { [unowned self] call in
            if let source = try idMap.source(ofDestination: call.int64(1), entity: UInt32(call.int64(0))) {
                call.result(source)
            } else {
                call.resultNull()
            }
        }
        try database.createFunction("cm_fix", argumentCount: 3, deterministic: false) { [unowned self] call in
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
