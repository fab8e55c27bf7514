import Foundation

/// The two stores' models where no model bundle is given: two stores whose entity version hashes
/// are equal have the same model, as Core Data decides it, so a store without a model cache takes
/// the other store's model (or a model given for either) where the hashes say it is its own.
extension CoreDataInference {
    /// The source's and the destination's models: each the model given for it, else its model
    /// cache, else the other store's (or the other given model) where the store's entity version
    /// hashes are that model's, or, for a store that records no hashes, where its schema is that
    /// model's layout exactly. `nil` where neither store carries a model and none is given but
    /// the two are one model (equal hashes, or no hashes and the same schema): the caller copies
    /// them table for table (``CoreDataSameModelPlan``).
    ///
    /// - Throws: ``MigrationError`` naming the store without a model and the option that gives
    ///   one.
    mutating func storeModels() throws -> (source: CoreDataModel, destination: CoreDataModel)? {
        var source = try options.sourceModel ?? CoreDataModel.read(database, schema: "src", file: sourcePath)
        var destination = try options.destinationModel ?? CoreDataModel.read(database, schema: "main", file: destinationPath)
        let sourceHashes = hashes(schema: "src", file: sourcePath), destinationHashes = hashes(schema: "main", file: destinationPath)
        let given = [options.sourceModel, options.destinationModel].compactMap { $0 }

        /// The model of a store without one: the other's, or a model given, whose hashes are the
        /// store's (or whose layout its schema is, where it records no hashes).
        func model(for schema: String, hashes: CoreDataVersionHashes?, file: String, other: CoreDataModel?) -> (CoreDataModel, String)? {
            let role = schema == "src" ? "source" : "destination"
            let otherRole = schema == "src" ? "the destination's" : "the source's"
            for (candidate, whose) in [(other, otherRole + " model")] + given.map({ ($0, "the model given") }) {
                guard let candidate else { continue }
                if let hashes {
                    if CoreDataVersionHashes(model: candidate) == hashes {
                        return (candidate, "\(role) store: no model cache; its entity version hashes are \(whose)'s, so that is its model")
                    }
                } else if (try? CoreDataLayout(model: candidate).resolved(against: database, schema: schema, file: file)) != nil {
                    return (
                        candidate,
                        "\(role) store: no model cache and no entity version hashes; its schema is \(whose)'s layout exactly, so that is taken for its model"
                    )
                }
            }
            return nil
        }
        if source == nil, let (found, line) = model(for: "src", hashes: sourceHashes, file: sourcePath, other: destination) {
            source = found
            decide(line)
        }
        if destination == nil, let (found, line) = model(for: "main", hashes: destinationHashes, file: destinationPath, other: source) {
            destination = found
            decide(line)
        }
        if let source, let destination { return (source, destination) }
        if source == nil, destination == nil, sourceHashes == destinationHashes { return nil }
        let (file, option, hashes, other) =
            source == nil
            ? (sourcePath, "--model-from", sourceHashes, destination)
            : (destinationPath, "--model-to", destinationHashes, source)
        let why =
            other == nil
            ? ""
            : hashes == nil
                ? ", records no entity version hashes, and its schema is not the other store's model's layout"
                : ", and its entity version hashes are not the other store's model's"
        throw MigrationError(
            .store,
            "the store has no model cache (Z_MODELCACHE, written since iOS 10)\(why): give its model with \(option) (the .xcdatamodel folder inside the .xcdatamodeld, or a compiled .mom), or every version of the app's model with --models",
            file: file)
    }

    /// The entity version hashes the metadata of the store open as `schema` records; `nil` when
    /// it records none (no property list, or no hashes in it).
    func hashes(schema: String, file: String) -> CoreDataVersionHashes? {
        ((try? CoreDataMetadata.read(database, schema: schema, file: file))?.plist).flatMap { CoreDataVersionHashes(metadata: $0) }
    }
}
