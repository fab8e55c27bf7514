import Foundation

/// The model as Xcode saves it: `Model.xcdatamodeld/Model N.xcdatamodel/contents`, XML with an
/// `<entity>` per entity and an `<attribute>` or `<relationship>` per property. A renaming
/// identifier is the `elementID` attribute; a property without `optional="YES"` is required; a
/// relationship's `minCount` is 0 and its `maxCount` 1 for a to-one, 0 for a to-many unless
/// written.
extension CoreDataModel {
    /// Reads a model's `contents` XML.
    ///
    /// - Throws: ``MigrationError`` naming `file` when it is not a model, or names an attribute
    ///   type this version does not know.
    package init(xml data: Data, file: String) throws {
        var reader = ModelXMLReader()
        do {
            var xml = try XMLReader(data)
            while let event = try xml.next() {
                switch event {
                case let .start(element, attributes): reader.start(element, attributes: attributes)
                case let .end(element): reader.end(element)
                case .text: break
                }
            }
        } catch {
            throw MigrationError(.store, "not a Core Data model's contents XML: \(error)", file: file)
        }
        guard reader.sawModel else {
            throw MigrationError(.store, "not a Core Data model's contents XML: its root element is not <model>", file: file)
        }
        if let problem = reader.problem { throw MigrationError(.store, problem, file: file) }
        self.init(entities: reader.entities, versionIdentifiers: [reader.versionIdentifier])
        try validate(file: file)
    }
}

/// Collects entities and properties from the model XML's elements.
private struct ModelXMLReader {
    var entities: [CoreDataModel.Entity] = []
    var versionIdentifier = ""
    var sawModel = false
    var problem: String?
    private var constraint: [String]?

    mutating func start(_ element: String, attributes: [String: String]) {
        func flag(_ name: String) -> Bool { attributes[name] == "YES" }
        switch element {
        case "model":
            sawModel = true
            versionIdentifier = attributes["userDefinedModelVersionIdentifier"] ?? ""
        case "entity":
            guard let name = attributes["name"] else { return }
            entities.append(
                .init(
                    name: name, parent: attributes["parentEntity"], isAbstract: flag("isAbstract"),
                    renamingIdentifier: attributes["elementID"],
                    versionHashModifier: attributes["versionHashModifier"]))
        case "attribute", "relationship":
            guard let name = attributes["name"], !entities.isEmpty else { return }
            let owner = entities[entities.count - 1].name
            let kind: CoreDataModel.Property.Kind
            if element == "relationship" {
                guard let destination = attributes["destinationEntity"] else {
                    problem = problem ?? "relationship \(owner).\(name) has no destinationEntity"
                    return
                }
                let toMany = flag("toMany")
                kind = .relationship(
                    .init(
                        destination: destination, inverse: attributes["inverseName"],
                        isToMany: toMany, isOrdered: toMany && flag("ordered"),
                        minCount: attributes["minCount"].flatMap { Int($0) } ?? 0,
                        maxCount: attributes["maxCount"].flatMap { Int($0) }))
            } else {
                let typeName = attributes["attributeType"] ?? "Undefined"
                guard let type = CoreDataModel.AttributeType(xmlName: typeName) else {
                    problem = problem ?? "attribute \(owner).\(name) has type \"\(typeName)\", which this version does not know"
                    return
                }
                kind = .attribute(
                    .init(
                        type: type, defaultValue: Self.defaultValue(attributes, type: type),
                        derivation: flag("derived") ? attributes["derivationExpression"] : nil,
                        allowsExternalStorage: flag("allowsExternalBinaryDataStorage"),
                        valueTransformerName: attributes["valueTransformerName"],
                        preservesValueInHistoryOnDeletion: flag("preserveAfterDeletion")))
            }
            entities[entities.count - 1].properties.append(
                .init(
                    name: name, kind: kind, isOptional: flag("optional"), isTransient: flag("transient"),
                    renamingIdentifier: attributes["elementID"], versionHashModifier: attributes["versionHashModifier"]))
        case "uniquenessConstraint":
            constraint = []
        case "constraint":
            if let value = attributes["value"] { constraint?.append(value) }
        default:
            break
        }
    }

    mutating func end(_ element: String) {
        if element == "uniquenessConstraint", let constraint, !entities.isEmpty {
            entities[entities.count - 1].uniquenessConstraints.append(constraint)
            self.constraint = nil
        }
    }

    /// The default of an attribute: `defaultValueString` read as the attribute's type the way the
    /// model compiler reads it (`NSString`'s `longLongValue`, `doubleValue`, `boolValue`: `"NO"`
    /// in an integer attribute is 0), or `defaultDateTimeInterval` for a date.
    static func defaultValue(_ attributes: [String: String], type: CoreDataModel.AttributeType) -> CoreDataModel.Value? {
        if type == .date { return attributes["defaultDateTimeInterval"].flatMap(Double.init).map { .date($0) } }
        guard let text = attributes["defaultValueString"] else { return nil }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        /// The number at the start of the text, as `NSString` reads one; 0 when there is none.
        func leadingNumber() -> Double {
            var end = trimmed.startIndex
            while end < trimmed.endIndex, "+-0123456789.eE".contains(trimmed[end]) { end = trimmed.index(after: end) }
            // The longest prefix that is a number: sign, digits, a fraction, an exponent with
            // its digits; read once, whatever the text's length.
            let characters = Array(trimmed[..<end])
            var length = 0, index = 0, digits = 0
            if index < characters.count, "+-".contains(characters[index]) { index += 1 }
            while index < characters.count, characters[index].isASCII, characters[index].isNumber { index += 1; digits += 1 }
            if index < characters.count, characters[index] == "." {
                index += 1
                while index < characters.count, characters[index].isASCII, characters[index].isNumber { index += 1; digits += 1 }
            }
            guard digits > 0 else { return 0 }
            length = index
            if index < characters.count, "eE".contains(characters[index]) {
                var exponent = index + 1
                if exponent < characters.count, "+-".contains(characters[exponent]) { exponent += 1 }
                let start = exponent
                while exponent < characters.count, characters[exponent].isASCII, characters[exponent].isNumber { exponent += 1 }
                if exponent > start { length = exponent }
            }
            return Double(String(characters[..<length])) ?? 0
        }
        switch type {
        case .integer16, .integer32, .integer64:
            return Int64(trimmed).map { .integer($0) } ?? Int64(exactly: leadingNumber().rounded(.towardZero)).map { .integer($0) }
        case .double, .float, .decimal:
            return .real(leadingNumber())
        case .boolean:
            // boolValue: YES, Y, T (any case), or a number that is not zero.
            guard let first = trimmed.uppercased().first else { return .bool(false) }
            return .bool("YT".contains(first) || leadingNumber() != 0)
        case .string, .uri:
            return .string(text)
        case .uuid:
            return UUID(uuidString: text).map { uuid in .data(withUnsafeBytes(of: uuid.uuid) { Array($0) }) }
        default:
            return nil
        }
    }
}
