import Foundation

/// Infers a plan between two Core Data stores from their models (see
/// ``MigrationPlan/infer(source:destination:options:)``), on a connection with the destination as
/// `main` and the source attached as `src`.
///
/// The steps, each on values: the two models (the stores' own caches, or given), the layout
/// each store has (`CoreDataLayout`, checked against its schema), the mapping between the models
/// (`CoreDataModelMapping`); only then the SQL of each destination table's copy, one column at
/// a time, for the rows of each source entity.
struct CoreDataInference {
    let database: Database
    let sourcePath: String
    let destinationPath: String
    let options: InferenceOptions
    private var decisions: [String] = []
    var notes: [String] = []
    /// Destination entity table -> the conditions on source rows (as `s`) beyond their entity that
    /// its copy adds (a uniqueness constraint's keep-first filter, an entity mapping's filter).
    /// Join rows that refer to a row not copied are left out with it.
    var keptRows: [String: [String]] = [:]
    /// The same conditions on the rows of a subquery aliased ``keptAlias``, every name qualified:
    /// a later composed step replaces the names of the row `s` it copies, and would take a bare
    /// name in a subquery for one of them.
    var keptRowsInSubquery: [String: [String]] = [:]
    /// The alias of the rows a to-one may point at in the subqueries that test them.
    static let keptAlias = "kept"
    /// Derived attributes computed after the copy (new, or derived differently).
    private var derived: [CoreDataMapping.DerivedValue] = []
    /// Binary attributes whose values may be external files.
    private var externalData: [CoreDataMapping.ExternalData] = []
    /// Why Core Data rebuilds the table of a destination root, `nil` for one it alters in place:
    /// once a table, not once a column.
    private var tableRebuilds: [String: String?] = [:]
    /// With an app's mapping model: the property mappings whose values the plan translated
    /// (`entity mapping\tproperty`), and what it cannot run, each refusal once, all refused
    /// together once every table is planned (``accountForPropertyMappings(_:)``).
    var translatedMappings: Set<String> = []
    /// Destination entities whose table is refused as a whole, with the entity mappings into it.
    var refusedEntities: Set<String> = []
    var refusals: [MigrationError] = []
    /// What became of each property mapping of the app's mapping model.
    var propertyMappings: [PropertyMappingAccount] = []

    init(database: Database, sourcePath: String, destinationPath: String, options: InferenceOptions) {
        self.database = database
        self.sourcePath = sourcePath
        self.destinationPath = destinationPath
        self.options = options
    }

    /// The models and layouts of the two stores and the mapping between them.
    struct Context {
        let source: CoreDataLayout
        let destination: CoreDataLayout
        let mapping: CoreDataModelMapping
        /// The Core Data whose migration the plan follows: its framework version (a store's
        /// `NSPersistenceFrameworkVersion`), the destination store's unless the options give it.
        let framework: Int?
    }

    /// The first Core Data framework version that alters a table in place where a change allows
    /// it (`CoreDataModelMapping/tableRebuild(ofTreeOf:)`). The Messenger stores Core Data
    /// migrated show it: from 977 on (977, 1044, 1145) a column added to a table that keeps its
    /// other columns is appended to its `CREATE TABLE`, as `ALTER TABLE ... ADD COLUMN` leaves it,
    /// and the new attribute's default is in every row of the table; up to 866 (641, 752, 847,
    /// 865, 866) each table that gained an attribute with a default was made anew (the column in
    /// the model's order) with the default in the rows of the entities that have it only. One
    /// table at 851 gained a column without default in place, where the rows come out the same.
    static let inPlaceSince = 977

    mutating func infer() throws -> InferredPlan {
        let sourceModel: CoreDataModel, destinationModel: CoreDataModel, mapping: CoreDataModelMapping
        if let bundle = options.modelBundle {
            let path = try versionPath(bundle)
            (sourceModel, destinationModel) = (path.first!.model, path.last!.model)
            mapping =
                try options.mappingModel.map {
                    try CoreDataModelMapping(mappingModel: $0, source: sourceModel, destination: destinationModel)
                }
                ?? (path.count == 1
                    ? try CoreDataModelMapping(source: sourceModel, destination: destinationModel, renames: options.renames)
                    : try CoreDataModelMapping(path: path.map { ($0.name, $0.model) }, renames: options.renames))
        } else {
            guard let models = try storeModels() else {
                // Neither store carries its model, and the two are one model.
                let plan = try CoreDataSameModelPlan(
                    database: database, sourcePath: sourcePath, destinationPath: destinationPath,
                    options: options
                ).infer()
                return InferredPlan(plan: plan.plan, decisions: decisions + plan.decisions, notes: notes + plan.notes)
            }
            (sourceModel, destinationModel) = models
            mapping = try CoreDataModelMapping(source: sourceModel, destination: destinationModel, renames: options.renames)
        }
        let (source, sourceOthers) = try CoreDataLayout(model: sourceModel).resolved(against: database, schema: "src", file: sourcePath)
        let (destination, _) = try CoreDataLayout(model: destinationModel).resolved(
            against: database, schema: "main", file: destinationPath)
        guard !mapping.sourceEntity.isEmpty else {
            throw MigrationError(
                .store,
                "the two stores' models have no entity in common: they are not two versions of one model (Core Data's inference would map nothing and leave the new store empty)",
                file: destinationPath)
        }
        let framework =
            try options.coreDataFramework ?? CoreDataMetadata.read(database, schema: "main", file: destinationPath).frameworkVersion
        let context = Context(source: source, destination: destination, mapping: mapping, framework: framework)
        decisions += mapping.decisions

        for entity in destination.entities.values.sorted(by: { $0.number < $1.number }) {
            if mapping.mappingModel != nil, let model = mapping.mappingModel?.url.lastPathComponent {
                let sources = mapping.sourceEntities(of: entity.name).compactMap { source.entity(named: $0) }
                if sources.isEmpty {
                    notes.append("entity \(entity.name) (\(entity.number)): no entity mapping of \(model) fills it; left empty")
                } else {
                    decisions.append(
                        "entity \(entity.name): \(sources.map { "\($0.name) (\($0.number))" }.joined(separator: ", ")) -> \(entity.number) (\(model): \(sources.compactMap { mapping.entityMapping(into: entity.name, from: $0.name)?.name }.joined(separator: ", ")))"
                    )
                }
            } else if let from = mapping.sourceEntity[entity.name].flatMap({ source.entity(named: $0) }) {
                decisions.append(
                    "entity \(entity.name)\(from.name == entity.name ? "" : " (renamed from \(from.name))"): number \(from.number) -> \(entity.number)"
                )
            } else {
                notes.append("entity \(entity.name) (\(entity.number)): new in the destination model; left empty")
            }
        }
        var dropped: [String: Int64] = [:]
        for name in mapping.removedEntities {
            guard let entity = source.entity(named: name) else { continue }
            let rows = try count("SELECT count(*) FROM src.\(SQL.quote(entity.table)) WHERE Z_ENT = \(entity.number)")
            dropped[name] = rows
            notes.append(
                "entity \(name) (\(entity.number)): \(mapping.mappingModel.map { "no entity mapping of \($0.url.lastPathComponent) takes its rows" } ?? "no counterpart in the destination model"); its \(rows) rows are not copied"
            )
        }
        try noteAttributesLeftOut(context)

        // Which rows each table keeps, before any column: a to-one into another table must know
        // which of that table's rows are left out.
        // Tables a custom step fills are left to it.
        let skipped = Set(options.skippedTables.map { $0.uppercased() })
        for table in destination.tables.values.sorted(by: { $0.name < $1.name }) where !skipped.contains(table.name.uppercased()) {
            guard let (rows, from) = try sourceRows(of: table, context) else { continue }
            let unique = try checkNewUniqueness(table, from: from, rows: rows, context)
            keptRows[table.name] = unique + filters(rows, context)
            keptRowsInSubquery[table.name] =
                try unique.map { try Self.realiased($0, as: Self.keptAlias) } + filters(rows, context, row: Self.keptAlias)
        }
        var entities: [EntityMapping] = []
        for table in destination.tables.values.sorted(by: { $0.name < $1.name }) where !skipped.contains(table.name.uppercased()) {
            if let mapping = try entityMapping(into: table, context) { entities.append(mapping) }
        }
        for join in destination.joinTables.sorted(by: { $0.name < $1.name }) where !skipped.contains(join.name.uppercased()) {
            if let mapping = try joinMapping(into: join, context) { entities.append(mapping) }
        }
        if options.keys == .allocate {
            try allocateKeys(&entities, context)
        }

        try accountForPropertyMappings(context)
        entities += try systemEntityMappings(context)
        for table in sourceOthers.fetchIndexes where !table.hasSuffix("_node") && !table.hasSuffix("_parent") && !table.hasSuffix("_rowid")
        {
            notes.append(
                "\(table): an R-tree fetch index; filled from its entity's rows by the destination's own trigger statement once they are in"
            )
        }
        for table in sourceOthers.unknown {
            notes.append("table \(table): not a Core Data entity or join table; not copied")
        }
        var inferred = InferredPlan(
            plan: MigrationPlan(
                entities: entities,
                coreData: CoreDataMapping(
                    entities: mapping.sourceEntity, derived: derived,
                    externalData: externalData)),
            decisions: decisions, notes: notes)
        inferred.propertyMappings = propertyMappings
        return inferred
    }

    /// The versions from the source store's to the destination store's, each found from the
    /// store by its entity version hashes, as Core Data finds it (or given by name), oldest first
    /// (``CoreDataModelBundle/versions(from:to:)``).
    private mutating func versionPath(_ bundle: CoreDataModelBundle) throws -> [CoreDataModelBundle.Version] {
        func find(_ name: String?, schema: String, file: String, option: String) throws -> CoreDataModelBundle.Version {
            let role = schema == "src" ? "source" : "destination"
            if let name {
                let version = try bundle.version(named: name, givenWith: option)
                decide("\(role) store: version \(name) (given)")
                return version
            }
            let found = try bundle.version(of: database, schema: schema, file: file, asTarget: schema == "main")
            decide("\(role) store: version \(found.version.name) (\(found.how))")
            if found.evidence == .schema { note("\(role) store: \(found.how); migrated from version \(found.version.name)") }
            return found.version
        }
        let from = try find(options.sourceVersion, schema: "src", file: sourcePath, option: "--from-version")
        let to = try find(options.destinationVersion, schema: "main", file: destinationPath, option: "--to-version")
        let path: [CoreDataModelBundle.Version]
        do { path = try bundle.versions(from: from.name, to: to.name) } catch let error as MigrationError {
            throw MigrationError(error.code, error.message, file: sourcePath)
        }
        if path.count > 2 {
            let names = path.map(\.name)
            let shown = names.count <= 6 ? names : Array(names.prefix(3)) + ["..."] + Array(names.suffix(2))
            decide(
                "path: \(shown.joined(separator: " -> ")), \(path.count - 1) steps in one job: inferred from \(from.name) straight to \(to.name), as Core Data does, the versions between read for renames on the way"
            )
        }
        return path
    }

    /// Refuses a bundle whose versions' order its names do not tell and was not given.
    static func refuseUnordered(_ bundle: CoreDataModelBundle) throws {
        let unordered = bundle.unorderedVersions
        guard !unordered.isEmpty else { return }
        throw MigrationError(
            .invalidPlan,
            "the model bundle's versions \(unordered.joined(separator: ", ")) have no place among the others that their names tell (no number, or another naming scheme), so the order of the versions is not known: give it with --version-order, every version oldest first (\(bundle.versions.map(\.name).joined(separator: ",")))"
        )
    }

    // MARK: - Entity tables

    /// Where a destination column's value comes from, for the rows of one source entity.
    enum Source: Hashable {
        /// A column of the source row, as it is.
        case column(String)
        /// An SQL expression of one source column that is NULL where the column is
        /// (`coredata_entity(Z8_VALUE)`, `CAST(ZCOUNT AS REAL)`).
        case ofColumn(String, column: String)
        /// An SQL expression over the source row (`s`).
        case expression(String)

        static let null = Source.expression("NULL")

        var sql: String {
            switch self {
            case let .column(name): SQL.identifier(name)
            case let .ofColumn(sql, _), let .expression(sql): sql
            }
        }

        /// The source column the value is read from, as it is or converted; `nil` for another
        /// expression.
        var column: String? {
            switch self {
            case let .column(name), let .ofColumn(_, name): name
            case .expression: nil
            }
        }
    }

    /// The rows of one destination entity, from one source entity.
    struct Rows {
        /// The destination entity.
        var entity: String
        /// The source entity and its number.
        var source: String
        var number: Int64
    }

    /// The rows of destination table `table`, by the source entity they come from, and the one
    /// source table holding them all; `nil` for a table no source entity fills.
    ///
    /// - Throws: ``MigrationError`` when they come from several source tables (entity hierarchies
    ///   merged), which lightweight migration cannot infer either; with an app's mapping model,
    ///   that refusal names its entity mappings and waits for the others
    ///   (``accountForPropertyMappings(_:)``), the table left out.
    private mutating func sourceRows(of table: CoreDataLayout.EntityTable, _ context: Context) throws -> (
        rows: [Rows], from: CoreDataLayout.EntityTable
    )? {
        let destination = context.destination, source = context.source
        let rows: [Rows] = destination.descendants(of: table.root).sorted().flatMap { number -> [Rows] in
            guard let name = destination.entities[number]?.name else { return [] }
            return context.mapping.sourceEntities(of: name).compactMap { from in
                source.entity(named: from).map { Rows(entity: name, source: from, number: $0.number) }
            }
        }
        guard !rows.isEmpty else { return nil }
        let sourceRoots = Set(rows.map { source.model.root(of: $0.source) })
        guard sourceRoots.count == 1, let sourceRoot = sourceRoots.first, let from = source.table(of: sourceRoot) else {
            let trees = rows.map { "\($0.entity) (from \($0.source), in the tree of \(source.model.root(of: $0.source)))" }
            if let model = context.mapping.mappingModel {
                let mappings = rows.compactMap { context.mapping.entityMapping(into: $0.entity, from: $0.source) }
                    .map { "\($0.name) (\($0.source ?? "") -> \($0.destination ?? ""))" }
                refusedEntities.formUnion(rows.map(\.entity))
                refuseMapping(
                    MigrationError(
                        .invalidPlan,
                        "the mapping model \(model.url.lastPathComponent), entity mappings \(mappings.joined(separator: ", ")): they fill table \(table.name) with rows of different source tables (\(trees.joined(separator: ", "))), which chunkmigrate does not merge into one table's keys; give the entity mappings into \(table.name) as a step (--step \(model.source) -> \(model.destination))",
                        entity: rows[0].entity, file: model.url.path))
                return nil
            }
            throw MigrationError(
                .invalidPlan,
                "table \(table.name) of the destination holds entities whose source rows are in different tables: \(trees.joined(separator: ", ")); lightweight migration cannot merge entity hierarchies either, write a plan for them"
            )
        }
        return (rows, from)
    }

    /// The entity mapping of one destination entity tree's table.
    private mutating func entityMapping(into table: CoreDataLayout.EntityTable, _ context: Context) throws -> EntityMapping? {
        let destination = context.destination, source = context.source
        let rootName = destination.entities[table.root]!.name
        guard let (rows, from) = try sourceRows(of: table, context) else { return nil }
        try refuseMissingRequired(rows, from: from, context)

        var columns: [String: String] = [:]
        for column in table.columns {
            switch column.role {
            case .key:
                continue
            case .entityNumber:
                // With the app's mapping model, each row is the entity of the entity mapping
                // that takes it (entities merged into one take its number).
                columns[column.name] =
                    context.mapping.mappingModel == nil
                    ? "coredata_entity(Z_ENT)"
                    : combine(rows.map { .expression("coredata_entity_number(\(SQL.literal($0.entity)))") }, rows: rows)!
            case .version:
                columns[column.name] = "Z_OPT"
            default:
                var sources = try rows.map { try value(of: column, for: $0, context) }
                let owners = rows.indices.filter { owns(column, rows[$0], context) }
                if let every = addedToEveryRow(column, sources: sources, owners: owners, rows: rows, table: table, context) {
                    sources = rows.map { _ in every }
                } else if let first = owners.first, let sourceColumn = sources[first].column,
                    owners.allSatisfy({ sources[$0] == sources[first] }),
                    !rows.indices.contains(where: { !owners.contains($0) && sourceEntityHas(sourceColumn, rows[$0], from, context) }),
                    owners.count == rows.count || tableRebuild(rootName, context) == nil
                {
                    // A column whose owners' rows all read one source column is copied whole,
                    // as Core Data's in-place migration leaves a column: values in rows of
                    // entities without the property (an earlier migration's defaults) stay, and
                    // the copy needs no CASE per row. Not where the other rows' entities had that
                    // property (moved down to siblings): their values would land in a column not
                    // theirs; nor where Core Data rebuilds the table, which leaves those rows
                    // NULL. (Before framework version 977 no row holds a value of a property its
                    // entity lacks, so that Core Data's own rebuilds change nothing here.)
                    sources = rows.map { _ in sources[first] }
                }
                if let sql = combine(sources, rows: rows) { columns[column.name] = sql }
            }
        }

        // The source tree's rows of entities this table takes, and no others.
        let sourceTree = source.descendants(of: from.root)
        let kept = Set(rows.map(\.number))
        var conditions: [String] = []
        if kept != sourceTree {
            conditions.append("Z_ENT IN (\(kept.sorted().map(String.init).joined(separator: ", ")))")
        }
        conditions += keptRows[table.name] ?? []
        let condition = conditions.isEmpty ? nil : conditions.joined(separator: " AND ")
        decisions.append(
            "table \(from.name) -> \(table.name) (entity tree \(rootName)): \(columns.count) columns, keys \(options.keys == .allocate ? "allocated" : "preserved")"
        )
        return EntityMapping(
            name: rootName, source: .init(table: from.name, key: "Z_PK", where: condition),
            destination: .init(table: table.name, key: "Z_PK"), keys: .preserve, columns: columns)
    }

    /// One SQL expression from the value of each source entity's rows: the value itself when all
    /// agree, else a `CASE` on the source row's entity.
    private func combine(_ sources: [Source], rows: [Rows]) -> String? {
        if Set(sources).count == 1 { return sources[0] == .null ? nil : sources[0].sql }
        var groups: [(Source, [Int64])] = []
        for (source, row) in zip(sources, rows) where source != .null {
            if let index = groups.firstIndex(where: { $0.0 == source }) {
                groups[index].1.append(row.number)
            } else {
                groups.append((source, [row.number]))
            }
        }
        let cases = groups.map { source, numbers in
            let test = numbers.count == 1 ? "Z_ENT = \(numbers[0])" : "Z_ENT IN (\(numbers.map(String.init).joined(separator: ", ")))"
            return "WHEN \(test) THEN \(source.sql)"
        }
        return "CASE " + cases.joined(separator: " ") + " END"
    }

    /// The value every row of `table` takes in `column`, an attribute new in the entities that have
    /// it (none of their source entities had it) with a default: where Core Data alters the table
    /// in place, it adds the column and writes the default into every row, those of entities
    /// without the attribute too; where it rebuilds the table, only the rows of entities with the
    /// attribute take it (`nil`, the values as they are). Says which, once a column.
    private mutating func addedToEveryRow(
        _ column: CoreDataLayout.Column, sources: [Source], owners: [Int], rows: [Rows],
        table: CoreDataLayout.EntityTable, _ context: Context
    ) -> Source? {
        guard case let .attribute(owner, property) = column.role else { return nil }
        let new = owners.filter { context.mapping.sourceProperty(property, of: rows[$0].entity) == nil && sources[$0] != .null }
        guard let first = new.first, new == owners, owners.allSatisfy({ sources[$0] == sources[first] }) else {
            // Some entities had it, or their defaults differ (over a path): each in its own rows.
            for index in new { decide("\(column.name): new in \(rows[index].entity), takes the default \(sources[index].sql)") }
            return nil
        }
        let value = sources[first].sql
        let others = rows.indices.filter { !owners.contains($0) }.map { rows[$0].entity }
        guard !others.isEmpty else {
            decide("\(column.name): new in \(owner), takes the default \(value)")
            return nil
        }
        let list = others.joined(separator: ", ")
        if let reason = rebuild(table, context) {
            decide(
                "\(column.name): new in \(owner), takes the default \(value) in its rows; those of \(list) stay NULL, as Core Data rebuilds \(table.name): \(reason)"
            )
            return nil
        }
        decide(
            "\(column.name): new in \(owner), every row of \(table.name) takes the default \(value) (\(list) too), as Core Data's in-place column add gives it"
        )
        return sources[first]
    }

    /// Why Core Data, as the plan's Core Data migrates, rebuilds `table` rather than adding a
    /// column with a default to it in place; `nil` where it adds it in place.
    private mutating func rebuild(_ table: CoreDataLayout.EntityTable, _ context: Context) -> String? {
        if let framework = context.framework, framework < Self.inPlaceSince {
            return
                "Core Data before framework version \(Self.inPlaceSince) (the destination store's is \(framework)) makes a table it adds such a column to anew"
        }
        guard let root = context.destination.entities[table.root]?.name else { return nil }
        return tableRebuild(root, context)
    }

    /// `CoreDataModelMapping/tableRebuild(ofTreeOf:)`, once a table.
    private mutating func tableRebuild(_ root: String, _ context: Context) -> String? {
        if let known = tableRebuilds[root] { return known }
        let reason = context.mapping.tableRebuild(ofTreeOf: root)
        tableRebuilds[root] = reason
        return reason
    }

    /// Whether the source entity of `rows` has the property that source column `name` holds.
    private func sourceEntityHas(_ name: String, _ rows: Rows, _ table: CoreDataLayout.EntityTable, _ context: Context) -> Bool {
        let declaring: String
        switch table.column(named: name)?.role {
        case let .attribute(entity, _)?, let .toOne(entity, _)?, let .toOneEntity(entity, _)?, let .toOneOrder(entity, _)?:
            declaring = entity
        default:
            return false
        }
        return context.source.model.lineage(of: rows.source).contains { $0.name == declaring }
    }

    /// Whether the entity of `rows` has the property `column` holds.
    private func owns(_ column: CoreDataLayout.Column, _ rows: Rows, _ context: Context) -> Bool {
        let owner: String
        switch column.role {
        case let .attribute(entity, _), let .toOne(entity, _), let .toOneEntity(entity, _), let .toOneOrder(entity, _):
            owner = entity
        default:
            return false
        }
        return context.destination.model.lineage(of: rows.entity).contains { $0.name == owner }
    }

    /// The value of destination column `column` for the rows `rows` brings.
    private mutating func value(of column: CoreDataLayout.Column, for rows: Rows, _ context: Context) throws -> Source {
        let model = context.destination.model
        switch column.role {
        case let .attribute(owner, property):
            guard model.lineage(of: rows.entity).contains(where: { $0.name == owner }),
                let attribute = model.property(property, of: rows.entity)?.property
            else { return .null }
            return try attributeValue(attribute, of: rows, column: column.name, context)
        case let .toOne(owner, property):
            guard model.lineage(of: rows.entity).contains(where: { $0.name == owner }) else { return .null }
            let key = try toOneKey(property, of: rows, context) ?? .null
            // With keys allocated, the ID map leaves out what is not copied (missing: null).
            return options.keys == .allocate ? key : try onlyToCopiedRows(key, property, of: rows, context)
        case let .toOneEntity(owner, property):
            guard model.lineage(of: rows.entity).contains(where: { $0.name == owner }) else { return .null }
            return try onlyToCopiedRows(try toOneEntity(property, of: rows, context), property, of: rows, context)
        case let .toOneOrder(owner, property):
            guard model.lineage(of: rows.entity).contains(where: { $0.name == owner }) else { return .null }
            return try onlyToCopiedRows(try toOneOrder(property, of: rows, context), property, of: rows, context)
        case let .toManyOwner(owner, property), let .toManyOrder(owner, property):
            // The rows of this table are the targets of owner.property, a to-many without inverse.
            guard let old = context.mapping.sourceProperty(property, of: owner), old.property.relationship?.isToMany == true,
                let pairs = pairs(declaredBy: old.declaredBy, property: old.property.name, context),
                let table = context.source.table(of: rows.source)
            else {
                note("\(column.name): \(context.destination.describe(column.role, root: owner)) is new; left empty")
                return .null
            }
            // The owner of this row (a target), from wherever the source kept the pairs.
            let ordered: Bool
            if case .toManyOrder = column.role { ordered = true } else { ordered = false }
            if pairs.table == table.name, pairs.target == "Z_PK" {
                if !ordered { return .column(pairs.owner) }
                if let order = pairs.order { return .column(order) }
            } else if !ordered {
                return .expression(
                    "(SELECT min(t.\(SQL.quote(pairs.owner))) FROM src.\(SQL.quote(pairs.table)) AS t WHERE t.\(SQL.quote(pairs.target)) = s.Z_PK)"
                )
            }
            note("\(column.name): \(context.destination.describe(column.role, root: owner)) was not kept in order; left empty")
            return .null
        case .key, .entityNumber, .version:
            return .null
        }
    }

    /// An attribute's value: the source attribute's column (converted where the type changed),
    /// or the default for rows whose entity did not have it.
    private mutating func attributeValue(
        _ attribute: CoreDataModel.Property, of rows: Rows, column: String,
        _ context: Context
    ) throws -> Source {
        let new = attribute.attribute!
        if let refusal = context.mapping.unconvertible["\(rows.entity)\t\(attribute.name)"] {
            throw MigrationError(.invalidPlan, refusal, entity: rows.entity, column: column)
        }
        // The default rows without the property take: the destination's, as Core Data writes it
        // (over several versions too: its migration goes straight to the last).
        let defaultSQL = context.mapping.newValue(attribute.name, of: rows.entity).flatMap { Self.literal($0, type: new.type) }
        let source = context.mapping.sourceProperty(attribute.name, of: rows.entity, from: rows.source)
        if new.derivation == nil, source == nil, let expression = mappedValue(attribute.name, of: rows, relationship: false, context) {
            return expression
        }
        if let derivation = new.derivation, Self.computesDerived(derivation, was: source?.property.attribute?.derivation) {
            // New, derived differently, or from other rows (which the migration may leave out):
            // computed from the migrated rows once they are in, by Core Data's derivation SQL.
            let computed = try CoreDataDerivation(entity: rows.entity, attribute: attribute.name, layout: context.destination)
            let value = CoreDataMapping.DerivedValue(
                attribute: "\(computed.entity).\(computed.attribute)", table: computed.table,
                column: computed.column, value: computed.value, rows: computed.rows)
            if !derived.contains(value) {
                derived.append(value)
                let why =
                    source?.property.attribute?.derivation == nil
                    ? "is new"
                    : CoreDataDerivation.parse(derivation) == CoreDataDerivation.parse(source!.property.attribute!.derivation!)
                        ? "reads other rows" : "is derived differently"
                decide(
                    "\(column): the derived attribute \(value.attribute) \(why) (\(derivation)); computed from the migrated rows once they are in: \(computed.dataStatement)"
                )
            }
            return .null
        }
        guard let (declaredBy, old) = source, let oldColumn = context.source.column(of: old.name, entity: rows.source) else {
            // Said with the table's rule, which rows of the table take it (addedToEveryRow).
            return defaultSQL.map(Source.expression) ?? .null
        }
        var value = Source.column(oldColumn.name)
        let was = old.attribute!
        if new.type == .binaryData, was.type == .binaryData, new.allowsExternalStorage || was.allowsExternalStorage {
            let declaring = context.destination.model.property(attribute.name, of: rows.entity)?.declaredBy ?? rows.entity
            return externalDataValue(
                column: column, oldColumn: oldColumn.name, of: "\(declaring).\(attribute.name)",
                was: was.allowsExternalStorage, is: new.allowsExternalStorage, table: context.destination.table(of: rows.entity)?.name)
        }
        // From the source attribute's type to the destination's (over several versions, once).
        let types = context.mapping.types(attribute.name, of: rows.entity, from: rows.source)
        var converted = SQL.identifier(oldColumn.name)
        for (from, to) in zip(types, types.dropFirst()) where from != to {
            guard let next = conversion(converted, from: from, to: to) else { continue }
            converted = next
        }
        if converted != SQL.identifier(oldColumn.name) {
            decide(
                "\(column): \(types.map(\.xmlName).reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }.joined(separator: " -> ")), \(converted)"
            )
            value = .ofColumn(converted, column: oldColumn.name)
        }
        if let fill = context.mapping.nullFill(attribute.name, of: rows.entity, from: rows.source).flatMap({
            Self.literal($0, type: new.type)
        }) {
            decide("\(column): optional in \(declaredBy), required with default \(fill) in \(rows.entity): NULLs take the default")
            value = .expression("ifnull(\(value.sql), \(fill))")
        }
        return value
    }

    /// Whether a derived attribute is computed after the copy rather than copied: unless the
    /// source derived it the same way from the row's own attribute (or `now()`). A derivation
    /// from other rows (a count, a to-one's attribute) is computed whatever the source held: the
    /// migration may leave some of those rows out (a removed sub-entity, a duplicate).
    static func computesDerived(_ derivation: String, was: String?) -> Bool {
        guard let was else { return true }
        let parsed = CoreDataDerivation.parse(derivation)
        guard parsed == CoreDataDerivation.parse(was), case let .attribute(path, _) = parsed else { return true }
        return path.count > 1
    }

    /// A binary attribute that may keep values in files (`0x01` + the bytes inline, or `0x02` +
    /// a file name + `0x00`): copied as it is with its files carried over where both models
    /// allow external storage; made inline where only the source did (the file's bytes, read at
    /// the copy); marked inline where only the destination does (Core Data reads an inline
    /// value of any size).
    private mutating func externalDataValue(
        column: String, oldColumn: String, of attribute: String, was: Bool, is now: Bool,
        table: String?
    ) -> Source {
        switch (was, now) {
        case (true, true):
            if let table {
                let entry = CoreDataMapping.ExternalData(attribute: attribute, table: table, column: column)
                if !externalData.contains(entry) {
                    externalData.append(entry)
                    decide("\(column): \(attribute) may keep values in external files; the files its rows name are carried over")
                }
            }
            return .column(oldColumn)
        case (true, false):
            decide("\(column): \(attribute) no longer allows external storage; its values are stored in the row")
            return .ofColumn(
                "coredata_external_value(\(SQL.identifier(oldColumn)), '\(attribute.replacingOccurrences(of: "'", with: "''"))')",
                column: oldColumn)
        default:
            decide("\(column): \(attribute) now allows external storage; its values are kept in the row, marked as such")
            return .ofColumn("coredata_external_inline(\(SQL.identifier(oldColumn)))", column: oldColumn)
        }
    }

    /// The SQL converting a value (a column's SQL) between numeric types (SQLite stores integers,
    /// booleans and reals as numbers; a real becoming an integer truncates toward zero).
    private func conversion(_ column: String, from: CoreDataModel.AttributeType, to: CoreDataModel.AttributeType) -> String? {
        let integers: Set<CoreDataModel.AttributeType> = [.integer16, .integer32, .integer64, .boolean]
        let reals: Set<CoreDataModel.AttributeType> = [.double, .float, .decimal]
        if integers.contains(from), reals.contains(to) { return "CAST(\(column) AS REAL)" }
        if reals.contains(from), integers.contains(to) { return "CAST(\(column) AS INTEGER)" }
        return nil
    }

    /// The source of a to-one relationship's key: the source to-one's column, or, where the
    /// relationship was to-many, the smallest key among its targets.
    private mutating func toOneKey(_ property: String, of rows: Rows, _ context: Context) throws -> Source? {
        guard let (declaredBy, old) = context.mapping.sourceProperty(property, of: rows.entity, from: rows.source),
            let relationship = old.relationship
        else {
            if let mapped = mappedToOne(property, of: rows, context) { return mapped.key }
            _ = mappedValue(property, of: rows, relationship: true, context)
            return try keyFromInverse(property, of: rows, context)
        }
        if !relationship.isToMany {
            return context.source.column(of: old.name, entity: rows.source).map { .column($0.name) }
        }
        guard let pairs = pairs(declaredBy: declaredBy, property: old.name, context) else { return nil }
        decide("\(rows.entity).\(property): to-many \(declaredBy).\(old.name) becomes to-one: the target with the smallest key")
        return .expression(
            "(SELECT min(t.\(SQL.quote(pairs.target))) FROM src.\(SQL.quote(pairs.table)) AS t WHERE t.\(SQL.quote(pairs.owner)) = s.Z_PK)")
    }

    /// The key of a to-one the source did not have, where the source kept its inverse: a to-many
    /// without an inverse that gained one, or a to-one renamed without a renaming identifier whose
    /// inverse kept its name. The owner of this row among the inverse's pairs.
    private mutating func keyFromInverse(_ property: String, of rows: Rows, _ context: Context) throws -> Source? {
        guard let declared = context.destination.model.property(property, of: rows.entity),
            let relationship = declared.property.relationship, let inverse = relationship.inverse,
            let (inverseDeclaredBy, oldInverse) = context.mapping.sourceProperty(inverse, of: relationship.destination),
            let table = context.source.table(of: rows.source)
        else { return nil }
        if oldInverse.relationship?.isToMany == false {
            // A one-to-one: the other side's key column holds this row's key.
            guard let other = context.source.table(of: inverseDeclaredBy),
                let column = other.column(for: .toOne(entity: inverseDeclaredBy, property: oldInverse.name))
            else { return nil }
            decide("\(rows.entity).\(property): new, from its inverse \(inverseDeclaredBy).\(oldInverse.name)")
            return .expression("(SELECT min(t.Z_PK) FROM src.\(SQL.quote(other.name)) AS t WHERE t.\(SQL.quote(column.name)) = s.Z_PK)")
        }
        guard let pairs = pairs(declaredBy: inverseDeclaredBy, property: oldInverse.name, context) else { return nil }
        decide("\(rows.entity).\(property): new, from its inverse \(inverseDeclaredBy).\(oldInverse.name)")
        if pairs.table == table.name, pairs.target == "Z_PK" { return .column(pairs.owner) }
        return .expression(
            "(SELECT min(t.\(SQL.quote(pairs.owner))) FROM src.\(SQL.quote(pairs.table)) AS t WHERE t.\(SQL.quote(pairs.target)) = s.Z_PK)")
    }

    /// Where the pairs of a source to-many relationship are: the table holding them, its column
    /// of owners' keys and of targets' keys (the target's own `Z_PK` where the table is the
    /// target's), and its order column when the relationship is ordered.
    struct Pairs {
        var table: String
        var owner: String
        var target: String
        /// The position of each target among its owner's targets.
        var order: String?
        /// In a join table: the position of each owner among the target's owners (the inverse's
        /// order), when the inverse is ordered.
        var ownerOrder: String? = nil
        var isJoinTable: Bool
    }

    /// The pairs of source relationship `property` of `declaredBy`, a to-many.
    func pairs(declaredBy: String, property: String, _ context: Context) -> Pairs? {
        let source = context.source
        guard let relationship = source.model.property(property, of: declaredBy)?.property.relationship else { return nil }
        if let join = source.joinTable(of: property, entity: declaredBy),
            let mine = join.sides.first(where: { $0.entity == declaredBy && $0.property == property }),
            let other = join.sides.first(where: { $0 != mine })
        {
            return Pairs(
                table: join.name, owner: other.column, target: mine.column, order: mine.order, ownerOrder: other.order,
                isJoinTable: true)
        }
        guard let targetTable = source.table(of: relationship.destination) else { return nil }
        if let inverse = relationship.inverse, let declared = source.model.property(inverse, of: relationship.destination),
            let key = targetTable.column(for: .toOne(entity: declared.declaredBy, property: inverse))
        {
            let order = targetTable.column(for: .toOneOrder(entity: declared.declaredBy, property: inverse))
            return Pairs(table: targetTable.name, owner: key.name, target: "Z_PK", order: order?.name, isJoinTable: false)
        }
        if let owner = targetTable.column(for: .toManyOwner(entity: declaredBy, property: property)) {
            let order = targetTable.column(for: .toManyOrder(entity: declaredBy, property: property))
            return Pairs(table: targetTable.name, owner: owner.name, target: "Z_PK", order: order?.name, isJoinTable: false)
        }
        return nil
    }

    /// `value` (a to-one's key, entity number or order) where the key points at a row the plan
    /// copies as the relationship's destination, NULL elsewhere: a row of a removed entity, of an
    /// entity outside the destination's tree now, or a duplicate left out for a uniqueness
    /// constraint, as lightweight migration leaves no relationship to a row it drops.
    private mutating func onlyToCopiedRows(_ value: Source, _ property: String, of rows: Rows, _ context: Context) throws -> Source {
        guard value != .null, let key = try toOneKey(property, of: rows, context),
            let destination = context.destination.model.property(property, of: rows.entity)?.property.relationship?.destination,
            let number = context.destination.entity(named: destination)?.number,
            let (table, condition) = copiedRows(of: number, pointedAt: pointedAt(property, of: rows, context), context)
        else { return value }
        decide("\(rows.entity).\(property): NULL where it points at a row that is not copied as \(destination)")
        return .expression(
            "CASE WHEN \(key.sql) IN (SELECT \(Self.keptAlias).Z_PK FROM src.\(SQL.quote(table)) AS \(Self.keptAlias) WHERE \(condition)) THEN \(value.sql) END"
        )
    }

    /// The entity number of a to-one's target, for a target entity with sub-entities.
    private mutating func toOneEntity(_ property: String, of rows: Rows, _ context: Context) throws -> Source {
        if let mapped = mappedToOne(property, of: rows, context) { return mapped.entity }
        guard let key = try toOneKey(property, of: rows, context),
            let (declaredBy, old) = context.mapping.sourceProperty(property, of: rows.entity, from: rows.source),
            let relationship = old.relationship
        else { return .null }
        if !relationship.isToMany,
            let entityColumn = context.source.table(of: rows.source)?.column(for: .toOneEntity(entity: declaredBy, property: old.name))
        {
            return .ofColumn("coredata_entity(\(SQL.identifier(entityColumn.name)))", column: entityColumn.name)
        }
        guard let target = context.source.entity(named: relationship.destination), let targetTable = context.source.tables[target.root]
        else {
            return .null
        }
        if context.source.descendants(of: target.number).count == 1 {
            // Every target row is of the one source entity.
            return .expression("CASE WHEN \(key.sql) IS NOT NULL THEN coredata_entity(\(target.number)) END")
        }
        return .expression("(SELECT coredata_entity(e.Z_ENT) FROM src.\(SQL.quote(targetTable.name)) AS e WHERE e.Z_PK = \(key.sql))")
    }

    /// A to-one's position in its inverse, an ordered to-many: the source's where it was ordered
    /// too, else the order of the keys (Core Data's spacing: 1024 apart from 2048).
    private mutating func toOneOrder(_ property: String, of rows: Rows, _ context: Context) throws -> Source {
        if let mapped = mappedToOne(property, of: rows, context) {
            // A member of an ordered to-many filled through a key path: among its owner's
            // members in the order of the keys, each row's value its own (1024 times one more
            // than its key), so that no row reads the others (a rank would read the whole table
            // once a row, through the path).
            decide("\(rows.entity).\(property): its inverse is ordered; members filled through a key path in the order of their keys")
            return .expression("CASE WHEN \(mapped.key.sql) IS NOT NULL THEN 1024 * (1 + s.Z_PK) END")
        }
        guard let key = try toOneKey(property, of: rows, context),
            let (declaredBy, old) = context.mapping.sourceProperty(property, of: rows.entity, from: rows.source),
            let relationship = old.relationship, let table = context.source.table(of: rows.source)
        else { return .null }
        if !relationship.isToMany, let order = table.column(for: .toOneOrder(entity: declaredBy, property: old.name)) {
            return .column(order.name)
        }
        // Many-to-many before, and its inverse was ordered: this row's position among the owner's.
        if relationship.isToMany, let pairs = pairs(declaredBy: declaredBy, property: old.name, context), let ownerOrder = pairs.ownerOrder
        {
            return .expression(
                "(SELECT t.\(SQL.quote(ownerOrder)) FROM src.\(SQL.quote(pairs.table)) AS t WHERE t.\(SQL.quote(pairs.owner)) = s.Z_PK AND t.\(SQL.quote(pairs.target)) = \(key.sql))"
            )
        }
        decide("\(rows.entity).\(property): its inverse becomes ordered; the order of the keys")
        // This row's key, and another row's (`o`) in the subquery that ranks it.
        let (mine, theirs): (String, String)
        if case let .column(name) = key {
            (mine, theirs) = ("s." + SQL.quote(name), "o." + SQL.quote(name))
        } else {
            (mine, theirs) = (key.sql, key.sql.replacingOccurrences(of: "s.Z_PK", with: "o.Z_PK"))
        }
        return .expression(
            "CASE WHEN \(mine) IS NOT NULL THEN 1024 * (1 + (SELECT count(*) FROM src.\(SQL.quote(table.name)) AS o WHERE \(theirs) = \(mine) AND o.Z_PK <= s.Z_PK)) END"
        )
    }

    /// Core Data's lightweight migration fails on a required attribute that is new and has no
    /// default where the source has rows; so does this.
    private func refuseMissingRequired(_ rows: [Rows], from: CoreDataLayout.EntityTable, _ context: Context) throws {
        for row in rows {
            for (owner, property) in context.destination.model.allProperties(of: row.entity) {
                guard let attribute = property.attribute, !property.isOptional, !property.isTransient, attribute.derivation == nil,
                    context.mapping.newValue(property.name, of: row.entity) == nil,
                    context.mapping.sourceProperty(property.name, of: row.entity, from: row.source) == nil,
                    !mappingModelGivesValue(property.name, of: row, context)
                else { continue }
                let count = try count("SELECT count(*) FROM src.\(SQL.quote(from.name)) WHERE Z_ENT = \(row.number)")
                guard count > 0 else { continue }
                throw MigrationError(
                    .invalidPlan,
                    "attribute \(owner).\(property.name) is new, required and has no default value, and the source has \(count) rows of \(row.source): Core Data's migration fails on it too (the rows would break validation, NSValidationMissingMandatoryPropertyError 1570); give it a default value in the model, or make it optional"
                )
            }
        }
    }

    /// `value` as an SQL literal in the column Core Data stores an attribute of `type` in.
    static func literal(_ value: CoreDataModel.Value, type: CoreDataModel.AttributeType) -> String? {
        switch value {
        case let .integer(number):
            return type == .double || type == .float || type == .decimal ? String(Double(number)) : String(number)
        case let .real(number):
            guard [.integer16, .integer32, .integer64].contains(type) else { return String(number) }
            return Int64(exactly: number.rounded(.towardZero)).map(String.init)
        case let .bool(flag):
            return flag ? "1" : "0"
        case let .string(text):
            return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case let .date(seconds):
            return String(seconds)
        case let .data(bytes):
            return "x'" + bytes.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }

    // MARK: - Join tables

    /// The entity mapping of a destination join table: from the source's pairs of the same
    /// relationship (matched by its sides, whatever the tables are named), which are a join table
    /// or, where the relationship was one-to-many, the table holding its to-one side.
    private mutating func joinMapping(into join: CoreDataLayout.JoinTable, _ context: Context) throws -> EntityMapping? {
        let mapping = context.mapping
        // A side whose relationship the source has: its pairs are this table's rows.
        var anchor: (side: CoreDataLayout.JoinTable.Side, pairs: Pairs)?
        for side in join.sides {
            guard let property = side.property, let (declaredBy, old) = mapping.sourceProperty(property, of: side.entity),
                let relationship = old.relationship
            else { continue }
            if relationship.isToMany, let pairs = pairs(declaredBy: declaredBy, property: old.name, context) {
                anchor = (side, pairs)
                break
            }
            if !relationship.isToMany, let table = context.source.table(of: declaredBy),
                let key = table.column(for: .toOne(entity: declaredBy, property: old.name))
            {
                // A to-one becoming to-many: the pairs are the owners' rows and their keys.
                anchor = (side, Pairs(table: table.name, owner: "Z_PK", target: key.name, order: nil, isJoinTable: false))
                break
            }
        }
        guard let (side, pairs) = anchor else {
            let sides = join.sides.compactMap { side in side.property.map { "\(side.entity).\($0)" } }.joined(separator: " and ")
            note("join table \(join.name) (\(sides)): new in the destination model; left empty")
            return nil
        }
        let other = join.sides.first { $0 != side }!
        var columns = [side.column: SQL.identifier(pairs.target), other.column: SQL.identifier(pairs.owner)]
        // Order columns: the source's where it kept the order, else the order of the keys.
        for (ordered, value, owner) in [(side, pairs.target, pairs.owner), (other, pairs.owner, pairs.target)] {
            guard let order = ordered.order else { continue }
            if ordered == side, let sourceOrder = pairs.order {
                columns[order] = SQL.identifier(sourceOrder)
            } else if ordered == other, let property = other.property,
                let (declaredBy, old) = mapping.sourceProperty(property, of: other.entity),
                let inverse = self.pairs(declaredBy: declaredBy, property: old.name, context),
                inverse.table == pairs.table, let sourceOrder = inverse.order
            {
                columns[order] = SQL.identifier(sourceOrder)
            } else {
                decide("join table \(join.name).\(order): the relationship becomes ordered; the order of the keys")
                let (o, v) = (SQL.quote(owner), SQL.quote(value))
                columns[order] =
                    "1024 * (1 + (SELECT count(*) FROM src.\(SQL.quote(pairs.table)) AS o WHERE o.\(o) = s.\(o) AND o.\(v) <= s.\(v)))"
            }
        }
        // No pair with a NULL side, none that refers to a row the plan leaves out.
        var filters: [String] = []
        var leavesOut = false
        if !pairs.isJoinTable {
            filters.append("\(SQL.identifier(pairs.owner == "Z_PK" ? pairs.target : pairs.owner)) IS NOT NULL")
        }
        for (ordered, column) in [(side, pairs.target), (other, pairs.owner)] {
            guard let (table, condition) = copiedRows(of: ordered.target, context) else { continue }
            filters.append(
                "\(SQL.identifier(column)) IN (SELECT \(Self.keptAlias).Z_PK FROM src.\(SQL.quote(table)) AS \(Self.keptAlias) WHERE \(condition))"
            )
            leavesOut = true
        }
        let leftOut = leavesOut ? "; rows that refer to rows left out are left out" : ""
        if pairs.isJoinTable {
            let renamed = (join.sides.map(\.column) + join.sides.compactMap(\.order)).filter {
                columns[$0].map { SQL.identifier($0) == $0 } ?? false
            }
            .sorted().map { "\(columns[$0]!) -> \($0)" }.joined(separator: ", ")
            decisions.append("join table \(pairs.table) -> \(join.name) (columns \(renamed))\(leftOut)")
        } else {
            let key = pairs.owner == "Z_PK" ? pairs.target : pairs.owner
            decisions.append(
                "join table \(join.name) (\(side.entity).\(side.property ?? "")): from \(pairs.table).\(key), its to-one side before\(leftOut)"
            )
        }
        return EntityMapping(
            name: join.name,
            source: .init(table: pairs.table, where: filters.isEmpty ? nil : filters.joined(separator: " AND ")),
            destination: .init(table: join.name), columns: columns)
    }

    /// The source rows copied as destination entity `number` or one below it: the source table
    /// and a condition over its rows (as `s`); `nil` when every row of the table is.
    /// The source entity (and those below it) the source relationship of `property` points at.
    private func pointedAt(_ property: String, of rows: Rows, _ context: Context) -> Set<Int64>? {
        guard let old = context.mapping.sourceProperty(property, of: rows.entity, from: rows.source)?.property.relationship,
            let number = context.source.entity(named: old.destination)?.number
        else { return nil }
        return context.source.descendants(of: number)
    }

    /// The source rows copied into destination entity `number` (and those below it), as a
    /// condition on the source table: `nil` where every row is, or every row a relationship
    /// points at (`pointedAt`, the entities it can point at) is.
    private func copiedRows(of number: Int64, pointedAt: Set<Int64>? = nil, _ context: Context) -> (table: String, condition: String)? {
        let destination = context.destination, source = context.source
        guard let entity = destination.entities[number], let destinationTable = destination.tables[entity.root] else { return nil }
        let numbers = Set(
            destination.descendants(of: number).flatMap { dest in
                (destination.entities[dest].map { context.mapping.sourceEntities(of: $0.name) } ?? []).compactMap {
                    source.entity(named: $0)?.number
                }
            })
        guard let first = numbers.first, let sourceEntity = source.entities[first], let table = source.tables[sourceEntity.root] else {
            return nil
        }
        var conditions = keptRowsInSubquery[destinationTable.name] ?? []
        if numbers != source.descendants(of: table.root), !(pointedAt.map { numbers.isSuperset(of: $0) } ?? false) {
            conditions.insert("\(Self.keptAlias).Z_ENT IN (\(numbers.sorted().map(String.init).joined(separator: ", ")))", at: 0)
        }
        guard !conditions.isEmpty else { return nil }
        return (table.name, conditions.joined(separator: " AND "))
    }

    // MARK: - Keys allocated

    /// Under `allocate`: every to-one column and join-table key through the ID map of its
    /// target's entity tree; the polymorphic columns stay `coredata_entity()`. Only a key read
    /// from a column as it is can go through the ID map.
    private mutating func allocateKeys(_ entities: inout [EntityMapping], _ context: Context) throws {
        let destination = context.destination
        func planEntity(of number: Int64) -> String? {
            destination.entities[number].flatMap { destination.entities[$0.root]?.name }
                .flatMap { name in entities.contains { $0.name == name } ? name : nil }
        }
        func bare(_ expression: String) -> String? {
            if expression.first == "\"", expression.last == "\"", expression.count >= 2 {
                return String(expression.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
            }
            return SQL.identifier(expression) == expression ? expression : nil
        }
        var unresolved: [String] = []
        for index in entities.indices {
            var keys: [(column: String, target: Int64)] = []
            if let table = destination.table(named: entities[index].destination.table) {
                entities[index].keys = .allocate
                for column in table.columns {
                    switch column.role {
                    case let .toOne(owner, property):
                        guard let target = destination.model.property(property, of: owner)?.property.relationship?.destination,
                            let number = destination.entity(named: target)?.number
                        else { continue }
                        keys.append((column.name, number))
                    case let .toManyOwner(owner, _):
                        // The owner's key of a to-many without inverse, in its target's table.
                        guard let number = destination.entity(named: owner)?.number else { continue }
                        keys.append((column.name, number))
                    default:
                        continue
                    }
                }
            } else if let join = destination.joinTables.first(where: { $0.name == entities[index].destination.table }) {
                keys = join.sides.map { ($0.column, $0.target) }
            }
            for (column, target) in keys {
                guard let from = entities[index].columns[column] else { continue }
                guard let name = planEntity(of: target), let sourceColumn = bare(from) else {
                    unresolved.append("\(entities[index].destination.table).\(column)")
                    continue
                }
                entities[index].columns[column] = nil
                // A key into rows the plan leaves out has no mapping: NULL, as lightweight
                // migration leaves no relationship to a row it drops; any other is a failure.
                let missing: EntityMapping.MissingPolicy = copiedRows(of: target, context) == nil ? .fail : .null
                entities[index].relationships[column] = .init(from: sourceColumn, to: name, missing: missing)
            }
        }
        guard unresolved.isEmpty else {
            throw MigrationError(
                .invalidPlan,
                "keys allocate: \(unresolved.joined(separator: ", ")) take their keys from an expression (a relationship whose shape changed, or a target not copied), which cannot go through the ID map; keep the keys (preserve)",
                file: destinationPath)
        }
        decisions.append("keys allocated after each table's largest key; to-one and join-table keys through the ID map (missing: fail)")
        notes.append(
            "keys allocated: the destination keeps its own store UUID, since object-ID URIs saved before the migration would name other objects"
        )
    }

    // MARK: - Uniqueness

    /// Reports a uniqueness constraint of the destination model that the source entity did not
    /// have, with the number of source rows that violate it. Those rows fail their batch, naming
    /// the row; with ``InferenceOptions/keepFirstDuplicate`` the returned filters keep the first
    /// row of each value in source-key order instead, and the report counts the rows left out.
    private mutating func checkNewUniqueness(
        _ table: CoreDataLayout.EntityTable, from: CoreDataLayout.EntityTable, rows: [Rows],
        _ context: Context
    ) throws -> [String] {
        var filters: [String] = []
        var seen: Set<[String]> = []
        for row in rows {
            guard let entity = context.destination.model.entity(named: row.entity) else { continue }
            // The unique index Core Data makes for a constraint spans the whole table
            // (`Z_<Entity>_UNIQUE_<properties>`, no condition on Z_ENT), so a sub-entity's
            // constraint meets every row the table keeps.
            let scope = rows.map(\.number).sorted().map(String.init).joined(separator: ", ")
            for constraint in entity.uniquenessConstraints {
                // The source columns of the constrained properties; a new property cannot hold duplicates.
                var sourceColumns: [String] = []
                var oldNames: [String] = []
                for name in constraint {
                    guard let old = context.mapping.sourceProperty(name, of: row.entity, from: row.source),
                        let column = context.source.column(of: old.property.name, entity: row.source)
                    else { break }
                    sourceColumns.append(column.name)
                    oldNames.append(old.property.name)
                }
                let destinationColumns = constraint.compactMap { context.destination.column(of: $0, entity: row.entity)?.name }
                guard sourceColumns.count == constraint.count, seen.insert(destinationColumns).inserted else { continue }
                let had = context.source.model.lineage(of: row.source).contains {
                    $0.uniquenessConstraints.contains { Set($0) == Set(oldNames) }
                }
                guard !had else { continue }
                let list = destinationColumns.joined(separator: ", ")
                let quoted = sourceColumns.map(SQL.quote).joined(separator: ", ")
                let nonNull = sourceColumns.map { "\(SQL.quote($0)) IS NOT NULL" }.joined(separator: " AND ")
                let duplicates = try count(
                    """
                    SELECT ifnull(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM src.\(SQL.quote(from.name)) WHERE \(nonNull) AND Z_ENT IN (\(scope))
                                                       GROUP BY \(quoted) HAVING count(*) > 1)
                    """)
                if duplicates == 0 {
                    notes.append("\(table.name)(\(list)): a new uniqueness constraint of \(row.entity); the source's rows satisfy it")
                } else if options.keepFirstDuplicate {
                    let same = sourceColumns.map { "t.\(SQL.quote($0)) = s.\(SQL.quote($0))" }.joined(separator: " AND ")
                    let anyNull = sourceColumns.map { "s.\(SQL.quote($0)) IS NULL" }.joined(separator: " OR ")
                    filters.append(
                        "(s.Z_ENT NOT IN (\(scope)) OR \(anyNull) OR s.Z_PK = (SELECT min(t.Z_PK) FROM src.\(SQL.quote(from.name)) AS t WHERE \(same) AND t.Z_ENT IN (\(scope))))"
                    )
                    notes.append(
                        "\(table.name)(\(list)): a new uniqueness constraint of \(row.entity) that \(duplicates) rows of the source violate; the first row of each value (in key order) is kept and these \(duplicates) are not copied, nor the join-table rows that refer to them; to-one references to them become NULL"
                    )
                    let indexes = try database.tableSchema(from.name, in: "src")?.indexes ?? []
                    if !indexes.contains(where: { $0.columns.first?.caseInsensitiveCompare(sourceColumns[0]) == .orderedSame }) {
                        notes.append(
                            "\(from.name).\(sourceColumns[0]): the source has no index on it, so keeping the first row of each value reads the table once per row; on a large store add the index to a copy of the source first"
                        )
                    }
                } else {
                    notes.append(
                        "\(table.name)(\(list)): a new uniqueness constraint of \(row.entity) that \(duplicates) rows of the source violate: the batch that meets one fails, naming its source key (infer with keep-first duplicates to keep the first row of each value instead)"
                    )
                }
            }
        }
        return filters
    }

    // MARK: - Helpers

    mutating func decide(_ line: String) { if !decisions.contains(line) { decisions.append(line) } }
    mutating func note(_ line: String) { if !notes.contains(line) { notes.append(line) } }

    /// Notes each attribute of a source entity the plan copies that no destination property
    /// takes, where rows hold a value in it: Core Data's inference drops it too, and an app that
    /// carries it does so by its own code (a custom migration stage or policy), which the plan
    /// cannot see.
    private mutating func noteAttributesLeftOut(_ context: Context) throws {
        var taken: Set<String> = []
        for (destination, _) in context.mapping.sourceEntity {
            for (_, property) in context.mapping.destination.allProperties(of: destination) {
                if let match = context.mapping.sourceProperty(property.name, of: destination) {
                    taken.insert("\(match.declaredBy).\(match.property.name)")
                }
            }
        }
        let copied = Set(context.mapping.sourceEntity.values)
        for entity in context.mapping.source.entities.sorted(by: { $0.name < $1.name }) where copied.contains(entity.name) {
            for property in entity.properties
            where property.attribute != nil && !property.isTransient
                && property.attribute?.derivation == nil && !taken.contains("\(entity.name).\(property.name)")
            {
                guard let table = context.source.table(of: entity.name),
                    let column = context.source.column(of: property.name, entity: entity.name),
                    let number = context.source.entity(named: entity.name)?.number
                else { continue }
                let owners = context.source.descendants(of: number).map(String.init).joined(separator: ", ")
                let rows = try count(
                    "SELECT count(*) FROM src.\(SQL.quote(table.name)) WHERE \(SQL.quote(column.name)) IS NOT NULL AND Z_ENT IN (\(owners))"
                )
                guard rows > 0 else { continue }
                notes.append(
                    "\(entity.name).\(property.name): not in the destination model; \(rows) rows hold a value, which the plan does not copy, as Core Data's inference does not; where the app carries it by its own code (a custom migration stage or policy), give that as a step (--step)"
                )
            }
        }
    }

    func count(_ sql: String) throws -> Int64 {
        do { return try database.scalar(sql).integer ?? 0 } catch {
            throw MigrationError(.store, "cannot read the source: \(error.message)", file: sourcePath, sql: error.sql, cause: error)
        }
    }

    /// `.NAME_SUPPORT/_EXTERNAL_DATA` next to the store when it holds files: binary attributes
    /// stored outside the store.
    static func externalDataFolder(of store: String) -> String? {
        let url = URL(fileURLWithPath: store)
        let name = url.deletingPathExtension().lastPathComponent
        let folder = url.deletingLastPathComponent().appendingPathComponent(".\(name)_SUPPORT/_EXTERNAL_DATA").path
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return files.isEmpty ? nil : folder
    }
}
