import Foundation

/// Every version of an app's model: an `.xcdatamodeld` folder (one `.xcdatamodel` per version,
/// each with its `contents` XML) or a compiled `.momd` (one `.mom` per version), oldest first.
///
/// Versions are ordered by their names, numbers compared as numbers (`zmessaging`, `zmessaging1.27`,
/// `zmessaging2.6`, `zmessaging2.10`, `zmessaging2.100.0`; `Model`, `Model 2`, `Model 3`), as Xcode
/// names the versions it adds. Where more than one name has no number, the order is not known
/// (``unorderedVersions``) and a path through them is refused. A store's version is found from its metadata's
/// `NSStoreModelVersionIdentifiers` when exactly one version has that identifier, else from its
/// model cache compared with each version (``version(ofStoreAt:)``).
///
/// ```swift
/// let bundle = try CoreDataModelBundle.read(contentsOf: modelsURL)   // App.xcdatamodeld or App.momd
/// let path = bundle.path(from: "Model 2", to: bundle.current)        // [Model 2, Model 3, Model 4]
/// ```
public struct CoreDataModelBundle: Sendable {
    /// One version: its name (the file's, without extension) and its model.
    public struct Version: Sendable {
        public var name: String
        public var model: CoreDataModel
    }

    /// The versions, oldest first.
    public var versions: [Version]
    /// The name of the current version (`.xccurrentversion`, or the `.momd`'s `VersionInfo.plist`),
    /// the newest when the bundle does not say.
    public var current: String

    /// Reads a model bundle.
    ///
    /// - Throws: ``MigrationError`` naming the file when the folder holds no model version, or a
    ///   version does not read.
    public static func read(contentsOf url: URL) throws -> CoreDataModelBundle {
        let files = FileManager.default
        guard let names = try? files.contentsOfDirectory(atPath: url.path) else {
            throw MigrationError(.store, "cannot read the model bundle: not a folder (give an .xcdatamodeld or a .momd)", file: url.path)
        }
        var versions: [Version] = []
        for name in names where name.hasSuffix(".xcdatamodel") || name.hasSuffix(".mom") {
            let model = try CoreDataModel.read(contentsOf: url.appendingPathComponent(name))
            versions.append(Version(name: (name as NSString).deletingPathExtension, model: model))
        }
        guard !versions.isEmpty else {
            throw MigrationError(.store, "the model bundle holds no model version (.xcdatamodel or .mom)", file: url.path)
        }
        versions.sort { order($0.name, $1.name) }
        var current = versions.last!.name
        for info in [".xccurrentversion", "VersionInfo.plist"] {
            guard let data = files.contents(atPath: url.appendingPathComponent(info).path),
                  let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else { continue }
            for key in ["_XCCurrentVersionName", "NSManagedObjectModel_CurrentVersionName"] {
                if let name = plist[key] as? String { current = (name as NSString).deletingPathExtension }
            }
        }
        guard versions.contains(where: { $0.name == current }) else {
            throw MigrationError(.store, "the model bundle's current version \(current) is not among its versions", file: url.path)
        }
        return CoreDataModelBundle(versions: versions, current: current)
    }

    /// Whether version name `a` comes before `b`: the numbers in the names compared as numbers,
    /// a name without numbers first.
    static func order(_ a: String, _ b: String) -> Bool {
        func numbers(_ name: String) -> [Int] {
            name.split { !$0.isNumber }.compactMap { Int($0) }
        }
        let (x, y) = (numbers(a), numbers(b))
        return x == y ? a < b : x.lexicographicallyPrecedes(y)
    }

    /// The version named `name`.
    public func version(named name: String) -> Version? { versions.first { $0.name == name } }

    /// The versions from `from` to `to`, both included, oldest first; `nil` when `from` is newer.
    public func path(from: String, to: String) -> [Version]? {
        guard let start = versions.firstIndex(where: { $0.name == from }),
              let end = versions.firstIndex(where: { $0.name == to }), start <= end else { return nil }
        return Array(versions[start...end])
    }

    /// The version a store was written with, and how it was told.
    ///
    /// - Throws: ``MigrationError`` naming the store when no version matches, or several do and
    ///   the store carries no model cache to tell them apart.
    public func version(ofStoreAt url: URL) throws -> (version: Version, how: String) {
        let database: Database
        do { database = try Database(path: url.path, mode: .source) } catch {
            throw MigrationError(.store, "cannot open the store: \(error.message)", file: url.path)
        }
        return try version(of: database, schema: "main", file: url.path)
    }

    /// The version of the store open as `schema` in `database`.
    func version(of database: Database, schema: String, file: String) throws -> (version: Version, how: String) {
        let identifiers = (try? CoreDataMetadata.read(database, schema: schema, file: file).plist?["NSStoreModelVersionIdentifiers"] as? [String]) ?? nil
        let cached = try CoreDataModel.read(database, schema: schema, file: file)
        var candidates = versions
        if let identifiers {
            let named = versions.filter { $0.model.versionIdentifiers == identifiers }
            // An identifier names a version only where the store's model, when it carries one,
            // is that version's: identifiers are the app's, and not always changed.
            if named.count == 1, cached.map({ Self.signature($0) == Self.signature(named[0].model) }) ?? true {
                return (named[0], "its version identifier \(identifiers.joined(separator: ", "))")
            }
            if named.count > 1 { candidates = named }
        }
        if let cached {
            let signature = Self.signature(cached)
            var same = candidates.filter { Self.signature($0.model) == signature }
            if same.isEmpty, candidates.count < versions.count { same = versions.filter { Self.signature($0.model) == signature } }
            // Versions alike in every stored detail lay the store out alike: the oldest of them,
            // so that no step after it is skipped (the steps between alike versions do nothing).
            if let match = same.first {
                let alike = same.count > 1 ? " (alike: \(same.map(\.name).joined(separator: ", ")))" : ""
                return (match, "its model cache\(alike)")
            }
            throw MigrationError(.store, "the store's model (its model cache) is none of the bundle's \(versions.count) versions: was it written by another model?",
                                 file: file)
        }
        throw MigrationError(.store, candidates.count == versions.count
            ? "the store names no version identifier of the bundle and has no model cache: give its version (--from-version)"
            : "\(candidates.count) versions of the bundle have the store's version identifier (\(candidates.map(\.name).joined(separator: ", "))) and it has no model cache to tell them apart: give its version (--from-version)",
                             file: file)
    }

    /// Versions whose order the names do not tell: more than one name without a number
    /// (`Initial`, `AddTags`, `Final`); empty when the order is known.
    public var unorderedVersions: [String] {
        let plain = versions.filter { $0.name.allSatisfy { !$0.isNumber } }.map(\.name)
        return plain.count > 1 ? plain : []
    }

    /// What of a model decides a store's layout and values: entities with their parents and
    /// stored properties (kind, type, optional, derivation, external storage, destination,
    /// inverse, to-many, ordered, version hash modifier) and uniqueness constraints, in a
    /// canonical order.
    static func signature(_ model: CoreDataModel) -> [String] {
        model.entities.sorted { $0.name < $1.name }.flatMap { entity in
            ["entity \(entity.name) < \(entity.parent ?? "") \(entity.isAbstract) \(entity.versionHashModifier ?? "") unique \(entity.uniquenessConstraints)"]
                + entity.properties.filter { !$0.isTransient }.sorted { $0.name < $1.name }.map { property in
                    let kind: String
                    switch property.kind {
                    case let .attribute(attribute):
                        // A derivation as parsed: a model cache and the XML spell functions apart.
                        let derivation = attribute.derivation.map { "\(CoreDataDerivation.parse($0))" } ?? ""
                        kind = "a \(attribute.type.rawValue) \(derivation) \(attribute.allowsExternalStorage)"
                    case let .relationship(relationship):
                        kind = "r \(relationship.destination) \(relationship.inverse ?? "") \(relationship.isToMany) \(relationship.isOrdered)"
                    }
                    return "  \(property.name) \(property.isOptional) \(kind) \(property.versionHashModifier ?? "")"
                }
        }
    }
}
