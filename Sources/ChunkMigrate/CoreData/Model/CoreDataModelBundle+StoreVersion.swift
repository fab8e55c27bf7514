import Foundation

/// A store's version, found as Core Data finds it: by the entity version hashes its metadata
/// records (`NSStoreModelVersionHashes`).
///
/// What Core Data does (CoreData.framework, read in its decompiled code):
/// - `-[NSManagedObjectModel isConfiguration:compatibleWithStoreMetadata:]` calls
///   `_isConfiguration:inStyle:compatibleWithStoreMetadata:`, which ignores the configuration: a
///   model is compatible when it has as many entities as the metadata has hashes and each of its
///   entities' hash equals the store's (`isEqual:`); with `NSStoreModelVersionHashesVersion`
///   below 3 only the names are compared, above 3 (a newer framework's) nothing is compatible;
///   metadata without hashes is compatible with no model.
/// - Lightweight migration finds the source model in `-[NSStoreMigrationPolicy
///   sourceModelForStoreAtURL:metadata:error:]`: each `.mom` and `.momd` of the resource bundles,
///   then of the main bundle (`_sourceModelForVersionHashes:withMetadata:inBundles:outPaths:`),
///   then the store's model cache (`+[NSSQLCore cachedModelForPersistentStoreWithURL:...]`), then
///   every other bundle and framework, then hashes in an older style; the first compatible model
///   wins. Version identifiers play no part.
/// - Inside a `.momd`, `-[NSManagedObjectModelBundle _modelForVersionHashes:]` goes through the
///   versions of its `VersionInfo.plist` (`NSManagedObjectModel_VersionHashes`, a dictionary, in
///   its enumeration order: a hash order, not the versions') and keeps the one with the most
///   entities whose hashes equal the store's, stopping at the first where all do; it returns
///   that version cut down to those entities. Versions alike in every hash are one model to Core
///   Data, which takes whichever it meets first.
/// - `+[NSManagedObjectModel mergedModelFromBundles:forStoreMetadata:]` (and
///   `modelByMergingModels:forStoreMetadata:`) asks each bundle's models in turn for the entities
///   whose hashes match those not yet matched, and merges what they give; it fails unless every
///   entity of the store is matched.
///
/// chunkmigrate takes the version whose hashes equal the store's (of versions alike, which lay
/// the store out alike, the first for a source and the current or last for a destination, so
/// that the renames recorded between are followed), and checks that the store's schema is that
/// version's layout; where the hashes name no version, or the schema is
/// not the layout of the version they name, the version whose layout the schema is exactly.
extension CoreDataModelBundle {
    /// A store's version, and what told it.
    public struct StoreVersion: Sendable {
        /// What told the version.
        public enum Evidence: Sendable, Equatable {
            /// The store's entity version hashes equal the version's.
            case hashes
            /// The store's schema is the version's layout exactly, where the hashes tell no
            /// version whose layout it is.
            case schema
        }

        /// The version.
        public var version: Version
        /// What told it.
        public var evidence: Evidence
        /// Other versions whose hashes equal the version's (the same model to Core Data).
        public var alike: [String]
        /// The version the store's hashes name where its schema is another's layout: its metadata
        /// and its tables disagree.
        public var namedByHashes: String?
        /// How it was found, in words: `its entity version hashes; alike: zmessaging2.100.0`.
        public var how: String
    }

    /// The version that wrote the store at `url`, found by its entity version hashes (or its
    /// schema where they tell none it fits).
    ///
    /// - Parameters:
    ///   - url: the store's file.
    ///   - asTarget: the store is a migration's destination: of versions alike, the current one
    ///     where it is among them, else the last, so that renames a later one records are followed
    ///     on the way (a source takes the first, so that none after it is skipped).
    /// - Throws: ``MigrationError`` naming the store when no version fits it, naming the nearest
    ///   version and the entities that differ from it.
    public func version(ofStoreAt url: URL, asTarget: Bool = false) throws -> StoreVersion {
        let database: Database
        do { database = try Database(path: url.path, mode: .source) } catch {
            throw MigrationError(.store, "cannot open the store: \(error.message)", file: url.path, cause: error)
        }
        return try version(of: database, schema: "main", file: url.path, asTarget: asTarget)
    }

    /// The version of the store open as `schema` in `database`.
    func version(of database: Database, schema: String, file: String, asTarget: Bool = false) throws -> StoreVersion {
        let plist = (try? CoreDataMetadata.read(database, schema: schema, file: file))?.plist
        let hashes = plist.flatMap { CoreDataVersionHashes(metadata: $0) }
        let style = (plist?["NSStoreModelVersionHashesVersion"] as? NSNumber)?.intValue ?? 3
        var matching =
            hashes.map { hashes in
                versions.filter { style < 3 ? Set($0.hashes.entities.keys) == Set(hashes.entities.keys) : $0.hashes == hashes }
            } ?? []
        if asTarget, let target = matching.last(where: { $0.name == current }) ?? matching.last {
            matching = [target] + matching.filter { $0.name != target.name }
        }
        // The entities of the store's Z_PRIMARYKEY: a version with another number of them cannot
        // fit. One whose names differ may (a name kept from before a rename, which Core Data
        // never reads): the layout's check tells, by number and parent.
        let entityCount =
            ((try? database.scalar("SELECT count(*) FROM \(schema).Z_PRIMARYKEY WHERE Z_ENT < 16000"))?.integer).map(Int.init) ?? -1
        func misfit(_ version: Version) -> String? {
            guard version.model.entities.count == entityCount else { return "its entities are not the store's" }
            do {
                _ = try CoreDataLayout(model: version.model).resolved(against: database, schema: schema, file: file)
                return nil
            } catch let error as MigrationError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
        func fitting() -> [Version] { versions.filter { misfit($0) == nil } }
        let older = style < 3 ? " (its hashes are of Core Data's style \(style): only the entities' names compared, as Core Data does)" : ""

        if let named = matching.first {
            let alike = matching.dropFirst().map(\.name)
            guard let wrong = misfit(named) else {
                return StoreVersion(
                    version: named, evidence: .hashes, alike: alike, namedByHashes: nil,
                    how: "its entity version hashes\(older)\(alike.isEmpty ? "" : "; alike: \(alike.joined(separator: ", "))")")
            }
            // The metadata says one version, the tables are another's.
            let fits = fitting()
            if fits.count == 1 {
                return StoreVersion(
                    version: fits[0], evidence: .schema, alike: [], namedByHashes: named.name,
                    how:
                        "its schema fits version \(fits[0].name) exactly; its hashes are version \(named.name)'s, whose layout it does not have: \(wrong)"
                )
            }
            throw MigrationError(
                .store,
                "the store's entity version hashes are version \(named.name)'s, but its schema is not that version's layout (\(wrong))\(fits.isEmpty ? ", nor any other version's" : "; it fits versions \(fits.map(\.name).joined(separator: ", ")) alike: give its version (--from-version)")",
                file: file)
        }
        let cache = (try? CoreDataModel.read(database, schema: schema, file: file)) ?? nil
        let difference =
            hashes.map { "its hashes match no version: " + self.difference(of: $0, model: cache) } ?? "it records no entity version hashes"
        let fits = fitting()
        if fits.count == 1 {
            return StoreVersion(
                version: fits[0], evidence: .schema, alike: [], namedByHashes: nil,
                how: "its schema fits version \(fits[0].name) exactly; \(difference)")
        }
        if fits.count > 1 {
            throw MigrationError(
                .store,
                "\(hashes == nil ? "the store records no entity version hashes" : "the store's entity version hashes match no version of the model bundle"), and its schema fits versions \(fits.map(\.name).joined(separator: ", ")) alike: give its version (--from-version)",
                file: file)
        }
        guard let hashes else {
            throw MigrationError(
                .store,
                "the store records no entity version hashes (its metadata has none), and its schema is no version's layout: give its version (--from-version) or its model (--model-from)",
                file: file)
        }
        // Core Data, finding no version of the app's bundles, tries the store's model cache.
        let cached =
            cache.map { CoreDataVersionHashes(model: $0) == hashes } == true
            ? "; its model cache hashes as its metadata records: it is the model that wrote the store, from which Core Data migrates when no version of the app's bundles matches; plan without --models infers from it straight to the destination's model"
            : ""
        throw MigrationError(
            .store,
            "the store's entity version hashes match no version of the model bundle, and its schema is no version's layout: it was written by a model the bundle does not hold (a version edited in place after the store was written?); \(self.difference(of: hashes, model: cache))\(cached)",
            file: file)
    }

    /// How `hashes` (a store's) differ from those of the version nearest them (fewest entities
    /// differing), entity by entity: `nearest zmessaging2.69.0: entity User differs (...)`.
    /// With the store's own model (its model cache, where it hashes as recorded), the properties
    /// that differ.
    func difference(of hashes: CoreDataVersionHashes, model: CoreDataModel?) -> String {
        func differing(_ version: Version) -> [String] {
            Set(hashes.entities.keys).union(version.hashes.entities.keys).filter { hashes.entities[$0] != version.hashes.entities[$0] }
                .sorted()
        }
        guard let nearest = versions.reversed().min(by: { differing($0).count < differing($1).count }) else { return "" }
        let storeModel = model.flatMap { CoreDataVersionHashes(model: $0) == hashes ? $0 : nil }
        let lines = differing(nearest).map { name -> String in
            guard hashes.entities[name] != nil else { return "entity \(name) is not in the store (\(nearest.name) has it)" }
            guard nearest.hashes.entities[name] != nil else { return "entity \(name) is not in \(nearest.name) (the store has it)" }
            guard let storeModel else { return "entity \(name) differs" }
            return "entity \(name) differs (\(Self.difference(of: name, in: storeModel, from: nearest.model, named: nearest.name)))"
        }
        return "nearest version \(nearest.name): " + lines.joined(separator: "; ")
    }

    /// What of entity `name` differs between the store's model and a version's: properties only
    /// in one, properties that hash otherwise, the entity's own parent, abstractness, hash
    /// modifier and uniqueness constraints.
    static func difference(of name: String, in store: CoreDataModel, from version: CoreDataModel, named versionName: String) -> String {
        guard let mine = store.entity(named: name), let theirs = version.entity(named: name) else { return "" }
        var parts: [String] = []
        if mine.parent != theirs.parent {
            parts.append("parent \(mine.parent ?? "none") in the store, \(theirs.parent ?? "none") in \(versionName)")
        }
        if mine.isAbstract != theirs.isAbstract { parts.append(mine.isAbstract ? "abstract in the store" : "abstract in \(versionName)") }
        if mine.versionHashModifier != theirs.versionHashModifier { parts.append("its version hash modifier") }
        if mine.uniquenessConstraints.map({ $0.joined(separator: ".") }).sorted()
            != theirs.uniquenessConstraints.map({ $0.joined(separator: ".") }).sorted()
        {
            parts.append("its uniqueness constraints")
        }
        func properties(_ model: CoreDataModel) -> [String: [UInt8]] {
            var result: [String: [UInt8]] = [:]
            for (declaredBy, property) in model.allProperties(of: name) where !property.isTransient || property.attribute?.derivation != nil
            {
                result[property.name] = CoreDataVersionHashes.hash(of: property, declaredBy: declaredBy)
            }
            return result
        }
        let (a, b) = (properties(store), properties(version))
        let onlyStore = a.keys.filter { b[$0] == nil }.sorted(), onlyVersion = b.keys.filter { a[$0] == nil }.sorted()
        let changed = a.keys.filter { b[$0] != nil && a[$0] != b[$0] }.sorted()
        if !onlyStore.isEmpty { parts.append("\(onlyStore.joined(separator: ", ")) only in the store") }
        if !onlyVersion.isEmpty { parts.append("\(onlyVersion.joined(separator: ", ")) only in \(versionName)") }
        if !changed.isEmpty { parts.append("\(changed.joined(separator: ", ")) changed") }
        return parts.isEmpty ? "a parent's properties" : parts.joined(separator: ", ")
    }
}
