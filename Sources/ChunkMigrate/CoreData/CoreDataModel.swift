import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A Core Data model as Xcode saves it (`Model.xcdatamodeld/Model N.xcdatamodel/contents`): the
/// entities, their parents, attributes and relationships, and the `renamingIdentifier`s that
/// say what a renamed entity or property was called in the model before.
///
/// Optional input to plan inference: the stores alone suffice when nothing was renamed, but only
/// the model knows a renamed entity or attribute, and the target of a to-one relationship whose
/// name is not its target's.
public struct CoreDataModel: Sendable, Equatable {
    /// An attribute or relationship.
    public struct Property: Sendable, Equatable {
        /// The property's name.
        public var name: String
        /// Its name in the model before, when it was renamed.
        public var renamingIdentifier: String?
        /// For a relationship: the destination entity's name; `nil` for an attribute.
        public var destination: String?
        /// For a relationship: whether it is to-many.
        public var isToMany: Bool
        /// Whether the property may be nil (`optional="YES"`).
        public var isOptional: Bool = true
        /// For an attribute: its type as the model names it (`Integer 64`, `String`, `Boolean`, `Date`, ...).
        public var attributeType: String? = nil
        /// For an attribute: its default value as the model writes it (`defaultValueString`, or
        /// `defaultDateTimeInterval` for a date: seconds since 2001-01-01).
        public var defaultValue: String? = nil

        /// The default value as an SQL literal in the column Core Data stores the attribute in
        /// (`0`, `1` for a Boolean `YES`, `'text'`, seconds since 2001 for a date), or `nil` when
        /// the attribute has none or its type is not one a literal can hold.
        public var defaultLiteral: String? {
            guard let value = defaultValue, let type = attributeType else { return nil }
            switch type {
            case "Integer 16", "Integer 32", "Integer 64":
                return Int64(value).map(String.init)
            case "Double", "Float", "Decimal", "Date":
                return Double(value).map { String($0) }
            case "Boolean":
                return ["YES", "1", "true"].contains(value) ? "1" : ["NO", "0", "false"].contains(value) ? "0" : nil
            case "String":
                return "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
            default:
                return nil
            }
        }
    }

    /// An entity.
    public struct Entity: Sendable, Equatable {
        /// The entity's name.
        public var name: String
        /// The parent entity's name.
        public var parent: String?
        /// Its name in the model before, when it was renamed.
        public var renamingIdentifier: String?
        /// Attributes and relationships, in the file's order.
        public var properties: [Property]
    }

    /// The entities, in the file's order.
    public var entities: [Entity]

    /// The entity named `name`.
    public func entity(named name: String) -> Entity? { entities.first { $0.name == name } }

    /// Reads a model's `contents` XML (the file inside an `.xcdatamodel` folder, or the folder).
    ///
    /// - Throws: ``MigrationError`` naming the file when it cannot be read or is not a model.
    public static func read(contentsOf url: URL) throws -> CoreDataModel {
        var isDirectory: ObjCBool = false
        let file = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
            ? url.appendingPathComponent("contents") : url
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw MigrationError(.invalidPlan, "cannot read the model", file: file.path)
        }
        let reader = ModelReader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        guard parser.parse(), reader.sawModel else {
            let reason = parser.parserError.map { ": \($0.localizedDescription)" } ?? ""
            throw MigrationError(.invalidPlan, "not a Core Data model's contents XML\(reason)", file: file.path)
        }
        return CoreDataModel(entities: reader.entities)
    }

    /// The to-one relationships of `entity` and of the entities above it: name -> destination.
    func toOneTargets(of entity: String) -> [String: String] {
        var result: [String: String] = [:]
        var current = self.entity(named: entity)
        var steps = 0
        while let found = current, steps <= entities.count {
            for property in found.properties where !property.isToMany {
                if let destination = property.destination, result[property.name] == nil { result[property.name] = destination }
            }
            current = found.parent.flatMap { self.entity(named: $0) }
            steps += 1
        }
        return result
    }
}

/// Collects entities and properties from the model XML's `<entity>`, `<attribute>` and
/// `<relationship>` elements.
private final class ModelReader: NSObject, XMLParserDelegate {
    var entities: [CoreDataModel.Entity] = []
    var sawModel = false

    func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        switch element {
        case "model":
            sawModel = true
        case "entity":
            guard let name = attributes["name"] else { return }
            entities.append(.init(name: name, parent: attributes["parentEntity"],
                                  renamingIdentifier: attributes["renamingIdentifier"], properties: []))
        case "attribute", "relationship":
            guard let name = attributes["name"], !entities.isEmpty else { return }
            let isRelationship = element == "relationship"
            entities[entities.count - 1].properties.append(.init(
                name: name, renamingIdentifier: attributes["renamingIdentifier"],
                destination: isRelationship ? attributes["destinationEntity"] : nil,
                isToMany: isRelationship && attributes["toMany"] == "YES",
                isOptional: attributes["optional"] == "YES",
                attributeType: isRelationship ? nil : attributes["attributeType"],
                defaultValue: attributes["defaultValueString"] ?? attributes["defaultDateTimeInterval"]))
        default:
            break
        }
    }
}
