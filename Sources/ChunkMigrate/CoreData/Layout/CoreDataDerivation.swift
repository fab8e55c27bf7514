import Foundation

/// A derived attribute (iOS 13+) as Core Data keeps it in SQL: the statement that computes its
/// value for every row (what Core Data runs when the attribute is new), and the triggers that keep
/// it current as rows change (`Z_DA_...`).
///
/// The derivations Core Data's SQL store supports, and what each becomes (`T`, `C`: the entity's
/// table and the attribute's column):
/// - a key path to an attribute of the entity, or a function of one (`canonical:`, `uppercase:`,
///   `lowercase:`), or `now()`: `C = ZNAME`, `C = NSCoreDataCanonical(ZNAME)`, `C = NSCoreDataNow()`;
/// - a to-one relationship's attribute (`folder.name`), or a function of one:
///   `C = (SELECT ZNAME FROM ZFOLDER WHERE Z_PK = T.ZFOLDER)`;
/// - an aggregate of a to-many: `items.@count`, `items.@sum.price`, `items.@min.date`,
///   `items.@max.date`, counted in the target's table by its inverse's key column, or for
///   `@count` of a many-to-many in the join table.
///
/// The triggers are written as Core Data writes them (the SQL its store generator formats, as
/// public decompilations of it show) for counts, key paths and functions; for `@sum`, `@min`
/// and `@max`, whose triggers Core Data writes in a longer form, ``triggers`` is empty and
/// ``CoreDataEmptyStore`` says so. A job never writes triggers: it keeps those the destination
/// has, exactly as they are.
package struct CoreDataDerivation: Sendable, Equatable {
    /// The entity declaring the attribute, and the attribute.
    package let entity: String
    package let attribute: String
    /// The expression, as the model gives it.
    package let expression: String
    /// The table and column holding the value.
    package let table: String
    package let column: String
    /// The value for a row of ``table`` (referred to by its name), in SQL.
    package let value: String
    /// The condition on `Z_ENT` of the rows that have the attribute, when the table holds other
    /// entities too.
    package let rows: String?
    /// Core Data's triggers keeping the value current (`CREATE TRIGGER IF NOT EXISTS ...`).
    package let triggers: [String]

    /// The columns `value`, a derivation's SQL for a row of `table`, reads: `TABLE.COLUMN` in
    /// capitals, as SQLite resolves them in the store open as `main` of `database`.
    static func columnsRead(by value: String, of table: String, in database: Database) throws(SQLiteError) -> Set<String> {
        let read = try database.columnsRead(in: "main", preparing: "SELECT (\(value)) FROM main.\(SQL.quote(table))")
        return Set(read.flatMap { table, columns in columns.map { "\(table).\($0)".uppercased() } })
    }

    /// Core Data's statement computing the value of every row.
    package var dataStatement: String {
        "UPDATE \(table) SET \(column) = \(value)" + (rows.map { " WHERE \($0)" } ?? "")
    }

    /// The SQL functions Core Data calls in derivations, by the name of the expression's function.
    static let functions = ["canonical": "NSCoreDataCanonical", "uppercase": "NSCoreDataToUpper", "lowercase": "NSCoreDataToLower"]

    /// The derivation of `attribute` of `entity` in `layout`.
    ///
    /// - Throws: ``MigrationError`` naming the entity, the attribute and the expression when the
    ///   derivation is not one Core Data's SQL store supports.
    package init(entity: String, attribute: String, layout: CoreDataLayout) throws {
        let model = layout.model
        guard let declared = model.property(attribute, of: entity), let expression = declared.property.attribute?.derivation,
            let column = layout.column(of: attribute, entity: entity)?.name,
            let table = layout.table(of: declared.declaredBy)?.name,
            let number = layout.entity(named: declared.declaredBy)?.number
        else {
            throw MigrationError(
                .invalidPlan, "\(entity).\(attribute) is not a derived attribute of the model", entity: entity, column: attribute)
        }
        let name = declared.declaredBy
        func refuse(_ why: String) -> MigrationError {
            MigrationError(
                .invalidPlan, "the derived attribute \(name).\(attribute) (\(expression)): \(why)", entity: name, column: attribute)
        }
        func attributeColumn(_ property: String, of entity: String) throws -> String {
            guard model.property(property, of: entity)?.property.attribute != nil,
                let column = layout.column(of: property, entity: entity)
            else { throw refuse("\(property) is not an attribute of \(entity)") }
            return column.name
        }

        // Entities of one tree share the table: Core Data restricts the rows by entity number
        // when the entity has a parent or sub-entities.
        let range = layout.descendants(of: number)
        let inTree = layout.entities[number]?.parent != nil || range.count > 1
        let last = range.max() ?? number
        func entities(_ row: String) -> String {
            last == number ? "\(number) = \(row)Z_ENT" : "\(number) <= \(row)Z_ENT AND \(row)Z_ENT <= \(last)"
        }
        let rows = inTree ? entities("") : nil
        let andRows = rows.map { " AND \($0)" } ?? "", andNewRows = inTree ? " AND " + entities("NEW.") : ""
        let whenNew = inTree ? " WHEN " + entities("NEW.") : ""
        func notify(_ inserted: Bool, where row: String) -> String {
            let function =
                inserted ? "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue" : "NSCoreDataDATriggerUpdatedAffectedObjectValue"
            return " SELECT \(function)('\(table)', Z_ENT, Z_PK, '\(attribute)', \(column)) FROM \(table) WHERE \(row);"
        }
        func trigger(_ name: String, _ event: String, on table: String, when: String = "", _ body: String) -> String {
            "CREATE TRIGGER IF NOT EXISTS \(name) AFTER \(event) ON \(table) FOR EACH ROW\(when) BEGIN\(body) END"
        }

        var value: String
        var triggers: [String]
        switch Self.parse(expression) {
        case let .failure(why):
            throw refuse(why)

        case let .attribute(path, function):
            // The entity's own attribute, a function of it, or now().
            let newToken: String
            let watched: String
            if path.count == 2 {
                // A to-one relationship's attribute.
                guard let relationship = model.property(path[0], of: entity)?.property.relationship, !relationship.isToMany,
                    let key = layout.column(of: path[0], entity: entity)?.name,
                    let target = layout.table(of: relationship.destination)?.name
                else {
                    throw refuse("\(path[0]) is not a to-one relationship of \(entity)")
                }
                let source = try attributeColumn(path[1], of: relationship.destination)
                let selected = function.map { "\($0)(\(source))" } ?? source
                let fromNew = function.map { "\($0)(NEW.\(source))" } ?? "NEW.\(source)"
                let lookup = "(SELECT \(selected) FROM \(target) WHERE Z_PK = NEW.\(key))"
                let sourceName = "Z_DA_\(table)_\(name)_\(attribute)_SOURCE", parameter = "Z_DA_\(target)_\(name)_\(attribute)_PARAMETER"
                // The target aliased: it may be the entity's own table (a parent's name).
                value =
                    "(SELECT \(function.map { "\($0)(t.\(source))" } ?? "t.\(source)") FROM \(target) AS t WHERE t.Z_PK = \(table).\(key))"
                triggers = [
                    trigger(
                        sourceName + "_INSERT", "INSERT", on: table,
                        " UPDATE \(table) SET \(column) = \(lookup) WHERE Z_PK = NEW.Z_PK\(andNewRows);"
                            + notify(true, where: "Z_PK = NEW.Z_PK\(andNewRows)")),
                    trigger(
                        sourceName + "_UPDATE", "UPDATE OF \(key)", on: table, when: whenNew,
                        " UPDATE \(table) SET \(column) = \(lookup) WHERE Z_PK = NEW.Z_PK;" + notify(false, where: "Z_PK = NEW.Z_PK")),
                    trigger(
                        parameter + "_INSERT", "INSERT", on: target,
                        " UPDATE \(table) SET \(column) = \(fromNew) WHERE \(key) = NEW.Z_PK\(andRows);"
                            + notify(true, where: "\(key) = NEW.Z_PK\(andRows)")),
                    trigger(
                        parameter + "_UPDATE", "UPDATE OF \(source)", on: target,
                        " UPDATE \(table) SET \(column) = \(fromNew) WHERE \(key) = NEW.Z_PK\(andRows);"
                            + notify(false, where: "\(key) = NEW.Z_PK\(andRows)")),
                ]
                break
            }
            if let property = path.first {
                let source = try attributeColumn(property, of: entity)
                newToken = function.map { "\($0)(NEW.\(source))" } ?? "NEW.\(source)"
                watched = source
            } else {
                newToken = "NSCoreDataNow()"
                watched = "Z_OPT"
            }
            value = newToken.replacingOccurrences(of: "NEW.", with: "")
            let base = "Z_DA_\(table)_\(name)_\(attribute)"
            triggers = [
                trigger(
                    base + "_INSERT", "INSERT", on: table, when: " WHEN (NEW.\(watched) NOT NULL)",
                    " UPDATE \(table) SET \(column) = \(newToken) WHERE Z_PK = NEW.Z_PK;" + notify(true, where: "Z_PK = NEW.Z_PK")),
                trigger(
                    base + "_UPDATE", "UPDATE OF \(watched)", on: table,
                    " UPDATE \(table) SET \(column) = \(newToken) WHERE Z_PK = NEW.Z_PK;" + notify(false, where: "Z_PK = NEW.Z_PK")),
            ]

        case let .aggregate(relationshipName, aggregate, operandName):
            guard let relationship = model.property(relationshipName, of: entity)?.property.relationship, relationship.isToMany else {
                throw refuse("\(relationshipName) is not a to-many relationship of \(entity)")
            }
            let sourceName = "Z_DA_\(table)_\(name)_\(attribute)_SOURCE"
            if let join = layout.joinTable(of: relationshipName, entity: entity) {
                // A many-to-many: counted in the join table, by the column of the owner's keys
                // (the side that is not this relationship's).
                guard aggregate == "COUNT" else { throw refuse("Core Data's SQL store aggregates a many-to-many only by @count") }
                let mine = join.sides.firstIndex { $0.entity == name && $0.property == relationshipName } ?? 1
                let owner = join.sides[mine == 0 ? 1 : 0].column
                let parameter = "Z_DA_\(join.name)_\(name)_\(attribute)_PARAMETER"
                value = "(SELECT IFNULL(COUNT(j.\(owner)), 0) FROM \(join.name) AS j WHERE j.\(owner) = \(table).Z_PK)"
                triggers = [
                    trigger(
                        parameter + "_INSERT", "INSERT", on: join.name,
                        " UPDATE \(table) SET \(column) = IFNULL(\(column), 0) + 1 WHERE Z_PK = NEW.\(owner)\(andRows);"
                            + notify(false, where: "Z_PK = NEW.\(owner)\(andRows)")),
                    trigger(
                        parameter + "_DELETE", "DELETE", on: join.name,
                        " UPDATE \(table) SET \(column) = \(column) - 1 WHERE Z_PK = OLD.\(owner)\(andRows);"
                            + notify(false, where: "Z_PK = OLD.\(owner)\(andRows)")),
                    trigger(
                        sourceName + "_INSERT", "INSERT", on: table, when: whenNew,
                        " UPDATE \(table) SET \(column) = (SELECT IFNULL(COUNT(\(owner)), 0) FROM \(join.name) WHERE \(owner) = NEW.Z_PK) WHERE Z_PK = NEW.Z_PK;"
                            + notify(false, where: "Z_PK = NEW.Z_PK")),
                ]
                break
            }
            // A to-many with a to-one inverse: the owner's key is the inverse's column in the
            // target's table.
            guard let inverse = relationship.inverse, let key = layout.column(of: inverse, entity: relationship.destination)?.name,
                let target = layout.table(of: relationship.destination)?.name
            else {
                throw refuse("\(relationshipName) has no inverse, which Core Data's SQL store needs to aggregate it")
            }
            let operand = try operandName.map { try attributeColumn($0, of: relationship.destination) } ?? key
            let aggregated =
                aggregate == "COUNT" || aggregate == "SUM" ? "IFNULL(\(aggregate)(t.\(operand)), 0)" : "\(aggregate)(t.\(operand))"
            // The target aliased: it may be the entity's own table (a folder's children).
            value = "(SELECT \(aggregated) FROM \(target) AS t WHERE t.\(key) = \(table).Z_PK)"
            guard aggregate == "COUNT" else {
                triggers = []
                break
            }
            let parameter = "Z_DA_\(target)_\(name)_\(attribute)_PARAMETER"
            func step(_ sign: String, _ row: String) -> String {
                " UPDATE \(table) SET \(column) = \(sign == "+" && row == "NEW" ? "IFNULL(\(column), 0)" : column) \(sign) 1 WHERE Z_PK = \(row).\(key)\(andRows);"
                    + notify(false, where: "Z_PK = \(row).\(key)\(andRows)")
            }
            triggers = [
                trigger(parameter + "_INSERT", "INSERT", on: target, when: " WHEN (NEW.\(key) NOT NULL)", step("+", "NEW")),
                trigger(
                    parameter + "_UPDATE_INCREMENT", "UPDATE OF \(key)", on: target, when: " WHEN (NEW.\(key) NOT NULL)",
                    " UPDATE \(table) SET \(column) = \(column) + 1 WHERE Z_PK = NEW.\(key)\(andRows);"
                        + notify(false, where: "Z_PK = NEW.\(key)\(andRows)")),
                trigger(
                    parameter + "_UPDATE_DECREMENT", "UPDATE OF \(key)", on: target, when: " WHEN (OLD.\(key) NOT NULL)", step("-", "OLD")),
                trigger(parameter + "_DELETE", "DELETE", on: target, when: " WHEN (OLD.\(key) NOT NULL)", step("-", "OLD")),
                trigger(
                    sourceName + "_INSERT", "INSERT", on: table, when: whenNew,
                    " UPDATE \(table) SET \(column) = (SELECT IFNULL(COUNT(\(key)), 0) FROM \(target) WHERE \(key) = NEW.Z_PK) WHERE Z_PK = NEW.Z_PK;"
                        + notify(true, where: "Z_PK = NEW.Z_PK")),
            ]
        }
        self.entity = name
        self.attribute = attribute
        self.expression = expression
        self.table = table
        self.column = column
        self.rows = rows
        self.value = value
        self.triggers = triggers
    }

    /// What a derivation expression says, before it is looked up in the model.
    enum Parsed: Equatable {
        /// A key path of one or two steps (empty for `now()`), with the SQL function applied to it.
        case attribute(path: [String], function: String?)
        /// `relationship.@count`, `relationship.@sum.attribute` (the aggregate in SQL's spelling).
        case aggregate(relationship: String, function: String, attribute: String?)
        /// Not a derivation Core Data's SQL store supports: why.
        case failure(String)
    }

    /// Reads an expression in any spelling a model holds: the XML's and Core Data's
    /// `predicateFormat` (`canonical:(name)`, `items.@count`, `count:(items)`), or without the
    /// selector's colon (`canonical(name)`, `count(items)`).
    static func parse(_ expression: String) -> Parsed {
        let text = expression.trimmingCharacters(in: .whitespaces)
        let identifier = #"[A-Za-z_][A-Za-z0-9_]*"#
        if text.range(of: #"^now:?\(\s*\)$"#, options: .regularExpression) != nil { return .attribute(path: [], function: nil) }
        if let open = text.firstIndex(of: "("), text.hasSuffix(")") {
            let function = text[..<open].trimmingCharacters(in: CharacterSet(charactersIn: ": "))
            let argument = String(text[text.index(after: open)..<text.index(before: text.endIndex)]).trimmingCharacters(in: .whitespaces)
            if ["count", "sum", "min", "max"].contains(function.lowercased()) {
                // count:(items), sum:(items.price)
                return parse(
                    argument.split(separator: ".").first.map {
                        "\($0).@\(function)" + argument.split(separator: ".").dropFirst().map { ".\($0)" }.joined()
                    } ?? "")
            }
            guard let sqlFunction = functions[function] else {
                return .failure("Core Data's SQL store has no derivation function \(function)")
            }
            let path = argument.split(separator: ".").map(String.init)
            guard (1...2).contains(path.count), path.allSatisfy({ $0.range(of: "^\(identifier)$", options: .regularExpression) != nil })
            else {
                return .failure("\(function): takes one key path of at most two steps")
            }
            return .attribute(path: path, function: sqlFunction)
        }
        let path = text.split(separator: ".").map(String.init)
        if path.count >= 2, path[1].hasPrefix("@") {
            let function = path[1].dropFirst().uppercased()
            guard ["COUNT", "SUM", "MIN", "MAX"].contains(function), path.count == (function == "COUNT" ? 2 : 3) else {
                return .failure("a to-many is aggregated only by @count, or @sum, @min, @max of one attribute")
            }
            return .aggregate(relationship: path[0], function: function, attribute: path.count == 3 ? path[2] : nil)
        }
        guard (1...2).contains(path.count), path.allSatisfy({ $0.range(of: "^\(identifier)$", options: .regularExpression) != nil }) else {
            return .failure("Core Data's SQL store derives only from a key path of at most two steps, an aggregate of a to-many, or now()")
        }
        return .attribute(path: path, function: nil)
    }
}
