import Foundation

/// The app's mapping model, run as Core Data's migration manager runs it, in SQL: each entity
/// mapping's rows (its source entity's own, through its filter predicate), each property's value
/// expression (`CoreDataModelMapping/init(mappingModel:source:destination:)` matches those that
/// read a source property as it is; the others are translated by ``CoreDataMappingModelSQL``).
extension CoreDataInference {
    /// The value of `property` of the rows of `rows` where the entity mapping's value expression
    /// is not a source property read as it is: its SQL (`.null` for a constant `nil`); `nil`
    /// where the plan takes what the inference gives (no mapping model, no entity mapping, no
    /// expression: the destination's default).
    ///
    /// What has no SQL is refused with the others once every table is planned
    /// (``accountForPropertyMappings(_:)``); until then the value is `nil`.
    mutating func mappedValue(_ property: String, of rows: Rows, relationship: Bool, _ context: Context) -> Source? {
        guard let model = context.mapping.mappingModel,
            let mapping = context.mapping.entityMapping(into: rows.entity, from: rows.source),
            let value = (relationship ? mapping.relationships : mapping.attributes).first(where: { $0.name == property })?.value
        else { return nil }
        func refuse(_ why: String) -> Source? {
            if options.templating {
                let comment = "TODO \(mapping.name): \(property) = \(value): \(why)".replacingOccurrences(of: "*/", with: "* /")
                note(comment)
                translatedMappings.insert("\(mapping.name)\t\(property)")
                return relationship ? nil : .expression("NULL /* \(comment) */")
            }
            refuseMapping(
                MigrationError(
                    .invalidPlan,
                    "the mapping model \(model.url.lastPathComponent), entity mapping \(mapping.name) (\(rows.source) -> \(rows.entity)), \(property) = \(value): \(why); chunkmigrate cannot run it: give the entity mapping as a step (--step \(model.source) -> \(model.destination))",
                    entity: rows.entity, column: property, file: model.url.path))
            return nil
        }
        if relationship {
            // A relationship takes the rows of the source instances the migration manager is
            // given (matched by the mapping); anything else is the app's to say.
            return refuse(
                CoreDataModelMapping.sourcePath(value) == nil
                    ? "a relationship's value other than the migration manager's destination instances of $source's relationship"
                    : "the source entity \(rows.source) has no relationship at that key path")
        }
        do {
            guard let sql = try CoreDataMappingModelSQL.value(value, resolve: resolver(rows, context)) else {
                translatedMappings.insert("\(mapping.name)\t\(property)")
                decide("\(model.url.lastPathComponent): \(rows.entity).\(property) of the rows of \(rows.source) is nil (\(mapping.name))")
                return .null
            }
            translatedMappings.insert("\(mapping.name)\t\(property)")
            decide(
                "\(model.url.lastPathComponent): \(rows.entity).\(property) of the rows of \(rows.source) = \(value), in SQL \(sql) (\(mapping.name))"
            )
            return .expression(sql)
        } catch {
            return refuse("\(error)")
        }
    }

    /// Keeps a refusal of what the app's mapping model says, once, for
    /// ``accountForPropertyMappings(_:)``.
    mutating func refuseMapping(_ error: MigrationError) {
        if options.templating {
            note("TODO " + error.message)
            return
        }
        if !refusals.contains(where: { $0.message == error.message }) { refusals.append(error) }
    }

    /// Accounts for every property mapping of the app's mapping model that gives a value (an
    /// expression other than a constant `nil`), in every entity mapping that moves rows: read as
    /// it is (a source property of the kind, through the inference), translated into SQL,
    /// computed (a derived attribute), not stored (a transient property), left empty as Core
    /// Data leaves it, or replaced by a custom step's table. Anything else is refused, with
    /// what was refused while the tables were planned, all in one error: a property mapping is
    /// never dropped without a word.
    ///
    /// - Throws: ``MigrationError`` naming, for each, the mapping model, the entity mapping, the
    ///   property and the expression.
    mutating func accountForPropertyMappings(_ context: Context) throws {
        guard let model = context.mapping.mappingModel else { return }
        let file = model.url.lastPathComponent
        let skipped = Set(options.skippedTables.map { $0.uppercased() })
        for (entity, mappings) in context.mapping.entityMappings.sorted(by: { $0.key < $1.key }) {
            // A table refused as a whole is refused with its entity mappings, named.
            for mapping in mappings where !refusedEntities.contains(entity) {
                guard let source = mapping.source else { continue }
                let replaced = context.destination.table(of: entity).map { skipped.contains($0.name.uppercased()) } ?? false
                for property in mapping.attributes + mapping.relationships {
                    guard let value = property.value, value != .constant(.null) else { continue }
                    func account(_ outcome: PropertyMappingAccount.Outcome) {
                        propertyMappings.append(
                            PropertyMappingAccount(
                                mappingModel: file, entityMapping: mapping.name, property: property.name,
                                value: value.description, outcome: outcome))
                    }
                    guard let declared = context.destination.model.property(property.name, of: entity)?.property else {
                        refuseMapping(
                            MigrationError(
                                .invalidPlan,
                                "the mapping model \(file), entity mapping \(mapping.name) (\(source) -> \(entity)), \(property.name) = \(value): version \(model.destination) has no property \(entity).\(property.name) (Core Data's migration manager fails on it too, setting a key its destination instance does not have)",
                                entity: entity, column: property.name, file: model.url.path))
                        continue
                    }
                    if replaced {
                        account(.replacedByStep)
                    } else if declared.isTransient {
                        account(.notStored)
                        note(
                            "\(file): \(mapping.name) sets \(entity).\(property.name), a transient property, which no store keeps (\(value))"
                        )
                    } else if context.mapping.sourceProperty(property.name, of: entity, from: source) != nil {
                        account(.readAsIs)
                    } else if context.mapping.leftEmpty.contains("\(entity)\t\(property.name)") {
                        account(.leftEmpty)
                    } else if translatedMappings.contains("\(mapping.name)\t\(property.name)") {
                        account(.translated)
                    } else if declared.attribute?.derivation != nil {
                        account(.computed)
                        note(
                            "\(file): \(mapping.name) sets \(entity).\(property.name), a derived attribute, which Core Data computes from its derivation when it saves; computed so here too (\(value))"
                        )
                    } else if !refusals.contains(where: { $0.entity == entity && $0.column == property.name && $0.file == model.url.path })
                    {
                        refuseMapping(
                            MigrationError(
                                .invalidPlan,
                                "the mapping model \(file), entity mapping \(mapping.name) (\(source) -> \(entity)), \(property.name) = \(value): chunkmigrate has no SQL for it here; give the entity mapping as a step (--step \(model.source) -> \(model.destination))",
                                entity: entity, column: property.name, file: model.url.path))
                    }
                }
            }
        }
        guard var first = refusals.first else { return }
        let all = MappingModelRefusal(refusals: refusals, accounted: propertyMappings)
        guard refusals.count > 1 else {
            first.cause = all
            throw first
        }
        throw MigrationError(
            .invalidPlan,
            "the mapping model \(file): \(refusals.count) of what it says chunkmigrate cannot run: "
                + refusals.enumerated().map { "(\($0.offset + 1)) \($0.element.message)" }.joined(separator: " "),
            entity: first.entity, column: first.column, file: model.url.path, cause: all)
    }

    /// Whether the app's mapping model gives `property` of the rows of `rows` a value: a value
    /// expression other than a constant `nil`.
    func mappingModelGivesValue(_ property: String, of rows: Rows, _ context: Context) -> Bool {
        guard let mapping = context.mapping.entityMapping(into: rows.entity, from: rows.source),
            let value = (mapping.attributes + mapping.relationships).first(where: { $0.name == property })?.value
        else { return false }
        return value != .constant(.null)
    }

    /// The conditions on source rows (as `s`) of the entity mappings' filter predicates of a
    /// table's rows, one per filtered source entity: `Z_ENT <> n OR (filter)`. A predicate
    /// without SQL is refused with the rest (``accountForPropertyMappings(_:)``), naming the
    /// mapping model, the entity mapping and the predicate.
    mutating func filters(_ rows: [Rows], _ context: Context, row alias: String = "s") -> [String] {
        guard let model = context.mapping.mappingModel else { return [] }
        var conditions: [String] = []
        for row in rows {
            guard let mapping = context.mapping.entityMapping(into: row.entity, from: row.source), let filter = mapping.filter else {
                continue
            }
            do {
                let sql = try CoreDataMappingModelSQL.condition(filter, resolve: resolver(row, context, row: alias))
                guard alias == "s" else {
                    conditions.append("(\(alias).Z_ENT <> \(row.number) OR \(sql))")
                    continue
                }
                decide("\(model.url.lastPathComponent): the rows of \(row.source) that \(mapping.name) takes: \(filter), in SQL \(sql)")
                conditions.append("(Z_ENT <> \(row.number) OR \(sql))")
            } catch {
                guard alias == "s" else { continue }
                refuseMapping(
                    MigrationError(
                        .invalidPlan,
                        "the mapping model \(model.url.lastPathComponent), entity mapping \(mapping.name) (\(row.source) -> \(row.entity)), its filter \(filter): \(error); chunkmigrate cannot run it: give the entity mapping as a step (--step \(model.source) -> \(model.destination))",
                        entity: row.source, file: model.url.path, cause: error))
            }
        }
        return conditions
    }

    /// `condition`, written for the row `s`, for the row `alias`: each name qualified by `s`
    /// qualified by `alias` instead.
    static func realiased(_ condition: String, as alias: String) throws -> String {
        try SQLIdentifiers.replacing(in: condition) { name, qualifier in
            qualifier?.lowercased() == "s" ? "\(alias).\(SQL.quote(name))" : nil
        }
    }

    /// A to-one the migration manager fills with the destination instances of a key path through
    /// to-ones (`FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:",
    /// "OrgToOrg", $source.author.org)`): the key of the row at the end of the path, where that
    /// row is one the named entity mapping migrates (its source entity's own rows, through its
    /// filter), else NULL, as the migration manager finds no destination instance for it; and the
    /// entity number of that row. `nil` for any other value (a path of one step is read as it is
    /// by the inference).
    mutating func mappedToOne(_ property: String, of rows: Rows, _ context: Context) -> MappedToOne? {
        guard let model = context.mapping.mappingModel,
            let mapping = context.mapping.entityMapping(into: rows.entity, from: rows.source),
            let value = mapping.relationships.first(where: { $0.name == property })?.value,
            case let .function(.variable("manager"), selector, arguments) = value, arguments.count == 2,
            let path = arguments[1].sourceKeyPath, path.contains("."),
            let relationship = context.destination.model.property(property, of: rows.entity)?.property.relationship, !relationship.isToMany
        else { return nil }
        // Every step a to-one; the entity at the end.
        var entity = rows.source
        for step in path.split(separator: ".").map(String.init) {
            guard let next = context.source.model.property(step, of: entity)?.property.relationship, !next.isToMany else { return nil }
            entity = next.destination
        }
        let resolve = resolver(rows, context)
        guard let key = resolve(path), let targetTable = context.source.table(of: entity) else { return nil }
        // The rows the named entity mapping migrates (its source entity's own, through its
        // filter); through the source relationship, those any entity mapping migrates into the
        // relationship's destination. The target rows under an alias of their own (`m`): `s` is
        // the row whose to-one this is.
        var numbers: [Int64]
        var conditions: [String] = []
        var through: String
        if selector == "destinationInstancesForEntityMappingNamed:sourceInstances:", case let .constant(.string(name)) = arguments[0] {
            guard let named = context.mapping.entityMappings.values.joined().first(where: { $0.name == name }), let from = named.source,
                let number = context.source.entity(named: from)?.number, let into = named.destination,
                context.destination.model.lineage(of: into).contains(where: { $0.name == relationship.destination })
            else { return nil }
            numbers = [number]
            if let filter = named.filter {
                let targetRows = Rows(entity: into, source: from, number: number)
                guard let condition = try? CoreDataMappingModelSQL.condition(filter, resolve: resolver(targetRows, context, row: "m"))
                else { return nil }
                conditions.append(condition)
            }
            through = "entity mapping \(name) (\(from) -> \(into))"
        } else if selector == "destinationInstancesForSourceRelationshipNamed:sourceInstances:" {
            numbers = context.destination.descendants(of: context.destination.entity(named: relationship.destination)?.number ?? -1).flatMap
            { number in
                context.destination.entities[number].map { context.mapping.sourceEntities(of: $0.name) } ?? []
            }.compactMap { context.source.entity(named: $0)?.number }
            through = "the entity mappings into \(relationship.destination)"
        } else {
            return nil
        }
        // Rows of the entities the path can reach only.
        numbers = numbers.filter { context.source.descendants(of: context.source.entity(named: entity)?.number ?? -1).contains($0) }
        guard !numbers.isEmpty else { return nil }
        let restriction = (["m.Z_ENT IN (\(numbers.map(String.init).joined(separator: ", ")))"] + conditions).joined(separator: " AND ")
        let restricted =
            "CASE WHEN \(key) IN (SELECT m.Z_PK FROM src.\(SQL.quote(targetTable.name)) AS m WHERE \(restriction)) THEN \(key) END"
        translatedMappings.insert("\(mapping.name)\t\(property)")
        decide(
            "\(model.url.lastPathComponent): \(rows.entity).\(property) of the rows of \(rows.source) = \(value): the row at \(path) where \(through) migrates it, in SQL \(restricted) (\(mapping.name))"
        )
        let entityNumber: Source =
            numbers.count == 1
            ? .expression("CASE WHEN \(restricted) IS NOT NULL THEN coredata_entity(\(numbers[0])) END")
            : .expression("(SELECT coredata_entity(e.Z_ENT) FROM src.\(SQL.quote(targetTable.name)) AS e WHERE e.Z_PK = \(restricted))")
        return MappedToOne(key: .expression(restricted), entity: entityNumber)
    }

    /// A key path of the source entity of `rows` to the SQL of its value for a source row `s`
    /// (or `row`): a property's column, a path through to-ones a subquery of each table on the
    /// way, a to-many and a collection operator an aggregate over its targets
    /// (``aggregate(_:over:of:row:_:)``).
    func resolver(_ rows: Rows, _ context: Context, row alias: String = "s") -> CoreDataMappingModelSQL.Resolver {
        let layout = context.source
        func resolve(_ parts: ArraySlice<String>, entity: String, row: String) -> String? {
            guard let first = parts.first else { return nil }
            if let relationship = layout.model.property(first, of: entity)?.property.relationship, relationship.isToMany {
                return aggregate(parts.dropFirst(), over: first, of: entity, row: row, context) {
                    resolve($0, entity: relationship.destination, row: $1)
                }
            }
            guard let column = layout.column(of: first, entity: entity) else { return nil }
            // The row's own column bare, as the plan's expressions name them.
            if parts.count == 1 { return row == "s" ? SQL.identifier(column.name) : "\(row).\(SQL.quote(column.name))" }
            guard let relationship = layout.model.property(first, of: entity)?.property.relationship, !relationship.isToMany,
                let table = layout.table(of: relationship.destination)
            else { return nil }
            let alias = "t\(parts.count)"
            guard let inner = resolve(parts.dropFirst(), entity: relationship.destination, row: alias) else { return nil }
            return "(SELECT \(inner) FROM src.\(SQL.quote(table.name)) AS \(alias) WHERE \(alias).Z_PK = \(row).\(SQL.quote(column.name)))"
        }
        return { path in resolve(ArraySlice(path.split(separator: ".").map(String.init)), entity: rows.source, row: alias) }
    }

    /// A collection operator over the targets of to-many `property` of `entity` for the row
    /// `row`, as Foundation's key-value coding computes it on a set: `@count` the number of
    /// targets; `@sum.path` the sum of their values (nil values left out, 0 for none); `@avg.path`
    /// that sum over the number of targets (nil for none); `@min.path`, `@max.path` the least and
    /// greatest value (nil values left out, nil for none). `nil` for another operator.
    /// `value` resolves the path after the operator for a target row alias.
    func aggregate(
        _ rest: ArraySlice<String>, over property: String, of entity: String, row: String, _ context: Context,
        value: (ArraySlice<String>, String) -> String?
    ) -> String? {
        let layout = context.source
        guard let operation = rest.first, operation.hasPrefix("@"), let declared = layout.model.property(property, of: entity),
            let relationship = declared.property.relationship,
            let pairs = pairs(declaredBy: declared.declaredBy, property: property, context),
            let targets = layout.table(of: relationship.destination)
        else { return nil }
        let target = "a\(rest.count)", join = "j\(rest.count)"
        let owner = "\(row).Z_PK"
        let from: String
        if pairs.table == targets.name, pairs.target == "Z_PK" {
            from = "src.\(SQL.quote(targets.name)) AS \(target) WHERE \(target).\(SQL.quote(pairs.owner)) = \(owner)"
        } else {
            from =
                "src.\(SQL.quote(pairs.table)) AS \(join) JOIN src.\(SQL.quote(targets.name)) AS \(target) ON \(target).Z_PK = \(join).\(SQL.quote(pairs.target)) WHERE \(join).\(SQL.quote(pairs.owner)) = \(owner)"
        }
        if operation == "@count" { return rest.count == 1 ? "(SELECT count(*) FROM \(from))" : nil }
        guard rest.count > 1, let each = value(rest.dropFirst(), target) else { return nil }
        switch operation {
        case "@sum": return "(SELECT ifnull(sum(\(each)), 0) FROM \(from))"
        case "@avg": return "(SELECT CASE WHEN count(*) > 0 THEN total(\(each)) / count(*) END FROM \(from))"
        case "@min": return "(SELECT min(\(each)) FROM \(from))"
        case "@max": return "(SELECT max(\(each)) FROM \(from))"
        default: return nil
        }
    }
}

/// What became of one property mapping of an app's mapping model in a plan.
struct PropertyMappingAccount: Equatable, Sendable {
    enum Outcome: Equatable, Sendable {
        /// A source property of its kind, read as it is (`$source.name`, a relationship's
        /// destination instances), through the inference.
        case readAsIs
        /// Translated into SQL (``CoreDataMappingModelSQL``).
        case translated
        /// A derived attribute: computed from its derivation, as Core Data computes it.
        case computed
        /// A transient property: no store keeps it.
        case notStored
        /// A relationship whose source pointed at rows none of which becomes its destination.
        case leftEmpty
        /// Its table is a custom step's.
        case replacedByStep
    }
    var mappingModel: String
    var entityMapping: String
    var property: String
    var value: String
    var outcome: Outcome
}

/// What an app's mapping model says that a plan cannot run, with what it carries of the rest:
/// the cause of the refusal that names them.
struct MappingModelRefusal: Error, CustomStringConvertible {
    var refusals: [MigrationError]
    var accounted: [PropertyMappingAccount]
    var description: String { refusals.map(\.message).joined(separator: "; ") }
}

/// A to-one filled from a key path through to-ones (``CoreDataInference/mappedToOne(_:of:_:)``).
struct MappedToOne {
    /// Its key for the source row `s`.
    var key: CoreDataInference.Source
    /// Its target's entity number (for a target with sub-entities).
    var entity: CoreDataInference.Source
}
