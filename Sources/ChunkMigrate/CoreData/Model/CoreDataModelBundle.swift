import Foundation

/// Every version of an app's model: an `.xcdatamodeld` folder (one `.xcdatamodel` per version,
/// each with its `contents` XML) or a compiled `.momd` (one `.mom` per version), or several such
/// bundles merged into one model at run time (``merging(_:)``).
///
/// Each version carries its entity version hashes (`hashes`), which is how Core Data
/// tells the version of a store: ``version(ofStoreAt:asTarget:)`` finds the version whose hashes equal the
/// ones the store's metadata records, with or without a model cache.
///
/// The order of the versions is what their names tell, and no more (``unorderedVersions``): the
/// numbered names of one scheme in the order of their numbers, compared as numbers
/// (`zmessaging1.27`, `zmessaging2.6`, `zmessaging2.10`, `zmessaging2.100.0`; `Model 2`,
/// `Model 10`; `SampleModel3_v2`, `SampleModel3_v3`). A name without a number (`Initial`, or the
/// first version `Model` that Xcode names after the model, beside `Model 2`), or a second naming
/// scheme, has no known place unless the app's mapping models give it (one from `Model` to
/// `Model 2` puts `Model` first); ``ordered(_:)`` gives the order where they do not. The current
/// version (`.xccurrentversion`) says nothing of the order: it may name the oldest.
///
/// ```swift
/// let bundle = try CoreDataModelBundle.read(contentsOf: modelsURL)   // App.xcdatamodeld or App.momd
/// let found = try bundle.version(ofStoreAt: storeURL)                // by its entity version hashes
/// let versions = try bundle.versions(from: found.version.name, to: bundle.current)
/// ```
public struct CoreDataModelBundle: Sendable {
    /// One version: its name (the file's, without extension), its model and its entity version
    /// hashes.
    public struct Version: Sendable {
        public var name: String
        public var model: CoreDataModel
        /// The entity version hashes Core Data compares with a store's metadata: the compiled
        /// bundle's own (`VersionInfo.plist`), else computed from the model
        /// (`CoreDataVersionHashes`).
        package var hashes: CoreDataVersionHashes
        /// For a version of merged bundles, the version of each bundle it merges, in the bundles'
        /// order; empty otherwise.
        public var parts: [String]

        /// A version of `model` named `name`, its hashes computed from the model unless given.
        package init(name: String, model: CoreDataModel, hashes: CoreDataVersionHashes? = nil, parts: [String] = []) {
            self.name = name
            self.model = model
            self.hashes = hashes ?? CoreDataVersionHashes(model: model)
            self.parts = parts
        }
    }

    /// The versions: in the order their names tell where they tell it (see
    /// ``unorderedVersions``), the order given (``ordered(_:)``), or, for merged bundles, each
    /// combination of one version per bundle.
    public var versions: [Version]
    /// The name of the current version (`.xccurrentversion`, or the `.momd`'s `VersionInfo.plist`),
    /// the last when the bundle does not say; for merged bundles, the combination of each bundle's
    /// current version.
    public var current: String
    /// The bundles merged (``merging(_:)``); empty for one bundle.
    public private(set) var members: [CoreDataModelBundle] = []
    /// The order of ``versions`` was given (``ordered(_:)``), not read from their names.
    public private(set) var isOrderGiven = false
    /// The app's mapping models between versions of the bundle, found beside it (an
    /// `.xcmappingmodel` or a compiled `.cdm` in the folder that holds the bundle or a folder in
    /// it) or given (``adding(mappingModels:)``).
    package var mappingModels: [CoreDataMappingModelFile] = []

    /// A bundle of the versions given, in that order, and its current version.
    public init(versions: [Version], current: String) {
        self.versions = versions
        self.current = current
    }

    /// Reads a model bundle.
    ///
    /// - Throws: ``MigrationError`` naming the file when the folder holds no model version, or a
    ///   version does not read.
    public static func read(contentsOf url: URL) throws -> CoreDataModelBundle {
        let files = FileManager.default
        guard let names = try? files.contentsOfDirectory(atPath: url.path) else {
            throw MigrationError(.store, "cannot read the model bundle: not a folder (give an .xcdatamodeld or a .momd)", file: url.path)
        }
        var info: [String: Any] = [:]
        for file in [".xccurrentversion", "VersionInfo.plist"] {
            guard let data = files.contents(atPath: url.appendingPathComponent(file).path),
                let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
            else { continue }
            info.merge(plist) { _, new in new }
        }
        // A compiled bundle lists each version's hashes as the model compiler computed them:
        // those are what Core Data compares with a store's.
        let compiledHashes = info["NSManagedObjectModel_VersionHashes"] as? [String: Any] ?? [:]
        var versions: [Version] = []
        for name in names where name.hasSuffix(".xcdatamodel") || name.hasSuffix(".mom") {
            let model = try CoreDataModel.read(contentsOf: url.appendingPathComponent(name))
            let versionName = (name as NSString).deletingPathExtension
            let hashes = (compiledHashes[versionName] as? [String: Any]).flatMap {
                CoreDataVersionHashes(metadata: ["NSStoreModelVersionHashes": $0])
            }
            versions.append(Version(name: versionName, model: model, hashes: hashes))
        }
        guard !versions.isEmpty else {
            throw MigrationError(.store, "the model bundle holds no model version (.xcdatamodel or .mom)", file: url.path)
        }
        versions.sort { order($0.name, $1.name) }
        var current = versions.last!.name
        // `.xccurrentversion` names the version's file (`Model 2.xcdatamodel`), a compiled
        // bundle's `VersionInfo.plist` the version alone (`XCServerCoreData2.0.2`): an extension
        // is taken off only where it is one a version's file has.
        for key in ["_XCCurrentVersionName", "NSManagedObjectModel_CurrentVersionName"] {
            guard let name = info[key] as? String else { continue }
            let named = name as NSString
            current = ["xcdatamodel", "mom"].contains(named.pathExtension) ? named.deletingPathExtension : name
        }
        guard versions.contains(where: { $0.name == current }) else {
            throw MigrationError(.store, "the model bundle's current version \(current) is not among its versions", file: url.path)
        }
        var bundle = CoreDataModelBundle(versions: versions, current: current)
        // A mapping model that does not read is an error; one for versions this bundle does not
        // have (another model's, or a compiled one whose hashes no version has) is not its.
        bundle.mappingModels = try CoreDataMappingModelFile.beside(url).map { try CoreDataMappingModelFile.read(contentsOf: $0) }
            .compactMap { $0.matched(in: bundle) }
            .filter { bundle.version(named: $0.source) != nil && bundle.version(named: $0.destination) != nil }
        return bundle
    }

    /// Reads the bundles at `urls`, gives each the order of versions that names its versions
    /// (``ordered(_:)``), and merges them (``merging(_:)``): the model of an app that merges
    /// several bundles at run time, or one bundle as read.
    ///
    /// - Throws: ``MigrationError`` when a bundle does not read, an order names versions of no
    ///   bundle or of several, or the bundles do not merge.
    public static func read(contentsOf urls: [URL], orders: [[String]] = []) throws -> CoreDataModelBundle {
        var bundles = try urls.map { try read(contentsOf: $0) }
        for order in orders {
            let owners = bundles.indices.filter { index in
                order.contains { name in
                    bundles[index].version(named: name) != nil
                        || bundles[index].version(named: (name as NSString).deletingPathExtension) != nil
                }
            }
            guard owners.count == 1, let owner = owners.first else {
                throw MigrationError(
                    .invalidPlan,
                    "--version-order \(order.joined(separator: ",")): \(owners.isEmpty ? "names no version of the model bundles" : "names versions of several model bundles; give one order per bundle")"
                )
            }
            bundles[owner] = try bundles[owner].ordered(order)
        }
        return try merging(bundles)
    }

    /// Several bundles merged into one model, as an app merges them at run time
    /// (`NSManagedObjectModel(byMerging:)`, `mergedModelFromBundles:`): each version is one
    /// version of each bundle, its model their entities together, its hashes theirs, named
    /// `A 2 + B + C 3`. One bundle is returned as it is.
    ///
    /// - Throws: ``MigrationError`` when two bundles declare an entity of the same name (Core Data
    ///   refuses to merge them), or the combinations are too many to list.
    public static func merging(_ bundles: [CoreDataModelBundle]) throws -> CoreDataModelBundle {
        guard bundles.count > 1 else {
            guard let only = bundles.first else { throw MigrationError(.invalidPlan, "no model bundle to merge") }
            return only
        }
        var owner: [String: Int] = [:]
        for (index, bundle) in bundles.enumerated() {
            for entity in Set(bundle.versions.flatMap { $0.model.entities.map(\.name) }) {
                if let other = owner[entity], other != index {
                    throw MigrationError(
                        .invalidPlan,
                        "the model bundles \(bundles[other].describedName) and \(bundle.describedName) both declare entity \(entity): Core Data cannot merge them",
                        entity: entity)
                }
                owner[entity] = index
            }
        }
        let count = bundles.reduce(1) { $0 * $1.versions.count }
        guard count <= 4096 else {
            throw MigrationError(
                .invalidPlan, "the model bundles merged make \(count) combinations of versions, more than 4096: merge fewer")
        }
        var combinations: [[Version]] = [[]]
        for bundle in bundles {
            combinations = combinations.flatMap { prefix in bundle.versions.map { prefix + [$0] } }
        }
        let versions = combinations.map { parts in
            Version(
                name: parts.map(\.name).joined(separator: " + "),
                model: CoreDataModel(
                    entities: parts.flatMap(\.model.entities),
                    versionIdentifiers: parts.flatMap(\.model.versionIdentifiers).reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
                ),
                hashes: CoreDataVersionHashes(entities: parts.reduce(into: [:]) { $0.merge($1.hashes.entities) { a, _ in a } }),
                parts: parts.map(\.name))
        }
        var merged = CoreDataModelBundle(versions: versions, current: bundles.map(\.current).joined(separator: " + "))
        merged.members = bundles
        return merged
    }

    /// The bundle with its versions in the order given, oldest first: every version named once.
    ///
    /// - Throws: ``MigrationError`` naming the versions the list lacks, or names that are none of
    ///   the bundle's.
    public func ordered(_ names: [String]) throws -> CoreDataModelBundle {
        let names = names.map { $0.trimmingCharacters(in: .whitespaces) }.map {
            ($0 as NSString).pathExtension == "xcdatamodel" ? ($0 as NSString).deletingPathExtension : $0
        }
        let unknown = names.filter { version(named: $0) == nil }
        guard unknown.isEmpty else {
            throw MigrationError(
                .invalidPlan,
                "--version-order: \(unknown.joined(separator: ", ")) \(unknown.count == 1 ? "is" : "are") not a version of the model bundle\(MigrationPlan.suggestion(for: unknown[0], among: versions.map(\.name)))"
            )
        }
        let missing = versions.map(\.name).filter { !names.contains($0) }
        guard missing.isEmpty, Set(names).count == names.count else {
            throw MigrationError(
                .invalidPlan,
                "--version-order names every version of the bundle once, oldest first; \(missing.isEmpty ? "some are named twice" : "it lacks \(missing.joined(separator: ", "))")"
            )
        }
        var result = self
        result.versions = names.map { version(named: $0)! }
        result.isOrderGiven = true
        return result
    }

    /// A short name for messages: the first version's, with the number of versions.
    var describedName: String { "of \(versions.first?.name ?? "?") (\(versions.count.counted("version")))" }

    /// Whether version name `a` comes before `b` in the order versions are listed in: the
    /// numbers in the names compared as numbers, a name without numbers first. A listing order;
    /// where the names of a bundle do not tell its versions' order (``unorderedVersions``), not
    /// that order.
    static func order(_ a: String, _ b: String) -> Bool {
        func numbers(_ name: String) -> [Int] {
            name.split { !$0.isNumber }.compactMap { Int($0) }
        }
        let (x, y) = (numbers(a), numbers(b))
        return x == y ? a < b : x.lexicographicallyPrecedes(y)
    }

    /// The version named `name`.
    public func version(named name: String) -> Version? { versions.first { $0.name == name } }

    /// The version named `name`, given with the command-line option `option`.
    ///
    /// - Throws: ``MigrationError`` naming the option, the versions the bundle has and the
    ///   nearest name, where it has none of that name.
    package func version(named name: String, givenWith option: String, file: String? = nil) throws(MigrationError) -> Version {
        if let version = version(named: name) { return version }
        let names = versions.map(\.name)
        throw MigrationError(
            .invalidPlan,
            "\(option) \(name): the model bundle has no such version (it has \(names.joined(separator: ", ")))"
                + MigrationPlan.suggestion(for: name, among: names), file: file)
    }

    /// The versions from `from` to `to` as ``versions`` lists them, both included; `nil` when
    /// `from` is listed after `to`. Where the order is not known (``unorderedVersions``), a
    /// listing, not a path: ``versions(from:to:)`` says what is known.
    public func path(from: String, to: String) -> [Version]? {
        guard let start = versions.firstIndex(where: { $0.name == from }),
            let end = versions.firstIndex(where: { $0.name == to }), start <= end
        else { return nil }
        return Array(versions[start...end])
    }

    /// What of a model decides a store's layout and values: entities with their parents and
    /// stored properties (kind, type, optional, derivation, external storage, destination,
    /// inverse, to-many, ordered, version hash modifier) and uniqueness constraints, in a
    /// canonical order.
    static func signature(_ model: CoreDataModel) -> [String] {
        model.entities.sorted { $0.name < $1.name }.flatMap { entity in
            [
                "entity \(entity.name) < \(entity.parent ?? "") \(entity.isAbstract) \(entity.versionHashModifier ?? "") unique \(entity.uniquenessConstraints)"
            ]
                + entity.properties.filter { !$0.isTransient }.sorted { $0.name < $1.name }.map { property in
                    let kind: String
                    switch property.kind {
                    case let .attribute(attribute):
                        // A derivation as parsed: a model cache and the XML spell functions apart.
                        let derivation = attribute.derivation.map { "\(CoreDataDerivation.parse($0))" } ?? ""
                        kind = "a \(attribute.type.rawValue) \(derivation) \(attribute.allowsExternalStorage)"
                    case let .relationship(relationship):
                        kind =
                            "r \(relationship.destination) \(relationship.inverse ?? "") \(relationship.isToMany) \(relationship.isOrdered)"
                    }
                    return "  \(property.name) \(property.isOptional) \(kind) \(property.versionHashModifier ?? "")"
                }
        }
    }
}

extension CoreDataModelBundle {
    /// The bundle with the mapping models at `urls` too: `.xcmappingmodel` folders, compiled
    /// `.cdm` files, or folders holding them.
    ///
    /// - Throws: ``MigrationError`` naming the file when one does not read, or goes between
    ///   versions the bundle does not have (by name, or for a `.cdm` by its entity hashes).
    public func adding(mappingModels urls: [URL]) throws -> CoreDataModelBundle {
        var bundle = self
        for url in urls {
            var files = [url]
            if !["xcmappingmodel", "cdm"].contains(url.pathExtension),
                let names = try? FileManager.default.contentsOfDirectory(atPath: url.path)
            {
                files = names.filter { $0.hasSuffix(".xcmappingmodel") || $0.hasSuffix(".cdm") }.sorted().map {
                    url.appendingPathComponent($0)
                }
                guard !files.isEmpty else {
                    throw MigrationError(.store, "no mapping model (.xcmappingmodel or .cdm) in the folder", file: url.path)
                }
            }
            for file in files {
                // One found beside the bundle and given again is one.
                guard !bundle.mappingModels.contains(where: { $0.url.standardizedFileURL == file.standardizedFileURL }) else { continue }
                let read = try CoreDataMappingModelFile.read(contentsOf: file)
                guard let matched = read.matched(in: bundle), bundle.version(named: matched.source) != nil,
                    bundle.version(named: matched.destination) != nil
                else {
                    throw MigrationError(
                        .store,
                        "the mapping model goes between versions the model bundle does not have (\(read.source) -> \(read.destination); a compiled one by its entity version hashes)",
                        file: file.path)
                }
                bundle.mappingModels.append(matched)
            }
        }
        return bundle
    }
}
