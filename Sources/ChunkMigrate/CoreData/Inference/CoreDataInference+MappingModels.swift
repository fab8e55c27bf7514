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

    /// Refuses a plan that leaves out the rows of a source entity that one of the app's mapping
    /// models on the path takes into another entity (Apptentive's text, file and automated
    /// messages merged into one message entity): Core Data's inference straight to the target
    /// would lose them too, but the app migrates with its mapping models, and running them is not
    /// inferring them. Names the mapping model, the entity and its rows, and what gives them.
    ///
    /// - Parameter dropped: the source entities the plan does not copy, with their rows.
    /// - Throws: ``MigrationError`` naming the mapping model and the entities.
    func checkRowsMappingModelsKeep(dropped: [String: Int64]) throws {
        for mapping in mappingModelsOnPath {
            let kept = mapping.entityMappings.compactMap { entity -> String? in
                guard let source = entity.source, let destination = entity.destination, let rows = dropped[source], rows > 0 else { return nil }
                return "\(source) (\(rows) rows) -> \(destination)"
            }
            guard !kept.isEmpty else { continue }
            throw MigrationError(.invalidPlan, "the app's mapping model \(mapping.url.lastPathComponent) migrates version \(mapping.source) to \(mapping.destination) and takes rows that the inferred plan leaves out: \(kept.joined(separator: ", ")); Core Data's inference straight to the target would lose them too, but the app migrates with its mapping models: give that step as a step from \(mapping.source) to \(mapping.destination) (--step)",
                                 file: mapping.url.path)
        }
    }
}
