import Foundation

/// A custom step between two versions of a model: what Core Data would do with a mapping model
/// and a custom entity migration policy, written as the entity mappings of an ordinary plan
/// between a store of version `from` and a store of version `to` (their tables and columns as
/// those versions lay them out). Every table the step does not fill is inferred as usual.
///
/// ```json
/// { "from": "Model 2", "to": "Model 3",
///   "entities": [ { "name": "Section", "source": { "table": "ZPOST", "key": "Z_PK" },
///                   "destination": { "table": "ZSECTION", "key": "Z_PK" }, "keys": "allocate",
///                   "columns": { "Z_ENT": "coredata_entity_number('Section')", "Z_OPT": "1",
///                                "ZBODY": "ZCONTENT", "ZTITLE": "substr(ZCONTENT, 1, 4) || '...'" },
///                   "relationships": { "ZPOST": { "from": "Z_PK", "to": "Post" } } } ] }
/// ```
public struct CoreDataStep: Codable, Sendable, Equatable {
    /// The versions the step goes between, by name in the model bundle.
    public var from: String
    public var to: String
    /// The entity mappings of what the step does by hand.
    public var entities: [EntityMapping]

    /// Creates a custom step.
    public init(from: String, to: String, entities: [EntityMapping]) {
        self.from = from
        self.to = to
        self.entities = entities
    }

    /// Decodes a step from JSON, with errors that name the path of what is wrong.
    public static func decode(json data: Data, file: String? = nil) throws(MigrationError) -> CoreDataStep {
        do {
            return try JSONDecoder().decode(CoreDataStep.self, from: data)
        } catch let error as DecodingError {
            throw MigrationError.plan(error, file: file)
        } catch {
            throw MigrationError(.invalidPlan, "the step is not valid JSON: \(error)", file: file)
        }
    }
}

/// One plan from a store at one version of a model to a store at a later one, through custom
/// steps: the path is cut at each step, each part inferred (between empty stores of the versions
/// at its ends, ``CoreDataEmptyStore``) or taken from the step, and the parts composed into one
/// plan, one pass over the data:
///
/// - each part's entity numbers written out (`coredata_entity(Z_ENT)` becomes `CASE Z_ENT WHEN 3
///   THEN 4 ... END` for that part's two versions), so that composed numbers go through every
///   version;
/// - a later part's expression over a table of the version between has each column replaced by
///   the earlier part's expression for it (`ZTITLE` of v3 from `substr(ZCONTENT, 1, 4)` of v2,
///   `ZCONTENT` of v2 from `ZCONTENT` of v1), its filter joined to the earlier one's, a column the
///   earlier part fills through a relationship kept a relationship;
/// - what cannot be composed is refused, naming the step, the entity and the column: an
///   expression reading another table of the version between, the key of rows the earlier part
///   gives new keys, a de-duplicated entity.
struct CoreDataStepComposition {
    let source: URL
    let destination: URL
    let database: Database
    let options: InferenceOptions

    /// One part of the path: versions `from` to `to` (indexes in the path), inferred or a step.
    private struct Part {
        var from: Int
        var to: Int
        var step: CoreDataStep?
        var plan = MigrationPlan(entities: [])
    }

    func compose() throws -> InferredPlan {
        guard let bundle = options.modelBundle else {
            throw MigrationError(.invalidPlan, "custom steps go between versions of the model bundle: give it (--models)")
        }
        var decisions: [String] = [], notes: [String] = []
        func find(_ name: String?, schema: String, file: String) throws -> CoreDataModelBundle.Version {
            if let name {
                guard let version = bundle.version(named: name) else {
                    throw MigrationError(.invalidPlan, "the model bundle has no version \(name)\(MigrationPlan.suggestion(for: name, among: bundle.versions.map(\.name)))")
                }
                return version
            }
            return try bundle.version(of: database, schema: schema, file: file).version
        }
        let first = try find(options.sourceVersion, schema: "src", file: source.path)
        let last = try find(options.destinationVersion, schema: "main", file: destination.path)
        guard let path = bundle.path(from: first.name, to: last.name) else {
            throw MigrationError(.invalidPlan, "the source store is at version \(first.name), newer than the destination's \(last.name): a migration goes forward",
                                 file: source.path)
        }
        let names = path.map(\.name)

        // The parts: the steps where they are, inferred parts between.
        var parts: [Part] = []
        var cursor = 0
        for step in options.steps.sorted(by: { (names.firstIndex(of: $0.from) ?? 0) < (names.firstIndex(of: $1.from) ?? 0) }) {
            guard let from = names.firstIndex(of: step.from), let to = names.firstIndex(of: step.to), from < to else {
                throw MigrationError(.invalidPlan, "step \(step.from) -> \(step.to): not a step forward on the path from \(first.name) to \(last.name)")
            }
            guard from >= cursor else {
                throw MigrationError(.invalidPlan, "step \(step.from) -> \(step.to) overlaps another step")
            }
            if from > cursor { parts.append(Part(from: cursor, to: from)) }
            parts.append(Part(from: from, to: to, step: step))
            cursor = to
        }
        if cursor < path.count - 1 { parts.append(Part(from: cursor, to: path.count - 1)) }

        // An empty store of each version between, for the inference of the parts around it.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chunkmigrate-steps-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var stores: [Int: URL] = [0: source, path.count - 1: destination]
        for part in parts {
            for index in [part.from, part.to] where stores[index] == nil {
                let url = folder.appendingPathComponent("version\(index).sqlite")
                try CoreDataEmptyStore.create(at: url, model: path[index].model)
                stores[index] = url
            }
        }

        for index in parts.indices {
            let part = parts[index]
            var partOptions = InferenceOptions(renames: options.renames, keys: options.keys, keepFirstDuplicate: options.keepFirstDuplicate,
                                               modelBundle: bundle, sourceVersion: names[part.from], destinationVersion: names[part.to])
            partOptions.skippedTables = Set(part.step?.entities.map(\.destination.table) ?? [])
            let inferred = try MigrationPlan.infer(source: stores[part.from]!, destination: stores[part.to]!, options: partOptions)
            var plan = inferred.plan
            if let step = part.step {
                let filled = Set(step.entities.map { $0.destination.table.uppercased() })
                plan.entities = plan.entities.filter { !filled.contains($0.destination.table.uppercased()) } + step.entities
                decisions.append("step \(step.from) -> \(step.to): \(step.entities.map(\.name).joined(separator: ", ")) as the step writes them, the rest inferred")
            }
            let label = "\(names[part.from]) -> \(names[part.to])"
            decisions += inferred.decisions.map { "\(label): \($0)" }
            // Notes of the parts between empty stores count nothing: the first part's say it.
            if part.from == 0 { notes += inferred.notes } else { notes += inferred.notes.filter { !$0.contains(" rows") }.map { "\(label): \($0)" } }
            parts[index].plan = try Self.entityNumbersWrittenOut(plan, from: path[part.from].model, to: path[part.to].model, step: part.step)
        }

        var composed = parts[0].plan
        for part in parts.dropFirst() {
            let between = try Database(path: stores[part.from]!.path, mode: .source)
            composed = try Self.compose(composed, part.plan, between: between, label: part.step.map { "step \($0.from) -> \($0.to)" }
                                        ?? "\(names[part.from]) -> \(names[part.to])")
        }
        // History and CloudKit mirroring go between the two stores directly: Z_MAX is kept ahead
        // by the job; their rows are not carried through custom steps.
        notes.append("a job through custom steps does not carry persistent history or CloudKit mirroring rows (their numbering is kept ahead)")
        decisions.insert("path: \(names.first!) -> \(names.last!), \(path.count - 1) steps, \(parts.count) parts composed into one job", at: 0)
        return InferredPlan(plan: composed, decisions: decisions, notes: notes)
    }

    /// The plan with `coredata_entity(x)` written out as the mapping of the two versions' entity
    /// numbers by name (`CASE x WHEN 3 THEN 4 ... END`), and `coredata_entity_number('Name')` as
    /// the later version's number.
    static func entityNumbersWrittenOut(_ plan: MigrationPlan, from: CoreDataModel, to: CoreDataModel, step: CoreDataStep?) throws -> MigrationPlan {
        let before = try CoreDataLayout(model: from), after = try CoreDataLayout(model: to)
        var cases: [String] = []
        for (destinationName, sourceName) in (plan.coreData?.entities ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let a = before.entity(named: sourceName)?.number, let b = after.entity(named: destinationName)?.number else { continue }
            cases.append("WHEN \(a) THEN \(b)")
        }
        func rewrite(_ sql: String) throws -> String {
            var text = sql
            while let range = text.range(of: #"coredata_entity\(([^()]*)\)"#, options: .regularExpression) {
                let argument = text[range].dropFirst("coredata_entity(".count).dropLast()
                text.replaceSubrange(range, with: "(CASE \(argument) \(cases.joined(separator: " ")) END)")
            }
            while let range = text.range(of: #"coredata_entity_number\('[^']*'\)"#, options: .regularExpression) {
                let name = String(text[range].dropFirst("coredata_entity_number('".count).dropLast(2))
                guard let number = after.entity(named: name)?.number else {
                    throw MigrationError(.invalidPlan, "\(step.map { "step \($0.from) -> \($0.to): " } ?? "")coredata_entity_number('\(name)'): the version has no entity \(name)")
                }
                text.replaceSubrange(range, with: String(number))
            }
            return text
        }
        var plan = plan
        for index in plan.entities.indices {
            var entity = plan.entities[index]
            entity.columns = try entity.columns.mapValues(rewrite)
            entity.source.where = try entity.source.where.map(rewrite)
            entity.relationships = try entity.relationships.mapValues { relationship in
                var relationship = relationship
                relationship.from = try rewrite(relationship.from)
                return relationship
            }
            if var distinct = entity.distinct {
                distinct.source = try rewrite(distinct.source)
                entity.distinct = distinct
            }
            plan.entities[index] = entity
        }
        return plan
    }

    /// An entity-number mapping of a number written out: `(CASE 2 WHEN 1 THEN 1 WHEN 2 THEN 3 END)`
    /// becomes `3`.
    static func folded(_ sql: String) -> String {
        guard let match = sql.range(of: #"^\(CASE \(?(-?[0-9]+)\)? ((WHEN -?[0-9]+ THEN -?[0-9]+ ?)+)END\)$"#, options: .regularExpression) else { return sql }
        let parts = sql[match].split(separator: " ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "()")) }
        let value = parts[1]
        var index = 2
        while index + 3 < parts.count {
            if parts[index] == "WHEN", parts[index + 1] == value { return parts[index + 3] }
            index += 4
        }
        return "NULL"
    }

    /// `second` after `first`: a plan from `first`'s source to `second`'s destination, whose
    /// expressions read `first`'s source. `between` is the store of the version between (for the
    /// columns of its tables).
    static func compose(_ first: MigrationPlan, _ second: MigrationPlan, between: Database, label: String) throws -> MigrationPlan {
        func refuse(_ entity: String, _ column: String?, _ why: String) -> MigrationError {
            MigrationError(.invalidPlan, "\(label) cannot be composed with the steps before it: \(entity)\(column.map { ".\($0)" } ?? ""): \(why)",
                           entity: entity, column: column)
        }
        // An entity of `first` goes on as the entity of `second` reading its destination table.
        func nameAfter(_ name: String) -> String? {
            guard let table = first.entities.first(where: { $0.name == name })?.destination.table else { return nil }
            return second.entities.first { $0.source.table.caseInsensitiveCompare(table) == .orderedSame }?.name
        }
        var result: [EntityMapping] = []
        for later in second.entities {
            let earlier = first.entities.filter { $0.destination.table.caseInsensitiveCompare(later.source.table) == .orderedSame }
            if later.distinct != nil || earlier.contains(where: { $0.distinct != nil }) {
                throw refuse(later.name, nil, "a de-duplicated entity does not compose; write the step across it")
            }
            let columns: Set<String>
            do {
                columns = Set(try between.tableSchema(later.source.table, in: "main")?.columns.map { $0.name.uppercased() } ?? [])
            } catch {
                throw refuse(later.name, nil, "cannot read table \(later.source.table) of the version between: \(error.message)")
            }
            for before in earlier {
                let relationships = Dictionary(before.relationships.map { ($0.key.uppercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
                let values = Dictionary(before.columns.map { ($0.key.uppercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
                let key = (later.source.key ?? "rowid").uppercased()
                func replace(_ name: String, column: String?) throws -> String? {
                    let upper = name.uppercased()
                    if upper == key || upper == "ROWID" {
                        guard before.keys == .preserve else {
                            throw refuse(later.name, column, "it reads the key of \(later.source.table), which \(before.name) gives new keys before")
                        }
                        return before.source.key ?? "rowid"
                    }
                    guard columns.contains(upper) else { return nil }
                    if let value = values[upper] {
                        // A name or a literal as it is; anything else in parentheses.
                        let simple = value.range(of: #"^([A-Za-z_][A-Za-z0-9_]*|-?[0-9.]+|'[^']*')$"#, options: .regularExpression) != nil
                        return simple ? value : "(\(value))"
                    }
                    if relationships[upper] != nil {
                        throw refuse(later.name, column, "it reads \(name), which \(before.name) fills through a relationship; use it as a relationship's from")
                    }
                    return "NULL"
                }
                func substitute(_ sql: String, column: String?) throws -> String {
                    try SQLIdentifiers.replacing(in: sql) { name, qualifier in
                        if let qualifier {
                            guard qualifier.lowercased() == "s" else {
                                if ["src", "main"].contains(qualifier.lowercased()) {
                                    throw refuse(later.name, column, "it reads another table of the version between (\(qualifier).\(name))")
                                }
                                return nil
                            }
                        }
                        return try replace(name, column: column)
                    }
                }
                var entity = EntityMapping(name: earlier.count == 1 ? later.name : "\(later.name) from \(before.name)",
                                           source: before.source, destination: later.destination,
                                           keys: before.keys == .allocate || later.keys == .allocate ? .allocate : .preserve)
                let conditions = [before.source.where, try later.source.where.map { try substitute($0, column: nil) }].compactMap { $0 }
                entity.source.where = conditions.isEmpty ? nil : conditions.map { "(\($0))" }.joined(separator: " AND ")
                for (column, expression) in later.columns {
                    let bare = expression.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    if let relationship = relationships[bare.uppercased()] {
                        guard let target = nameAfter(relationship.to) else { continue }
                        entity.relationships[column] = .init(from: relationship.from, to: target, missing: relationship.missing)
                        continue
                    }
                    entity.columns[column] = Self.folded(try substitute(expression, column: column))
                }
                for (column, relationship) in later.relationships {
                    let bare = relationship.from.trimmingCharacters(in: .whitespaces).uppercased()
                    if let through = relationships[bare] {
                        entity.relationships[column] = .init(from: through.from, to: relationship.to, missing: relationship.missing)
                    } else {
                        entity.relationships[column] = .init(from: try substitute(relationship.from, column: column), to: relationship.to,
                                                             missing: relationship.missing)
                    }
                }
                result.append(entity)
            }
        }
        var coreData = second.coreData
        if let names = second.coreData?.entities, let before = first.coreData?.entities {
            coreData?.entities = names.compactMapValues { before[$0] }
        }
        return MigrationPlan(entities: result, coreData: coreData)
    }
}

/// The identifiers of an SQL expression, outside string literals: each bare or quoted name
/// (with the qualifier before its dot, if any) that is not a function's name.
enum SQLIdentifiers {
    /// `sql` with each identifier for which `replacement` gives text replaced by it (a qualified
    /// name as a whole).
    static func replacing(in sql: String, _ replacement: (_ name: String, _ qualifier: String?) throws -> String?) throws -> String {
        let characters = Array(sql)
        var output = ""
        var index = 0
        func isStart(_ c: Character) -> Bool { c.isLetter || c == "_" }
        func isPart(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == "$" }
        // One identifier at `index`: bare, "quoted", [bracketed] or `backticked`.
        func identifier(at start: Int) -> (name: String, end: Int)? {
            guard start < characters.count else { return nil }
            let c = characters[start]
            if let close: Character = c == "\"" ? "\"" : c == "[" ? "]" : c == "`" ? "`" : nil {
                var end = start + 1
                var name = ""
                while end < characters.count {
                    if characters[end] == close {
                        if close != "]", end + 1 < characters.count, characters[end + 1] == close { name.append(close); end += 2; continue }
                        return (name, end + 1)
                    }
                    name.append(characters[end])
                    end += 1
                }
                return nil
            }
            guard isStart(c) else { return nil }
            var end = start
            while end < characters.count, isPart(characters[end]) { end += 1 }
            return (String(characters[start..<end]), end)
        }
        while index < characters.count {
            let c = characters[index]
            if c == "'" {
                // A string literal, '' inside it.
                var end = index + 1
                while end < characters.count {
                    if characters[end] == "'" {
                        if end + 1 < characters.count, characters[end + 1] == "'" { end += 2; continue }
                        break
                    }
                    end += 1
                }
                output += String(characters[index...min(end, characters.count - 1)])
                index = end + 1
                continue
            }
            if c.isNumber, index == 0 || !isPart(characters[index - 1]) {
                // A number (1e5, 0.5): not an identifier.
                var end = index
                while end < characters.count, isPart(characters[end]) || characters[end] == "." { end += 1 }
                output += String(characters[index..<end])
                index = end
                continue
            }
            guard let (name, end) = identifier(at: index), index == 0 || !isPart(characters[index - 1]) else {
                output.append(c)
                index += 1
                continue
            }
            // Qualified: `q.name`.
            if end < characters.count, characters[end] == ".", let (column, columnEnd) = identifier(at: end + 1) {
                let original = String(characters[index..<columnEnd])
                output += try replacement(column, name) ?? original
                index = columnEnd
                continue
            }
            // A function's name: followed by "(" (after spaces).
            var next = end
            while next < characters.count, characters[next] == " " { next += 1 }
            let original = String(characters[index..<end])
            if next < characters.count, characters[next] == "(" {
                output += original
            } else {
                output += try replacement(name, nil) ?? original
            }
            index = end
        }
        return output
    }
}
