import Foundation

/// The tables Core Data adds to a store beside the model's: persistent history and CloudKit
/// mirroring, entities numbered from 16001 in `Z_PRIMARYKEY` with tables `A<NAME>`. Carried as
/// Core Data's own migration carries them, in place:
///
/// - every row kept with its key, so a history token (a transaction number) and a CloudKit
///   record's local object (entity and key) keep meaning what they meant;
/// - entity numbers in the rows (`ACHANGE.ZENTITY`, `ZENTITYID` of the mirroring tables)
///   rewritten by name, as `Z_ENT` of every row;
/// - history that records changes to entities the destination model no longer has is cut off
///   up to the last transaction that touched one, as Core Data's migrator does (it deletes
///   those transactions and their changes): a consumer whose token is older sees it expired and
///   fetches anew, instead of reading changes of objects that cannot exist;
/// - `ACHANGE.ZCOLUMNS` (which properties an update touched, a bit per property of the entity)
///   kept where the entity's properties are the same in both models, and left empty where they
///   changed: Core Data rewrites it from property names there, by a function of its own;
/// - CloudKit mirroring rows of an entity the destination does not have, or mirroring tables
///   the destination does not have, are refused: the container would re-upload or duplicate
///   records without them.
extension CoreDataInference {
    /// The plan entities carrying the source's system tables into the destination's.
    mutating func systemEntityMappings(_ context: Context) throws -> [EntityMapping] {
        let source = try CoreDataEntities.read(database, schema: "src", file: sourcePath)
        let destination = try CoreDataEntities.read(database, schema: "main", file: destinationPath)
        for (number, stale) in source.staleNames.sorted(by: { $0.key < $1.key }) {
            notes.append(
                "Z_PRIMARYKEY of the source names entity \(number) \(stale), its name before a rename to \(source.entities[number]?.name ?? "?"): carried as it is, as Core Data reads Z_PRIMARYKEY by number"
            )
        }
        // Source entity number -> destination number, for the model's entities carried over.
        var mapped: [Int64: Int64] = [:]
        for (to, from) in context.mapping.sourceEntity {
            if let a = context.source.entity(named: from)?.number, let b = context.destination.entity(named: to)?.number { mapped[a] = b }
        }
        let numbers = mapped.keys.sorted().map(String.init).joined(separator: ", ")

        var result: [EntityMapping] = []
        for entity in source.system.values.sorted(by: { $0.number < $1.number }) {
            let table = entity.table
            let isMirroring = entity.name.hasPrefix("NSCK")
            let what = isMirroring ? "CloudKit mirroring" : "persistent history"
            guard try tableExists(table, schema: "src") else { continue }
            guard let target = destination.systemEntity(named: entity.name), try tableExists(target.table, schema: "main") else {
                if isMirroring {
                    throw MigrationError(
                        .store,
                        "the source mirrors to CloudKit (\(table)) but the destination has no \(table): create it with the app's NSPersistentCloudKitContainer, or its records would be uploaded again as new",
                        entity: entity.name, file: destinationPath)
                }
                note(
                    "\(table): the destination has no persistent history (created without NSPersistentHistoryTrackingKey); the source's is not carried"
                )
                continue
            }
            guard options.keys == .preserve else {
                if isMirroring {
                    throw MigrationError(
                        .invalidPlan,
                        "\(table): CloudKit mirroring names objects by their keys, which this plan allocates anew; migrate with keys preserved",
                        entity: entity.name, file: sourcePath)
                }
                note("\(table): persistent history names objects by their keys, which this plan allocates anew; not carried")
                continue
            }
            let sourceColumns = try columnNames(table, schema: "src"), destinationColumns = try columnNames(target.table, schema: "main")
            var columns: [String: String] = [:]
            for column in destinationColumns where column.uppercased() != "Z_PK" {
                guard let from = sourceColumns.first(where: { $0.caseInsensitiveCompare(column) == .orderedSame }) else { continue }
                columns[column] = SQL.identifier(from)
            }
            for column in sourceColumns where !destinationColumns.contains(where: { $0.caseInsensitiveCompare(column) == .orderedSame }) {
                if isMirroring {
                    throw MigrationError(
                        .store,
                        "\(table).\(column) has no counterpart in the destination's \(target.table): the two stores' CloudKit mirroring versions differ; open the destination with the same OS version's container first",
                        entity: entity.name, column: column, file: destinationPath)
                }
                note("\(table).\(column): not in the destination's \(target.table); not carried")
            }
            if let number = destinationColumns.first(where: { $0.uppercased() == "Z_ENT" }) { columns[number] = String(target.number) }
            var conditions: [String] = []

            switch entity.name {
            case "CHANGE":
                columns["ZENTITY"] = "coredata_entity(ZENTITY)"
                let cut = try historyCut(numbers: numbers)
                if cut > 0 {
                    conditions.append("ZTRANSACTIONID > \(cut)")
                    note(
                        "\(table): transactions 1-\(cut) recorded changes to entities the destination model does not have; the history is cut off after them, as Core Data's migration does (a token older than transaction \(cut + 1) is expired)"
                    )
                }
                let changed = changedEntities(mapped, context)
                if !changed.isEmpty, columns["ZCOLUMNS"] != nil {
                    columns["ZCOLUMNS"] =
                        "CASE WHEN ZENTITY IN (\(changed.map(String.init).joined(separator: ", "))) THEN NULL ELSE ZCOLUMNS END"
                    decide(
                        "\(table).ZCOLUMNS: left empty for updates of entities whose properties changed (\(changed.compactMap { context.source.entities[$0]?.name }.joined(separator: ", "))), where the bits no longer name the same properties"
                    )
                }
            case "TRANSACTION":
                let cut = try historyCut(numbers: numbers)
                if cut > 0 { conditions.append("Z_PK > \(cut)") }
            default:
                guard let key = columns.keys.first(where: { $0.uppercased() == "ZENTITYID" }),
                    let column = sourceColumns.first(where: { $0.uppercased() == "ZENTITYID" })
                else { break }
                columns[key] = "coredata_entity(\(SQL.identifier(column)))"
                let stray = try count(
                    "SELECT count(*) FROM src.\(SQL.quote(table))"
                        + (numbers.isEmpty ? "" : " WHERE \(SQL.identifier(column)) NOT IN (\(numbers))"))
                if stray > 0 {
                    throw MigrationError(
                        .store,
                        "\(table) holds \(stray) rows for objects of entities the destination model does not have: CloudKit's records of them cannot be carried over (delete those objects before the migration, or keep their entities in the model)",
                        entity: entity.name, column: column, file: sourcePath)
                }
            }
            decide("\(what) \(table) -> \(target.table): entity \(entity.number) -> \(target.number), keys preserved")
            result.append(
                EntityMapping(
                    name: table,
                    source: .init(table: table, key: "Z_PK", where: conditions.isEmpty ? nil : conditions.joined(separator: " AND ")),
                    destination: .init(table: target.table, key: "Z_PK"), keys: .preserve, columns: columns))
        }
        return result
    }

    /// The last transaction that recorded a change to an entity the destination does not have
    /// (none carried over in `numbers`); 0 when there is none.
    private func historyCut(numbers: String) throws -> Int64 {
        try count("SELECT ifnull(max(ZTRANSACTIONID), 0) FROM src.ACHANGE" + (numbers.isEmpty ? "" : " WHERE ZENTITY NOT IN (\(numbers))"))
    }

    /// Source entities carried over whose stored properties differ between the models (by name,
    /// kind and order), so that a bit per property no longer names the same one.
    private func changedEntities(_ mapped: [Int64: Int64], _ context: Context) -> [Int64] {
        func signature(_ model: CoreDataModel, _ entity: String) -> [String] {
            model.allProperties(of: entity).filter { !$0.property.isTransient }.map { _, property in
                switch property.kind {
                case .attribute: "a:" + property.name
                case let .relationship(relationship): (relationship.isToMany ? "m:" : "o:") + property.name
                }
            }
        }
        return mapped.keys.sorted().filter { number in
            guard let from = context.source.entities[number]?.name,
                let to = mapped[number].flatMap({ context.destination.entities[$0]?.name })
            else { return false }
            return signature(context.source.model, from) != signature(context.destination.model, to)
        }
    }

    private func tableExists(_ table: String, schema: String) throws -> Bool {
        try count(
            "SELECT count(*) FROM \(schema).sqlite_schema WHERE type = 'table' AND name = '\(table.replacingOccurrences(of: "'", with: "''"))' COLLATE NOCASE"
        ) > 0
    }

    private func columnNames(_ table: String, schema: String) throws -> [String] {
        do { return try database.tableSchema(table, in: schema)?.columns.map(\.name) ?? [] } catch {
            throw MigrationError(
                .store, "cannot read table \(table): \(error.message)", file: schema == "src" ? sourcePath : destinationPath,
                sql: error.sql, cause: error)
        }
    }
}
