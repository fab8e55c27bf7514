import Foundation

/// The order of a bundle's versions: what their names tell, or what is given, and the versions
/// a store goes through from one version to another.
extension CoreDataModelBundle {
    /// A version name read as a stem, a separator and a version number: `zmessaging` `2.100.0`,
    /// `Model` ` ` `2`, `SampleModel3` `_v` `2`, `Model` `v` `4`.
    struct NumberedName: Equatable {
        var stem: String
        var separator: String
        var numbers: [Int]

        /// The scheme the name follows: its stem and separator.
        var scheme: String { stem + "\u{1}" + separator }

        /// `nil` for a name that does not end in a number.
        init?(_ name: String) {
            var characters = Array(name)
            var digits: [Character] = []
            while let last = characters.last, last.isASCII, last.isNumber || last == "." {
                digits.insert(characters.removeLast(), at: 0)
            }
            // A version number starts and ends with a digit: `2.100.0`, not `.2` or `2.`.
            while digits.first == "." { characters.append(digits.removeFirst()) }
            while digits.last == "." { digits.removeLast() }
            let numbers = String(digits).split(separator: ".").compactMap { Int($0) }
            guard !numbers.isEmpty else { return nil }
            var separator = ""
            if let last = characters.last, last == "v" || last == "V" {
                separator = String(characters.removeLast())
            }
            if let last = characters.last, last == " " || last == "_" || last == "-" {
                separator = String(characters.removeLast()) + separator
            }
            self.stem = String(characters)
            self.separator = separator
            self.numbers = numbers
        }
    }

    /// Each version's place as the names tell it: the scheme and numbers of a version numbered in
    /// the bundle's one naming scheme; versions without a place are left out.
    private var placeByName: [String: [Int]] {
        if isOrderGiven || !members.isEmpty { return [:] }
        let parsed = Dictionary(uniqueKeysWithValues: versions.map { ($0.name, NumberedName($0.name)) })
        // A name that is another's stem is that scheme's unnumbered version (`SampleModel3`
        // beside `SampleModel3_v2`), not a number of its own.
        let stems = Set(parsed.values.compactMap { $0?.stem })
        let numbered = parsed.compactMapValues { $0 }.filter { !stems.contains($0.key) }
        let schemes = Set(numbered.values.map(\.scheme))
        guard schemes.count == 1 else { return [:] }
        return numbered.mapValues(\.numbers)
    }

    /// For each version, the versions known to come after it: the order given, or the order of
    /// the numbered names and of the app's mapping models (one from `A` to `B` puts `A` first),
    /// followed through.
    private func knownSuccessors() -> [String: Set<String>] {
        var next: [String: Set<String>] = [:]
        if isOrderGiven {
            for (a, b) in zip(versions, versions.dropFirst()) { next[a.name, default: []].insert(b.name) }
        } else {
            let places = placeByName.sorted { $0.value.lexicographicallyPrecedes($1.value) }
            for (a, b) in zip(places, places.dropFirst()) where a.value != b.value { next[a.key, default: []].insert(b.key) }
            for mapping in mappingModels { next[mapping.source, default: []].insert(mapping.destination) }
        }
        var result: [String: Set<String>] = [:]
        for version in versions {
            var reached: Set<String> = [], queue = Array(next[version.name] ?? [])
            while let name = queue.popLast() {
                if reached.insert(name).inserted { queue += next[name] ?? [] }
            }
            result[version.name] = reached
        }
        return result
    }

    /// Whether `a` comes before `b` in `successors`; `nil` where neither or both is known.
    private static func compare(_ a: String, _ b: String, _ successors: [String: Set<String>]) -> Bool? {
        let (before, after) = (successors[a]?.contains(b) == true, successors[b]?.contains(a) == true)
        return before == after ? nil : before
    }

    /// Versions whose place among the others is not known: a name without a number (`Initial`,
    /// `AddTags`, or the first version `Model` beside `Model 2`), every name where the names follow
    /// two schemes (`Model 2` beside `Model_v3`), unless the app's mapping models place them
    /// (one from `Model` to `Model 2`); empty where the order is known (one version, names of one
    /// scheme, an order given). For merged bundles, those of each bundle.
    public var unorderedVersions: [String] {
        if !members.isEmpty { return members.flatMap(\.unorderedVersions) }
        if isOrderGiven || versions.count < 2 { return [] }
        let successors = knownSuccessors()
        // The versions the names place, where they place some, else all: a version without a
        // place is one whose order with one of them is not known.
        let placed = Set(placeByName.keys)
        let others = placed.isEmpty ? versions.map(\.name) : Array(placed)
        return versions.map(\.name).filter { name in
            others.contains { $0 != name && Self.compare(name, $0, successors) == nil }
        }
    }

    /// Whether version `a` is known to come before version `b` (`true`), after it (`false`), or
    /// their order is not known (`nil`). For merged bundles, each bundle's version in turn.
    public func isKnown(_ a: String, before b: String) -> Bool? {
        guard a != b else { return nil }
        if !members.isEmpty {
            guard let x = version(named: a)?.parts, let y = version(named: b)?.parts else { return nil }
            var direction: Bool?
            for (index, member) in members.enumerated() where x[index] != y[index] {
                guard let before = member.isKnown(x[index], before: y[index]), direction == nil || direction == before else { return nil }
                direction = before
            }
            return direction
        }
        return Self.compare(a, b, knownSuccessors())
    }

    /// The versions a store goes through from version `from` to version `to`, oldest first:
    /// `from`, the versions known to lie between, and `to`; `[from]` when they are one. What the
    /// order of the versions between changes is the renames followed through them and the app's
    /// mapping models run on the way; the order is needed only where a version whose place is
    /// not known could lie between and records a rename (a renaming identifier) that `to` does
    /// not record itself, or is an end of one of the app's mapping models. For merged bundles, each
    /// bundle's versions in turn, the others' at `from`'s or `to`'s.
    ///
    /// - Throws: ``MigrationError`` when `from` is known to come after `to`, or where the order
    ///   is needed and not known, naming the versions, their renames and `--version-order`.
    public func versions(from: String, to: String) throws -> [Version] {
        guard let first = version(named: from), let last = version(named: to) else {
            throw MigrationError(.invalidPlan, "the model bundle has no version \(version(named: from) == nil ? from : to)")
        }
        guard from != to else { return [first] }
        if !members.isEmpty {
            var parts = first.parts
            var result = [first]
            for (index, member) in members.enumerated() {
                for step in try member.versions(from: first.parts[index], to: last.parts[index]).dropFirst() {
                    parts[index] = step.name
                    result.append(version(named: parts.joined(separator: " + "))!)
                }
            }
            return result
        }
        let successors = knownSuccessors()
        func isKnown(_ a: String, before b: String) -> Bool? { Self.compare(a, b, successors) }
        if isKnown(from, before: to) == false {
            throw MigrationError(
                .invalidPlan, "the source store is at version \(from), newer than the destination's \(to): a migration goes forward")
        }
        var between: [Version] = []
        // Versions that may lie between, and what they would change: the renames they record,
        // the app's mapping models that start or end at them (an app's progressive migrator runs
        // each mapping model on its way).
        var unknown: [(version: Version, renames: [String], mappingModels: [String])] = []
        for version in versions where version.name != from && version.name != to {
            let afterFrom = isKnown(from, before: version.name), beforeTo = isKnown(version.name, before: to)
            if afterFrom == true && beforeTo == true {
                between.append(version)
            } else if afterFrom != false && beforeTo != false {
                let renames = Self.renames(recordedBy: version.model, notIn: last.model)
                // A version whose hashes are an end's is that end to Core Data, which finds a
                // mapping model by the hashes: its mapping models need no order.
                let isEnd = version.hashes == first.hashes || version.hashes == last.hashes
                let mappings =
                    isEnd
                    ? []
                    : mappingModels.filter { $0.source == version.name || $0.destination == version.name }
                        .map {
                            "\($0.url.lastPathComponent) (\($0.source) -> \($0.destination)\($0.policies.isEmpty ? "" : ", with policies \($0.policies.joined(separator: ", "))"))"
                        }
                if !renames.isEmpty || !mappings.isEmpty { unknown.append((version, renames, mappings)) }
            }
        }
        if let first = unknown.first {
            let names = unknown.map(\.version.name)
            let unordered =
                "the order of the model's versions is not known from their names or the app's mapping models (\(unorderedVersions.joined(separator: ", ")) \(unorderedVersions.count == 1 ? "has" : "have") no place among the others)"
            let giveIt = "give it with --version-order, every version oldest first (\(versions.map(\.name).joined(separator: ",")))"
            if let mapping = unknown.lazy.flatMap(\.mappingModels).first {
                throw MigrationError(
                    .invalidPlan,
                    "\(unordered), and the app's mapping model \(mapping) may lie on the way from the source's \(from) to the destination's \(to): whether it runs needs the order; \(giveIt)"
                )
            }
            let shown = first.renames.prefix(3).joined(separator: ", ") + (first.renames.count > 3 ? ", ..." : "")
            throw MigrationError(
                .invalidPlan,
                "\(unordered), and version\(names.count == 1 ? "" : "s") \(names.joined(separator: ", ")), which may lie between the source's \(from) and the destination's \(to), record\(names.count == 1 ? "s" : "") renames that \(to) does not (\(first.version.name): \(shown)): following them needs the order; \(giveIt)"
            )
        }
        return [first] + between.sorted { isKnown($0.name, before: $1.name) == true } + [last]
    }

    /// The renames `model` records (an entity's or property's renaming identifier other than its
    /// name) that `later` does not record on the element of the same name, as
    /// `Entity (from Old)` and `Entity.property (from old)`.
    static func renames(recordedBy model: CoreDataModel, notIn later: CoreDataModel) -> [String] {
        var result: [String] = []
        for entity in model.entities {
            let kept = later.entity(named: entity.name)
            if let from = entity.renamingIdentifier, !from.isEmpty, from != entity.name, kept?.renamingIdentifier != from {
                result.append("\(entity.name) (from \(from))")
            }
            for property in entity.properties {
                guard let from = property.renamingIdentifier, !from.isEmpty, from != property.name else { continue }
                if kept?.property(named: property.name)?.renamingIdentifier != from {
                    result.append("\(entity.name).\(property.name) (from \(from))")
                }
            }
        }
        return result
    }
}
