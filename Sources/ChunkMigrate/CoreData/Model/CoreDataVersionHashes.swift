import Foundation

/// A model's entity version hashes as Core Data computes them: what a store's metadata records
/// under `NSStoreModelVersionHashes` (entity name to 32 bytes), and how Core Data tells which model
/// wrote a store. Equal hashes mean Core Data takes the models for the same version, whatever form
/// each was read from (a model cache, a `.mom`, the XML).
///
/// The algorithm, as Core Data's `-[NSEntityDescription _newVersionHashInStyle:]` and the
/// `-_versionHash:inStyle:` methods of `NSPropertyDescription`, `NSAttributeDescription`,
/// `NSDerivedAttributeDescription` and `NSRelationshipDescription` compute it, in the style
/// `-[NSManagedObjectModel entityVersionHashesByName]` uses for a store's metadata (0). All
/// hashes are SHA-256; integers are little-endian; strings are their UTF-8 bytes without a
/// terminator, and a missing one adds nothing.
/// - A property: its name, a 16-bit field of flags (1 optional, 2 transient, 4 read-only), its
///   version hash modifier.
/// - An attribute: the property's hash, the attribute type (32 bits), a byte 1 when it allows
///   external storage, a byte 1 when history preserves its value on deletion.
/// - A derived attribute: its derivation's `predicateFormat` (and its filtering predicate's), and
///   nothing else: Core Data computes the attribute's own hash and leaves it out.
/// - A relationship: the property's hash, the destination entity's name, the inverse's name
///   (unless the relationship is its own inverse), the maximum and minimum counts (32 bits
///   each), and 2 bytes `01 00` when it is ordered.
/// - An entity: its name, a byte for abstract, its parent's hash, the hashes of every
///   attribute and relationship it has (its own and those it inherits; not transient ones,
///   not fetched properties) ordered by name, its version hash modifier, and its uniqueness
///   constraints, each joined by `.`, ordered.
///
/// `NSStoreModelVersionHashesDigest` (written since `NSPersistenceFrameworkVersion` 973,
/// macOS 10.15 and iOS 13) is the Base64 SHA-512 of every entity's name and hash, by name
/// (`-[NSManagedObjectModel _entityVersionHashesDigestFrom:]`); `NSStoreModelVersionChecksumKey`
/// (since 1321, macOS 14 and iOS 17) the Base64 SHA-256 of the hashes by name
/// (`-[NSManagedObjectModel versionChecksum]`).
///
/// Style 1 (`_versionHashInStyle:1`, which `NSStoreMigrationPolicy` also tries, through
/// `-[NSManagedObjectModelBundle _modelForVersionHashes:inStyle:]`, to find the model of a
/// "skewed" source store) differs in one case only: a relationship inherited from an entity where
/// it is its own inverse hashes its inverse's name too. A parent's hash is always style 0's.
///
/// Not modelled, so not hashed as Core Data would: a derived attribute's filtering predicate, a
/// composite attribute's elements (Core Data hashes those, sorted by name, in place of the
/// attribute's own fields), the read-only flag of a property that is not derived.
///
/// ```swift
/// let hashes = CoreDataVersionHashes(model: try CoreDataModel.read(contentsOf: modelURL))
/// let sameVersion = hashes == CoreDataVersionHashes(metadata: storeMetadata)
/// ```
package struct CoreDataVersionHashes: Sendable, Equatable {
    /// Each entity's version hash (32 bytes), by entity name.
    package var entities: [String: [UInt8]]

    /// Hashes as given, by entity name.
    package init(entities: [String: [UInt8]]) {
        self.entities = entities
    }

    /// The hashes Core Data computes for `model`.
    package init(model: CoreDataModel) {
        var known = Known()
        for entity in model.entities {
            _ = Self.hash(of: entity.name, in: model, into: &known, depth: 0)
        }
        self.entities = known.entities
    }

    /// The hashes computed so far: entities', and properties' by declaring entity and name (an
    /// inherited property hashes as the one its ancestor declares).
    private struct Known {
        var entities: [String: [UInt8]] = [:]
        var properties: [String: [String: [UInt8]]] = [:]
    }

    /// The hashes a store's metadata records (`NSStoreModelVersionHashes`); `nil` when it has none.
    package init?(metadata plist: [String: Any]) {
        guard let recorded = plist["NSStoreModelVersionHashes"] as? [String: Any] else { return nil }
        var entities: [String: [UInt8]] = [:]
        for (name, value) in recorded {
            guard let data = value as? Data else { return nil }
            entities[name] = Array(data)
        }
        self.entities = entities
    }

    /// The entity names in Core Data's order, `-[NSString compare:]`'s: for names of ASCII
    /// letters, digits and `_`, by their bytes, as Swift orders strings.
    package var names: [String] { entities.keys.sorted() }

    /// `NSStoreModelVersionHashesDigest`: the Base64 SHA-512 of each entity's name and hash, by name.
    package var digest: String {
        var bytes: [UInt8] = []
        for name in names {
            bytes += Array(name.utf8)
            bytes += entities[name]!
        }
        return Data(VersionHashDigest.sha512(bytes)).base64EncodedString()
    }

    /// `NSStoreModelVersionChecksumKey`: the Base64 SHA-256 of the entities' hashes, by name.
    package var checksum: String {
        return Data(VersionHashDigest.sha256(names.flatMap { entities[$0]! })).base64EncodedString()
    }

    /// Core Data's version hash of `property` (32 bytes), one that `entity` declares.
    package static func hash(of property: CoreDataModel.Property, declaredBy entity: String) -> [UInt8] {
        var bytes: [UInt8] = []
        switch property.kind {
        case let .attribute(attribute):
            if let derivation = attribute.derivation {
                // Core Data hashes the attribute as any other, then leaves that hash out.
                return sha256(Array(predicateFormat(derivation).utf8))
            }
            bytes = propertyHash(property)
            append(Int32(truncatingIfNeeded: attribute.type.rawValue), to: &bytes)
            if attribute.allowsExternalStorage { bytes.append(1) }
            if attribute.preservesValueInHistoryOnDeletion { bytes.append(1) }
        case let .relationship(relationship):
            bytes = propertyHash(property)
            bytes += Array(relationship.destination.utf8)
            if let inverse = relationship.inverse, !(relationship.destination == entity && inverse == property.name) {
                bytes += Array(inverse.utf8)
            }
            append(Int32(truncatingIfNeeded: relationship.maxCount), to: &bytes)
            append(Int32(truncatingIfNeeded: relationship.minCount), to: &bytes)
            if relationship.isOrdered { bytes += [1, 0] }
        }
        return sha256(bytes)
    }

    /// What every property's hash starts from: name, flags, version hash modifier.
    private static func propertyHash(_ property: CoreDataModel.Property) -> [UInt8] {
        var bytes = Array(property.name.utf8)
        let flags: UInt16 = (property.isOptional ? 1 : 0) | (property.isTransient ? 2 : 0)
        bytes += [UInt8(flags & 0xFF), UInt8(flags >> 8)]
        bytes += Array((property.versionHashModifier ?? "").utf8)
        return sha256(bytes)
    }

    /// The hash of entity `name`, its parent's first; `known` keeps those computed. A
    /// hierarchy deeper than the model has entities (a cycle, which `validate` refuses) stops.
    private static func hash(of name: String, in model: CoreDataModel, into known: inout Known, depth: Int) -> [UInt8] {
        if let hash = known.entities[name] { return hash }
        guard let entity = model.entity(named: name), depth <= model.entities.count else { return [] }
        var bytes = Array(entity.name.utf8)
        bytes.append(entity.isAbstract ? 1 : 0)
        if let parent = entity.parent {
            bytes += hash(of: parent, in: model, into: &known, depth: depth + 1)
        }
        // Every property the entity has, its own over an inherited one of the same name.
        var properties: [String: (declaredBy: String, property: CoreDataModel.Property)] = [:]
        for (declaredBy, property) in model.allProperties(of: name) { properties[property.name] = (declaredBy, property) }
        for key in properties.keys.sorted() {
            let (declaredBy, property) = properties[key]!
            // A derived attribute is never transient to Core Data.
            guard !property.isTransient || property.attribute?.derivation != nil else { continue }
            if let hash = known.properties[declaredBy]?[key] {
                bytes += hash
            } else {
                let hash = hash(of: property, declaredBy: declaredBy)
                known.properties[declaredBy, default: [:]][key] = hash
                bytes += hash
            }
        }
        bytes += Array((entity.versionHashModifier ?? "").utf8)
        for constraint in entity.uniquenessConstraints.map({ $0.joined(separator: ".") }).sorted() {
            bytes += Array(constraint.utf8)
        }
        let result = sha256(bytes)
        known.entities[name] = result
        return result
    }

    /// A derivation as `-[NSExpression predicateFormat]` prints it, from the text Xcode saved
    /// (the model compiler parses that text into an expression): no spaces outside quotes but
    /// one after each comma.
    static func predicateFormat(_ text: String) -> String {
        var result = ""
        var quote: Character?
        for character in text {
            if let open = quote {
                result.append(character)
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
                result.append(character)
            } else if character == "," {
                result += ", "
            } else if !character.isWhitespace {
                result.append(character)
            }
        }
        return result
    }

    private static func append(_ value: Int32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    private static func sha256(_ bytes: [UInt8]) -> [UInt8] { VersionHashDigest.sha256(bytes) }
}

extension CoreDataModel {
    /// Each entity's version hash (32 bytes) as Core Data computes it, by entity name: what a
    /// store of this model records in its metadata's `NSStoreModelVersionHashes`.
    /// See `CoreDataVersionHashes`.
    package func entityVersionHashes() -> [String: [UInt8]] {
        CoreDataVersionHashes(model: self).entities
    }
}
