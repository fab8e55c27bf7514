import Foundation
import MigrationJournal

/// What to migrate: entity mappings from source tables to destination tables.
///
/// The same structure is a Swift value and a JSON file (`chunkmigrate run --plan PLAN.json`):
///
/// ```json
/// { "entities": [
///     { "name": "Conversation",
///       "source": { "table": "conversation", "key": "id", "where": "archived = 0" },
///       "destination": { "table": "conversation", "key": "id" },
///       "columns": { "title": "title", "created_at": "created" } },
///     { "name": "Message",
///       "source": { "table": "message", "key": "id" },
///       "destination": { "table": "message", "key": "id" },
///       "columns": { "text": "body" },
///       "relationships": {
///         "conversation_id": { "from": "conversation_id", "to": "Conversation", "missing": "fail" } } } ] }
/// ```
public struct MigrationPlan: Codable, Sendable, Equatable {
    /// The entities, in the order the plan names them; the engine runs them in dependency order.
    public var entities: [EntityMapping]
    /// Core Data semantics, when both stores are Core Data stores: entity numbers rewritten by
    /// name, `Z_PRIMARYKEY.Z_MAX` kept ahead of the keys, the store's identity carried over.
    public var coreData: CoreDataMapping?

    /// Creates a plan.
    public init(entities: [EntityMapping], coreData: CoreDataMapping? = nil) {
        self.entities = entities
        self.coreData = coreData
    }

    /// Decodes a plan from JSON, with errors that name the plan path of what is wrong
    /// (`entities[1].relationships.conversation_id.to`).
    public static func decode(json data: Data, file: String? = nil) throws(MigrationError) -> MigrationPlan {
        do {
            return try JSONDecoder().decode(MigrationPlan.self, from: data)
        } catch let error as DecodingError {
            throw MigrationError.plan(error, file: file)
        } catch {
            throw MigrationError(.invalidPlan, "the plan is not valid JSON: \(error)", file: file, cause: error)
        }
    }

    /// Whether the entity named `name` is de-duplicated (``EntityMapping/distinct``), so that
    /// relationships to it resolve by value.
    func isDistinct(_ name: String) -> Bool {
        entities.first { $0.name == name }?.distinct != nil
    }

    /// Whether an expression or filter of the plan reads the destination (names `main.`), and so
    /// may need the destination's indexes while the job runs.
    var readsDestination: Bool {
        entities.contains { entity in
            ([entity.source.where].compactMap { $0 } + entity.columns.values)
                .contains { $0.range(of: "main.", options: .caseInsensitive) != nil }
        }
    }

    /// The plan as JSON, with sorted keys so that the same plan always gives the same bytes.
    public func encodedJSON() throws -> Data {
        try JSONEncoder.sortedAndIndented().encode(self)
    }
}

/// How one entity's rows are copied: from which table, to which, with which columns and
/// relationships.
public struct EntityMapping: Codable, Sendable, Equatable {
    /// The source side.
    public struct Source: Codable, Sendable, Equatable {
        /// The source table.
        public var table: String
        /// The integer key column; the rowid when omitted.
        public var key: String?
        /// An SQL condition over the source row; rows that do not match are not migrated.
        public var `where`: String?

        /// Creates the source side.
        public init(table: String, key: String? = nil, where condition: String? = nil) {
            self.table = table
            self.key = key
            self.where = condition
        }
    }

    /// The destination side.
    public struct Destination: Codable, Sendable, Equatable {
        /// The destination table.
        public var table: String
        /// The integer key column; the rowid when omitted.
        public var key: String?

        /// Creates the destination side.
        public init(table: String, key: String? = nil) {
            self.table = table
            self.key = key
        }
    }

    /// How destination keys are chosen: `allocate` (new keys after the destination table's largest
    /// key, in source-key order) or `preserve` (the source key, unchanged).
    ///
    /// The journal's own type, which its header and ID-map segments store as a number; the plan's
    /// JSON spells it by name (`"keys": "preserve"`).
    public typealias KeyPolicy = IDMapSegment.Mapping

    /// What happens to a row whose non-null foreign key has no mapping in the target's ID map.
    public enum MissingPolicy: String, Codable, Sendable {
        /// The batch fails and the error names the row.
        case fail
        /// The foreign key is written as NULL.
        case null
        /// The row is not copied, and is counted.
        case skip
    }

    /// A destination foreign-key column filled from a source foreign-key column through the
    /// target entity's ID map, or, for a de-duplicated target (``EntityMapping/distinct``), from
    /// the value of a source expression looked up in the target's natural-key column.
    public struct Relationship: Codable, Sendable, Equatable {
        /// The source column holding the target's source key; for a de-duplicated target, an SQL
        /// expression over the source row giving the target's value (`"from": "ZAUTHORNAME"`).
        public var from: String
        /// The target entity's name.
        public var to: String
        /// What to do when the target key has no mapping; `fail` when the plan does not say.
        public var missing: MissingPolicy

        /// Creates a relationship.
        public init(from: String, to: String, missing: MissingPolicy = .fail) {
            self.from = from
            self.to = to
            self.missing = missing
        }

        enum CodingKeys: String, CodingKey {
            case from, to, missing
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                from: try container.decode(String.self, forKey: .from), to: try container.decode(String.self, forKey: .to),
                missing: try container.decodeIfPresent(MissingPolicy.self, forKey: .missing) ?? .fail)
        }
    }

    /// The rows of a de-duplicated entity: one destination row per distinct non-null value of a
    /// source expression, in order of first appearance by source key (an attribute that becomes
    /// an entity: `Book.authorName` -> `Author`).
    public struct Distinct: Codable, Sendable, Equatable {
        /// The SQL expression over the source row whose distinct values are the entity's rows.
        public var source: String
        /// The destination column that holds the value, unique in the destination table (the
        /// job creates a unique index on it for its lookups when the schema has none, and removes
        /// it at the end).
        public var destination: String

        /// Creates the natural key of a de-duplicated entity.
        public init(source: String, destination: String) {
            self.source = source
            self.destination = destination
        }
    }

    /// The entity's name, used by relationships, the journal and every message.
    public var name: String
    /// Where the rows come from.
    public var source: Source
    /// Where the rows go.
    public var destination: Destination
    /// How destination keys are chosen; `allocate` when the plan does not say.
    public var keys: KeyPolicy
    /// Destination column -> SQL expression over the source row. Columns not named take their default.
    public var columns: [String: String]
    /// Destination column -> relationship.
    public var relationships: [String: Relationship]
    /// When set, the entity's rows are the distinct values of a source expression; a
    /// relationship to it then resolves by value: its `from` is an expression giving the value.
    public var distinct: Distinct?

    /// Creates an entity mapping.
    public init(
        name: String, source: Source, destination: Destination, keys: KeyPolicy = .allocate,
        columns: [String: String] = [:], relationships: [String: Relationship] = [:], distinct: Distinct? = nil
    ) {
        self.name = name
        self.source = source
        self.destination = destination
        self.keys = keys
        self.columns = columns
        self.relationships = relationships
        self.distinct = distinct
    }

    /// The column mappings, sorted by destination column.
    public var sortedColumns: [(column: String, expression: String)] {
        columns.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
    /// The relationships, sorted by destination column.
    public var sortedRelationships: [(column: String, relationship: Relationship)] {
        relationships.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}

// MARK: Encoding

/// The plan's JSON may leave out `keys`, `columns`, `relationships` and a relationship's `missing`;
/// decoding fills in their defaults, so a plan that spells a default out and one that leaves it out
/// are the same plan. Encoding writes every field, defaults included: a journal's frozen
/// `plan.json` then says everything the job does. A job is resumed with the plan it started with
/// when the two are equal as plans, however either was written (see
/// ``MigrationJob/resume(at:source:destination:plan:options:logger:)``).
extension EntityMapping {
    enum CodingKeys: String, CodingKey {
        case name, source, destination, keys, columns, relationships, distinct
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var keys = KeyPolicy.allocate
        if let name = try container.decodeIfPresent(String.self, forKey: .keys) {
            guard let policy = KeyPolicy(name: name) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .keys, in: container,
                    debugDescription: "\"\(name)\" is not a key policy: \"allocate\" or \"preserve\"")
            }
            keys = policy
        }
        self.init(
            name: try container.decode(String.self, forKey: .name), source: try container.decode(Source.self, forKey: .source),
            destination: try container.decode(Destination.self, forKey: .destination), keys: keys,
            columns: try container.decodeIfPresent([String: String].self, forKey: .columns) ?? [:],
            relationships: try container.decodeIfPresent([String: Relationship].self, forKey: .relationships) ?? [:],
            distinct: try container.decodeIfPresent(Distinct.self, forKey: .distinct))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(source, forKey: .source)
        try container.encode(destination, forKey: .destination)
        try container.encode(keys.description, forKey: .keys)
        try container.encode(columns, forKey: .columns)
        try container.encode(relationships, forKey: .relationships)
        try container.encodeIfPresent(distinct, forKey: .distinct)
    }
}
