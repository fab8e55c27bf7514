import Foundation

/// A Core Data managed object model: its entities with their inheritance, attributes and
/// relationships, as Core Data itself knows them.
///
/// Read from any of the forms a model takes:
/// - a store's own model cache (`Z_MODELCACHE`, every store written since iOS 10):
///   ``read(store:)``;
/// - a compiled model (`.mom`, inside an app's `.momd`) or the XML Xcode saves
///   (`.xcdatamodel/contents`): ``read(contentsOf:)``.
///
/// The model is what the migration is derived from: the store's layout (`CoreDataLayout`), the
/// mapping between two versions (`CoreDataModelMapping`) and the checks of ``CoreDataStoreCheck``.
///
/// ```swift
/// let model = try CoreDataModel.read(store: storeURL)
/// for entity in model.entities { print(entity.name, entity.parent ?? "-") }
/// ```
public struct CoreDataModel: Sendable, Equatable {
    /// An entity: its own properties (not those it inherits) and its place in the hierarchy.
    public struct Entity: Sendable, Equatable {
        /// The entity's name.
        public var name: String
        /// The parent entity's name; `nil` for a root.
        public var parent: String?
        /// Whether the entity is abstract (no instance of it alone).
        public var isAbstract: Bool
        /// Its name in the model before, when it was renamed (Xcode's "Renaming ID").
        public var renamingIdentifier: String?
        /// The version hash modifier, which makes Core Data treat an unchanged entity as changed.
        public var versionHashModifier: String?
        /// The properties the entity declares itself, in the model's order.
        public var properties: [Property]
        /// Uniqueness constraints: each a list of property names whose values together are unique.
        public var uniquenessConstraints: [[String]]

        /// Creates an entity.
        public init(
            name: String, parent: String? = nil, isAbstract: Bool = false, renamingIdentifier: String? = nil,
            versionHashModifier: String? = nil, properties: [Property] = [], uniquenessConstraints: [[String]] = []
        ) {
            self.name = name
            self.parent = parent
            self.isAbstract = isAbstract
            self.renamingIdentifier = renamingIdentifier
            self.versionHashModifier = versionHashModifier
            self.properties = properties
            self.uniquenessConstraints = uniquenessConstraints
        }

        /// The property the entity itself declares under `name`.
        public func property(named name: String) -> Property? { properties.first { $0.name == name } }
    }

    /// An attribute or a relationship.
    public struct Property: Sendable, Equatable {
        /// What kind of property it is, with what only that kind has.
        public enum Kind: Sendable, Equatable {
            case attribute(Attribute)
            case relationship(Relationship)
        }

        /// The property's name.
        public var name: String
        /// Its name in the model before, when it was renamed.
        public var renamingIdentifier: String?
        /// The version hash modifier.
        public var versionHashModifier: String?
        /// Whether the property may be nil.
        public var isOptional: Bool
        /// Whether the property is transient (never stored).
        public var isTransient: Bool
        /// The attribute or relationship.
        public var kind: Kind

        /// Creates a property.
        public init(
            name: String, kind: Kind, isOptional: Bool = true, isTransient: Bool = false,
            renamingIdentifier: String? = nil, versionHashModifier: String? = nil
        ) {
            self.name = name
            self.kind = kind
            self.isOptional = isOptional
            self.isTransient = isTransient
            self.renamingIdentifier = renamingIdentifier
            self.versionHashModifier = versionHashModifier
        }

        /// The attribute, when the property is one.
        public var attribute: Attribute? { if case let .attribute(value) = kind { return value }; return nil }
        /// The relationship, when the property is one.
        public var relationship: Relationship? { if case let .relationship(value) = kind { return value }; return nil }
        /// The name the property had in the model before: its renaming identifier, or its name.
        public var previousName: String { renamingIdentifier.flatMap { $0.isEmpty ? nil : $0 } ?? name }
    }

    /// What an attribute adds to a property.
    public struct Attribute: Sendable, Equatable {
        /// The attribute's type.
        public var type: AttributeType
        /// The value a new object takes, and the value lightweight migration writes into rows that
        /// did not have the attribute.
        public var defaultValue: Value?
        /// For a derived attribute (iOS 13+): its derivation, as Core Data prints the expression
        /// (its `predicateFormat`: `items.@count`, `canonical:(name)`, `now()`, a key path) in a
        /// compiled model, as Xcode saved it in the XML.
        public var derivation: String?
        /// Whether large values may be kept in files outside the store.
        public var allowsExternalStorage: Bool
        /// The value transformer of a transformable attribute.
        public var valueTransformerName: String?
        /// Whether persistent history keeps the value of a deleted object (Xcode's "Preserve After
        /// Deletion"); part of the attribute's version hash.
        public var preservesValueInHistoryOnDeletion: Bool

        /// Creates an attribute.
        public init(
            type: AttributeType, defaultValue: Value? = nil, derivation: String? = nil,
            allowsExternalStorage: Bool = false, valueTransformerName: String? = nil,
            preservesValueInHistoryOnDeletion: Bool = false
        ) {
            self.type = type
            self.defaultValue = defaultValue
            self.derivation = derivation
            self.allowsExternalStorage = allowsExternalStorage
            self.valueTransformerName = valueTransformerName
            self.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
        }
    }

    /// What a relationship adds to a property.
    public struct Relationship: Sendable, Equatable {
        /// The destination entity's name.
        public var destination: String
        /// The inverse relationship's name (a property of the destination entity), if any.
        public var inverse: String?
        /// The fewest objects it may hold (Xcode's "Minimum"); 0 when it sets no minimum.
        public var minCount: Int
        /// The most objects it may hold: 1 for a to-one, 0 for a to-many without a maximum.
        public var maxCount: Int
        /// Whether a to-many keeps its objects in order.
        public var isOrdered: Bool

        /// Whether it is to-many: its maximum is not 1, as Core Data decides. Setting it makes a
        /// to-one's maximum 1 and a to-many's 0 (no maximum) when it was not already so.
        public var isToMany: Bool {
            get { maxCount != 1 }
            set { if newValue != isToMany { maxCount = newValue ? 0 : 1 } }
        }

        /// Creates a relationship; `maxCount` is 0 (no maximum) for a to-many and 1 for a to-one
        /// unless given.
        public init(
            destination: String, inverse: String? = nil, isToMany: Bool = false, isOrdered: Bool = false,
            minCount: Int = 0, maxCount: Int? = nil
        ) {
            self.destination = destination
            self.inverse = inverse
            self.minCount = minCount
            self.maxCount = maxCount ?? (isToMany ? 0 : 1)
            self.isOrdered = isOrdered
        }
    }

    /// An attribute type, numbered as `NSAttributeType`.
    public enum AttributeType: Int, Sendable, CaseIterable {
        case undefined = 0
        case integer16 = 100
        case integer32 = 200
        case integer64 = 300
        case decimal = 400
        case double = 500
        case float = 600
        case string = 700
        case boolean = 800
        case date = 900
        case binaryData = 1000
        case uuid = 1100
        case uri = 1200
        case transformable = 1800
        case objectID = 2000
        case composite = 2100

        /// The type as the model XML names it (`attributeType="Integer 16"`).
        public var xmlName: String {
            switch self {
            case .undefined: "Undefined"
            case .integer16: "Integer 16"
            case .integer32: "Integer 32"
            case .integer64: "Integer 64"
            case .decimal: "Decimal"
            case .double: "Double"
            case .float: "Float"
            case .string: "String"
            case .boolean: "Boolean"
            case .date: "Date"
            case .binaryData: "Binary"
            case .uuid: "UUID"
            case .uri: "URI"
            case .transformable: "Transformable"
            case .objectID: "ObjectID"
            case .composite: "Composite"
            }
        }

        /// The type named `name` in the model XML.
        public init?(xmlName name: String) {
            guard let type = Self.allCases.first(where: { $0.xmlName == name }) else { return nil }
            self = type
        }

        /// The column type Core Data declares for it in SQLite.
        public var columnType: String {
            switch self {
            case .integer16, .integer32, .integer64, .boolean: "INTEGER"
            case .decimal: "DECIMAL"
            case .double, .float: "FLOAT"
            case .string, .uri: "VARCHAR"
            case .date: "TIMESTAMP"
            case .binaryData, .uuid, .transformable, .objectID, .composite, .undefined: "BLOB"
            }
        }
    }

    /// A default value, as the model holds it.
    public enum Value: Sendable, Equatable, CustomStringConvertible {
        case integer(Int64)
        case real(Double)
        case bool(Bool)
        case string(String)
        /// Seconds since 2001-01-01 00:00:00 UTC, as Core Data stores a date.
        case date(Double)
        case data([UInt8])

        public var description: String {
            switch self {
            case let .integer(value): String(value)
            case let .real(value): String(value)
            case let .bool(value): value ? "YES" : "NO"
            case let .string(value): "\"\(value)\""
            case let .date(value): "date \(value)"
            case let .data(value): "\(value.count) bytes"
            }
        }
    }

    /// The entities, in the model's order.
    public var entities: [Entity]
    /// The model's version identifiers (Xcode's "Core Data Model: Identifier"), which a store's
    /// metadata repeats as `NSStoreModelVersionIdentifiers`.
    public var versionIdentifiers: [String]

    /// Creates a model.
    public init(entities: [Entity], versionIdentifiers: [String] = []) {
        self.entities = entities
        self.versionIdentifiers = versionIdentifiers
    }

    /// The entity named `name`.
    public func entity(named name: String) -> Entity? { entities.first { $0.name == name } }

    /// The entity named `name` and the entities above it, nearest first.
    public func lineage(of name: String) -> [Entity] {
        var result: [Entity] = []
        var current = entity(named: name)
        while let found = current, result.count <= entities.count {
            result.append(found)
            current = found.parent.flatMap { entity(named: $0) }
        }
        return result
    }

    /// Every property of the entity named `name`, its own and those it inherits, each with the
    /// entity that declares it: the root's first.
    public func allProperties(of name: String) -> [(declaredBy: String, property: Property)] {
        lineage(of: name).reversed().flatMap { entity in entity.properties.map { (entity.name, $0) } }
    }

    /// The property `name` of entity `entity`, declared by it or inherited, with the entity that
    /// declares it.
    public func property(_ name: String, of entity: String) -> (declaredBy: String, property: Property)? {
        for ancestor in lineage(of: entity) {
            if let property = ancestor.property(named: name) { return (ancestor.name, property) }
        }
        return nil
    }

    /// The names of the entity named `name` and of every entity below it.
    public func descendants(of name: String) -> [String] {
        var result = [name]
        var index = 0
        while index < result.count {
            let parent = result[index]
            result += entities.filter { $0.parent == parent }.map(\.name)
            index += 1
        }
        return result
    }

    /// The root of the entity named `name`'s hierarchy.
    public func root(of name: String) -> String { lineage(of: name).last?.name ?? name }

    /// Checks that the model is whole: every parent and destination it names exists, every
    /// inverse is a relationship of the destination, and no hierarchy has a cycle.
    ///
    /// - Throws: ``MigrationError`` naming the entity and property, and `file`.
    public func validate(file: String) throws {
        let names = Set(entities.map(\.name))
        guard names.count == entities.count else {
            let duplicated = Dictionary(grouping: entities.map(\.name), by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
            throw MigrationError(.store, "the model declares entity \(duplicated.joined(separator: ", ")) twice", file: file)
        }
        for entity in entities {
            if let parent = entity.parent, !names.contains(parent) {
                throw MigrationError(
                    .store, "the model's entity \(entity.name) has parent \(parent), which the model does not declare", file: file)
            }
            guard lineage(of: entity.name).count <= entities.count else {
                throw MigrationError(.store, "the model's entity \(entity.name) is its own ancestor", file: file)
            }
            for property in entity.properties {
                guard let relationship = property.relationship else { continue }
                guard names.contains(relationship.destination) else {
                    throw MigrationError(
                        .store,
                        "the model's relationship \(entity.name).\(property.name) has destination \(relationship.destination), which the model does not declare",
                        file: file)
                }
                if let inverse = relationship.inverse, self.property(inverse, of: relationship.destination)?.property.relationship == nil {
                    throw MigrationError(
                        .store,
                        "the model's relationship \(entity.name).\(property.name) has inverse \(relationship.destination).\(inverse), which is not a relationship of \(relationship.destination)",
                        file: file)
                }
            }
        }
    }
}
