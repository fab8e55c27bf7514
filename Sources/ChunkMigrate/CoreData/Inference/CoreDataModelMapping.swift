import Foundation

/// Which source entity each destination entity takes its rows from, and which source property
/// each destination property takes its values from: the mapping Core Data infers between two
/// versions of a model, before any SQL.
///
/// Matched as Core Data's inferred mapping model matches them:
/// - an entity by its renaming identifier when it has one, else by name (or a rename the caller
///   gives);
/// - a property of a matched entity by its renaming identifier, else by name, among every
///   property the source entity has (its own and inherited), so a property moved up or down the
///   hierarchy keeps its values.
///
/// What lightweight migration cannot infer is refused here, naming the entity and property: an
/// attribute that becomes a relationship or the reverse, a type change that is not between
/// numbers (or strings and URIs), a relationship now pointing at an entity whose rows come from
/// another entity tree than those it pointed at, two destination entities taking one source
/// entity's rows. (A relationship narrowed to a sub-entity of its old destination is inferred:
/// the plan leaves NULL where a row pointed at another entity.)
///
/// ```swift
/// let mapping = try CoreDataModelMapping(source: oldModel, destination: newModel)
/// mapping.sourceEntity["Post"]                                  // "Post"
/// mapping.sourceProperty("hexColor", of: "Post")?.property.name  // "color"
/// ```
public struct CoreDataModelMapping: Sendable {
    /// The source model.
    public let source: CoreDataModel
    /// The destination model.
    public let destination: CoreDataModel
    /// Destination entity name -> the source entity whose rows it takes.
    public private(set) var sourceEntity: [String: String] = [:]
    /// What was matched other than by an unchanged name, one line each.
    public private(set) var decisions: [String] = []

    /// Over several versions (``init(path:renames:)``): how each property of each destination
    /// entity takes its value, followed through every version between.
    private var composed: [String: [String: Composed]]?
    /// Over several versions: each version to the next, the versions' names, and each
    /// destination entity's name in every version (`nil` where it does not exist yet).
    private(set) var hops: [CoreDataModelMapping] = []
    private(set) var versionNames: [String] = []
    private(set) var entityNames: [String: [String?]] = [:]

    /// A destination property's value over several versions.
    private struct Composed: Sendable {
        /// The source property it comes from, through every rename on the way.
        var source: (declaredBy: String, property: CoreDataModel.Property)?
        /// Without a source: the value rows take, the default it had in the version that added
        /// it (Core Data writes it into the rows then), or the default of a later version that
        /// made it required.
        var newValue: CoreDataModel.Value?
        /// With a source: the value NULLs take, the default of the first version on the way that
        /// made it required.
        var nullFill: CoreDataModel.Value?
        /// With a source: the attribute's type in each version from the source's on.
        var types: [CoreDataModel.AttributeType] = []
        /// Without a source: the index of the version that added it.
        var addedAt: Int?
    }

    /// Source entities that no destination entity takes rows from (removed from the model).
    public var removedEntities: [String] {
        let mapped = Set(sourceEntity.values)
        return source.entities.map(\.name).filter { !mapped.contains($0) }.sorted()
    }

    /// Matches two models.
    ///
    /// - Parameter renames: destination entity name -> source entity name, for renames the models
    ///   do not record.
    /// - Throws: ``MigrationError`` naming the entity and property of a change lightweight
    ///   migration cannot infer.
    public init(source: CoreDataModel, destination: CoreDataModel, renames: [String: String] = [:]) throws {
        self.source = source
        self.destination = destination
        for name in renames.keys.sorted() where destination.entity(named: name) == nil {
            throw MigrationError(.invalidPlan, "renames: the destination model has no entity \"\(name)\"\(MigrationPlan.suggestion(for: name, among: destination.entities.map(\.name)))")
        }
        var claimedBy: [String: String] = [:]
        for entity in destination.entities {
            var candidates: [String] = []
            if let given = renames[entity.name] {
                guard source.entity(named: given) != nil else {
                    throw MigrationError(.invalidPlan, "renames: the source model has no entity \"\(given)\" (for \(entity.name))")
                }
                candidates = [given]
            } else {
                if let previous = entity.renamingIdentifier, !previous.isEmpty, previous != entity.name { candidates.append(previous) }
                candidates.append(entity.name)
            }
            guard let from = candidates.first(where: { source.entity(named: $0) != nil }) else { continue }
            if let other = claimedBy[from] {
                throw MigrationError(.invalidPlan, "entities \(other) and \(entity.name) of the destination model both take the rows of source entity \(from); lightweight migration cannot split an entity, write a plan for it")
            }
            claimedBy[from] = entity.name
            sourceEntity[entity.name] = from
            if from != entity.name {
                decisions.append("entity \(entity.name): renamed from \(from) (\(renames[entity.name] != nil ? "given" : "renamingIdentifier"))")
            }
        }
        try checkProperties()
    }

    /// Matches the first and last of several versions of a model, oldest first, as Core Data's
    /// migrations from one version to the next would one after the other: each version to the
    /// next (``init(source:destination:renames:)``), then followed through. A property renamed
    /// twice (`a` to `b`, then `b` to `c`, each renaming identifier naming only the name before)
    /// keeps its values; one added on the way takes the default it had in the version that added
    /// it; one that became required with a default on the way has its NULLs filled with it.
    ///
    /// - Parameter renames: destination entity name -> source entity name, applied at the version
    ///   where the name changes.
    /// - Throws: ``MigrationError`` naming the two versions, the entity and property of a change
    ///   lightweight migration cannot infer.
    public init(path: [(name: String, model: CoreDataModel)], renames: [String: String] = [:]) throws {
        precondition(path.count >= 2, "a path has two versions at least")
        for (new, old) in renames.sorted(by: { $0.key < $1.key }) {
            guard path.indices.dropFirst().contains(where: { path[$0].model.entity(named: new) != nil && path[$0 - 1].model.entity(named: old) != nil }) else {
                throw MigrationError(.invalidPlan, "renames: no version from \(path.first!.name) to \(path.last!.name) has an entity \(new) where the version before has \(old)")
            }
        }
        var hops: [CoreDataModelMapping] = []
        for index in 1..<path.count {
            let (from, to) = (path[index - 1], path[index])
            let given = renames.filter { to.model.entity(named: $0.key) != nil && from.model.entity(named: $0.value) != nil }
            do {
                hops.append(try CoreDataModelMapping(source: from.model, destination: to.model, renames: given))
            } catch let error as MigrationError {
                throw MigrationError(error.code, "from version \(from.name) to \(to.name): \(error.message)", entity: error.entity, column: error.column)
            }
        }
        source = path.first!.model
        destination = path.last!.model
        let last = path.count - 1
        var composed: [String: [String: Composed]] = [:]
        for entity in destination.entities {
            // The entity's name in each version back to where it began.
            var names: [String?] = Array(repeating: nil, count: path.count)
            names[last] = entity.name
            var index = last
            while index > 0, let previous = hops[index - 1].sourceEntity[names[index]!] {
                names[index - 1] = previous
                index -= 1
            }
            entityNames[entity.name] = names
            guard let from = names[0] else { continue }
            sourceEntity[entity.name] = from
            if from != entity.name { decisions.append("entity \(entity.name): renamed from \(from) on the way (\(path.first!.name) -> \(path.last!.name))") }
            var properties: [String: Composed] = [:]
            for (_, property) in destination.allProperties(of: entity.name) where !property.isTransient {
                // The property's name in each version back to the one that added it.
                var propertyNames: [String?] = Array(repeating: nil, count: path.count)
                propertyNames[last] = property.name
                var version = last
                var found: (declaredBy: String, property: CoreDataModel.Property)?
                while version > 0, let (declaredBy, old) = hops[version - 1].sourceProperty(propertyNames[version]!, of: names[version]!) {
                    propertyNames[version - 1] = old.name
                    version -= 1
                    if version == 0 { found = (declaredBy, old) }
                }
                func declared(_ at: Int) -> CoreDataModel.Property? {
                    propertyNames[at].flatMap { path[at].model.property($0, of: names[at]!)?.property }
                }
                var value = Composed(source: found)
                if found == nil {
                    value.newValue = declared(version)?.attribute?.defaultValue
                    value.addedAt = version
                }
                if found != nil { value.types = (0..<path.count).compactMap { declared($0)?.attribute?.type } }
                // Forward from where it began: a version that makes it required with a default
                // fills what is still empty.
                for next in (version + 1)..<path.count {
                    guard let before = declared(next - 1), let after = declared(next), before.isOptional, !after.isOptional,
                          let fill = after.attribute?.defaultValue else { continue }
                    if found == nil, value.newValue == nil { value.newValue = fill }
                    if found != nil, value.nullFill == nil { value.nullFill = fill }
                }
                properties[property.name] = value
            }
            composed[entity.name] = properties
        }
        self.composed = composed
        self.hops = hops
        versionNames = path.map(\.name)
        for (hop, mapping) in hops.enumerated() where !mapping.decisions.isEmpty {
            decisions += mapping.decisions.map { "\(path[hop].name) -> \(path[hop + 1].name): \($0)" }
        }
        try checkProperties()
    }

    /// The value rows take for `property` of destination entity `entity` where they have no
    /// source property: its default, or over several versions the default of the version that
    /// added it (or made it required).
    public func newValue(_ property: String, of entity: String) -> CoreDataModel.Value? {
        if let composed { return composed[entity]?[property]?.newValue }
        return destination.property(property, of: entity)?.property.attribute?.defaultValue
    }

    /// The index of the version that added `property` of destination entity `entity`, which has
    /// no source property: 1 between two versions, over several the first version that has it.
    func versionAdding(_ property: String, of entity: String) -> Int? {
        if let composed { return composed[entity]?[property]?.addedAt }
        return sourceProperty(property, of: entity) == nil ? 1 : nil
    }

    /// The types an attribute had on the way from its source attribute, the source's first and
    /// the destination's last: each change is converted in turn (a double that was an integer on
    /// the way lost its fraction there).
    public func types(_ property: String, of entity: String) -> [CoreDataModel.AttributeType] {
        if let composed { return composed[entity]?[property]?.types ?? [] }
        guard let new = destination.property(property, of: entity)?.property.attribute,
              let old = sourceProperty(property, of: entity)?.property.attribute else { return [] }
        return [old.type, new.type]
    }

    /// The value NULLs of `property` of destination entity `entity` take: the default of a
    /// version that made it required (optional in the source), `nil` when none did.
    public func nullFill(_ property: String, of entity: String) -> CoreDataModel.Value? {
        if let composed { return composed[entity]?[property]?.nullFill }
        guard let new = destination.property(property, of: entity)?.property, !new.isOptional,
              let old = sourceProperty(property, of: entity)?.property, old.isOptional else { return nil }
        return new.attribute?.defaultValue
    }

    /// The source property that `property` of destination entity `entity` takes its values from:
    /// among the properties its source entity has, the one named by its renaming identifier, or
    /// by its name (over several versions, through every rename on the way). `nil` for a
    /// property new in the model (or one that was transient).
    public func sourceProperty(_ property: String, of entity: String) -> (declaredBy: String, property: CoreDataModel.Property)? {
        if let composed { return composed[entity]?[property]?.source }
        guard let from = sourceEntity[entity], let declared = destination.property(property, of: entity)?.property else { return nil }
        // The name it had before first, then its own (a renaming identifier the source lacks).
        let names = declared.previousName == declared.name ? [declared.name] : [declared.previousName, declared.name]
        for name in names {
            if let found = source.property(name, of: from), !found.property.isTransient { return found }
        }
        return nil
    }

    /// Refuses what lightweight migration cannot infer, and notes renamed properties.
    private mutating func checkProperties() throws {
        for entity in destination.entities {
            guard sourceEntity[entity.name] != nil else { continue }
            // Every property the entity has, inherited ones too: a property moved up the hierarchy
            // takes its values from each sub-entity's own.
            for (owner, property) in destination.allProperties(of: entity.name) where !property.isTransient {
                guard let (declaredBy, old) = sourceProperty(property.name, of: entity.name) else { continue }
                let path = "\(owner).\(property.name)"
                let renamed = "\(path): renamed from \(declaredBy).\(old.name) (renamingIdentifier)"
                if old.name != property.name, !decisions.contains(renamed) { decisions.append(renamed) }
                switch (property.kind, old.kind) {
                case let (.attribute(new), .attribute(was)):
                    guard new.type == was.type || Self.convertible(was.type, new.type) else {
                        throw MigrationError(.invalidPlan, "attribute \(path) changes type from \(was.type.xmlName) to \(new.type.xmlName), which lightweight migration cannot infer; write the conversion in the plan's column for it, or make it a new attribute")
                    }
                case let (.relationship(new), .relationship(was)):
                    guard let target = sourceEntity[new.destination], source.root(of: target) == source.root(of: was.destination) else {
                        throw MigrationError(.invalidPlan, "relationship \(path) points at \(new.destination), whose rows do not come from \(was.destination), where it pointed before; lightweight migration cannot infer that")
                    }
                case (.attribute, .relationship):
                    throw MigrationError(.invalidPlan, "\(path) is an attribute but was the relationship \(declaredBy).\(old.name); lightweight migration cannot infer that")
                case (.relationship, .attribute):
                    throw MigrationError(.invalidPlan, "\(path) is a relationship but was the attribute \(declaredBy).\(old.name); lightweight migration cannot infer that")
                }
            }
        }
    }

    /// Whether values of `from` convert to `to` by SQLite's numeric conversion: between integer,
    /// boolean, decimal and floating-point types, and between strings and URIs.
    static func convertible(_ from: CoreDataModel.AttributeType, _ to: CoreDataModel.AttributeType) -> Bool {
        let numbers: Set<CoreDataModel.AttributeType> = [.integer16, .integer32, .integer64, .boolean, .decimal, .double, .float]
        let texts: Set<CoreDataModel.AttributeType> = [.string, .uri]
        return (numbers.contains(from) && numbers.contains(to)) || (texts.contains(from) && texts.contains(to))
    }
}
