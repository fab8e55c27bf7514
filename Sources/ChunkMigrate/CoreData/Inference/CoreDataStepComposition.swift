import Foundation

/// A custom step between two versions of a model: what Core Data would do with a mapping model
/// and a custom entity migration policy, written as the entity mappings of an ordinary plan
/// between a store of version `from` and a store of version `to` (their tables and columns as
/// those versions lay them out). Every table the step does not fill is inferred as usual.
///
/// ```json
/// { "from": "Model 2", "to": "Model 3",
///   "entities": [ { "name": "Section", "source": { "table": "ZPOST", "key": "Z_PK" },
///                   "destination": { "table": "ZSECTION", "key": "Z_PK" }, "keys": "allocate",
///                   "columns": { "Z_ENT": "coredata_entity_number('Section')", "Z_OPT": "1",
///                                "ZBODY": "ZCONTENT", "ZTITLE": "substr(ZCONTENT, 1, 4) || '...'" },
///                   "relationships": { "ZPOST": { "from": "Z_PK", "to": "Post" } } } ] }
/// ```
public struct CoreDataStep: Codable, Sendable, Equatable {
    /// The versions the step goes between, by name in the model bundle.
    public var from: String
    public var to: String
    /// The entity mappings of what the step does by hand.
    public var entities: [EntityMapping]
    /// What is left to write, as `plan --step-template` leaves it (`template(replacing:in:)`);
    /// a step runs without it.
    public var todo: [String]?

    /// Creates a custom step.
    public init(from: String, to: String, entities: [EntityMapping], todo: [String]? = nil) {
        self.from = from
        self.to = to
        self.entities = entities
        self.todo = todo
    }

    /// Decodes a step from JSON, with errors that name the path of what is wrong.
    public static func decode(json data: Data, file: String? = nil) throws(MigrationError) -> CoreDataStep {
        do {
            return try JSONDecoder().decode(CoreDataStep.self, from: data)
        } catch let error as DecodingError {
            throw MigrationError.plan(error, file: file)
        } catch {
            throw MigrationError(.invalidPlan, "the step is not valid JSON: \(error)", file: file, cause: error)
        }
    }
}

extension CoreDataStep {
    /// The step to write in place of an app's mapping model with custom policies, as far as the
    /// mapping model tells it: for each table an entity mapping with a policy fills, the entity
    /// mapping of the whole table the mapping model's declarative parts give (its rows, the
    /// columns its value expressions translate, the relationships), each value chunkmigrate cannot
    /// run and each column a policy may set left `NULL /* TODO ... */`, and ``todo`` saying what
    /// each policy is. A user edits SQL in it rather than starts from nothing, then gives it to
    /// `plan --step`.
    ///
    /// - Parameters:
    ///   - mappingModel: the app's mapping model, matched to the bundle's versions.
    ///   - bundle: the model bundle holding its two versions.
    /// - Returns: `nil` where the mapping model names no policy.
    /// - Throws: ``MigrationError`` where the bundle lacks its versions or an empty store of them
    ///   cannot be written.
    package static func template(replacing mappingModel: CoreDataMappingModelFile, in bundle: CoreDataModelBundle) throws -> CoreDataStep? {
        let withPolicies = mappingModel.entityMappings.filter { $0.policy != nil && $0.destination != nil }
        guard !withPolicies.isEmpty else { return nil }
        guard let from = bundle.version(named: mappingModel.source), let to = bundle.version(named: mappingModel.destination) else {
            throw MigrationError(
                .invalidPlan,
                "the mapping model \(mappingModel.url.lastPathComponent) goes from \(mappingModel.source) to \(mappingModel.destination), which the model bundle does not both have",
                file: mappingModel.url.path)
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chunkmigrate-template-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("from.sqlite"), destination = folder.appendingPathComponent("to.sqlite")
        try CoreDataEmptyStore.create(at: source, model: from.model)
        try CoreDataEmptyStore.create(at: destination, model: to.model)
        var options = InferenceOptions(modelBundle: bundle, sourceVersion: from.name, destinationVersion: to.name)
        options.mappingModel = mappingModel
        options.isPart = true
        options.templating = true
        let inferred = try MigrationPlan.infer(source: source, destination: destination, options: options)
        let layout = try CoreDataLayout(model: to.model)
        var entities: [EntityMapping] = []
        var todo: [String] = []
        for mapping in withPolicies {
            guard let into = mapping.destination, let table = layout.table(of: into) else { continue }
            todo.append(
                "\(mapping.policy!) (\(mapping.name), \(mapping.source ?? "no source") -> \(into)) is the app's code: write what it does to the rows of \(table.name) (which source rows, every column marked TODO, and any object it creates besides, as another entity of this step)"
            )
            let index: Int
            if let known = entities.firstIndex(where: { $0.destination.table.caseInsensitiveCompare(table.name) == .orderedSame }) {
                index = known
            } else if let entity = inferred.plan.entities.first(where: {
                $0.destination.table.caseInsensitiveCompare(table.name) == .orderedSame
            }) {
                entities.append(entity)
                index = entities.count - 1
            } else {
                continue
            }
            // The attributes of the entity the mapping model gives no value: what a policy sets,
            // if anything.
            let valued = Set(
                (mapping.attributes + mapping.relationships).filter { $0.value != nil && $0.value != .constant(.null) }.map(\.name))
            let lineage = Set(to.model.lineage(of: into).map(\.name))
            for column in table.columns {
                guard case let .attribute(owner, property) = column.role, lineage.contains(owner), !valued.contains(property),
                    entities[index].columns[column.name].map({ $0 == "NULL" }) ?? true
                else { continue }
                entities[index].columns[column.name] = "NULL /* TODO \(mapping.policy!): \(into).\(property) */"
            }
        }
        todo += inferred.notes.filter { $0.hasPrefix("TODO") }
        return CoreDataStep(from: from.name, to: to.name, entities: entities, todo: todo)
    }
}

extension CoreDataStep {
    /// Writes a step template (`template(replacing:in:)`) as `FOLDER/NAME.step.json` for each of
    /// the bundle's mapping models with custom policies that no step of `steps` replaces.
    ///
    /// - Returns: each file written, with the mapping model it replaces.
    /// - Throws: ``MigrationError`` naming the folder or file that cannot be written.
    package static func writeTemplates(for bundle: CoreDataModelBundle, except steps: [CoreDataStep], into folder: URL) throws -> [(
        file: URL, mappingModel: CoreDataMappingModelFile
    )] {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw MigrationError(
                .store, "cannot create the folder for step templates: \(error.localizedDescription)", file: folder.path, cause: error)
        }
        var written: [(file: URL, mappingModel: CoreDataMappingModelFile)] = []
        for model in bundle.mappingModels where !steps.contains(where: { $0.from == model.source && $0.to == model.destination }) {
            guard let template = try template(replacing: model, in: bundle) else { continue }
            let file = folder.appendingPathComponent((model.url.lastPathComponent as NSString).deletingPathExtension + ".step.json")
            do { try JSONEncoder.sortedAndIndented().encode(template).write(to: file) } catch {
                throw MigrationError(.store, "cannot write the step template: \(error.localizedDescription)", file: file.path, cause: error)
            }
            written.append((file, model))
        }
        return written
    }
}

/// One plan from a store at one version of a model to a store at a later one, through custom
/// steps: the path is cut at each step, each part inferred (between empty stores of the versions
/// at its ends, ``CoreDataEmptyStore``) or taken from the step, and the parts composed into one
/// plan, one pass over the data:
///
/// - each part's entity numbers written out (`coredata_entity(Z_ENT)` becomes `CASE Z_ENT WHEN 3
///   THEN 4 ... END` for that part's two versions), so that composed numbers go through every
///   version;
/// - a later part's expression over a table of the version between has each column replaced by
///   the earlier part's expression for it (`ZTITLE` of v3 from `substr(ZCONTENT, 1, 4)` of v2,
///   `ZCONTENT` of v2 from `ZCONTENT` of v1), its filter joined to the earlier one's, a column the
///   earlier part fills through a relationship kept a relationship;
/// - what cannot be composed is refused, naming the step, the entity and the column: an
///   expression reading another table of the version between, the key of rows the earlier part
///   gives new keys, a de-duplicated entity.
struct CoreDataStepComposition {
    let source: URL
    let destination: URL
    let database: Database
    let options: InferenceOptions

    /// One part of the path: versions `from` to `to` (indexes in the path), inferred or a step.
    private struct Part {
        var from: Int
        var to: Int
        var step: CoreDataStep?
        /// The app's mapping model the part runs (with every other one for the same versions).
        var mappingModel: CoreDataMappingModelFile?
        var plan = MigrationPlan(entities: [])
    }

    func compose() throws -> InferredPlan {
        guard let bundle = options.modelBundle else {
            throw MigrationError(.invalidPlan, "custom steps go between versions of the model bundle: give it (--models)")
        }
        func find(_ name: String?, schema: String, file: String) throws -> CoreDataModelBundle.Version {
            if let name {
                guard let version = bundle.version(named: name) else {
                    throw MigrationError(
                        .invalidPlan,
                        "the model bundle has no version \(name)\(MigrationPlan.suggestion(for: name, among: bundle.versions.map(\.name)))")
                }
                return version
            }
            return try bundle.version(of: database, schema: schema, file: file, asTarget: schema == "main").version
        }
        let first = try find(options.sourceVersion, schema: "src", file: source.path)
        let last = try find(options.destinationVersion, schema: "main", file: destination.path)
        do {
            return try compose(from: first, to: last, in: bundle)
        } catch var error as MigrationError
            where !error.message.contains("at version \(first.name),") && !error.message.contains("the source's \(first.name) ")
        {
            // Where the store stands, for a refusal on its path (a policy, a step).
            error.message += " (the source store is at version \(first.name), the destination's \(last.name))"
            throw error
        }
    }

    /// The plan from version `first` to version `last` (``compose()``).
    private func compose(
        from first: CoreDataModelBundle.Version, to last: CoreDataModelBundle.Version,
        in bundle: CoreDataModelBundle
    ) throws -> InferredPlan {
        var decisions: [String] = [], notes: [String] = []
        var propertyMappings: [PropertyMappingAccount] = []
        // Without steps, the path as the inference takes it: the order of versions asked for only
        // where it matters (``CoreDataModelBundle/versions(from:to:)``).
        let stepByStep = options.versionPath == .stepByStep
        guard
            let path = options.steps.isEmpty && !stepByStep
                ? Optional(try bundle.versions(from: first.name, to: last.name)) : bundle.path(from: first.name, to: last.name)
        else {
            throw MigrationError(
                .invalidPlan,
                "the source store is at version \(first.name), newer than the destination's \(last.name): a migration goes forward",
                file: source.path)
        }
        let names = path.map(\.name)

        // The parts: the steps where they are, inferred parts between.
        var parts: [Part] = []
        var cursor = 0
        let order = bundle.versions.map(\.name)
        for step in options.steps {
            guard let from = order.firstIndex(of: step.from), let to = order.firstIndex(of: step.to), from < to else {
                throw MigrationError(
                    .invalidPlan, "step \(step.from) -> \(step.to): not two versions of the model bundle, the first before the second")
            }
        }
        // Steps wholly before or after the path do not concern this store; one across an end
        // of it cannot be taken in part.
        let start = order.firstIndex(of: first.name)!, end = order.firstIndex(of: last.name)!
        let onPath = options.steps.filter { order.firstIndex(of: $0.to)! > start && order.firstIndex(of: $0.from)! < end }
        for step in onPath where order.firstIndex(of: step.from)! < start || order.firstIndex(of: step.to)! > end {
            throw MigrationError(
                .invalidPlan,
                "step \(step.from) -> \(step.to) goes across an end of the path from \(first.name) to \(last.name); it cannot be taken in part"
            )
        }
        // Version by version, every version between is a part's end: their order must be known.
        if names.count > 1, !onPath.isEmpty || (stepByStep && names.count > 2) { try CoreDataInference.refuseUnordered(bundle) }
        // The app's mapping models on the path, those for the same two versions one (Core Data's
        // multiple passes), each used for its versions as Core Data's progressive migration uses
        // it, unless a step goes between the same versions.
        var mappingModels: [CoreDataMappingModelFile] = []
        // A version of the path by name, or one whose entity hashes are the version's (Core Data
        // finds a mapping model by the hashes, and the path takes the first of versions alike).
        func place(_ name: String) -> Int? {
            if let index = names.firstIndex(of: name) { return index }
            guard let hashes = bundle.version(named: name)?.hashes else { return nil }
            return path.firstIndex { $0.hashes == hashes }
        }
        for var model in bundle.mappingModels {
            guard let from = place(model.source), let to = place(model.destination), from < to else { continue }
            (model.source, model.destination) = (names[from], names[to])
            if let step = onPath.first(where: { $0.from == model.source && $0.to == model.destination }) {
                decisions.append(
                    "the app's mapping model \(model.url.lastPathComponent) (\(model.source) -> \(model.destination)): step \(step.from) -> \(step.to) takes its place"
                )
                continue
            }
            if let index = mappingModels.firstIndex(where: { $0.source == model.source && $0.destination == model.destination }) {
                // Another pass between the same versions (a compiled one beside its source is one).
                mappingModels[index].entityMappings += model.entityMappings.filter { mapping in
                    !mappingModels[index].entityMappings.contains {
                        $0.name == mapping.name && $0.source == mapping.source && $0.destination == mapping.destination
                    }
                }
            } else {
                mappingModels.append(model)
            }
        }
        guard !onPath.isEmpty || !mappingModels.isEmpty || (stepByStep && names.count > 2) else {
            // Nothing but inference on this store's path.
            var inference = CoreDataInference(
                database: database, sourcePath: source.path, destinationPath: destination.path, options: options)
            return try inference.infer()
        }
        /// The inferred parts from version `from` to `to`: one straight across, as Core Data's
        /// automatic migration infers it; version by version, one a version.
        func inferred(from: Int, to: Int) -> [Part] {
            guard from < to else { return [] }
            return stepByStep ? (from..<to).map { Part(from: $0, to: $0 + 1) } : [Part(from: from, to: to)]
        }
        let candidates: [Part] =
            onPath.map { Part(from: names.firstIndex(of: $0.from)!, to: names.firstIndex(of: $0.to)!, step: $0) }
            + mappingModels.map {
                Part(from: names.firstIndex(of: $0.source)!, to: names.firstIndex(of: $0.destination)!, mappingModel: $0)
            }
        // From each version on: a step, else the mapping model that goes farthest; version by
        // version, the mapping model to the next version only.
        for candidate in candidates.sorted(by: { ($0.from, $0.step == nil ? 1 : 0, -$0.to) < ($1.from, $1.step == nil ? 1 : 0, -$1.to) }) {
            if stepByStep, let model = candidate.mappingModel, candidate.to > candidate.from + 1 {
                let skipped = names[(candidate.from + 1)..<candidate.to].joined(separator: ", ")
                decisions.append(
                    "the app's mapping model \(model.url.lastPathComponent) (\(names[candidate.from]) -> \(names[candidate.to])) is not on the path taken: it skips \(skipped), and the path goes step by step, one version to the next"
                )
                continue
            }
            guard candidate.from >= cursor else {
                if let step = candidate.step {
                    throw MigrationError(.invalidPlan, "step \(step.from) -> \(step.to) overlaps another step")
                }
                let other = parts.last { $0.from <= candidate.from && $0.to > candidate.from }
                let why =
                    other?.step.map { "step \($0.from) -> \($0.to) goes across it" }
                    ?? other?.mappingModel.map { "the app's mapping model \($0.url.lastPathComponent) goes across it" }
                    ?? "another goes from \(names[candidate.from]) on"
                let hint =
                    other?.mappingModel != nil && candidate.to == candidate.from + 1
                    ? " (the step-by-step path, --path step-by-step, takes it)" : ""
                decisions.append(
                    "the app's mapping model \(candidate.mappingModel!.url.lastPathComponent) (\(names[candidate.from]) -> \(names[candidate.to])) is not on the path taken: \(why)\(hint)"
                )
                continue
            }
            if let model = candidate.mappingModel, !model.policies.isEmpty {
                throw MigrationError(
                    .invalidPlan,
                    "the app's mapping model \(model.url.lastPathComponent) migrates version \(model.source) to \(model.destination) with custom migration policies, the app's code, which Core Data runs in place of an inferred mapping and chunkmigrate cannot: \(model.policies.joined(separator: ", ")); give what they do as a step from \(model.source) to \(model.destination) (--step; plan --step-template FOLDER writes one to start from)",
                    file: model.url.path)
            }
            parts += inferred(from: cursor, to: candidate.from)
            parts.append(candidate)
            cursor = candidate.to
        }
        parts += inferred(from: cursor, to: path.count - 1)

        // An empty store of each version between, for the inference of the parts around it.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chunkmigrate-steps-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var stores: [Int: URL] = [0: source, path.count - 1: destination]
        for part in parts {
            for index in [part.from, part.to] where stores[index] == nil {
                let url = folder.appendingPathComponent("version\(index).sqlite")
                try CoreDataEmptyStore.create(at: url, model: path[index].model)
                stores[index] = url
            }
        }

        // Every part as the destination's Core Data would migrate it, whatever wrote the stores between.
        let framework =
            try options.coreDataFramework ?? CoreDataMetadata.read(database, schema: "main", file: destination.path).frameworkVersion
        for index in parts.indices {
            let part = parts[index]
            var partOptions = InferenceOptions(
                renames: options.renames, keys: options.keys, keepFirstDuplicate: options.keepFirstDuplicate,
                modelBundle: bundle, sourceVersion: names[part.from], destinationVersion: names[part.to])
            partOptions.skippedTables = Set(part.step?.entities.map(\.destination.table) ?? [])
            partOptions.mappingModel = part.mappingModel
            partOptions.isPart = true
            partOptions.coreDataFramework = framework
            var inferred = try MigrationPlan.infer(source: stores[part.from]!, destination: stores[part.to]!, options: partOptions)
            propertyMappings += inferred.propertyMappings
            var plan = inferred.plan
            if let step = part.step {
                let read = try Self.check(step, source: stores[part.from]!, destination: stores[part.to]!)
                inferred = try Self.crediting(step, reading: read, in: inferred, from: path[part.from].model, to: path[part.to].model)
                plan = inferred.plan
                let inverses = try Self.fillingInverses(of: step, in: plan, layout: CoreDataLayout(model: path[part.to].model))
                plan = inverses.plan
                inferred.decisions += inverses.decisions
                let filled = Set(step.entities.map { $0.destination.table.uppercased() })
                plan.entities = plan.entities.filter { !filled.contains($0.destination.table.uppercased()) } + step.entities
                decisions.append(
                    "step \(step.from) -> \(step.to): \(step.entities.map(\.name).joined(separator: ", ")) as the step writes them, the rest inferred"
                )
            }
            let label =
                part.mappingModel.map { "\($0.url.lastPathComponent) (\(names[part.from]) -> \(names[part.to]))" }
                ?? "\(names[part.from]) -> \(names[part.to])"
            if let model = part.mappingModel {
                decisions.append(
                    "\(names[part.from]) -> \(names[part.to]): the app's mapping model \(model.url.lastPathComponent), in place of an inferred mapping, as Core Data migrates with it: \(model.entityMappings.map { "\($0.name) (\($0.source ?? "none") -> \($0.destination ?? "none"))" }.joined(separator: ", "))"
                )
            }
            // A path's own decisions name their versions already; the versions of a part are given.
            decisions += inferred.decisions.filter { !$0.hasPrefix("source store: version") && !$0.hasPrefix("destination store: version") }
                .map { $0.hasPrefix(names[part.from]) ? $0 : "\(label): \($0)" }
            // Notes about rows count only in the first part (the others read empty stores), and
            // those about the destination's history only in the last.
            notes += inferred.notes.filter { note in
                (part.from == 0 || !note.contains(" rows")) && (part.to == path.count - 1 || !note.contains("persistent history"))
            }.map { part.from == 0 ? $0 : "\(label): \($0)" }
            parts[index].plan = try Self.entityNumbersWrittenOut(
                plan, from: path[part.from].model, to: path[part.to].model, step: part.step)
        }

        var composed = parts[0].plan
        for part in parts.dropFirst() {
            let between = try Database(path: stores[part.from]!.path, mode: .source)
            composed = try Self.compose(
                composed, part.plan, between: between,
                label: part.step.map { "step \($0.from) -> \($0.to)" }
                    ?? "\(names[part.from]) -> \(names[part.to])")
        }
        let layout = try CoreDataLayout(model: last.model).resolved(against: database, schema: "main", file: destination.path).0
        try refuseMissingRequired(composed, layout: layout)
        // Derived values and external files as the destination model has them, whatever part
        // brought them: every derived attribute is computed from the migrated rows.
        var derived: [CoreDataMapping.DerivedValue] = [], external: [CoreDataMapping.ExternalData] = []
        let written = Set(composed.entities.map { $0.destination.table.uppercased() })
        for entity in last.model.entities {
            for property in entity.properties where !property.isTransient {
                guard let table = layout.table(of: entity.name), written.contains(table.name.uppercased()),
                    let attribute = property.attribute
                else { continue }
                if attribute.derivation != nil {
                    let computed = try CoreDataDerivation(entity: entity.name, attribute: property.name, layout: layout)
                    derived.append(
                        .init(
                            attribute: "\(computed.entity).\(computed.attribute)", table: computed.table, column: computed.column,
                            value: computed.value, rows: computed.rows))
                } else if attribute.allowsExternalStorage, let column = layout.column(of: property.name, entity: entity.name) {
                    external.append(.init(attribute: "\(entity.name).\(property.name)", table: table.name, column: column.name))
                }
            }
        }
        composed.coreData?.derived = derived
        composed.coreData?.externalData = external
        // History and CloudKit mirroring go between the two stores directly; CloudKit's rows
        // cannot be left behind, history's numbering is kept ahead by the job.
        let mirrored = try database.rows("SELECT name FROM src.sqlite_schema WHERE type = 'table' AND name LIKE 'ANSCK%'").compactMap {
            $0[0].text
        }
        for table in mirrored where (try database.scalar("SELECT EXISTS (SELECT 1 FROM src.\(SQL.quote(table)))").integer ?? 0) == 1 {
            throw MigrationError(
                .invalidPlan,
                "the source mirrors to CloudKit (\(table)), which a job through custom steps does not carry: the container would upload every object again; migrate without the step, or after the container's data is reset",
                file: source.path)
        }
        notes.append(
            "a job through custom steps or the app's mapping models does not carry persistent history (its numbering is kept ahead)")
        decisions.insert(
            contentsOf: [
                "source store: version \(first.name)", "destination store: version \(last.name)",
                "path: \(names.first!) -> \(names.last!), \(path.count - 1) steps, \(parts.count) parts composed into one job",
            ], at: 0)
        var inferred = InferredPlan(plan: composed, decisions: decisions, notes: notes)
        inferred.propertyMappings = propertyMappings
        return inferred
    }

    /// Refuses a composed plan that leaves a required attribute without a value in rows the
    /// source has: added after a step without a default, what the inference between empty stores
    /// could not count.
    private func refuseMissingRequired(_ plan: MigrationPlan, layout: CoreDataLayout) throws {
        for entity in plan.entities {
            guard let table = layout.table(named: entity.destination.table) else { continue }
            for column in table.columns {
                guard case let .attribute(owner, property) = column.role,
                    let declared = layout.model.entity(named: owner)?.property(named: property), !declared.isOptional,
                    declared.attribute?.derivation == nil, let number = layout.entity(named: owner)?.number
                else { continue }
                let value = entity.columns.first { $0.key.caseInsensitiveCompare(column.name) == .orderedSame }?.value
                guard value == nil || value == "NULL" else { continue }
                // A de-duplicated entity's natural key is filled from distinct.source, never from
                // columns (MigrationPlan.validate refuses it there); a relationship fills its own.
                guard entity.distinct?.destination.caseInsensitiveCompare(column.name) != .orderedSame,
                    !entity.relationships.keys.contains(where: { $0.caseInsensitiveCompare(column.name) == .orderedSame })
                else { continue }
                // Rows that become that entity (or one below it).
                let owners = layout.descendants(of: number).map(String.init).joined(separator: ", ")
                guard let entityNumber = entity.columns.first(where: { $0.key.uppercased() == "Z_ENT" })?.value else { continue }
                let condition = ["(\(entityNumber)) IN (\(owners))", entity.source.where.map { "(\($0))" }].compactMap { $0 }.joined(
                    separator: " AND ")
                let count =
                    ((try? database.scalar("SELECT count(*) FROM src.\(SQL.quote(entity.source.table)) WHERE \(condition)").integer) ?? nil)
                    ?? 0
                if count > 0 {
                    throw MigrationError(
                        .invalidPlan,
                        "attribute \(owner).\(property) is required and no step on the path gives it a value (no default where it was added), and \(count) rows of the source become \(owner): give it a default in the model, or a value in a step",
                        entity: owner, column: column.name)
                }
            }
        }
    }

    /// Refuses a step whose entity mappings name a table or column the versions at its ends do
    /// not have, or an expression SQLite rejects over them.
    ///
    /// - Returns: the columns of the source version the step reads, by table (upper case).
    @discardableResult
    static func check(_ step: CoreDataStep, source: URL, destination: URL) throws -> [String: Set<String>] {
        var read: [String: Set<String>] = [:]
        let label = "step \(step.from) -> \(step.to)"
        // As the job runs a step's statements: the version it goes to as `main`, the version it
        // comes from as `src`.
        let after = try Database(path: destination.path, mode: .source)
        try after.attach(Database.readOnlyURI(source.path), as: "src")
        for (index, entity) in step.entities.enumerated() {
            let path = "\(label): entities[\(index)]"
            guard let sourceTable = try after.tableSchema(entity.source.table, in: "src") else {
                throw MigrationError(
                    .invalidPlan, "\(path).source.table: version \(step.from) has no table \(entity.source.table)", entity: entity.name)
            }
            guard let destinationTable = try after.tableSchema(entity.destination.table, in: "main") else {
                throw MigrationError(
                    .invalidPlan, "\(path).destination.table: version \(step.to) has no table \(entity.destination.table)",
                    entity: entity.name)
            }
            for column in Array(entity.columns.keys) + Array(entity.relationships.keys)
            where !destinationTable.columns.contains(where: { $0.name.caseInsensitiveCompare(column) == .orderedSame }) {
                throw MigrationError(
                    .invalidPlan,
                    "\(path).columns.\(column): table \(entity.destination.table) of version \(step.to) has no column \(column)",
                    entity: entity.name, column: column)
            }
            // Each expression over a row of the source table: a column it names that the
            // version does not have is refused (functions of the job are not known here).
            let expressions =
                entity.columns.map { ($0.key, $0.value) } + entity.relationships.map { ($0.key, $0.value.from) }
                + [("where", entity.source.where)].compactMap { name, value in value.map { (name, $0) } }
            for (name, expression) in expressions {
                if expression.contains("/* TODO") {
                    throw MigrationError(
                        .invalidPlan,
                        "\(path).\(name == "where" ? "source.where" : "columns.\(name)"): \"\(expression)\" is a step template's mark, still to write (plan --step-template)",
                        entity: entity.name, column: name == "where" ? nil : name)
                }
                let sql = expression.replacingOccurrences(
                    of: #"coredata_entity(_number)?\("#, with: "abs(", options: [.regularExpression, .caseInsensitive])
                let at = "\(path).\(name == "where" ? "source.where" : "columns.\(name)")"
                let destinationTables: Set<String>
                do {
                    let statement = "SELECT \(sql) FROM src.\(SQL.quote(sourceTable.name)) AS s LIMIT 0"
                    for (table, columns) in try after.columnsRead(in: "src", preparing: statement) {
                        read[table.uppercased(), default: []].formUnion(columns.map { $0.uppercased() })
                    }
                    destinationTables = try after.tablesRead(in: "main", preparing: statement)
                } catch {
                    guard !error.message.contains("no such function") else { continue }
                    throw MigrationError(
                        .invalidPlan,
                        "\(at): SQLite rejects \"\(expression)\" over \(entity.source.table) of version \(step.from): \(error.message)",
                        entity: entity.name, column: name == "where" ? nil : name, cause: error)
                }
                // A table named without its schema is the destination's where it has one: at run
                // time the step would read the new store, not the old one (`main.` says so).
                if let table = destinationTables.sorted().first,
                    expression.range(of: #"(?i)\bmain\."#, options: .regularExpression) == nil
                {
                    throw MigrationError(
                        .invalidPlan,
                        "\(at): \"\(expression)\" reads table \(table) of version \(step.to), the store being written; a step reads the source's tables as src.\(table)",
                        entity: entity.name, column: name == "where" ? nil : name)
                }
            }
        }
        return read
    }

    /// The inferred part around a step, with the other side of each to-one the step fills where
    /// that side is a to-one of a table the step leaves to inference (a one-to-one: Post.section
    /// for the Section the step makes from each post): the row the step makes from this row,
    /// through the step entity's ID map, or NULL where it makes none.
    ///
    /// - Throws: ``MigrationError`` naming the step, its entity, the relationship and the side it
    ///   leaves empty, where the step's rows are not made one from each row of the other side.
    static func fillingInverses(of step: CoreDataStep, in plan: MigrationPlan, layout: CoreDataLayout) throws -> (
        plan: MigrationPlan, decisions: [String]
    ) {
        var plan = plan, decisions: [String] = []
        let filled = Set(step.entities.map { $0.destination.table.uppercased() })
        for (index, entity) in step.entities.enumerated() {
            guard
                let table = layout.tables.values.first(where: { $0.name.caseInsensitiveCompare(entity.destination.table) == .orderedSame })
            else { continue }
            for (column, relationship) in entity.relationships.sorted(by: { $0.key < $1.key }) {
                guard case let .toOne(owner, property)? = table.column(named: column)?.role,
                    let declared = layout.model.property(property, of: owner)?.property.relationship, let inverse = declared.inverse,
                    let inverseDeclared = layout.model.property(inverse, of: declared.destination),
                    inverseDeclared.property.relationship?.isToMany == false,
                    let targetTable = layout.table(of: declared.destination), !filled.contains(targetTable.name.uppercased()),
                    let inverseColumn = targetTable.column(for: .toOne(entity: inverseDeclared.declaredBy, property: inverse)),
                    let target = plan.entities.firstIndex(where: {
                        $0.destination.table.caseInsensitiveCompare(targetTable.name) == .orderedSame
                    })
                else { continue }
                let other = plan.entities[target]
                let key = entity.source.key ?? "rowid"
                guard entity.source.table.caseInsensitiveCompare(other.source.table) == .orderedSame,
                    relationship.from.caseInsensitiveCompare(key) == .orderedSame,
                    (other.source.key ?? "rowid").caseInsensitiveCompare(key) == .orderedSame
                else {
                    throw MigrationError(
                        .invalidPlan,
                        "step \(step.from) -> \(step.to): entities[\(index)] (\(entity.name)) fills \(owner).\(property), whose inverse \(inverseDeclared.declaredBy).\(inverse) is a to-one of \(targetTable.name), which the step leaves to inference and which its rows do not tell: add \(targetTable.name) to the step with \(inverseColumn.name) as a relationship to \(entity.name)",
                        entity: entity.name, column: column)
                }
                plan.entities[target].columns[inverseColumn.name] = nil
                plan.entities[target].relationships[inverseColumn.name] = .init(
                    from: other.source.key ?? "rowid", to: entity.name, missing: .null)
                if let entityColumn = targetTable.column(for: .toOneEntity(entity: inverseDeclared.declaredBy, property: inverse)) {
                    plan.entities[target].columns[entityColumn.name] =
                        entity.columns.first { $0.key.uppercased() == "Z_ENT" }?.value ?? "NULL"
                }
                decisions.append(
                    "\(inverseDeclared.declaredBy).\(inverse): the \(entity.name) that step \(step.from) -> \(step.to) makes from the row, through its ID map (the inverse of \(owner).\(property))"
                )
            }
        }
        return (plan, decisions)
    }

    /// The inferred part around a step, its notes as the step leaves them: an entity the step
    /// fills is not left empty, and an attribute the step reads is not left behind; each said as a
    /// decision instead.
    static func crediting(
        _ step: CoreDataStep, reading read: [String: Set<String>], in inferred: InferredPlan,
        from: CoreDataModel, to: CoreDataModel
    ) throws -> InferredPlan {
        let before = try CoreDataLayout(model: from), after = try CoreDataLayout(model: to)
        let filled = Set(step.entities.map { $0.destination.table.uppercased() })
        let label = "step \(step.from) -> \(step.to)"
        var result = inferred
        result.notes = []
        for note in inferred.notes {
            // "entity Color (3): new in the destination model; left empty"
            if note.hasPrefix("entity "), note.hasSuffix("; left empty"),
                let name = note.dropFirst(7).split(separator: " ").first.map(String.init),
                let table = after.table(of: name), filled.contains(table.name.uppercased())
            {
                result.decisions.append("entity \(name): filled by \(label)")
                continue
            }
            // "Post.color: not in the destination model; 10 rows hold a value, which the plan does not copy, ..."
            if let path = note.split(separator: ":").first, note.contains("which the plan does not copy") {
                let parts = path.split(separator: ".").map(String.init)
                if parts.count == 2, let table = before.table(of: parts[0]), let column = before.column(of: parts[1], entity: parts[0]),
                    read[table.name.uppercased()]?.contains(column.name.uppercased()) == true
                {
                    result.decisions.append("\(path): read by \(label)")
                    continue
                }
            }
            result.notes.append(note)
        }
        return result
    }

    /// The plan with `coredata_entity(x)` written out as the mapping of the two versions' entity
    /// numbers by name (`CASE x WHEN 3 THEN 4 ... END`), and `coredata_entity_number('Name')` as
    /// the later version's number.
    static func entityNumbersWrittenOut(_ plan: MigrationPlan, from: CoreDataModel, to: CoreDataModel, step: CoreDataStep?) throws
        -> MigrationPlan
    {
        let before = try CoreDataLayout(model: from), after = try CoreDataLayout(model: to)
        return try entityNumbersWrittenOut(
            plan, from: Dictionary(before.entities.values.map { ($0.name, $0.number) }, uniquingKeysWith: { a, _ in a }),
            to: Dictionary(after.entities.values.map { ($0.name, $0.number) }, uniquingKeysWith: { a, _ in a }),
            step: step)
    }

    /// ``entityNumbersWrittenOut(_:from:to:step:)`` with the entities' numbers by name, as the
    /// two stores' `Z_PRIMARYKEY` give them where they carry no model.
    static func entityNumbersWrittenOut(
        _ plan: MigrationPlan, from before: [String: Int64], to after: [String: Int64],
        step: CoreDataStep?
    ) throws -> MigrationPlan {
        let label = step.map { "step \($0.from) -> \($0.to): " } ?? ""
        var cases: [String] = []
        var identity = before.count == after.count
        for (destinationName, sourceName) in (plan.coreData?.entities ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let a = before[sourceName], let b = after[destinationName] else { continue }
            cases.append("WHEN \(a) THEN \(b)")
            if a != b { identity = false }
        }
        if cases.count != before.count { identity = false }
        func rewrite(_ sql: String) throws -> String {
            var text = sql
            // Each call, case aside, its argument to its closing parenthesis.
            while let start = text.range(of: #"\bcoredata_entity\s*\("#, options: [.regularExpression, .caseInsensitive]) {
                var depth = 1, end = start.upperBound
                while end < text.endIndex, depth > 0 {
                    if text[end] == "(" { depth += 1 } else if text[end] == ")" { depth -= 1 }
                    end = text.index(after: end)
                }
                guard depth == 0 else { throw MigrationError(.invalidPlan, "\(label)\(sql): an unclosed coredata_entity(") }
                let argument = text[start.upperBound..<text.index(before: end)]
                // Numbers that do not change: the value as it is.
                text.replaceSubrange(
                    start.lowerBound..<end, with: identity ? "(\(argument))" : "(CASE \(argument) \(cases.joined(separator: " ")) END)")
            }
            while let range = text.range(
                of: #"\bcoredata_entity_number\s*\(\s*('[^']*'|"[^"]*")\s*\)"#, options: [.regularExpression, .caseInsensitive])
            {
                let call = text[range]
                let open = call.firstIndex { $0 == "'" || $0 == "\"" }!
                let name = String(call[call.index(after: open)...].prefix { $0 != call[open] })
                guard let number = after[name] else {
                    throw MigrationError(
                        .invalidPlan, "\(label)coredata_entity_number('\(name)'): version \(step?.to ?? "") has no entity \(name)")
                }
                text.replaceSubrange(range, with: String(number))
            }
            if text.range(of: #"\bcoredata_entity"#, options: [.regularExpression, .caseInsensitive]) != nil {
                throw MigrationError(.invalidPlan, "\(label)\(sql): coredata_entity_number takes an entity's name in quotes")
            }
            return text
        }
        var plan = plan
        for index in plan.entities.indices {
            var entity = plan.entities[index]
            entity.columns = try entity.columns.mapValues(rewrite)
            entity.source.where = try entity.source.where.map(rewrite)
            entity.relationships = try entity.relationships.mapValues { relationship in
                var relationship = relationship
                relationship.from = try rewrite(relationship.from)
                return relationship
            }
            if var distinct = entity.distinct {
                distinct.source = try rewrite(distinct.source)
                entity.distinct = distinct
            }
            plan.entities[index] = entity
        }
        return plan
    }

    /// Whether `sql` is one expression in parentheses, the first closing the last: another pair
    /// around it changes nothing (each part of a long path would add one).
    static func isParenthesized(_ sql: String) -> Bool {
        guard sql.first == "(", sql.last == ")" else { return false }
        var depth = 0
        var quote: Character?
        for (offset, character) in sql.enumerated() {
            if let open = quote {
                if character == open { quote = nil }
                continue
            }
            switch character {
            case "'", "\"": quote = character
            case "(": depth += 1
            case ")":
                depth -= 1
                if depth == 0 { return offset == sql.count - 1 }
            default: break
            }
        }
        return false
    }

    /// An entity-number mapping of a number written out: `(CASE 2 WHEN 1 THEN 1 WHEN 2 THEN 3 END)`
    /// becomes `3`; mappings of mappings, as each part of a long path adds one, become one
    /// (``EntityNumberMap``).
    static func folded(_ sql: String) -> String {
        if let map = EntityNumberMap(sql) { return map.sql }
        // A number or a name in parentheses: as it is.
        if sql.range(of: #"^\((-?[0-9]+|[A-Za-z_][A-Za-z0-9_]*)\)$"#, options: .regularExpression) != nil {
            return String(sql.dropFirst().dropLast())
        }
        guard let match = sql.range(of: #"^\(CASE \(?(-?[0-9]+)\)? ((WHEN -?[0-9]+ THEN -?[0-9]+ ?)+)END\)$"#, options: .regularExpression)
        else { return sql }
        let parts = sql[match].split(separator: " ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "()")) }
        let value = parts[1]
        var index = 2
        while index + 3 < parts.count {
            if parts[index] == "WHEN", parts[index + 1] == value { return parts[index + 3] }
            index += 4
        }
        return "NULL"
    }

    /// `second` after `first`: a plan from `first`'s source to `second`'s destination, whose
    /// expressions read `first`'s source. `between` is the store of the version between (for the
    /// columns of its tables).
    static func compose(_ first: MigrationPlan, _ second: MigrationPlan, between: Database, label: String) throws -> MigrationPlan {
        func refuse(_ entity: String, _ column: String?, _ why: String) -> MigrationError {
            MigrationError(
                .invalidPlan, "\(label) cannot be composed with the steps before it: \(entity)\(column.map { ".\($0)" } ?? ""): \(why)",
                entity: entity, column: column)
        }
        // An entity of `first` goes on as the entity of `second` reading its destination table.
        func nameAfter(_ name: String) -> String? {
            guard let table = first.entities.first(where: { $0.name == name })?.destination.table else { return nil }
            return second.entities.first { $0.source.table.caseInsensitiveCompare(table) == .orderedSame }?.name
        }
        var result: [EntityMapping] = []
        for later in second.entities {
            let earlier = first.entities.filter { $0.destination.table.caseInsensitiveCompare(later.source.table) == .orderedSame }
            if later.distinct != nil || earlier.contains(where: { $0.distinct != nil }) {
                throw refuse(later.name, nil, "a de-duplicated entity does not compose; write the step across it")
            }
            let columns: Set<String>
            do {
                columns = Set(try between.tableSchema(later.source.table, in: "main")?.columns.map { $0.name.uppercased() } ?? [])
            } catch {
                throw refuse(later.name, nil, "cannot read table \(later.source.table) of the version between: \(error.message)")
            }
            for before in earlier {
                let relationships = Dictionary(
                    before.relationships.map { ($0.key.uppercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
                let values = Dictionary(before.columns.map { ($0.key.uppercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
                // The key of the version between's row, by the later part's name for it or by the
                // column the earlier part writes it to (a join table built from a to-one names
                // its row's Z_PK, with no key of its own).
                let keyNames: Set<String> = [
                    (later.source.key ?? "rowid").uppercased(), "ROWID", (before.destination.key ?? "rowid").uppercased(),
                ]
                // A relationship to the entity `before` goes on as resolves its keys through that
                // entity's ID map, whose keys are `before`'s source keys.
                var keyThroughIDMap = false
                func replace(_ name: String, column: String?) throws -> String? {
                    let upper = name.uppercased()
                    if keyNames.contains(upper) {
                        guard before.keys == .preserve || keyThroughIDMap else {
                            throw refuse(
                                later.name, column, "it reads the key of \(later.source.table), which \(before.name) gives new keys before")
                        }
                        return before.source.key ?? "rowid"
                    }
                    guard columns.contains(upper) else { return nil }
                    if let value = values[upper] {
                        // A name or a literal as it is; anything else in parentheses.
                        let simple = value.range(of: #"^([A-Za-z_][A-Za-z0-9_]*|[0-9.]+|'[^']*')$"#, options: .regularExpression) != nil
                        return simple || Self.isParenthesized(value) ? value : "(\(value))"
                    }
                    if relationships[upper] != nil {
                        throw refuse(
                            later.name, column,
                            "it reads \(name), which \(before.name) fills through a relationship; use it as a relationship's from")
                    }
                    return "NULL"
                }
                func substitute(_ sql: String, column: String?) throws -> String {
                    // A subquery that names its own rows `s` as the row's: its names cannot be
                    // told from the row's, which are replaced.
                    if sql.range(of: #"(?i)\bsrc\.("[^"]*"|\w+)\s+AS\s+s\b"#, options: .regularExpression) != nil {
                        throw refuse(later.name, column, "it reads another table of the version between under the row's own alias s")
                    }
                    return try SQLIdentifiers.replacing(in: sql) { name, qualifier in
                        if let qualifier {
                            guard qualifier.lowercased() == "s" else {
                                if qualifier.lowercased() == "src" {
                                    // Another table of the version between (a key path's subquery):
                                    // that table as the earlier part makes it.
                                    guard let table = try derivedTable(name, first: first, between: between) else {
                                        throw refuse(
                                            later.name, column,
                                            "it reads another table of the version between (\(qualifier).\(name)), which the steps before fill with new keys or de-duplicated"
                                        )
                                    }
                                    return table
                                }
                                if qualifier.lowercased() == "main" {
                                    throw refuse(later.name, column, "it reads another table of the version between (\(qualifier).\(name))")
                                }
                                return nil
                            }
                        }
                        // A column of the row qualified stays qualified: inside a subquery, a bare
                        // name could be a column of the subquery's own table. A value that is not
                        // one name cannot be qualified so.
                        guard let value = try replace(name, column: column) else { return nil }
                        guard qualifier != nil else { return value }
                        if value.range(of: #"^[A-Za-z_][A-Za-z0-9_]*$"#, options: .regularExpression) != nil { return "s.\(value)" }
                        if value.range(of: #"^\([A-Za-z_][A-Za-z0-9_]*\)$|^\("[^"]*"\)$|^"[^"]*"$"#, options: .regularExpression) != nil {
                            return "s." + value.trimmingCharacters(in: CharacterSet(charactersIn: "()"))
                        }
                        if value.range(of: #"^(-?[0-9.]+|'[^']*'|NULL)$"#, options: .regularExpression) != nil { return value }
                        throw refuse(
                            later.name, column,
                            "it reads s.\(name) in a subquery, which the steps before compute (\(value)) rather than copy")
                    }
                }
                var entity = EntityMapping(
                    name: earlier.count == 1 ? later.name : "\(later.name) from \(before.name)",
                    source: before.source, destination: later.destination,
                    keys: before.keys == .allocate || later.keys == .allocate ? .allocate : .preserve)
                let conditions = [before.source.where, try later.source.where.map { try substitute($0, column: nil) }].compactMap { $0 }
                entity.source.where = conditions.isEmpty ? nil : conditions.map { "(\($0))" }.joined(separator: " AND ")
                for (column, expression) in later.columns {
                    let bare = expression.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    if let relationship = relationships[bare.uppercased()] {
                        guard let target = nameAfter(relationship.to) else { continue }
                        entity.relationships[column] = .init(from: relationship.from, to: target, missing: relationship.missing)
                        continue
                    }
                    entity.columns[column] = Self.folded(try substitute(expression, column: column))
                }
                for (column, relationship) in later.relationships {
                    let bare = relationship.from.trimmingCharacters(in: .whitespaces).uppercased()
                    if let through = relationships[bare] {
                        // The earlier part's policy where it leaves rows out (null, skip).
                        entity.relationships[column] = .init(
                            from: through.from, to: relationship.to,
                            missing: through.missing == .fail ? relationship.missing : through.missing)
                    } else {
                        keyThroughIDMap = relationship.to == nameAfter(before.name)
                        defer { keyThroughIDMap = false }
                        entity.relationships[column] = .init(
                            from: try substitute(relationship.from, column: column), to: relationship.to,
                            missing: relationship.missing)
                    }
                }
                result.append(entity)
            }
        }
        var coreData = second.coreData
        if let names = second.coreData?.entities, let before = first.coreData?.entities {
            coreData?.entities = names.compactMapValues { before[$0] }
        }
        return MigrationPlan(entities: result, coreData: coreData)
    }
}

extension CoreDataStepComposition {
    /// Table `name` of the version between two parts, as the earlier part makes it from the
    /// source: a subquery with each of its columns (`(SELECT s.Z_PK AS "Z_PK", (expr) AS "ZNAME",
    /// ... FROM src."ZORG" AS s WHERE ...)`), for an expression of the later part that reads it
    /// (a key path through to-ones, the other side of a one-to-one). Where several entity
    /// mappings fill it, their rows together (`UNION ALL`); where none does, the table is empty
    /// at that version, and so is the subquery. `nil` where an entity mapping filling it gives
    /// rows new keys or de-duplicates them.
    static func derivedTable(_ name: String, first: MigrationPlan, between: Database) throws -> String? {
        let fills = first.entities.filter { $0.destination.table.caseInsensitiveCompare(name) == .orderedSame }
        guard fills.allSatisfy({ $0.keys == .preserve && $0.distinct == nil }), let schema = try between.tableSchema(name, in: "main")
        else { return nil }
        guard !fills.isEmpty else {
            return "(SELECT \(schema.columns.map { "NULL AS \(SQL.quote($0.name))" }.joined(separator: ", ")) WHERE 0)"
        }
        let selects = fills.map { before in
            let key = (before.destination.key ?? "rowid").uppercased()
            let values = Dictionary(before.columns.map { ($0.key.uppercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
            let relationships = Dictionary(
                before.relationships.map { ($0.key.uppercased(), $0.value.from) }, uniquingKeysWith: { a, _ in a })
            var columns = ["s.\(SQL.quote(before.source.key ?? "rowid")) AS \(SQL.quote(before.destination.key ?? "rowid"))"]
            for column in schema.columns where column.name.uppercased() != key {
                let value = values[column.name.uppercased()] ?? relationships[column.name.uppercased()] ?? "NULL"
                columns.append("(\(value)) AS \(SQL.quote(column.name))")
            }
            let filter = before.source.where.map { " WHERE \($0)" } ?? ""
            return "SELECT \(columns.joined(separator: ", ")) FROM src.\(SQL.quote(before.source.table)) AS s\(filter)"
        }
        return "(\(selects.joined(separator: " UNION ALL ")))"
    }
}

/// The identifiers of an SQL expression, outside string literals: each bare or quoted name
/// (with the qualifier before its dot, if any) that is not a function's name.
enum SQLIdentifiers {
    /// `sql` with each identifier for which `replacement` gives text replaced by it (a qualified
    /// name as a whole).
    static func replacing(in sql: String, _ replacement: (_ name: String, _ qualifier: String?) throws -> String?) throws -> String {
        let characters = Array(sql)
        var output = ""
        var index = 0
        func isStart(_ c: Character) -> Bool { c.isLetter || c == "_" }
        func isPart(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == "$" }
        // One identifier at `index`: bare, "quoted", [bracketed] or `backticked`.
        func identifier(at start: Int) -> (name: String, end: Int)? {
            guard start < characters.count else { return nil }
            let c = characters[start]
            if let close: Character = c == "\"" ? "\"" : c == "[" ? "]" : c == "`" ? "`" : nil {
                var end = start + 1
                var name = ""
                while end < characters.count {
                    if characters[end] == close {
                        if close != "]", end + 1 < characters.count, characters[end + 1] == close { name.append(close); end += 2; continue }
                        return (name, end + 1)
                    }
                    name.append(characters[end])
                    end += 1
                }
                return nil
            }
            guard isStart(c) else { return nil }
            var end = start
            while end < characters.count, isPart(characters[end]) { end += 1 }
            return (String(characters[start..<end]), end)
        }
        while index < characters.count {
            let c = characters[index]
            if c == "'" {
                // A string literal, '' inside it.
                var end = index + 1
                while end < characters.count {
                    if characters[end] == "'" {
                        if end + 1 < characters.count, characters[end + 1] == "'" { end += 2; continue }
                        break
                    }
                    end += 1
                }
                output += String(characters[index...min(end, characters.count - 1)])
                index = end + 1
                continue
            }
            if c.isNumber, index == 0 || !isPart(characters[index - 1]) {
                // A number (1e5, 0.5): not an identifier.
                var end = index
                while end < characters.count, isPart(characters[end]) || characters[end] == "." { end += 1 }
                output += String(characters[index..<end])
                index = end
                continue
            }
            guard let (name, end) = identifier(at: index), index == 0 || !isPart(characters[index - 1]) else {
                output.append(c)
                index += 1
                continue
            }
            // Qualified: `q.name`.
            if end < characters.count, characters[end] == ".", let (column, columnEnd) = identifier(at: end + 1) {
                let original = String(characters[index..<columnEnd])
                output += try replacement(column, name) ?? original
                index = columnEnd
                continue
            }
            // A function's name: followed by "(" (after spaces).
            var next = end
            while next < characters.count, characters[next] == " " { next += 1 }
            let original = String(characters[index..<end])
            if next < characters.count, characters[next] == "(" {
                output += original
            } else {
                output += try replacement(name, nil) ?? original
            }
            index = end
        }
        return output
    }
}

/// An entity-number mapping as composition writes it, each part of a path around the one before:
/// `(CASE ((CASE (Z_ENT) WHEN 1 THEN 2 WHEN 3 THEN 4 END)) WHEN 2 THEN 5 END)`, read as one
/// mapping of the name inside (`Z_ENT`: 1 -> 5; 3, which the outer one does not name, -> NULL),
/// so that a path of many versions writes one `CASE` of its own size, not one nested per version
/// (83 versions nested went past SQLite's parser stack). Only text of exactly that grammar: a
/// name, numbers, parentheses, `CASE`, `WHEN`, `THEN`, `END`.
struct EntityNumberMap: Equatable {
    /// The column mapped.
    var name: String
    /// Each number to what it becomes; a number not here becomes NULL.
    var pairs: [(Int64, Int64)]

    static func == (a: Self, b: Self) -> Bool { a.name == b.name && a.pairs.elementsEqual(b.pairs) { $0 == $1 } }

    init?(_ sql: String) {
        var tokens: [Substring] = []
        var rest = Substring(sql)
        while let first = rest.first {
            if first == " " { rest = rest.dropFirst(); continue }
            if first == "(" || first == ")" { tokens.append(rest.prefix(1)); rest = rest.dropFirst(); continue }
            let word = rest.prefix { $0 != " " && $0 != "(" && $0 != ")" }
            tokens.append(word)
            rest = rest.dropFirst(word.count)
        }
        var index = 0
        /// One expression: a name (`nil` map: identity), or a CASE over an expression.
        func expression() -> (name: String, pairs: [(Int64, Int64)]?)? {
            guard index < tokens.count else { return nil }
            if tokens[index] == "(" {
                index += 1
                guard let inner = expression(), index < tokens.count, tokens[index] == ")" else { return nil }
                index += 1
                return inner
            }
            if tokens[index].uppercased() == "CASE" {
                index += 1
                guard let argument = expression() else { return nil }
                var pairs: [(Int64, Int64)] = []
                while index + 3 < tokens.count, tokens[index].uppercased() == "WHEN", tokens[index + 2].uppercased() == "THEN",
                    let from = Int64(tokens[index + 1]), let to = Int64(tokens[index + 3])
                {
                    pairs.append((from, to))
                    index += 4
                }
                guard !pairs.isEmpty, index < tokens.count, tokens[index].uppercased() == "END" else { return nil }
                index += 1
                // The argument's own mapping first, then this one.
                guard let inner = argument.pairs else { return (argument.name, pairs) }
                var composed: [(Int64, Int64)] = []
                for (from, middle) in inner {
                    if let to = pairs.first(where: { $0.0 == middle })?.1 { composed.append((from, to)) }
                }
                return (argument.name, composed)
            }
            let word = tokens[index]
            guard word.range(of: #"^[A-Za-z_][A-Za-z0-9_]*$"#, options: .regularExpression) != nil,
                !["CASE", "WHEN", "THEN", "END", "NULL"].contains(word.uppercased())
            else { return nil }
            index += 1
            return (String(word), nil)
        }
        // Mappings nested only: one alone is already as short as it gets.
        guard sql.uppercased().components(separatedBy: "CASE").count > 2,
            let whole = expression(), index == tokens.count, let pairs = whole.pairs
        else { return nil }
        name = whole.name
        self.pairs = pairs
    }

    /// One `CASE` of the name; `NULL` where no number maps.
    var sql: String {
        pairs.isEmpty ? "NULL" : "(CASE \(name) \(pairs.map { "WHEN \($0.0) THEN \($0.1)" }.joined(separator: " ")) END)"
    }
}
