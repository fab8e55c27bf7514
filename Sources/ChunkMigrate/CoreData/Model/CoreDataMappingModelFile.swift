import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// What an app's mapping model says of itself, read from the `xcmapping.xml` of an
/// `.xcmappingmodel` (Xcode keeps it as a Core Data XML store): the versions it migrates between
/// (the last part of its source and destination model paths) and its entity mappings, each with
/// its custom migration policy, if any (`migrationpolicyclassname`). Only the entity mappings the
/// mapping model holds count; Xcode leaves others in the file.
///
/// With `NSInferMappingModelAutomaticallyOption`, Core Data first looks for a mapping model from
/// the store's model to the current one (`+[NSMappingModel mappingModelFromBundles:forSourceModel:
/// destinationModel:]`, by their entity hashes) and migrates with it instead of inferring one; a
/// custom policy is the app's code, which runs during that migration. chunkmigrate reads no more
/// of a mapping model than this: enough to refuse a path that needs that code, naming it.
public struct CoreDataMappingModelFile: Sendable {
    /// One entity mapping.
    public struct EntityMapping: Sendable, Equatable {
        public var name: String
        public var source: String?
        public var destination: String?
        /// `NSEntityMigrationPolicy` subclass the app names: code.
        public var policy: String?
    }

    /// The file, as found.
    public var url: URL
    /// The version it migrates from and the version it migrates to, by name.
    public var source: String
    public var destination: String
    public var entityMappings: [EntityMapping]

    /// The custom policies of its entity mappings, as `Policy (Source -> Destination)`.
    public var policies: [String] {
        entityMappings.compactMap { mapping in
            mapping.policy.map { "\($0) (\(mapping.source ?? "none") -> \(mapping.destination ?? "none"))" }
        }
    }

    /// Reads an `.xcmappingmodel` folder (or its `xcmapping.xml`).
    ///
    /// - Throws: ``MigrationError`` naming the file when it is not a mapping model's XML.
    public static func read(contentsOf url: URL) throws -> CoreDataMappingModelFile {
        let file = url.pathExtension == "xcmappingmodel" ? url.appendingPathComponent("xcmapping.xml") : url
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw MigrationError(.store, "cannot read the mapping model", file: file.path)
        }
        let reader = StoreXMLReader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        guard parser.parse(), let model = reader.objects.values.first(where: { $0.type == "XDDEVMAPPINGMODEL" }),
              let sourcePath = model.attributes["sourcemodelpath"], let destinationPath = model.attributes["destinationmodelpath"] else {
            throw MigrationError(.store, "not a mapping model's xcmapping.xml (no source and destination model paths)", file: file.path)
        }
        func version(_ path: String) -> String {
            ((path.trimmingCharacters(in: .whitespacesAndNewlines) as NSString).lastPathComponent as NSString).deletingPathExtension
        }
        let mappings = (model.relationships["entitymappings"] ?? []).compactMap { reader.objects[$0] }.map { object in
            EntityMapping(name: object.attributes["name"] ?? "", source: object.attributes["sourcename"],
                          destination: object.attributes["destinationname"], policy: object.attributes["migrationpolicyclassname"])
        }
        return CoreDataMappingModelFile(url: url, source: version(sourcePath), destination: version(destinationPath),
                                        entityMappings: mappings.sorted { $0.name < $1.name })
    }

    /// The mapping models beside a model bundle, as an app's project keeps them: the
    /// `.xcmappingmodel` folders in the folder that holds the bundle and in the folders in it.
    static func beside(_ bundle: URL) -> [URL] {
        let files = FileManager.default
        let folder = bundle.deletingLastPathComponent()
        var found: [URL] = []
        for name in (try? files.contentsOfDirectory(atPath: folder.path)) ?? [] {
            let url = folder.appendingPathComponent(name)
            if name.hasSuffix(".xcmappingmodel") {
                found.append(url)
                continue
            }
            var isDirectory: ObjCBool = false
            guard !name.hasPrefix("."), url.standardizedFileURL != bundle.standardizedFileURL,
                  files.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue,
                  !name.hasSuffix(".xcdatamodeld"), !name.hasSuffix(".momd") else { continue }
            for inner in (try? files.contentsOfDirectory(atPath: url.path)) ?? [] where inner.hasSuffix(".xcmappingmodel") {
                found.append(url.appendingPathComponent(inner))
            }
        }
        return found.sorted { $0.path < $1.path }
    }
}

/// The objects of a Core Data XML store: each one's type, attributes and relationships.
private final class StoreXMLReader: NSObject, XMLParserDelegate {
    struct Object {
        var type: String
        var attributes: [String: String] = [:]
        var relationships: [String: [String]] = [:]
    }
    var objects: [String: Object] = [:]
    private var current: (id: String, object: Object)?
    private var attribute: String?
    private var text = ""

    func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
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

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if attribute != nil { text += string }
    }

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
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
