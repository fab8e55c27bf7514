import Foundation

/// Which source entity each destination entity takes its rows from, and which source property
/// each destination property takes its values from: the mapping Core Data infers between two
/// versions of a model, before any SQL.
///
/// Matched as Core Data's inference matches them (`-[_NSMappingModelBuilder
/// newInferredMappingModel:]`), by identifier: an entity's or property's renaming identifier
/// when it has one, else its name, on both sides.
/// - A destination entity takes the rows of the source entity with the same identifier (or of
///   the entity a rename the caller gives names).
/// - A property of a matched entity takes the values of the source property with the same
///   identifier, among every property the source entity has (its own and inherited), so a
///   property moved up or down the hierarchy keeps its values. A source property of the other
///   kind (an attribute where the destination has a relationship) is no match: Core Data leaves
///   the property new.
/// - Beyond Core Data: an entity or property that no identifier matches takes the rows or values
///   of the one its renaming identifier names, else of the one of the same name (of the same
///   kind, not taken by identifier). Core Data's inference leaves those new, losing their values,
///   where a model keeps a renaming identifier it no longer means (a source property `b` whose
///   identifier is still `a` meets a destination `b` without one); `decisions` says so each time.
/// - A relationship keeps the keys of the rows that become its destination entity (or one below
///   it), whatever entity it pointed at before; where none of the rows it pointed at do (its new
///   destination's rows come from another entity tree, or from nowhere), it is left empty, as
///   Core Data's migration manager leaves it. (Core Data's in-place SQLite migration copies the
///   key column as it is, whose keys would then name rows of another table.)
///
/// What Core Data's inference refuses is refused here, naming the entity and property: a type
/// change that is not between numbers (or strings and URIs), two destination entities taking one
/// source entity's rows.
///
/// ```swift
/// let mapping = try CoreDataModelMapping(source: oldModel, destination: newModel)
/// mapping.sourceEntity["Post"]                                  // "Post"
/// mapping.sourceProperty("hexColor", of: "Post")?.property.name  // "color"
/// ```
package struct CoreDataModelMapping: Sendable {
    /// The source model.
    package let source: CoreDataModel
    /// The destination model.
    package let destination: CoreDataModel
    /// Destination entity name -> the source entity whose rows it takes.
    package private(set) var sourceEntity: [String: String] = [:]
    /// What was matched other than by an unchanged name, one line each.
    package private(set) var decisions: [String] = []

    /// Destination entity -> property -> the source property it takes its values from.
    private var sourceProperties: [String: [String: Match]] = [:]
    /// The app's mapping model this mapping runs, its value expressions generated; `nil` for an
    /// inferred mapping.
    package private(set) var mappingModel: CoreDataMappingModelFile?
    /// With a mapping model: destination entity -> the entity mappings that fill it, in the
    /// mapping model's order (several where it merges entities into one).
    package private(set) var entityMappings: [String: [CoreDataMappingModelFile.EntityMapping]] = [:]
    /// With a mapping model, for the second and later source entities of a destination entity:
    /// `destination\tsource` -> property -> the source property it takes its values from.
    private var pairProperties: [String: [String: Match]] = [:]
    /// Relationships (`entity\tproperty`) whose source relationship pointed at rows none of
    /// which becomes its destination: left empty, as Core Data's migration manager leaves them.
    private(set) var leftEmpty: Set<String> = []
    /// Attributes (`entity\tproperty`) whose type changes in a way lightweight migration cannot
    /// infer, and the refusal: given where a plan copies them, not where a custom step fills
    /// their table.
    private(set) var unconvertible: [String: String] = [:]

    /// A source property and the entity that declares it.
    private struct Match: Sendable {
        var declaredBy: String
        var property: CoreDataModel.Property
    }

    /// Source entities that no destination entity takes rows from (removed from the model).
    package var removedEntities: [String] {
        let mapped = Set(sourceEntity.values).union(entityMappings.values.flatMap { $0.compactMap(\.source) })
        return source.entities.map(\.name).filter { !mapped.contains($0) }.sorted()
    }

    /// Matches two models as Core Data's inference does.
    ///
    /// - Parameters:
    ///   - source: the model of the store migrated.
    ///   - destination: the model it is migrated to.
    ///   - renames: destination entity name -> source entity name, for renames the models do not
    ///     record.
    /// - Throws: ``MigrationError`` naming the entity and property of a change Core Data's
    ///   inference refuses; a type change it refuses is refused where a plan copies the attribute
    ///   (a custom step may fill its table instead).
    package init(source: CoreDataModel, destination: CoreDataModel, renames: [String: String] = [:]) throws {
        self.source = source
        self.destination = destination
        for name in renames.keys.sorted() where destination.entity(named: name) == nil {
            throw MigrationError(
                .invalidPlan,
                "renames: the destination model has no entity \"\(name)\"\(MigrationPlan.suggestion(for: name, among: destination.entities.map(\.name)))"
            )
        }
        try matchEntities(renames: renames)
        matchProperties()
        checkProperties()
    }

    /// Matches the first and last of several versions of a model, oldest first, as Core Data's
    /// automatic migration does: one mapping inferred from the first straight to the last
    /// (``init(source:destination:renames:)``), whatever the versions between did. Where that
    /// mapping leaves a destination entity or property new, the versions between are followed
    /// back, each to the one before: an entity or property continues one of the version before
    /// with the same identifier, or the one its renaming identifier names, or the one of the same
    /// name (of the same kind). Where that leads to an entity or property of the first version
    /// through a rename on the way, which the two ends alone do not tell (`a` renamed `b`, then
    /// `b` renamed `c`, each renaming identifier naming only the name before), it takes the rows
    /// or values of that one; `decisions` says so.
    ///
    /// A step between two versions between that Core Data could not infer does not matter: only
    /// the two ends are migrated.
    ///
    /// - Parameters:
    ///   - path: the versions in order, each with its name and model, from the store's to the one
    ///     it is migrated to; two at least.
    ///   - renames: destination entity name -> source entity name, applied at the version where
    ///     the name changes.
    /// - Throws: ``MigrationError`` naming the entity and property of a change from the first
    ///   version to the last that Core Data's inference refuses (a type change where a plan
    ///   copies the attribute).
    package init(path: [(name: String, model: CoreDataModel)], renames: [String: String] = [:]) throws {
        precondition(path.count >= 2, "a path has two versions at least")
        for (new, old) in renames.sorted(by: { $0.key < $1.key }) {
            guard
                path.indices.dropFirst().contains(where: {
                    path[$0].model.entity(named: new) != nil && path[$0 - 1].model.entity(named: old) != nil
                })
            else {
                throw MigrationError(
                    .invalidPlan,
                    "renames: no version from \(path.first!.name) to \(path.last!.name) has an entity \(new) where the version before has \(old)"
                )
            }
        }
        source = path.first!.model
        destination = path.last!.model
        try matchEntities(renames: renames.filter { destination.entity(named: $0.key) != nil && source.entity(named: $0.value) != nil })
        matchProperties()
        if path.count > 2 {
            followVersionsBetween(VersionChain(path: path, renames: renames))
        }
        checkProperties()
    }

    /// The value rows take for `property` of destination entity `entity` where they have no
    /// source property: its default in the destination model, as Core Data writes it.
    package func newValue(_ property: String, of entity: String) -> CoreDataModel.Value? {
        destination.property(property, of: entity)?.property.attribute?.defaultValue
    }

    /// The type of an attribute's source attribute and its own: the values are converted from
    /// the first to the last. Empty for an attribute without a source attribute.
    package func types(_ property: String, of entity: String, from: String? = nil) -> [CoreDataModel.AttributeType] {
        guard let new = destination.property(property, of: entity)?.property.attribute,
            let old = sourceProperty(property, of: entity, from: from)?.property.attribute
        else { return [] }
        return [old.type, new.type]
    }

    /// The value NULLs of `property` of destination entity `entity` take: its default, where the
    /// destination makes required an attribute that was optional; `nil` otherwise.
    package func nullFill(_ property: String, of entity: String, from: String? = nil) -> CoreDataModel.Value? {
        guard let new = destination.property(property, of: entity)?.property, !new.isOptional,
            let old = sourceProperty(property, of: entity, from: from)?.property, old.isOptional
        else { return nil }
        return new.attribute?.defaultValue
    }

    /// The source property that `property` of destination entity `entity` takes its values from
    /// (over several versions, perhaps through the renames of the versions between). `nil` for a
    /// property new in the model, one that was transient or of another kind, or a relationship
    /// left empty.
    ///
    /// - Parameters:
    ///   - property: the destination property, by name.
    ///   - entity: the destination entity, by name.
    ///   - from: the source entity of the rows, where a mapping model fills `entity` from several
    ///     (`nil`: its first).
    package func sourceProperty(_ property: String, of entity: String, from: String? = nil) -> (
        declaredBy: String, property: CoreDataModel.Property
    )? {
        if let from, from != sourceEntity[entity] {
            return pairProperties["\(entity)\t\(from)"]?[property].map { ($0.declaredBy, $0.property) }
        }
        return sourceProperties[entity]?[property].map { ($0.declaredBy, $0.property) }
    }

    /// The source entities whose rows destination entity `entity` takes: with a mapping model,
    /// those of each of its entity mappings, else the one matched.
    package func sourceEntities(of entity: String) -> [String] {
        if mappingModel != nil { return (entityMappings[entity] ?? []).compactMap(\.source) }
        return sourceEntity[entity].map { [$0] } ?? []
    }

    /// The entity mapping of the app's mapping model that fills `entity` from `source`.
    package func entityMapping(into entity: String, from source: String) -> CoreDataMappingModelFile.EntityMapping? {
        entityMappings[entity]?.first { $0.source == source }
    }

    /// The mapping of the app's mapping model between two versions: each destination entity
    /// takes the rows of the source entity of each entity mapping into it (only that entity's
    /// own rows: Core Data's fetch of them leaves sub-entities out), several where it merges
    /// entities; an entity mapping without source (`Add`) or destination (`Remove`) moves no row.
    /// A property takes the values of the source property its value expression names
    /// (`$source.name`; for a relationship, the source instances the migration manager's
    /// `destinationInstancesForEntityMappingNamed:` or `...ForSourceRelationshipNamed:` is
    /// given); other expressions are the inference's to translate (`CoreDataMappingModelSQL`).
    ///
    /// - Throws: ``MigrationError`` naming the mapping model and entity mapping where a name is
    ///   not one of the models', or its rows come from something other than the source entity's
    ///   fetch.
    package init(mappingModel file: CoreDataMappingModelFile, source: CoreDataModel, destination: CoreDataModel) throws {
        self.source = source
        self.destination = destination
        let model = file.generatingExpressions(source: source, destination: destination)
        mappingModel = model
        let name = file.url.lastPathComponent
        for mapping in model.entityMappings {
            guard mapping.kind != "Remove", let from = mapping.source, let to = mapping.destination else {
                decisions.append(
                    "\(name): entity mapping \(mapping.name) (\(mapping.source ?? "no source") -> \(mapping.destination ?? "no destination")) moves no row"
                )
                continue
            }
            guard source.entity(named: from) != nil else {
                throw MigrationError(
                    .invalidPlan, "the mapping model \(name), entity mapping \(mapping.name): version \(file.source) has no entity \(from)",
                    entity: from, file: file.url.path)
            }
            guard destination.entity(named: to) != nil else {
                throw MigrationError(
                    .invalidPlan,
                    "the mapping model \(name), entity mapping \(mapping.name): version \(file.destination) has no entity \(to)",
                    entity: to, file: file.url.path)
            }
            if let custom = mapping.customSource {
                throw MigrationError(
                    .invalidPlan,
                    "the mapping model \(name), entity mapping \(mapping.name): its rows come from \(custom), not from a fetch of \(from) that chunkmigrate can run; give the entity mapping as a step (--step)",
                    entity: from, file: file.url.path)
            }
            if let other = entityMappings.values.joined().first(where: { $0.source == from }) {
                throw MigrationError(
                    .invalidPlan,
                    "the mapping model \(name): entity mappings \(other.name) and \(mapping.name) both take the rows of \(from); chunkmigrate runs one entity mapping per source entity in a pass: give one of them as a step (--step)",
                    entity: from, file: file.url.path)
            }
            entityMappings[to, default: []].append(mapping)
            let first = sourceEntity[to] == nil
            if first { sourceEntity[to] = from }
            if from != to { decisions.append("entity \(to): from \(from) (\(name), entity mapping \(mapping.name))") }
            let available = source.allProperties(of: from).filter { !$0.property.isTransient }
            var matched: [String: Match] = [:]
            for property in mapping.attributes + mapping.relationships {
                guard let path = property.value.flatMap(Self.sourcePath), !path.contains("."),
                    let found = available.first(where: { $0.property.name == path }),
                    let new = destination.property(property.name, of: to)?.property,
                    found.property.isRelationship == new.isRelationship
                else { continue }
                matched[property.name] = Match(declaredBy: found.declaredBy, property: found.property)
            }
            if first { sourceProperties[to] = matched } else { pairProperties["\(to)\t\(from)"] = matched }
        }
        // An abstract entity has no rows of its own and no entity mapping (Core Data cannot make
        // one of it): one of the same name on both sides is the same entity, holding none.
        for entity in destination.entities where entity.isAbstract && entityMappings[entity.name] == nil {
            guard source.entity(named: entity.name)?.isAbstract == true,
                !entityMappings.values.joined().contains(where: { $0.source == entity.name })
            else { continue }
            entityMappings[entity.name] = [
                CoreDataMappingModelFile.EntityMapping(
                    name: "\(entity.name)To\(entity.name)", kind: "Copy", source: entity.name, destination: entity.name)
            ]
            sourceEntity[entity.name] = entity.name
        }
        checkProperties()
    }

    /// The source key path a value expression reads as it is: `$source.path`, or the source
    /// instances a migration manager's function resolves into destination instances.
    static func sourcePath(_ expression: CoreDataMappingModelFile.Expression) -> String? {
        if let path = expression.sourceKeyPath { return path }
        guard case let .function(.variable("manager"), selector, arguments) = expression,
            selector == "destinationInstancesForEntityMappingNamed:sourceInstances:"
                || selector == "destinationInstancesForSourceRelationshipNamed:sourceInstances:",
            arguments.count == 2
        else { return nil }
        return arguments[1].sourceKeyPath
    }

    // MARK: - Matching

    /// Each destination entity to the source entity `renames` names, or of the same identifier
    /// (Core Data's match); then, for those left, the one the renaming identifier names, or of
    /// the same name, where no other entity took it.
    private mutating func matchEntities(renames: [String: String]) throws {
        // Source entities by identifier; where two share one, the one whose name it is.
        var byIdentifier: [String: String] = [:]
        for entity in source.entities where byIdentifier[entity.identifier] == nil || entity.name == entity.identifier {
            byIdentifier[entity.identifier] = entity.name
        }
        var claimedBy: [String: String] = [:]
        for entity in destination.entities {
            let given = renames[entity.name]
            if let given, source.entity(named: given) == nil {
                throw MigrationError(.invalidPlan, "renames: the source model has no entity \"\(given)\" (for \(entity.name))")
            }
            guard let from = given ?? byIdentifier[entity.identifier] else { continue }
            if let other = claimedBy[from] {
                throw MigrationError(
                    .invalidPlan,
                    "entities \(other) and \(entity.name) of the destination model both take the rows of source entity \(from); Core Data's inference refuses it too (two destination entities with one renaming identifier) and wants a mapping model; write a plan for it"
                )
            }
            claimedBy[from] = entity.name
            sourceEntity[entity.name] = from
            if from != entity.name {
                decisions.append("entity \(entity.name): renamed from \(from) (\(given != nil ? "given" : "renamingIdentifier"))")
            }
        }
        for entity in destination.entities where sourceEntity[entity.name] == nil {
            let (candidates, rule) = Self.fallback(entity.renamingIdentifier, entity.name, among: source.entities.map(\.name))
            guard let from = candidates.first(where: { claimedBy[$0] == nil }), let old = source.entity(named: from) else { continue }
            claimedBy[from] = entity.name
            sourceEntity[entity.name] = from
            decisions.append("entity \(entity.name): from \(from) by \(rule); \(Self.identifiers(entity.identifier, old.identifier))")
        }
    }

    /// Each property of each matched destination entity (of those named, or all) to the source
    /// entity's property of the same identifier (Core Data's match), of the same kind; then, for
    /// those left, the one its renaming identifier names, or of the same name, of the same kind,
    /// that no other property took by identifier.
    private mutating func matchProperties(of names: Set<String>? = nil) {
        for entity in destination.entities where names?.contains(entity.name) ?? true {
            guard let from = sourceEntity[entity.name] else { continue }
            let available = source.allProperties(of: from).filter { !$0.property.isTransient }.map {
                Match(declaredBy: $0.declaredBy, property: $0.property)
            }
            var byIdentifier: [String: Match] = [:]
            for candidate in available
            where byIdentifier[candidate.property.identifier] == nil || candidate.property.name == candidate.property.identifier {
                byIdentifier[candidate.property.identifier] = candidate
            }
            let properties = destination.allProperties(of: entity.name).filter { !$0.property.isTransient }
            var taken: Set<String> = []
            var left: [(owner: String, property: CoreDataModel.Property)] = []
            for (owner, property) in properties {
                guard let found = byIdentifier[property.identifier] else {
                    left.append((owner, property))
                    continue
                }
                guard found.property.isRelationship == property.isRelationship else {
                    decide(
                        "\(owner).\(property.name): \(property.isRelationship ? "a relationship" : "an attribute"), was the \(found.property.isRelationship ? "relationship" : "attribute") \(found.declaredBy).\(found.property.name); Core Data's inference maps no property to another kind, so it is new"
                    )
                    continue
                }
                taken.insert(found.property.name)
                sourceProperties[entity.name, default: [:]][property.name] = found
            }
            for (owner, property) in left {
                let sameKind = available.filter {
                    $0.property.isRelationship == property.isRelationship && !taken.contains($0.property.name)
                }
                let (candidates, rule) = Self.fallback(property.renamingIdentifier, property.name, among: sameKind.map(\.property.name))
                guard let name = candidates.first, let found = sameKind.first(where: { $0.property.name == name }) else { continue }
                sourceProperties[entity.name, default: [:]][property.name] = found
                decide(
                    "\(owner).\(property.name): from \(found.declaredBy).\(found.property.name) by \(rule); \(Self.identifiers(property.identifier, found.property.identifier))"
                )
            }
        }
    }

    /// Beyond Core Data's match by identifier: the name a renaming identifier gives, else the
    /// same name, among `names`; and which of the two it was.
    private static func fallback(_ renamingIdentifier: String?, _ name: String, among names: [String]) -> (
        candidates: [String], rule: String
    ) {
        if let renamed = renamingIdentifier.flatMap({ $0.isEmpty ? nil : $0 }), names.contains(renamed) {
            return ([renamed], "the name its renaming identifier gives")
        }
        return (names.filter { $0 == name }, "its name")
    }

    /// Why Core Data's inference would not have matched them, and what it would have done.
    private static func identifiers(_ new: String, _ old: String) -> String {
        "Core Data's inference matches identifiers (renaming identifier, else name: \(new) and \(old) here) and would leave it new"
    }

    /// Where the mapping from the first version to the last leaves a destination entity or
    /// property new: the one of the first version the versions between lead it back to, through
    /// a rename on the way.
    private mutating func followVersionsBetween(_ chain: VersionChain) {
        let (first, last) = (chain.path.first!.name, chain.path.last!.name)
        let leavesNew = "Core Data's inference from \(first) straight to \(last) leaves it new"
        var claimed = Set(sourceEntity.values)
        var followed: Set<String> = []
        for entity in destination.entities where sourceEntity[entity.name] == nil {
            let names = chain.entityNames(entity.name)
            guard let from = names[0], names.contains(where: { $0 != entity.name }) else { continue }
            guard !claimed.contains(from) else {
                decide(
                    "entity \(entity.name): the versions between lead it back to \(from), whose rows \(destination.entities.first { sourceEntity[$0.name] == from }?.name ?? "another entity") takes; \(leavesNew)"
                )
                continue
            }
            claimed.insert(from)
            sourceEntity[entity.name] = from
            followed.insert(entity.name)
            decide("entity \(entity.name): from \(from) through the versions between (\(chain.describe(names))); \(leavesNew)")
        }
        // Their properties matched as Core Data matches those of one entity to another's.
        matchProperties(of: followed)
        for entity in destination.entities {
            guard let from = sourceEntity[entity.name] else { continue }
            let names = chain.entityNames(entity.name)
            guard names[0] == from else { continue }
            for (owner, property) in destination.allProperties(of: entity.name) where !property.isTransient {
                let propertyNames = chain.propertyNames(property.name, entityNames: names)
                let path = "\(owner).\(property.name)"
                if let matched = sourceProperties[entity.name]?[property.name] {
                    // Matched from end to end; say so where the versions between do not carry it.
                    if propertyNames[0] == nil, let gap = propertyNames.lastIndex(of: nil) {
                        decide(
                            "\(path): from \(matched.declaredBy).\(matched.property.name) as Core Data's inference from \(first) straight to \(last) matches them, though \(chain.path[gap].name) does not have it"
                        )
                    }
                    continue
                }
                guard let oldName = propertyNames[0], propertyNames.contains(where: { $0 != property.name }),
                    let (declaredBy, old) = source.property(oldName, of: from), !old.isTransient
                else { continue }
                if let new = property.attribute, let was = old.attribute, new.type != was.type, !Self.convertible(was.type, new.type) {
                    decide(
                        "\(path): the versions between lead it back to \(declaredBy).\(old.name), a \(was.type.xmlName), which does not convert to \(new.type.xmlName); \(leavesNew)"
                    )
                    continue
                }
                sourceProperties[entity.name, default: [:]][property.name] = Match(declaredBy: declaredBy, property: old)
                decide(
                    "\(path): from \(declaredBy).\(old.name) through the versions between (\(chain.describe(propertyNames))); \(leavesNew)")
            }
        }
    }

    /// Records a type change Core Data's inference refuses (``unconvertible``), empties a
    /// relationship none of whose rows become its destination, and notes renamed properties.
    private mutating func checkProperties() {
        for entity in destination.entities {
            guard sourceEntity[entity.name] != nil else { continue }
            // Every property the entity has, inherited ones too: a property moved up the hierarchy
            // takes its values from each sub-entity's own.
            for (owner, property) in destination.allProperties(of: entity.name) where !property.isTransient {
                guard let (declaredBy, old) = sourceProperty(property.name, of: entity.name) else { continue }
                let path = "\(owner).\(property.name)"
                if old.name != property.name, !decisions.contains(where: { $0.hasPrefix("\(path): from ") }) {
                    decide("\(path): renamed from \(declaredBy).\(old.name) (renamingIdentifier)")
                }
                switch (property.kind, old.kind) {
                case let (.attribute(new), .attribute(was)):
                    guard new.type == was.type || Self.convertible(was.type, new.type) else {
                        unconvertible["\(entity.name)\t\(property.name)"] =
                            "attribute \(path) changes type from \(was.type.xmlName) to \(new.type.xmlName), which lightweight migration cannot infer (Core Data's inference refuses it too, NSInferredMappingModelError 134190, and wants a mapping model); write the conversion in the plan's column for it, or in a custom step's (--step), or make it a new attribute"
                        continue
                    }
                case let (.relationship(new), .relationship(was)):
                    // The rows it pointed at that become its destination (or an entity below it)
                    // are in the tree of the entity it pointed at, or there are none.
                    let tree = source.root(of: was.destination)
                    let becoming = destination.descendants(of: new.destination).compactMap { sourceEntity[$0] }
                    guard !becoming.contains(where: { source.root(of: $0) == tree }) else { continue }
                    sourceProperties[entity.name]?[property.name] = nil
                    leftEmpty.insert("\(entity.name)\t\(property.name)")
                    decide(
                        "\(path): points at \(new.destination), which no row of \(was.destination) (where \(declaredBy).\(old.name) pointed) becomes; left empty, as Core Data's migration manager leaves it"
                    )
                default:
                    continue
                }
            }
        }
    }

    private mutating func decide(_ line: String) { if !decisions.contains(line) { decisions.append(line) } }

    /// Whether values of `from` convert to `to` by SQLite's numeric conversion: between integer,
    /// boolean, decimal and floating-point types, and between strings and URIs.
    static func convertible(_ from: CoreDataModel.AttributeType, _ to: CoreDataModel.AttributeType) -> Bool {
        let numbers: Set<CoreDataModel.AttributeType> = [.integer16, .integer32, .integer64, .boolean, .decimal, .double, .float]
        let texts: Set<CoreDataModel.AttributeType> = [.string, .uri]
        return (numbers.contains(from) && numbers.contains(to)) || (texts.contains(from) && texts.contains(to))
    }
}

/// Several versions of a model, oldest first, followed back from the last: what each entity and
/// property of a version continues in the version before.
///
/// An entity or property continues, in order: the one a rename the caller gives names (entities
/// only), the one with the same identifier (renaming identifier, else name, as Core Data matches
/// them), the one its renaming identifier names (a rename declared by the name before), the one
/// of the same name; a property only one of its own kind, neither transient.
struct VersionChain {
    let path: [(name: String, model: CoreDataModel)]
    /// Destination entity name -> source entity name, applied where the names are.
    let renames: [String: String]

    /// The names of the last version's entity `name` in every version, `nil` from where it
    /// began.
    func entityNames(_ name: String) -> [String?] {
        var names = [String?](repeating: nil, count: path.count)
        names[path.count - 1] = name
        var index = path.count - 1
        while index > 0, let current = names[index], let previous = previousEntity(current, at: index) {
            names[index - 1] = previous
            index -= 1
        }
        return names
    }

    /// The names of property `name` of the last version's entity whose names `entityNames`
    /// gives, in every version, `nil` from where it began.
    func propertyNames(_ name: String, entityNames: [String?]) -> [String?] {
        var names = [String?](repeating: nil, count: path.count)
        names[path.count - 1] = name
        var index = path.count - 1
        while index > 0, let current = names[index], let entity = entityNames[index], let before = entityNames[index - 1],
            let property = path[index].model.property(current, of: entity)?.property, !property.isTransient
        {
            let candidates = path[index - 1].model.allProperties(of: before).map(\.property)
                .filter { !$0.isTransient && $0.isRelationship == property.isRelationship }
            guard
                let previous = candidates.first(where: { $0.identifier == property.identifier })
                    ?? candidates.first(where: { $0.name == property.renamingIdentifier })
                    ?? candidates.first(where: { $0.name == property.name })
            else { break }
            names[index - 1] = previous.name
            index -= 1
        }
        return names
    }

    /// What entity `name` of version `index` continues in the version before.
    private func previousEntity(_ name: String, at index: Int) -> String? {
        let before = path[index - 1].model
        if let given = renames[name], before.entity(named: given) != nil { return given }
        guard let entity = path[index].model.entity(named: name) else { return nil }
        return before.entities.first(where: { $0.identifier == entity.identifier })?.name
            ?? entity.renamingIdentifier.flatMap { before.entity(named: $0)?.name }
            ?? before.entity(named: name)?.name
    }

    /// `a in Model, b from Model 2, c from Model 5`: the first name and each change.
    func describe(_ names: [String?]) -> String {
        var parts: [String] = []
        var last: String?
        for (index, name) in names.enumerated() {
            guard let name, name != last else { continue }
            parts.append("\(name) \(parts.isEmpty ? "in" : "from") \(path[index].name)")
            last = name
        }
        return parts.joined(separator: ", ")
    }
}

extension CoreDataModel.Entity {
    /// What Core Data matches the entity by between two models: its renaming identifier, or its
    /// name.
    var identifier: String { renamingIdentifier.flatMap { $0.isEmpty ? nil : $0 } ?? name }
}

extension CoreDataModel.Property {
    /// What Core Data matches the property by between two models: its renaming identifier, or
    /// its name.
    var identifier: String { previousName }

    /// Whether the property is a relationship.
    var isRelationship: Bool { relationship != nil }
}
