import Foundation

/// The model as `NSKeyedArchiver` writes an `NSManagedObjectModel`: the form of a compiled `.mom`
/// and, raw-DEFLATE compressed, of a store's `Z_MODELCACHE.Z_CONTENT`.
///
/// The keys are those Core Data's `encodeWithCoder:` writes: `NSEntities` (an
/// `NSKnownKeysDictionary1` whose `values` are the entities, in name order), per entity
/// `NSEntityName`, `NSSuperentity`, `NSIsAbstract`, `NSRenamingIdentifier`,
/// `NSVersionHashModifier`, `NSUniqueTuples` and `NSProperties` (every property of the entity,
/// inherited ones too, each a description or a `_NSPropertyDescriptionProxy` of the parent's), per
/// property `NSPropertyName`, `NSIsOptional`, `NSIsTransient` (absent when false),
/// `NSRenamingIdentifier`, `NSVersionHashModifier`, and `NSAttributeType`, `NSDefaultValue`,
/// `NSDerivationExpression`, `NSValueTransformerName` and `NSFlagsKey` (4: values may be stored
/// in external files; 0x10: persistent history keeps the value on deletion) for attributes,
/// `_NSDestinationEntityName`, `_NSInverseRelationshipName`, `NSMinCount`, `NSMaxCount`,
/// `NSIsOrdered` for relationships.
extension CoreDataModel {
    /// Reads a model from its keyed archive.
    ///
    /// - Throws: ``MigrationError`` naming `file` and what is missing.
    init(archive bytes: [UInt8], file: String) throws {
        let archive: KeyedArchive
        do {
            archive = try KeyedArchive(try PropertyList(binary: bytes))
        } catch {
            throw MigrationError(.store, "the model is not a keyed archive: \(error)", file: file, cause: error)
        }
        do {
            self = try Self.decode(archive)
        } catch let error as KeyedArchive.Malformed {
            throw MigrationError(.store, "the model archive cannot be read: \(error.description)", file: file)
        }
        try validate(file: file)
    }

    private static func decode(_ archive: KeyedArchive) throws -> CoreDataModel {
        guard let root = archive.resolve(archive.top["root"]), archive.className(archive.top["root"]) == "NSManagedObjectModel" else {
            throw KeyedArchive.Malformed(description: "its root is not an NSManagedObjectModel")
        }
        guard let entityObjects = archive.collectionValues(root["NSEntities"]) else {
            throw KeyedArchive.Malformed(description: "NSEntities is not a collection of entities")
        }
        // Each entity lists every property it has; a property is its own when its parent does
        // not have one of the same name.
        var decoded: [(entity: Entity, all: [Property])] = []
        for reference in entityObjects {
            guard let object = archive.resolve(reference), let name = archive.string(object["NSEntityName"]) else {
                throw KeyedArchive.Malformed(description: "an entity has no NSEntityName")
            }
            guard let listed = archive.dictionary(object["NSProperties"]) else {
                throw KeyedArchive.Malformed(description: "entity \(name): NSProperties is not a dictionary of properties")
            }
            var properties: [Property] = []
            for (key, value) in listed {
                if let property = try Self.property(value, archive: archive, entity: name) {
                    properties.append(property)
                } else if archive.className(value) == nil {
                    throw KeyedArchive.Malformed(description: "entity \(name): property \(key) is not an object")
                }
            }
            let parent = archive.resolve(object["NSSuperentity"]).flatMap { archive.string($0["NSEntityName"]) }
            let constraints = (archive.objects(object["NSUniqueTuples"]) ?? []).compactMap { archive.strings($0) }
            decoded.append(
                (
                    Entity(
                        name: name, parent: parent, isAbstract: archive.bool(object["NSIsAbstract"]) ?? false,
                        renamingIdentifier: Self.renaming(archive.string(object["NSRenamingIdentifier"]), of: name),
                        versionHashModifier: archive.string(object["NSVersionHashModifier"]),
                        properties: [], uniquenessConstraints: constraints), properties
                ))
        }
        let allByName = Dictionary(decoded.map { ($0.entity.name, Set($0.all.map(\.name))) }, uniquingKeysWith: { a, _ in a })
        var entities: [Entity] = []
        for (entity, all) in decoded {
            var entity = entity
            let inherited = entity.parent.flatMap { allByName[$0] } ?? []
            entity.properties = all.filter { !inherited.contains($0.name) }
            entities.append(entity)
        }
        let identifiers = archive.strings(root["NSVersionIdentifiers"]) ?? []
        return CoreDataModel(entities: entities, versionIdentifiers: identifiers)
    }

    /// The property an archived description describes; `nil` for kinds that are never stored
    /// (fetched properties, expression descriptions).
    private static func property(_ reference: PropertyList, archive: KeyedArchive, entity: String) throws -> Property? {
        var reference = reference
        var hops = 0
        while archive.className(reference) == "_NSPropertyDescriptionProxy", hops < 8 {
            guard let underlying = archive.resolve(reference)?["NSUnderlyingProperty"] else {
                throw KeyedArchive.Malformed(description: "entity \(entity): a property proxy has no NSUnderlyingProperty")
            }
            reference = underlying
            hops += 1
        }
        guard let className = archive.className(reference), let object = archive.resolve(reference) else { return nil }
        guard let name = archive.string(object["NSPropertyName"]) else {
            throw KeyedArchive.Malformed(description: "entity \(entity): a \(className) has no NSPropertyName")
        }
        let kind: Property.Kind
        switch className {
        case "NSAttributeDescription", "NSDerivedAttributeDescription", "NSCompositeAttributeDescription":
            let code = Int(archive.resolve(object["NSAttributeType"])?.integer ?? 0)
            let flags = archive.resolve(object["NSFlagsKey"])?.integer ?? 0
            guard let type = AttributeType(rawValue: code) else {
                throw KeyedArchive.Malformed(
                    description: "attribute \(entity).\(name) has attribute type \(code), which this version does not know")
            }
            kind = .attribute(
                Attribute(
                    type: type, defaultValue: Self.value(object["NSDefaultValue"], type: type, archive: archive),
                    derivation: try object["NSDerivationExpression"].flatMap { reference in
                        var budget = Self.expressionBudget
                        let text = Self.expression(reference, archive: archive, depth: 0, budget: &budget)
                        guard budget >= 0 else {
                            throw KeyedArchive.Malformed(
                                description:
                                    "attribute \(entity).\(name): its derivation expression has more than \(Self.expressionBudget) parts")
                        }
                        return text
                    },
                    allowsExternalStorage: flags & 4 != 0,
                    valueTransformerName: archive.string(object["NSValueTransformerName"]),
                    preservesValueInHistoryOnDeletion: flags & 0x10 != 0))
        case "NSRelationshipDescription":
            let destination =
                archive.string(object["_NSDestinationEntityName"])
                ?? archive.resolve(object["NSDestinationEntity"]).flatMap { archive.string($0["NSEntityName"]) }
            guard let destination else {
                throw KeyedArchive.Malformed(description: "relationship \(entity).\(name) has no destination entity")
            }
            let inverse =
                archive.string(object["_NSInverseRelationshipName"])
                ?? archive.resolve(object["NSInverseRelationship"]).flatMap { archive.string($0["NSPropertyName"]) }
            let maxCount = Int(archive.resolve(object["NSMaxCount"])?.integer ?? 1)
            kind = .relationship(
                Relationship(
                    destination: destination, inverse: inverse, isOrdered: archive.bool(object["NSIsOrdered"]) ?? false,
                    minCount: Int(archive.resolve(object["NSMinCount"])?.integer ?? 0), maxCount: maxCount))
        default:
            return nil
        }
        return Property(
            name: name, kind: kind, isOptional: archive.bool(object["NSIsOptional"]) ?? false,
            isTransient: archive.bool(object["NSIsTransient"]) ?? false,
            renamingIdentifier: Self.renaming(archive.string(object["NSRenamingIdentifier"]), of: name),
            versionHashModifier: archive.string(object["NSVersionHashModifier"]))
    }

    /// A renaming identifier as the model means it: Core Data's archives give every entity and
    /// property one, its own name unless it was renamed.
    private static func renaming(_ identifier: String?, of name: String) -> String? {
        identifier == name || identifier?.isEmpty == true ? nil : identifier
    }

    /// A default value: a number inline, or an `NSString`, `NSDate`, `NSData`, `NSUUID` object.
    private static func value(_ reference: PropertyList?, type: AttributeType, archive: KeyedArchive) -> Value? {
        guard let object = archive.resolve(reference) else { return nil }
        switch object {
        case let .integer(number):
            switch type {
            case .boolean: return .bool(number != 0)
            case .double, .float, .decimal: return .real(Double(number))
            case .date: return .date(Double(number))
            default: return .integer(number)
            }
        case let .bool(flag): return type == .boolean ? .bool(flag) : .integer(flag ? 1 : 0)
        case let .real(number):
            switch type {
            case .integer16, .integer32, .integer64: return Int64(exactly: number.rounded(.towardZero)).map { .integer($0) }
            case .date: return .date(number)
            default: return .real(number)
            }
        case let .string(text): return .string(text)
        case let .data(bytes): return .data(bytes)
        default:
            if let text = archive.string(object) { return .string(text) }
            if case let .real(seconds)? = object["NS.time"] { return .date(seconds) }
            if let decimal = Self.decimal(object) { return .real(decimal) }
            if case let .data(bytes)? = object["NS.uuidbytes"] { return .data(bytes) }
            if case let .data(bytes)? = object["NS.data"] { return .data(bytes) }
            if let relative = archive.string(object["NS.relative"]) { return .string(relative) }
            return nil
        }
    }

    /// An archived `NSDecimalNumber`: its mantissa (up to eight little-endian 16-bit words, of
    /// which `NS.length` count), exponent and sign, as a `Double`.
    private static func decimal(_ object: PropertyList) -> Double? {
        guard case let .data(mantissa)? = object["NS.mantissa"], let exponent = object["NS.exponent"]?.integer,
            let length = object["NS.length"]?.integer, length >= 0, Int(length) * 2 <= mantissa.count, abs(exponent) < 400
        else { return nil }
        var value = 0.0
        for word in (0..<Int(length)).reversed() {
            value = value * 65_536 + Double(UInt16(mantissa[2 * word]) | UInt16(mantissa[2 * word + 1]) << 8)
        }
        value *= pow(10, Double(exponent))
        return object["NS.negative"]?.bool == true ? -value : value
    }

    /// An `NSExpression` as Core Data prints it (its `predicateFormat`): a key path
    /// (`additionalAttributes.cameraCaptureDevice`, `items.@count`), a function call with its
    /// selector (`canonical:(name)`, `now()`), a constant.
    /// The most parts a derivation expression is read with: real ones have a few (`items.@count`,
    /// `canonical:(name)`); a damaged archive whose expressions list one another many times over
    /// would otherwise be read an exponential number of times.
    static let expressionBudget = 1_000

    private static func expression(_ reference: PropertyList, archive: KeyedArchive, depth: Int, budget: inout Int) -> String? {
        // Expressions refer to each other by reference: a damaged archive may loop.
        budget -= 1
        guard budget >= 0, depth < 32, let object = archive.resolve(reference) else { return nil }
        switch archive.className(reference) {
        case "NSKeyPathExpression", "NSFunctionExpression":
            let arguments = (archive.objects(object["NSArguments"]) ?? []).compactMap {
                expression($0, archive: archive, depth: depth + 1, budget: &budget)
            }
            let selector = archive.string(object["NSSelectorName"]) ?? ""
            if selector.hasPrefix("valueForKey") {
                let operand = object["NSOperand"].flatMap { expression($0, archive: archive, depth: depth + 1, budget: &budget) } ?? ""
                let path = arguments.joined(separator: ".")
                return operand.isEmpty || operand == "SELF" ? path : operand + "." + path
            }
            return selector + "(" + arguments.joined(separator: ", ") + ")"
        case "NSKeyPathSpecifierExpression":
            return archive.string(object["NSKeyPath"])
        case "NSSelfExpression":
            return "SELF"
        case "NSConstantValueExpression":
            guard let value = archive.resolve(object["NSConstantValue"]) else { return "nil" }
            if let text = archive.string(value) { return "\"\(text)\"" }
            if let number = value.integer { return String(number) }
            if case let .real(number) = value { return String(number) }
            return "constant"
        case "NSVariableExpression":
            return "$" + (archive.string(object["NSVariable"]) ?? "")
        default:
            return archive.className(reference)
        }
    }
}

extension CoreDataModel {
    /// The model as a keyed archive (the binary property list of a compiled `.mom`), with the
    /// keys ``init(archive:file:)`` reads: every entity lists its inherited properties too, as
    /// Core Data's archives do. Equal models give equal bytes.
    ///
    /// This is the form chunkmigrate reads back; Core Data's own decoder expects further keys
    /// (version hashes, the entities' class names, the known-keys dictionaries of its own
    /// archives), so a store whose cache this wrote is for chunkmigrate and its tests, not for an
    /// app.
    func archived() -> [UInt8] {
        var writer = KeyedArchiveWriter()
        let root = writer.reserve()
        let references = Dictionary(uniqueKeysWithValues: entities.map { ($0.name, writer.reserve()) })
        for entity in entities.sorted(by: { $0.name < $1.name }) {
            var properties: [(String, PropertyList)] = []
            for (_, property) in allProperties(of: entity.name) {
                properties.append((property.name, Self.archive(property, entity: references[entity.name]!, writer: &writer)))
            }
            var fields: [String: PropertyList] = [
                "NSEntityName": writer.string(entity.name),
                "NSManagedObjectModel": root,
                "NSProperties": writer.dictionary(properties, className: "NSMutableDictionary"),
                "NSSuperentity": entity.parent.flatMap { references[$0] } ?? KeyedArchiveWriter.null,
                "NSRenamingIdentifier": writer.string(entity.renamingIdentifier ?? entity.name),
                "NSVersionHashModifier": writer.string(entity.versionHashModifier),
            ]
            if entity.isAbstract { fields["NSIsAbstract"] = .bool(true) }
            if !entity.uniquenessConstraints.isEmpty {
                var tuples: [PropertyList] = []
                for constraint in entity.uniquenessConstraints {
                    var names: [PropertyList] = []
                    for name in constraint { names.append(writer.string(name)) }
                    tuples.append(writer.array(names))
                }
                fields["NSUniqueTuples"] = writer.array(tuples)
            }
            writer.fill(references[entity.name]!, "NSEntityDescription", fields)
        }
        let entityList = entities.map(\.name).sorted().map { references[$0]! }
        let entityDictionary = writer.append(
            "NSKnownKeysDictionary1", superclasses: ["NSKnownKeysDictionary", "NSMutableDictionary", "NSDictionary", "NSObject"],
            ["values": writer.array(entityList)])
        var identifierStrings: [PropertyList] = []
        for identifier in versionIdentifiers { identifierStrings.append(writer.string(identifier)) }
        let identifiers = writer.array(identifierStrings, className: "NSSet")
        writer.fill(
            root, "NSManagedObjectModel",
            [
                "NSEntities": entityDictionary, "NSVersionIdentifiers": identifiers,
                "NSFetchRequestTemplates": KeyedArchiveWriter.null,
            ])
        return writer.archive(root: root).binary()
    }

    private static func archive(_ property: Property, entity: PropertyList, writer: inout KeyedArchiveWriter) -> PropertyList {
        var fields: [String: PropertyList] = [
            "NSPropertyName": writer.string(property.name),
            "NSEntity": entity,
            "NSRenamingIdentifier": writer.string(property.renamingIdentifier ?? property.name),
            "NSVersionHashModifier": writer.string(property.versionHashModifier),
        ]
        if property.isOptional { fields["NSIsOptional"] = .bool(true) }
        if property.isTransient { fields["NSIsTransient"] = .bool(true) }
        switch property.kind {
        case let .attribute(attribute):
            fields["NSAttributeType"] = .integer(Int64(attribute.type.rawValue))
            fields["NSDefaultValue"] = attribute.defaultValue.map { archive($0, writer: &writer) } ?? KeyedArchiveWriter.null
            fields["NSValueTransformerName"] = writer.string(attribute.valueTransformerName)
            fields["NSFlagsKey"] = .integer(
                (attribute.allowsExternalStorage ? 4 : 0) | (attribute.preservesValueInHistoryOnDeletion ? 0x10 : 0))
            if let derivation = attribute.derivation {
                let path = writer.append(
                    "NSKeyPathSpecifierExpression", ["NSExpressionType": .integer(10), "NSKeyPath": writer.string(derivation)])
                fields["NSDerivationExpression"] = path
                return writer.append(
                    "NSDerivedAttributeDescription", superclasses: ["NSAttributeDescription", "NSPropertyDescription", "NSObject"], fields)
            }
            return writer.append("NSAttributeDescription", superclasses: ["NSPropertyDescription", "NSObject"], fields)
        case let .relationship(relationship):
            fields["_NSDestinationEntityName"] = writer.string(relationship.destination)
            fields["_NSInverseRelationshipName"] = writer.string(relationship.inverse)
            fields["NSMaxCount"] = .integer(Int64(relationship.maxCount))
            fields["NSMinCount"] = .integer(Int64(relationship.minCount))
            if relationship.isOrdered { fields["NSIsOrdered"] = .bool(true) }
            return writer.append("NSRelationshipDescription", superclasses: ["NSPropertyDescription", "NSObject"], fields)
        }
    }

    private static func archive(_ value: Value, writer: inout KeyedArchiveWriter) -> PropertyList {
        switch value {
        case let .integer(number): .integer(number)
        case let .real(number): .real(number)
        case let .bool(flag): .bool(flag)
        case let .string(text): writer.string(text)
        case let .date(seconds): writer.append("NSDate", ["NS.time": .real(seconds)])
        case let .data(bytes): .data(bytes)
        }
    }
}
