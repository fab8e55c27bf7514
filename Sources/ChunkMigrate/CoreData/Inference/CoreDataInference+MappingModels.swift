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
            note("the app's mapping model \(file) migrates version \(mapping.source) to \(mapping.destination) (\(mapping.entityMappings.map { "\($0.source ?? "none") -> \($0.destination ?? "none")" }.joined(separator: ", "))), with no custom policy; Core Data migrates with it in place of an inferred mapping, this plan infers that step: compare them, or give the mapping as a step (--step)")
        }
    }
}
