import Foundation
import MigrationJournal

/// A plan inferred from a source and a destination store, with what the inference decided and
/// what it could not.
public struct InferredPlan: Sendable {
    /// The plan: an ordinary plan that can be edited and run.
    public var plan: MigrationPlan
    /// What the inference decided, one line each (entities matched, entity numbers, join tables,
    /// columns converted).
    public var decisions: [String]
    /// What it could not decide or will not copy, one line each (an entity or attribute with no
    /// counterpart, a type change it cannot convert, a new uniqueness constraint that rows of the
    /// source violate, tables left behind).
    public var notes: [String]
    /// With an app's mapping model: what became of each of its property mappings that gives a
    /// value (read as it is, translated into SQL, computed, not stored).
    var propertyMappings: [PropertyMappingAccount] = []
}

/// How a plan's path from the source store's version to the destination's goes through the
/// versions of an app's model bundle and its mapping models.
public enum VersionPath: String, Sendable, CaseIterable {
    /// From each version, the app's mapping model that goes farthest, and inference straight
    /// from one to the next mapping model: the fewest parts. A mapping model another goes across
    /// is not taken, and the plan's decisions name it.
    case farthest
    /// The app's own progressive path, as a migrator that migrates one version at a time runs it:
    /// each version to the next, through the app's mapping model between the two where there is
    /// one, else inferred; the parts composed into one job. A mapping model that skips versions
    /// is not taken, and the plan's decisions name it. Where inference from one version to the
    /// next gives what inference straight across the path does not (an attribute removed and
    /// added again, whose values a version between drops), this is the app's result.
    case stepByStep = "step-by-step"
}

/// What plan inference may know beyond the two stores.
public struct InferenceOptions: Sendable {
    /// Destination entity name -> source entity name, for entities renamed between the models.
    public var renames: [String: String]
    /// The source store's model, for a store without a model cache (written before iOS 10);
    /// `nil` reads the store's own.
    public var sourceModel: CoreDataModel?
    /// The destination store's model, for a store without a model cache; `nil` reads the
    /// store's own.
    public var destinationModel: CoreDataModel?
    /// `preserve` (the default for Core Data: object IDs the app saved as URIs stay valid) or
    /// `allocate` (to-one and join-table keys then go through the ID map).
    public var keys: EntityMapping.KeyPolicy
    /// Where the destination has a uniqueness constraint that rows of the source violate: `false`
    /// (the default) lets the batch that meets such a row fail, naming it; `true` keeps the first
    /// row of each value in source-key order and leaves the others out (the report counts them).
    public var keepFirstDuplicate: Bool
    /// Every version of the app's model (an `.xcdatamodeld` or `.momd`): the plan then covers the
    /// whole path from the source store's version to the destination's: one mapping from the
    /// first straight to the last, as Core Data's automatic migration infers it, with the renames
    /// of the versions between followed where it leaves an entity or property new
    /// (`CoreDataModelMapping/init(path:renames:)`).
    public var modelBundle: CoreDataModelBundle?
    /// The source store's version in ``modelBundle``, by name, where its metadata and model cache
    /// do not tell it (`nil`: found from the store).
    public var sourceVersion: String?
    /// The destination store's version in ``modelBundle``, by name (`nil`: found from the store).
    public var destinationVersion: String?
    /// Custom steps between versions of ``modelBundle`` (a plan for what one version to the next
    /// cannot infer): composed with the inferred steps before and after into one plan.
    public var steps: [CoreDataStep] = []
    /// How the path goes through the app's mapping models (``VersionPath``).
    public var versionPath: VersionPath = .farthest
    /// Destination tables the inference leaves alone (a custom step fills them).
    var skippedTables: Set<String> = []
    /// The app's mapping model the plan runs between its two versions, in place of the inferred
    /// mapping (a part of a path, ``CoreDataStepComposition``).
    var mappingModel: CoreDataMappingModelFile?
    /// The options of one part of a composed path, inferred as it is.
    var isPart = false
    /// What an app's mapping model says that has no SQL is written as `NULL /* TODO ... */` and
    /// noted, not refused: the plan a step template starts from (`CoreDataStep.template(replacing:in:)`).
    var templating = false
    /// The Core Data framework version whose migration the plan follows (which tables it alters
    /// in place); `nil` reads the destination store's `NSPersistenceFrameworkVersion`.
    var coreDataFramework: Int?

    /// Creates inference options.
    public init(
        renames: [String: String] = [:], sourceModel: CoreDataModel? = nil, destinationModel: CoreDataModel? = nil,
        keys: EntityMapping.KeyPolicy = .preserve, keepFirstDuplicate: Bool = false,
        modelBundle: CoreDataModelBundle? = nil, sourceVersion: String? = nil, destinationVersion: String? = nil
    ) {
        self.renames = renames
        self.modelBundle = modelBundle
        self.sourceVersion = sourceVersion
        self.destinationVersion = destinationVersion
        self.sourceModel = sourceModel
        self.destinationModel = destinationModel
        self.keys = keys
        self.keepFirstDuplicate = keepFirstDuplicate
    }
}

extension MigrationPlan {
    /// Infers a plan from two stores, the way Core Data's lightweight migration infers a mapping
    /// model.
    ///
    /// Between Core Data stores, from the models the stores carry (their model caches) or that
    /// the options give: entities and properties matched by renaming identifier or name
    /// (`CoreDataModelMapping`), each store's layout derived from its model and checked against
    /// its schema (`CoreDataLayout`), then each destination column filled from the column of
    /// the matching source property for the rows of each source entity, whatever the two
    /// versions name those columns: `Z_ENT` and polymorphic `Z<n>_<REL>` columns through
    /// `coredata_entity()`, the destination's default where the source entity did not have the
    /// property, join tables from the same relationship on either side, order columns, `Z_OPT`;
    /// keys preserved. Between plain SQLite stores: tables and columns by name, relationships from
    /// the destination's declared foreign keys, keys preserved.
    ///
    /// - Parameters:
    ///   - source: the store to migrate.
    ///   - destination: the empty store of the new version (for a Core Data store, the one Core
    ///     Data created with the new model).
    ///   - options: renames the models do not record, models for stores without a model cache,
    ///     and the key policy.
    /// - Throws: ``MigrationError`` naming the file when a store cannot be read, only one of them
    ///   is a Core Data store, a store has no model (or does not fit it), the two models have no
    ///   entity in common, or a change is one lightweight migration cannot infer (naming the
    ///   entity and property).
    public static func infer(source: URL, destination: URL, options: InferenceOptions = InferenceOptions()) throws -> InferredPlan {
        try Stores.checkSource(source.path)
        guard FileManager.default.fileExists(atPath: destination.path) else {
            throw MigrationError(
                .store, "the destination does not exist; create it first (for Core Data: add a persistent store with the new model)",
                file: destination.path)
        }
        let database: Database
        do {
            database = try Database(path: destination.path, mode: .readOnly)
            // What the inference counts may read an app's mapping model's filters.
            try ValueFunctions.registerText(on: database)
            try database.attach(Database.sourceURI(source.path), as: "src")
        } catch {
            throw MigrationError(.store, "cannot open the stores: \(error.message)", file: error.file ?? destination.path, cause: error)
        }
        switch (try CoreDataEntities.isCoreData(database, schema: "src"), try CoreDataEntities.isCoreData(database, schema: "main")) {
        case (true, true):
            if !options.isPart,
                !options.steps.isEmpty || !(options.modelBundle?.mappingModels.isEmpty ?? true)
                    || (options.modelBundle != nil && options.versionPath == .stepByStep)
            {
                return try CoreDataStepComposition(source: source, destination: destination, database: database, options: options).compose()
            }
            var inference = CoreDataInference(
                database: database, sourcePath: source.path,
                destinationPath: destination.path, options: options)
            return try inference.infer()
        case (false, false):
            return try inferPlain(database)
        case (true, false):
            throw MigrationError(
                .store,
                "the source is a Core Data store but the destination is not (it has no Z_PRIMARYKEY): create the destination with Core Data and the new model",
                file: destination.path)
        case (false, true):
            throw MigrationError(
                .store, "the destination is a Core Data store but the source is not (it has no Z_PRIMARYKEY)",
                file: source.path)
        }
    }

    /// The tables of `source` that no entity of the plan reads (Core Data's own bookkeeping
    /// tables aside), so that a run can say what it leaves behind.
    public func tablesNotCopied(from source: URL) throws -> [String] {
        let database = try Database(path: source.path, mode: .source)
        let read = Set(entities.map { $0.source.table.lowercased() })
        return try database.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .compactMap { $0[0].text }
            .filter { !read.contains($0.lowercased()) && !CoreDataLayout.bookkeepingTables.contains($0) }
    }

    /// Plain SQLite stores: tables and columns by name; the rowid alias as the key, preserved;
    /// declared foreign keys of the destination as relationships.
    private static func inferPlain(_ database: Database) throws -> InferredPlan {
        func tables(_ schema: String) throws -> [String] {
            try database.rows("SELECT name FROM \(schema).sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
                .compactMap { $0[0].text }
        }
        let sourceTables = try tables("src")
        let sourceByName = Dictionary(sourceTables.map { ($0.lowercased(), $0) }, uniquingKeysWith: { a, _ in a })
        var decisions: [String] = []
        var notes: [String] = []
        var entities: [EntityMapping] = []
        var used: Set<String> = []
        for table in try tables("main") {
            guard let from = sourceByName[table.lowercased()] else {
                notes.append("table \(table): no table of that name in the source; left as it is")
                continue
            }
            used.insert(from)
            let sourceTable = try database.tableSchema(from, in: "src")
            let destinationTable = try database.tableSchema(table, in: "main")
            let sourceColumns = sourceTable?.columns ?? [], destinationColumns = destinationTable?.columns ?? []
            // The key a person reads as the table's: its one INTEGER primary-key column.
            let sourceKey = sourceTable?.integerPrimaryKey?.name
            let destinationKey = destinationTable?.integerPrimaryKey?.name
            let sourceNames = Dictionary(sourceColumns.map { ($0.name.lowercased(), $0.name) }, uniquingKeysWith: { a, _ in a })
            var foreignKeys: [String: String] = [:]
            for key in destinationTable?.foreignKeys ?? [] {
                for column in key.originColumns { foreignKeys[column] = key.destinationTable }
            }
            var columns: [String: String] = [:]
            var relationships: [String: EntityMapping.Relationship] = [:]
            for column in destinationColumns {
                let name = column.name
                guard name != destinationKey else { continue }
                guard let sourceName = sourceNames[name.lowercased()] else {
                    notes.append("\(table).\(name): no column of that name in the source; it takes its default")
                    continue
                }
                if let target = foreignKeys[name] {
                    relationships[name] = .init(from: sourceName, to: target)
                } else {
                    columns[name] = SQL.identifier(sourceName)
                }
            }
            for column in sourceColumns {
                let name = column.name
                guard name != sourceKey, destinationTable?.column(named: name) == nil else { continue }
                notes.append("\(from).\(name): no column of that name in the destination; not copied")
            }
            entities.append(
                EntityMapping(
                    name: table, source: .init(table: from, key: sourceKey),
                    destination: .init(table: table, key: destinationKey),
                    keys: sourceKey != nil && destinationKey != nil ? .preserve : .allocate,
                    columns: columns, relationships: relationships))
            decisions.append(
                "\(from) -> \(table): \(columns.count) columns, \(relationships.count) relationships, keys \(sourceKey != nil && destinationKey != nil ? "preserved" : "allocated")"
            )
        }
        for table in sourceTables where !used.contains(table) {
            notes.append("table \(table): no table of that name in the destination; not copied")
        }
        // A relationship to a table the plan does not copy cannot be resolved.
        let names = Set(entities.map(\.name))
        for index in entities.indices {
            for (column, relationship) in entities[index].relationships where !names.contains(relationship.to) {
                entities[index].relationships[column] = nil
                entities[index].columns[column] = SQL.identifier(relationship.from)
                notes.append(
                    "\(entities[index].name).\(column): references \(relationship.to), which the plan does not copy; copied as it is")
            }
        }
        guard !entities.isEmpty else {
            throw MigrationError(
                .store, "the two stores have no table in common: they are not two versions of one schema",
                file: database.path)
        }
        return InferredPlan(plan: MigrationPlan(entities: entities), decisions: decisions, notes: notes)
    }
}
