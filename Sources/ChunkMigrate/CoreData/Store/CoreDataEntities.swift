import Foundation

/// The entities a Core Data store lists in `Z_PRIMARYKEY`: their numbers, their inheritance, the
/// table of each tree, and the key high-water mark `Z_MAX` of each root. What a job's bookkeeping
/// needs inside every batch, read from the store itself (a hand-written plan works on stores
/// without a model cache); what the columns hold comes from the model (`CoreDataLayout`).
package struct CoreDataEntities: Sendable {
    /// An entity as `Z_PRIMARYKEY` lists it.
    package struct Entity: Sendable, Equatable {
        /// `Z_ENT`: the entity's number in this store's model.
        package var number: Int64
        /// `Z_NAME`.
        package var name: String
        /// `Z_SUPER`: the parent entity's number, `nil` for a root.
        package var parent: Int64?
        /// `Z_MAX`: the largest key handed out in the root's table (0 for sub-entities).
        package var max: Int64
        /// The number of the root of the entity's inheritance tree (itself for a root).
        package var root: Int64
        /// The table holding the rows of the whole tree: `Z` + the root's name in capitals, as
        /// the store spells it.
        package var table: String
    }

    /// The model's entities by number (persistent-history entities excluded).
    package var entities: [Int64: Entity]
    /// The entities Core Data adds to every store that uses them, numbered from 16001 in
    /// `Z_PRIMARYKEY`, each in a table `A<NAME>`: persistent history (`CHANGE`, `TRANSACTION`,
    /// `TRANSACTIONSTRING`) and CloudKit mirroring (`NSCKRecordMetadata`, ...).
    package var system: [Int64: Entity] = [:]
    /// Entities `Z_PRIMARYKEY` names as they were before a rename (`Z_NAME` never rewritten):
    /// number -> the stale name; ``entities`` names them as the store's model does.
    package var staleNames: [Int64: String] = [:]

    /// `Z_PRIMARYKEY` rows from this number up are persistent-history entities (`CHANGE`,
    /// `TRANSACTION`, ...), whose tables are named `A<NAME>`.
    static let firstHistoryEntity: Int64 = 16000

    /// The entity named `name`.
    package func entity(named name: String) -> Entity? {
        entities.values.first { $0.name == name }
    }

    /// The entity with `number` and every entity below it in the inheritance tree.
    package func descendants(of number: Int64) -> Set<Int64> {
        var result: Set<Int64> = [number]
        var grew = true
        while grew {
            grew = false
            for entity in entities.values where !result.contains(entity.number) {
                if let parent = entity.parent, result.contains(parent) {
                    result.insert(entity.number)
                    grew = true
                }
            }
        }
        return result
    }

    /// The root entity whose tree lives in the table named `name` (a system entity's own table too).
    package func root(ofTable name: String) -> Entity? {
        (entities.values.filter { $0.parent == nil }.sorted { $0.number < $1.number } + system.values.sorted { $0.number < $1.number })
            .first { $0.table.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// The system entity named `name`.
    package func systemEntity(named name: String) -> Entity? {
        system.values.first { $0.name == name }
    }

    /// Whether the store in `database` (as schema `schema`: `main`, or `src` for an attached
    /// source) has Core Data's `Z_PRIMARYKEY` table.
    static func isCoreData(_ database: Database, schema: String = "main") throws(SQLiteError) -> Bool {
        try database.scalar(
            "SELECT count(*) FROM \(schema).sqlite_schema WHERE type = 'table' AND name = 'Z_PRIMARYKEY'"
        ).integer == 1
    }

    /// Reads `Z_PRIMARYKEY` of the store open as `schema` in `database`.
    ///
    /// - Throws: ``MigrationError`` naming `file` when the store has no `Z_PRIMARYKEY` (not a
    ///   Core Data store) or its entity tree is inconsistent.
    static func read(_ database: Database, schema: String = "main", file: String) throws -> CoreDataEntities {
        guard try isCoreData(database, schema: schema) else {
            throw MigrationError(.store, "not a Core Data store: it has no Z_PRIMARYKEY table", file: file)
        }
        var entities: [Int64: Entity] = [:]
        var system: [Int64: Entity] = [:]
        for row in try database.rows("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM \(schema).Z_PRIMARYKEY ORDER BY Z_ENT") {
            guard let number = row[0].integer, let name = row[1].text else { continue }
            guard number < firstHistoryEntity else {
                system[number] = Entity(
                    number: number, name: name, parent: nil, max: row[3].integer ?? 0, root: number,
                    table: "A" + name.uppercased())
                continue
            }
            let parent = row[2].integer.flatMap { $0 == 0 ? nil : $0 }
            entities[number] = Entity(number: number, name: name, parent: parent, max: row[3].integer ?? 0, root: number, table: "")
        }
        let tableNames = try database.rows(
            "SELECT name FROM \(schema).sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).compactMap { $0[0].text }
        let byUpperName = Dictionary(tableNames.map { ($0.uppercased(), $0) }, uniquingKeysWith: { a, _ in a })
        for number in entities.keys {
            var root = number
            var steps = 0
            while let parent = entities[root]?.parent {
                guard entities[parent] != nil, steps < entities.count else {
                    throw MigrationError(
                        .store,
                        "Z_PRIMARYKEY: entity \(entities[number]!.name) (\(number)) has a parent \(parent) that is not an entity, or its tree has a cycle",
                        file: file)
                }
                root = parent
                steps += 1
            }
            let table = "Z" + entities[root]!.name.uppercased()
            entities[number]!.root = root
            entities[number]!.table = byUpperName[table.uppercased()] ?? table
        }
        for number in system.keys { system[number]!.table = byUpperName[system[number]!.table.uppercased()] ?? system[number]!.table }
        var result = CoreDataEntities(entities: entities, system: system)
        try result.nameAsTheModel(database, schema: schema, file: file)
        return result
    }

    /// Names the entities as the store's own model does where `Z_PRIMARYKEY` still names one as
    /// it was before a rename. Core Data never reads `Z_NAME`: it numbers the entities from its
    /// model and reads and raises `Z_MAX` by number (`SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT
    /// = ?`, `UPDATE OR FAIL Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ? AND Z_MAX = ?` in its SQL
    /// log), so such a store is a sound one. The metadata's version hashes name the model's
    /// entities: only where a name is not among them is the model read, from the store's model
    /// cache; a store without one (written before iOS 10) pairs the one name its hashes lack with
    /// the one name `Z_PRIMARYKEY` lacks.
    private mutating func nameAsTheModel(_ database: Database, schema: String, file: String) throws {
        guard let hashed = (try? CoreDataMetadata.read(database, schema: schema, file: file))?.hashedEntities,
            entities.values.contains(where: { !hashed.contains($0.name) })
        else { return }
        let listed = Set(entities.values.map(\.name))
        if let model = (try? CoreDataModel.read(database, schema: schema, file: file)) ?? nil,
            let layout = try? CoreDataLayout(model: model)
        {
            for (number, entity) in entities where !hashed.contains(entity.name) {
                guard let modelled = layout.entities[number], !listed.contains(modelled.name),
                    modelled.parent == entity.parent
                else { continue }
                staleNames[number] = entity.name
                entities[number]!.name = modelled.name
            }
        } else {
            let stale = entities.filter { !hashed.contains($0.value.name) }, unlisted = hashed.subtracting(listed)
            if stale.count == 1, unlisted.count == 1, let (number, entity) = stale.first, let name = unlisted.first {
                staleNames[number] = entity.name
                entities[number]!.name = name
            }
        }
        // A root's table is its model name's.
        let tableNames = Set(
            try database.rows("SELECT upper(name) FROM \(schema).sqlite_schema WHERE type = 'table'").compactMap { $0[0].text })
        for number in staleNames.keys where entities[number]?.parent == nil {
            let table = "Z" + entities[number]!.name.uppercased()
            guard tableNames.contains(table) else { continue }
            for other in entities.keys where entities[other]!.root == number { entities[other]!.table = table }
        }
    }
}
