import Foundation

/// The app's own mapping models on a store's path. Core Data migrates with a mapping model it
/// finds from the store's model to the current one instead of inferring one, and an app's own
/// migrator may go through one per version; a custom migration policy in one is the app's code.
extension CoreDataInference {
    /// Refuses a path through a mapping model with custom migration policies (unless a custom
    /// step takes its place), naming the mapping model, its versions and its policies; notes one
    /// without, which Core Data would migrate with instead of the inferred mapping.
    ///
    /// - Throws: ``MigrationError`` naming the mapping model and its policies.
    mutating func checkMappingModels(_ bundle: CoreDataModelBundle, path: [CoreDataModelBundle.Version]) throws {
        let names = path.map(\.name)
        pathNames = names
        versionEntities = path.map { Set($0.model.entities.map(\.name)) }
        for mapping in bundle.mappingModels {
            guard let from = names.firstIndex(of: mapping.source), let to = names.firstIndex(of: mapping.destination), from < to,
                  !options.steps.contains(where: { $0.from == mapping.source && $0.to == mapping.destination }) else { continue }
            let file = mapping.url.lastPathComponent
            if !mapping.policies.isEmpty {
                throw MigrationError(.invalidPlan, "the app's mapping model \(file) migrates version \(mapping.source) to \(mapping.destination) with custom migration policies, the app's code, which Core Data runs in place of an inferred mapping and chunkmigrate cannot: \(mapping.policies.joined(separator: ", ")); give what they do as a step from \(mapping.source) to \(mapping.destination) (--step)",
                                     file: mapping.url.path)
            }
            mappingModelsOnPath.append(mapping)
            note("the app's mapping model \(file) migrates version \(mapping.source) to \(mapping.destination) (\(mapping.entityMappings.map { "\($0.source ?? "none") -> \($0.destination ?? "none")" }.joined(separator: ", "))), with no custom policy; Core Data migrates with it in place of an inferred mapping, this plan infers that step: compare them, or give the mapping as a step (--step)")
        }
    }

    /// Refuses a plan that leaves out the rows of a source entity that the app's mapping models on
    /// the path take into the target (Apptentive's text, file and automated messages merged into
    /// one message entity): the entity is followed along the path, through each mapping model's
    /// entity mappings where one covers a step, by name where none does; where that reaches an
    /// entity of the target through a mapping model, the app keeps the rows. Core Data's
    /// inference straight to the target would lose them too, but the app migrates with its
    /// mapping models, and running them is not inferring them. Names the mapping models, the
    /// entity and its rows.
    ///
    /// - Parameter dropped: the source entities the plan does not copy, with their rows.
    /// - Throws: ``MigrationError`` naming the mapping models and the entities.
    func checkRowsMappingModelsKeep(dropped: [String: Int64]) throws {
        guard !mappingModelsOnPath.isEmpty, let names = pathNames else { return }
        var kept: [(entity: String, rows: Int64, target: String, through: [CoreDataMappingModelFile])] = []
        for (entity, rows) in dropped.sorted(by: { $0.key < $1.key }) where rows > 0 {
            var name: String? = entity
            var through: [CoreDataMappingModelFile] = []
            var index = 0
            while index < names.count - 1, let current = name {
                if let mapping = mappingModelsOnPath.first(where: { $0.source == names[index] }),
                   let end = names.firstIndex(of: mapping.destination), end > index {
                    name = mapping.entityMappings.first { $0.source == current }?.destination
                    if name != nil { through.append(mapping) }
                    index = end
                } else {
                    index += 1
                    name = versionEntities[index].contains(current) ? current : nil
                }
            }
            if let name, !through.isEmpty { kept.append((entity, rows, name, through)) }
        }
        guard let first = kept.first else { return }
        let files = Array(Set(kept.flatMap { $0.through.map(\.url.lastPathComponent) })).sorted()
        throw MigrationError(.invalidPlan, "the app's mapping models (\(files.joined(separator: ", "))) take rows into version \(names.last!) that the inferred plan leaves out: \(kept.map { "\($0.entity) (\($0.rows) rows) -> \($0.target)" }.joined(separator: ", ")); Core Data's inference straight to the target would lose them too, but the app migrates with its mapping models: give those steps as steps (--step)",
                             file: first.through.last!.url.path)
    }
}
