import Foundation

/// The plan between two Core Data stores of one model where neither carries it (no model cache,
/// none given): stores written before iOS 10, or copies of them. Their entity version hashes are
/// equal (or neither records any), so to Core Data they are the same model; their schemas must
/// then be the same too, table for table and column for column, and the plan copies every table
/// as it is: entity tables with their keys, `Z_OPT` and every column, entity numbers through
/// `coredata_entity()` (`Z_ENT`, the polymorphic `Z<n>_` columns), join tables, persistent
/// history and CloudKit mirroring, with the job's Core Data bookkeeping (`Z_MAX`, the store's
/// UUID and the app's metadata keys) as for any Core Data plan.
///
/// What needs the model is refused: keys given anew (a relationship is then resolved through
/// the ID map by its destination entity), values kept in external files (which attribute keeps
/// them is the model's).
struct CoreDataSameModelPlan {
    let database: Database
    let sourcePath: String
    let destinationPath: String
    let options: InferenceOptions

    func infer() throws -> InferredPlan {
        let sourceHashes = Self.hashes(database, schema: "src", file: sourcePath)
        let evidence =
            sourceHashes == nil
            ? "neither records entity version hashes and their schemas are the same"
            : "their entity version hashes are equal"
        guard options.keys == .preserve else {
            throw MigrationError(
                .invalidPlan,
                "neither store carries its model (no model cache, none given): keys allocated anew need the model to resolve relationships; give it (--model-from, --model-to or --models), or keep the keys",
                file: sourcePath)
        }
        let external = CoreDataFinishing.externalDataFolder(of: sourcePath)
        if let files = try? FileManager.default.contentsOfDirectory(atPath: external.path), files.contains(where: { !$0.hasPrefix(".") }) {
            throw MigrationError(
                .store,
                "the source keeps values in external files (\(external.path)), and neither store carries its model to tell which attributes: give it (--model-from, --model-to or --models)",
                file: sourcePath)
        }
        let sourceTables = try tables("src", file: sourcePath), destinationTables = try tables("main", file: destinationPath)
        if sourceTables != destinationTables {
            let names = Set(sourceTables.keys).union(destinationTables.keys).sorted()
            let first = names.first { sourceTables[$0] != destinationTables[$0] }!
            let what =
                sourceTables[first] == nil
                ? "only the destination has table \(first)"
                : destinationTables[first] == nil
                    ? "only the source has table \(first)"
                    : "table \(first) has columns \(sourceTables[first]!.map { $0.joined(separator: " ") }.joined(separator: ", ")) in the source and \(destinationTables[first]!.map { $0.joined(separator: " ") }.joined(separator: ", ")) in the destination"
            throw MigrationError(
                .store,
                "neither store carries its model (no model cache, none given), \(sourceHashes == nil ? "neither records entity version hashes" : "their entity version hashes are equal"), but their schemas differ (\(what)): give their models (--model-from and --model-to, or --models)",
                file: destinationPath)
        }
        let source = try CoreDataEntities.read(database, schema: "src", file: sourcePath)
        let destination = try CoreDataEntities.read(database, schema: "main", file: destinationPath)
        func listed(_ entities: CoreDataEntities) -> [String] {
            (entities.entities.values.map { "\($0.number) \($0.name) \($0.parent ?? 0)" }
                + entities.system.values.map { "\($0.number) \($0.name)" }).sorted()
        }
        guard listed(source) == listed(destination) else {
            throw MigrationError(
                .store,
                "neither store carries its model (no model cache, none given), and their Z_PRIMARYKEY tables list other entities or numbers: give their models (--model-from and --model-to, or --models)",
                file: destinationPath)
        }

        var decisions = [
            "one model: neither store carries it (no model cache, none given), and \(evidence), as Core Data tells a store's model; every table copied as it is, column for column, keys preserved, entity numbers by name"
        ]
        var notes: [String] = []
        var entities: [EntityMapping] = []
        var covered: Set<String> = []
        for root in source.entities.values.filter({ $0.parent == nil }).sorted(by: { $0.number < $1.number }) {
            guard let columns = sourceTables[root.table.uppercased()]?.map({ $0[0] }) else { continue }
            covered.insert(root.table.uppercased())
            var mapped: [String: String] = [:]
            for column in columns where column != "Z_PK" {
                mapped[column] =
                    column == "Z_ENT" || column.range(of: #"^Z[0-9]+_"#, options: .regularExpression) != nil
                    ? "coredata_entity(\(SQL.identifier(column)))" : SQL.identifier(column)
            }
            entities.append(
                EntityMapping(
                    name: root.name, source: .init(table: root.table, key: "Z_PK"),
                    destination: .init(table: root.table, key: "Z_PK"), keys: .preserve, columns: mapped))
            decisions.append("table \(root.table) -> \(root.table) (entity tree \(root.name)): \(mapped.count) columns, keys preserved")
        }
        for system in source.system.values.sorted(by: { $0.number < $1.number }) {
            guard let columns = sourceTables[system.table.uppercased()]?.map({ $0[0] }) else { continue }
            covered.insert(system.table.uppercased())
            var mapped: [String: String] = [:]
            for column in columns where column != "Z_PK" {
                mapped[column] =
                    ["ZENTITY", "ZENTITYID"].contains(column) ? "coredata_entity(\(SQL.identifier(column)))" : SQL.identifier(column)
            }
            entities.append(
                EntityMapping(
                    name: system.table, source: .init(table: system.table, key: "Z_PK"),
                    destination: .init(table: system.table, key: "Z_PK"), keys: .preserve, columns: mapped))
            decisions.append(
                "\(system.name.hasPrefix("NSCK") ? "CloudKit mirroring" : "persistent history") \(system.table) -> \(system.table): keys preserved"
            )
        }
        let virtual = try database.rows("SELECT name FROM src.sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")
            .compactMap { $0[0].text }
        let shadows = Set(virtual.flatMap { name in ["", "_node", "_parent", "_rowid"].map { (name + $0).uppercased() } })
        for table in sourceTables.keys.sorted() where !covered.contains(table) && !shadows.contains(table) {
            let name =
                try database.rows("SELECT name FROM src.sqlite_schema WHERE type = 'table' AND upper(name) = ?1", .text(table))
                .first?[0].text ?? table
            if table.range(of: #"^Z_[0-9]+"#, options: .regularExpression) != nil {
                let columns = sourceTables[table]!.map { $0[0] }
                entities.append(
                    EntityMapping(
                        name: name, source: .init(table: name), destination: .init(table: name),
                        columns: Dictionary(uniqueKeysWithValues: columns.map { ($0, SQL.identifier($0)) })))
                decisions.append("join table \(name) -> \(name) (columns as they are)")
            } else {
                notes.append("table \(name): not a Core Data entity or join table; not copied")
            }
        }
        for table in virtual {
            notes.append(
                "\(table): an R-tree fetch index; filled from its entity's rows by the destination's own trigger statement once they are in"
            )
        }
        let names = source.entities.values.map(\.name)
        return InferredPlan(
            plan: MigrationPlan(
                entities: entities, coreData: CoreDataMapping(entities: Dictionary(uniqueKeysWithValues: names.map { ($0, $0) }))),
            decisions: decisions, notes: notes)
    }

    /// The tables of the store open as `schema` (its bookkeeping aside), by name in capitals,
    /// each with its columns (name and declared type), in order.
    private func tables(_ schema: String, file: String) throws -> [String: [[String]]] {
        var result: [String: [[String]]] = [:]
        do {
            for row in try database.rows(
                "SELECT name FROM \(schema).sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT IN ('Z_PRIMARYKEY', 'Z_METADATA', 'Z_MODELCACHE')"
            ) {
                guard let name = row[0].text else { continue }
                result[name.uppercased()] = try database.tableSchema(name, in: schema)?.columns.map { [$0.name, $0.type] } ?? []
            }
        } catch {
            throw MigrationError(.store, "cannot read the store's schema: \(error.message)", file: file, sql: error.sql, cause: error)
        }
        return result
    }

    static func hashes(_ database: Database, schema: String, file: String) -> CoreDataVersionHashes? {
        ((try? CoreDataMetadata.read(database, schema: schema, file: file))?.plist).flatMap { CoreDataVersionHashes(metadata: $0) }
    }
}
