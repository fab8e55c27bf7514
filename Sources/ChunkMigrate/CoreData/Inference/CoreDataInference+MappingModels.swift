import Foundation

/// The app's mapping model, run as Core Data's migration manager runs it, in SQL: each entity
/// mapping's rows (its source entity's own, through its filter predicate), each property's value
/// expression (``CoreDataModelMapping/init(mappingModel:source:destination:)`` matches those that
/// read a source property as it is; the others are translated by ``CoreDataMappingModelSQL``).
extension CoreDataInference {
    /// The value of `property` of the rows of `rows` where the entity mapping's value expression
    /// is not a source property read as it is: its SQL (`.null` for a constant `nil`); `nil`
    /// where the plan takes what the inference gives (no mapping model, no entity mapping, no
    /// expression: the destination's default).
    ///
    /// - Throws: ``MigrationError`` naming the mapping model, the entity mapping, the property
    ///   and the expression, where it has no SQL.
    mutating func mappedValue(_ property: String, of rows: Rows, relationship: Bool, _ context: Context) throws -> Source? {
        guard let model = context.mapping.mappingModel,
              let mapping = context.mapping.entityMapping(into: rows.entity, from: rows.source),
              let value = (relationship ? mapping.relationships : mapping.attributes).first(where: { $0.name == property })?.value else { return nil }
        func refuse(_ why: String) -> MigrationError {
            MigrationError(.invalidPlan, "the mapping model \(model.url.lastPathComponent), entity mapping \(mapping.name) (\(rows.source) -> \(rows.entity)), \(property) = \(value): \(why); chunkmigrate cannot run it: give the entity mapping as a step (--step \(model.source) -> \(model.destination))",
                           entity: rows.entity, column: property, file: model.url.path)
        }
        if relationship {
            // A relationship takes the rows of the source instances the migration manager is
            // given (matched by the mapping); anything else is the app's to say.
            throw refuse(CoreDataModelMapping.sourcePath(value) == nil
                         ? "a relationship's value other than the migration manager's destination instances of $source's relationship"
                         : "the source entity \(rows.source) has no relationship at that key path")
        }
        do {
            guard let sql = try CoreDataMappingModelSQL.value(value, resolve: resolver(rows, context)) else {
                decide("\(model.url.lastPathComponent): \(rows.entity).\(property) of the rows of \(rows.source) is nil (\(mapping.name))")
                return .null
            }
            decide("\(model.url.lastPathComponent): \(rows.entity).\(property) of the rows of \(rows.source) = \(value), in SQL \(sql) (\(mapping.name))")
            return .expression(sql)
        } catch let error as CoreDataMappingModelSQL.Untranslatable {
            throw refuse(error.description)
        }
    }

    /// Whether the app's mapping model gives `property` of the rows of `rows` a value: a value
    /// expression other than a constant `nil`.
    func mappingModelGivesValue(_ property: String, of rows: Rows, _ context: Context) -> Bool {
        guard let mapping = context.mapping.entityMapping(into: rows.entity, from: rows.source),
              let value = (mapping.attributes + mapping.relationships).first(where: { $0.name == property })?.value else { return false }
        return value != .constant(.null)
    }

    /// The conditions on source rows (as `s`) of the entity mappings' filter predicates of a
    /// table's rows, one per filtered source entity: `Z_ENT <> n OR (filter)`.
    ///
    /// - Throws: ``MigrationError`` naming the mapping model, the entity mapping and the
    ///   predicate, where it has no SQL.
    mutating func filters(_ rows: [Rows], _ context: Context) throws -> [String] {
        guard let model = context.mapping.mappingModel else { return [] }
        var conditions: [String] = []
        for row in rows {
            guard let mapping = context.mapping.entityMapping(into: row.entity, from: row.source), let filter = mapping.filter else { continue }
            do {
                let sql = try CoreDataMappingModelSQL.condition(filter, resolve: resolver(row, context))
                decide("\(model.url.lastPathComponent): the rows of \(row.source) that \(mapping.name) takes: \(filter), in SQL \(sql)")
                conditions.append("(Z_ENT <> \(row.number) OR \(sql))")
            } catch let error as CoreDataMappingModelSQL.Untranslatable {
                throw MigrationError(.invalidPlan, "the mapping model \(model.url.lastPathComponent), entity mapping \(mapping.name) (\(row.source) -> \(row.entity)), its filter \(filter): \(error); chunkmigrate cannot run it: give the entity mapping as a step (--step \(model.source) -> \(model.destination))",
                                     entity: row.source, file: model.url.path, cause: error)
            }
        }
        return conditions
    }

    /// A key path of the source entity of `rows` to the SQL of its value for a source row `s`:
    /// a property's column, a path through to-ones a subquery of each table on the way.
    func resolver(_ rows: Rows, _ context: Context) -> CoreDataMappingModelSQL.Resolver {
        let layout = context.source
        func resolve(_ parts: ArraySlice<String>, entity: String, row: String) -> String? {
            guard let first = parts.first, let column = layout.column(of: first, entity: entity) else { return nil }
            // The row's own column bare, as the plan's expressions name them.
            if parts.count == 1 { return row == "s" ? SQL.identifier(column.name) : "\(row).\(SQL.quote(column.name))" }
            guard let relationship = layout.model.property(first, of: entity)?.property.relationship, !relationship.isToMany,
                  let table = layout.table(of: relationship.destination) else { return nil }
            let alias = "t\(parts.count)"
            guard let inner = resolve(parts.dropFirst(), entity: relationship.destination, row: alias) else { return nil }
            return "(SELECT \(inner) FROM src.\(SQL.quote(table.name)) AS \(alias) WHERE \(alias).Z_PK = \(row).\(SQL.quote(column.name)))"
        }
        return { path in resolve(ArraySlice(path.split(separator: ".").map(String.init)), entity: rows.source, row: "s") }
    }
}
