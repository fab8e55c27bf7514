import Foundation

/// An app's mapping model, as Core Data runs it: its entity mappings, each with its source and
/// destination entities (and their entity version hashes, where the file records them), the
/// rows it takes (the source entity's own rows, Core Data's fetch does not include
/// sub-entities, narrowed by a filter predicate), its custom migration policy, and the value
/// expression of each attribute and relationship it fills.
///
/// Read in both forms an app keeps it in:
/// - the Xcode source, an `.xcmappingmodel` folder whose `xcmapping.xml` is a Core Data XML store
///   of Xcode's editing objects; the value expressions Xcode generates are not in it and are
///   generated here as its compiler generates them (``generatingExpressions(source:destination:)``);
/// - the compiled `.cdm` an app bundle ships, a keyed archive of `NSMappingModel`.
///
/// With `NSInferMappingModelAutomaticallyOption`, Core Data first looks for a mapping model from
/// the store's model to the current one (`+[NSMappingModel mappingModelFromBundles:forSourceModel:
/// destinationModel:]`, by their entity hashes) and migrates with it instead of inferring one;
/// an app's own progressive migrator runs one per step. chunkmigrate runs it in batches
/// (`CoreDataMappingModelRun`); a custom policy is the app's code and waits for a step.
package struct CoreDataMappingModelFile: Sendable {
    /// One entity mapping.
    package struct EntityMapping: Sendable, Equatable {
        package var name: String
        /// `Copy`, `Add`, `Remove`, `Transform`, `Custom` or `Undefined`, as the file says.
        package var kind: String
        package var source: String?
        package var destination: String?
        /// The entities' version hashes, where the file records them (a `.cdm`).
        package var sourceHash: [UInt8]?
        package var destinationHash: [UInt8]?
        /// The filter of the rows it takes (an `NSPredicate` format), `nil` for every row.
        package var filter: String?
        /// A source expression other than Core Data's fetch of the source entity's rows.
        package var customSource: Expression?
        /// `NSEntityMigrationPolicy` subclass the app names: code.
        package var policy: String?
        package var attributes: [PropertyMapping] = []
        package var relationships: [PropertyMapping] = []
        /// Its user info, each value as text (what a custom policy may read: SplitName's
        /// `destModelVersion`).
        package var userInfo: [String: String] = [:]
        /// Whether the file spells each value expression out (a `.cdm`); Xcode's source leaves
        /// those it generates out (``generatingExpressions(source:destination:)``).
        package var expressionsComplete = true
    }

    /// One attribute or relationship mapping: the destination property and its value.
    package struct PropertyMapping: Sendable, Equatable {
        package var name: String
        /// `nil`: no value (the destination's default).
        package var value: Expression?
    }

    /// An `NSExpression`, as a mapping model archives it.
    package indirect enum Expression: Sendable, Equatable, CustomStringConvertible {
        case constant(Constant)
        case variable(String)
        case keyPath(String)
        case evaluatedObject
        case function(operand: Expression, selector: String, arguments: [Expression])
        /// Core Data's fetch of an entity's rows: the entity and the predicate string.
        case fetch(entity: String, predicate: String)
        /// An expression of a kind not read, by its class.
        case other(String)

        /// A constant value.
        package enum Constant: Sendable, Equatable {
            case null, bool(Bool), integer(Int64), real(Double), string(String), date(Double), data([UInt8])
        }

        /// The key path of `$source.path` (`valueForKeyPath:` or `valueForKey:` on `$source`, or
        /// on such an expression: `$source.a` then `.b` is `a.b`).
        package var sourceKeyPath: String? {
            guard case let .function(operand, selector, arguments) = self,
                selector == "valueForKeyPath:" || selector == "valueForKey:", arguments.count == 1
            else { return nil }
            let path: String
            switch arguments[0] {
            case let .keyPath(text): path = text
            case let .constant(.string(text)): path = text
            default: return nil
            }
            if case .variable("source") = operand { return path }
            return operand.sourceKeyPath.map { "\($0).\(path)" }
        }

        /// The expression in `NSExpression`'s format.
        package var description: String {
            switch self {
            case let .constant(value):
                switch value {
                case .null: return "nil"
                case let .bool(flag): return flag ? "YES" : "NO"
                case let .integer(number): return String(number)
                case let .real(number): return String(number)
                case let .string(text): return "\"\(text)\""
                case let .date(seconds): return "CAST(\(seconds), \"NSDate\")"
                case let .data(bytes): return "<\(bytes.count) bytes>"
                }
            case let .variable(name): return "$\(name)"
            case let .keyPath(path): return path
            case .evaluatedObject: return "SELF"
            case let .function(operand, selector, arguments):
                if let path = sourceKeyPath { return "$source.\(path)" }
                if case let .function(inner, "valueForKeyPath:", _) = operand, case .variable = inner,
                    selector == "valueForKeyPath:", arguments.count == 1, case let .keyPath(path) = arguments[0]
                {
                    return "\(operand).\(path)"
                }
                return "FUNCTION(\(([operand.description, "\"\(selector)\""] + arguments.map(\.description)).joined(separator: ", ")))"
            case let .fetch(entity, predicate):
                return
                    "FETCH(FUNCTION($manager, \"fetchRequestForSourceEntityNamed:predicateString:\", \"\(entity)\", \"\(predicate)\"), $manager.sourceContext, NO)"
            case let .other(name): return "<\(name)>"
            }
        }
    }

    /// The file, as found.
    package var url: URL
    /// The version it migrates from and the version it migrates to, by name (for a `.cdm`, found
    /// by its entity hashes, ``matched(in:)``).
    package var source: String
    package var destination: String
    package var entityMappings: [EntityMapping]

    /// The custom policies of its entity mappings, as `Policy (Source -> Destination)`.
    package var policies: [String] {
        entityMappings.compactMap { mapping in
            mapping.policy.map { "\($0) (\(mapping.source ?? "none") -> \(mapping.destination ?? "none"))" }
        }
    }

    /// Reads an `.xcmappingmodel` folder (or its `xcmapping.xml`) or a compiled `.cdm`.
    ///
    /// - Throws: ``MigrationError`` naming the file, and the object, when it is not a mapping
    ///   model or a part of it does not read.
    package static func read(contentsOf url: URL) throws -> CoreDataMappingModelFile {
        let file = url.pathExtension == "xcmappingmodel" ? url.appendingPathComponent("xcmapping.xml") : url
        let data = try MigrationError.contents(of: file.path, what: "the mapping model")
        if data.starts(with: Array("bplist".utf8)) {
            return try readCompiled(data, url: url)
        }
        return try readSource(data, url: url, file: file)
    }

    // MARK: - Xcode's source

    private static func readSource(_ data: Data, url: URL, file: URL) throws -> CoreDataMappingModelFile {
        var reader = StoreXMLReader()
        do {
            var xml = try XMLReader(data)
            while let event = try xml.next() { reader.read(event) }
        } catch {
            throw MigrationError(.store, "not a mapping model's xcmapping.xml: \(error)", file: file.path)
        }
        guard let model = reader.objects.values.first(where: { $0.type == "XDDEVMAPPINGMODEL" }),
            let sourcePath = model.attributes["sourcemodelpath"], let destinationPath = model.attributes["destinationmodelpath"]
        else {
            throw MigrationError(.store, "not a mapping model's xcmapping.xml (no source and destination model paths)", file: file.path)
        }
        func version(_ path: String) -> String {
            ((path.trimmingCharacters(in: .whitespacesAndNewlines) as NSString).lastPathComponent as NSString).deletingPathExtension
        }
        func archived(_ text: String?, _ what: String) throws -> Expression? {
            guard let text, !text.isEmpty else { return nil }
            guard let bytes = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else {
                throw MigrationError(.store, "\(what): not base64", file: file.path)
            }
            do {
                let archive = try KeyedArchive(PropertyList(binary: Array(bytes)))
                var budget = expressionBudget
                return try expression(archive.top["root"], in: archive, budget: &budget)
            } catch let error as MigrationError {
                throw error
            } catch {
                throw MigrationError(.store, "\(what): \(error)", file: file.path, cause: error)
            }
        }
        // Only the entity mappings the mapping model holds count, in their order (mappingnumber);
        // Xcode leaves others in the file.
        let objects = (model.relationships["entitymappings"] ?? []).compactMap { reader.objects[$0] }
            .sorted { Int($0.attributes["mappingnumber"] ?? "") ?? 0 < Int($1.attributes["mappingnumber"] ?? "") ?? 0 }
        var mappings: [EntityMapping] = []
        for object in objects {
            let source = object.attributes["sourcename"].flatMap { $0.isEmpty ? nil : $0 }
            let destination = object.attributes["destinationname"].flatMap { $0.isEmpty ? nil : $0 }
            let name =
                object.attributes["name"].flatMap { $0.isEmpty ? nil : $0 }
                ?? (source != nil && destination != nil ? "\(source!)To\(destination!)" : destination ?? source ?? "")
            var mapping = EntityMapping(
                name: name, kind: object.attributes["mappingtypename"] ?? "Undefined", source: source,
                destination: destination, filter: object.attributes["sourcefilterpredicatestring"].flatMap { $0.isEmpty ? nil : $0 },
                policy: object.attributes["migrationpolicyclassname"].flatMap { $0.isEmpty ? nil : $0 })
            mapping.expressionsComplete = false
            if let text = object.attributes["userinfodata"], !text.isEmpty {
                guard let bytes = Data(base64Encoded: text, options: .ignoreUnknownCharacters),
                    let archive = try? KeyedArchive(PropertyList(binary: Array(bytes)))
                else {
                    throw MigrationError(.store, "entity mapping \(name): its user info does not read", file: file.path)
                }
                mapping.userInfo = userInfo(archive.top["root"], in: archive)
            }
            if object.attributes["autogenerateexpression"] != "1" {
                switch try archived(object.attributes["sourceexpressiondata"], "entity mapping \(name): its source expression") {
                case let .fetch(entity, predicate)? where entity == source:
                    // Core Data's fetch of the source entity, its predicate edited by hand.
                    if predicate != "TRUEPREDICATE" { mapping.filter = predicate }
                case let other:
                    mapping.customSource = other
                }
            }
            for (key, isRelationship) in [("attributemappings", false), ("relationshipmappings", true)] {
                var properties: [PropertyMapping] = []
                for id in object.relationships[key] ?? [] {
                    guard let property = reader.objects[id], let propertyName = property.attributes["name"] else { continue }
                    let written =
                        property.attributes["autogenerateexpression"] == "1"
                        ? nil
                        : try archived(
                            property.attributes["valueexpressiondata"], "entity mapping \(name), \(propertyName): its value expression")
                    properties.append(PropertyMapping(name: propertyName, value: written))
                }
                properties.sort { $0.name < $1.name }
                if isRelationship { mapping.relationships = properties } else { mapping.attributes = properties }
            }
            mappings.append(mapping)
        }
        return CoreDataMappingModelFile(
            url: url, source: version(sourcePath), destination: version(destinationPath), entityMappings: mappings)
    }

    /// The mapping model with the value expressions Xcode's compiler generates where its source
    /// leaves them out: `$source.name` for an attribute the source entity has, for a relationship
    /// `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "M",
    /// $source.name)` through the entity mapping `M` that takes the rows of the entity the source
    /// relationship points at, none otherwise (the destination's default). A `.cdm` is as it is.
    package func generatingExpressions(source: CoreDataModel, destination: CoreDataModel) -> CoreDataMappingModelFile {
        var copy = self
        // Source entity -> the first entity mapping that takes its rows somewhere.
        var mappingOf: [String: String] = [:]
        for mapping in entityMappings where mapping.destination != nil {
            if let name = mapping.source, mappingOf[name] == nil { mappingOf[name] = mapping.name }
        }
        for index in copy.entityMappings.indices where !copy.entityMappings[index].expressionsComplete {
            var mapping = copy.entityMappings[index]
            let properties = mapping.source.map { source.allProperties(of: $0) } ?? []
            for property in mapping.attributes.indices where mapping.attributes[property].value == nil {
                let name = mapping.attributes[property].name
                if properties.contains(where: { $0.property.name == name && $0.property.relationship == nil }) {
                    mapping.attributes[property].value = .sourceKeyPath(name)
                }
            }
            for property in mapping.relationships.indices where mapping.relationships[property].value == nil {
                let name = mapping.relationships[property].name
                guard let old = properties.first(where: { $0.property.name == name })?.property.relationship,
                    let through = mappingOf[old.destination]
                else { continue }
                mapping.relationships[property].value = .function(
                    operand: .variable("manager"), selector: "destinationInstancesForEntityMappingNamed:sourceInstances:",
                    arguments: [.constant(.string(through)), .sourceKeyPath(name)])
            }
            mapping.expressionsComplete = true
            copy.entityMappings[index] = mapping
        }
        return copy
    }

    // MARK: - Compiled

    private static func readCompiled(_ data: Data, url: URL) throws -> CoreDataMappingModelFile {
        let archive: KeyedArchive
        do {
            archive = try KeyedArchive(PropertyList(binary: Array(data)))
        } catch {
            throw MigrationError(
                .store, "not a compiled mapping model (a keyed archive of NSMappingModel): \(error)", file: url.path, cause: error)
        }
        guard let root = archive.resolve(archive.top["root"]), archive.className(archive.top["root"]) == "NSMappingModel",
            let list = archive.objects(root["NSEntityMappings"])
        else {
            throw MigrationError(
                .store, "not a compiled mapping model: its root is not an NSMappingModel with entity mappings", file: url.path)
        }
        let kinds = [1: "Custom", 2: "Add", 3: "Remove", 4: "Copy", 5: "Transform"]
        var mappings: [EntityMapping] = []
        for (index, reference) in list.enumerated() {
            guard let object = archive.resolve(reference) else { continue }
            let name = archive.string(object["NSMappingName"]) ?? "entity mapping \(index + 1)"
            func hash(_ key: String) -> [UInt8]? {
                if case let .data(bytes)? = archive.resolve(object[key]) { return bytes }
                if case let .data(bytes)? = archive.resolve(object[key])?["NS.data"] { return bytes }
                return nil
            }
            var mapping = EntityMapping(
                name: name, kind: kinds[Int(archive.resolve(object["NSMappingType"])?.integer ?? 0)] ?? "Undefined",
                source: archive.string(object["NSSourceEntityName"]), destination: archive.string(object["NSDestinationEntityName"]),
                sourceHash: hash("NSSourceEntityVersionHash"), destinationHash: hash("NSDestinationEntityVersionHash"),
                policy: archive.string(object["NSEntityMigrationPolicyClassName"]))
            mapping.userInfo = userInfo(object["NSUserInfo"], in: archive)
            do {
                var budget = expressionBudget
                switch try expression(object["NSSourceExpression"], in: archive, budget: &budget) {
                case let .fetch(entity, predicate)? where entity == mapping.source:
                    mapping.filter = predicate == "TRUEPREDICATE" ? nil : predicate
                case let other?:
                    mapping.customSource = other
                case nil:
                    break
                }
                for (key, isRelationship) in [("NSAttributeMappings", false), ("NSRelationshipMappings", true)] {
                    var properties: [PropertyMapping] = []
                    for item in archive.objects(object[key]) ?? [] {
                        guard let property = archive.resolve(item), let propertyName = archive.string(property["NSDestinationPropertyName"])
                        else { continue }
                        properties.append(
                            PropertyMapping(
                                name: propertyName, value: try expression(property["NSValueExpression"], in: archive, budget: &budget)))
                    }
                    properties.sort { $0.name < $1.name }
                    if isRelationship { mapping.relationships = properties } else { mapping.attributes = properties }
                }
            } catch {
                throw MigrationError(.store, "entity mapping \(name): \(error)", file: url.path, cause: error)
            }
            mappings.append(mapping)
        }
        let stem = url.deletingPathExtension().lastPathComponent
        return CoreDataMappingModelFile(url: url, source: stem, destination: stem, entityMappings: mappings)
    }

    /// The versions of `bundle` a compiled mapping model goes between: those whose entity version
    /// hashes are the ones its entity mappings record, every entity mapping's; `nil` where none
    /// is (a mapping model for another model, or an edited one).
    package func matched(in bundle: CoreDataModelBundle) -> CoreDataMappingModelFile? {
        guard entityMappings.contains(where: { $0.sourceHash != nil || $0.destinationHash != nil }) else { return self }
        func fits(_ version: CoreDataModelBundle.Version, _ side: KeyPath<EntityMapping, String?>, _ hash: KeyPath<EntityMapping, [UInt8]?>)
            -> Bool
        {
            entityMappings.allSatisfy { mapping in
                guard let name = mapping[keyPath: side], let recorded = mapping[keyPath: hash] else { return true }
                return version.hashes.entities[name] == recorded
            }
        }
        // Of the versions that fit, one whose every entity the mapping model names (a version that
        // only adds entities fits as well).
        func covered(_ version: CoreDataModelBundle.Version, _ side: KeyPath<EntityMapping, String?>) -> Bool {
            Set(version.hashes.entities.keys).isSubset(of: Set(entityMappings.compactMap { $0[keyPath: side] }))
        }
        let sources = bundle.versions.filter { fits($0, \.source, \.sourceHash) }
        guard let from = sources.first(where: { covered($0, \.source) }) ?? sources.first else { return nil }
        let destinations = bundle.versions.filter { fits($0, \.destination, \.destinationHash) && $0.name != from.name }
        guard let to = destinations.first(where: { covered($0, \.destination) }) ?? destinations.last else { return nil }
        var copy = self
        copy.source = from.name
        copy.destination = to.name
        return copy
    }

    // MARK: - Expressions

    /// The most parts the expressions of one entity mapping (or one value expression of Xcode's
    /// source) are read with: a damaged archive whose expressions refer to themselves, or list one
    /// another many times over, is refused rather than read forever.
    static let expressionBudget = 10_000

    /// An archived `NSExpression`.
    static func expression(_ reference: PropertyList?, in archive: KeyedArchive, budget: inout Int, depth: Int = 0) throws -> Expression? {
        budget -= 1
        guard budget >= 0, depth < 64 else {
            throw KeyedArchive.Malformed(
                description: "its expressions have more than \(expressionBudget) parts or nest more than 64 deep, or refer to themselves")
        }
        guard let object = archive.resolve(reference) else { return nil }
        let className = archive.className(reference) ?? "?"
        switch className {
        case "NSConstantValueExpression":
            return .constant(constant(object["NSConstantValue"], in: archive))
        case "NSVariableExpression":
            return .variable(archive.string(object["NSVariable"]) ?? "")
        case "NSKeyPathSpecifierExpression":
            return .keyPath(archive.string(object["NSKeyPath"]) ?? "")
        case "NSSelfExpression":
            return .evaluatedObject
        case "NSKeyPathExpression", "NSFunctionExpression":
            guard let operand = try expression(object["NSOperand"], in: archive, budget: &budget, depth: depth + 1),
                let selector = archive.string(object["NSSelectorName"])
            else {
                throw KeyedArchive.Malformed(description: "an \(className) without operand or selector")
            }
            let arguments = try (archive.objects(object["NSArguments"]) ?? []).map {
                try expression($0, in: archive, budget: &budget, depth: depth + 1) ?? .constant(.null)
            }
            return .function(operand: operand, selector: selector, arguments: arguments)
        case "NSFetchRequestExpression":
            if case let .function(.variable("manager"), "fetchRequestForSourceEntityNamed:predicateString:", arguments)? = try expression(
                object["NSFRExpression"], in: archive, budget: &budget, depth: depth + 1),
                arguments.count == 2, case let .constant(.string(entity)) = arguments[0],
                case let .constant(.string(predicate)) = arguments[1]
            {
                return .fetch(entity: entity, predicate: predicate)
            }
            return .other(className)
        default:
            return .other(className)
        }
    }

    /// An archived user-info dictionary, each value as text.
    private static func userInfo(_ reference: PropertyList?, in archive: KeyedArchive) -> [String: String] {
        var info: [String: String] = [:]
        for (key, value) in archive.dictionary(reference) ?? [] {
            switch constant(value, in: archive) {
            case .null: info[key] = "nil"
            case let .bool(flag): info[key] = flag ? "YES" : "NO"
            case let .integer(number): info[key] = String(number)
            case let .real(number): info[key] = String(number)
            case let .string(text): info[key] = text
            case let .date(seconds): info[key] = String(seconds)
            case let .data(bytes): info[key] = "<\(bytes.count) bytes>"
            }
        }
        return info
    }

    private static func constant(_ reference: PropertyList?, in archive: KeyedArchive) -> Expression.Constant {
        guard let value = archive.resolve(reference) else { return .null }
        switch value {
        case let .string(text): return .string(text)
        case let .integer(number): return .integer(number)
        case let .real(number): return .real(number)
        case let .bool(flag): return .bool(flag)
        case let .date(seconds): return .date(seconds)
        case let .data(bytes): return .data(bytes)
        default:
            if let text = archive.string(reference) { return .string(text) }
            if case let .real(seconds)? = value["NS.time"] { return .date(seconds) }
            if case let .data(bytes)? = value["NS.data"] { return .data(bytes) }
            return archive.className(reference) == "NSNull" ? .null : .string("<\(archive.className(reference) ?? "?")>")
        }
    }

    /// The mapping models beside a model bundle, as an app keeps them: the `.xcmappingmodel`
    /// folders and `.cdm` files in the folder that holds the bundle and in the folders in it.
    static func beside(_ bundle: URL) -> [URL] {
        let files = FileManager.default
        let folder = bundle.deletingLastPathComponent()
        func isMappingModel(_ name: String) -> Bool { name.hasSuffix(".xcmappingmodel") || name.hasSuffix(".cdm") }
        var found: [URL] = []
        for name in (try? files.contentsOfDirectory(atPath: folder.path)) ?? [] {
            let url = folder.appendingPathComponent(name)
            if isMappingModel(name) {
                found.append(url)
                continue
            }
            var isDirectory: ObjCBool = false
            guard !name.hasPrefix("."), url.standardizedFileURL != bundle.standardizedFileURL,
                files.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue,
                !name.hasSuffix(".xcdatamodeld"), !name.hasSuffix(".momd")
            else { continue }
            for inner in (try? files.contentsOfDirectory(atPath: url.path)) ?? [] where isMappingModel(inner) {
                found.append(url.appendingPathComponent(inner))
            }
        }
        return found.sorted { $0.path < $1.path }
    }
}

extension CoreDataMappingModelFile.Expression {
    /// `$source.path`.
    static func sourceKeyPath(_ path: String) -> Self {
        .function(operand: .variable("source"), selector: "valueForKeyPath:", arguments: [.keyPath(path)])
    }
}

/// The objects of a Core Data XML store: each one's type, attributes and relationships.
private struct StoreXMLReader {
    struct Object {
        var type: String
        var attributes: [String: String] = [:]
        var relationships: [String: [String]] = [:]
    }
    var objects: [String: Object] = [:]
    private var current: (id: String, object: Object)?
    private var attribute: String?
    private var text = ""

    mutating func read(_ event: XMLReader.Event) {
        switch event {
        case let .start(element, attributes): start(element, attributes: attributes)
        case let .text(string): if attribute != nil { text += string }
        case let .end(element): end(element)
        }
    }

    private mutating func start(_ element: String, attributes: [String: String]) {
        switch element {
        case "object":
            if let id = attributes["id"], let type = attributes["type"] { current = (id, Object(type: type)) }
        case "attribute":
            attribute = attributes["name"]
            text = ""
        case "relationship":
            if let name = attributes["name"], let refs = attributes["idrefs"] {
                current?.object.relationships[name] = refs.split(separator: " ").map(String.init)
            }
        default:
            break
        }
    }

    private mutating func end(_ element: String) {
        switch element {
        case "attribute":
            if let name = attribute { current?.object.attributes[name] = text.trimmingCharacters(in: .whitespacesAndNewlines) }
            attribute = nil
        case "object":
            if let (id, object) = current { objects[id] = object }
            current = nil
        default:
            break
        }
    }
}
