/// The Core Data part of a plan: which source entity each destination entity takes its rows
/// from, by name. With it, a job migrates with Core Data's bookkeeping:
///
/// - `coredata_entity(n)` is an SQL function the plan's expressions call to turn a source entity
///   number (`Z_ENT`, a polymorphic `Z<n>_<REL>` column) into the destination's number for the
///   same entity, by name, from each store's own `Z_PRIMARYKEY`;
/// - `Z_PRIMARYKEY.Z_MAX` of each destination root entity is raised in the transaction of every
///   batch to the table's largest key (and, at the start, to the source's `Z_MAX` where keys are
///   preserved), never lowered;
/// - the destination keeps its model's metadata and model cache, and takes the source's store
///   UUID (`Z_METADATA.Z_UUID` and `NSStoreUUID` in its property list), so object-ID URIs the app
///   saved keep pointing at the same objects;
/// - the job refuses a destination whose entity tables already hold rows;
/// - the destination's triggers (Core Data's derived attributes, counts and R-tree indexes) are
///   out of the way while rows go in, and back as they were at the end; in between, the derived
///   values the plan lists (``derived``) are computed, the external files of ``externalData`` are
///   carried over, and the R-tree indexes are filled, each in checkpointed batches.
///
/// ```json
/// "coreData": { "entities": { "Object": "Object", "Event": "Event", "Place": "Location" } }
/// ```
///
/// `chunkmigrate plan` writes it; a renamed entity is one entry whose two names differ.
public struct CoreDataMapping: Codable, Sendable, Equatable {
    /// Destination entity name -> the source entity whose rows it takes.
    public var entities: [String: String]
    /// Derived attributes whose values the job computes once every row is in (new in the
    /// destination model, or derived differently): the rest are copied.
    public var derived: [DerivedValue]
    /// Binary attributes whose large values are files in the store's support folder
    /// (`.<store>_SUPPORT/_EXTERNAL_DATA/`): the files the copied rows name are carried over.
    public var externalData: [ExternalData]

    /// A derived attribute's value, computed in the destination after the copy, batch by batch
    /// of its table's keys: `UPDATE table SET column = value WHERE rows` (see
    /// `CoreDataDerivation`).
    ///
    /// ```json
    /// { "attribute": "List.itemCount", "table": "ZLIST", "column": "ZITEMCOUNT",
    ///   "value": "(SELECT IFNULL(COUNT(t.ZLIST), 0) FROM ZITEM AS t WHERE t.ZLIST = ZLIST.Z_PK)" }
    /// ```
    public struct DerivedValue: Codable, Sendable, Equatable {
        /// `Entity.attribute`, for what the job reports.
        public var attribute: String
        /// The destination table and column.
        public var table: String
        public var column: String
        /// The value for a row of `table`, which the SQL refers to by its name.
        public var value: String
        /// The rows that have the attribute (a condition on `Z_ENT`), when the table holds other
        /// entities too.
        public var rows: String?

        /// Creates a derived value.
        public init(attribute: String, table: String, column: String, value: String, rows: String? = nil) {
            self.attribute = attribute
            self.table = table
            self.column = column
            self.value = value
            self.rows = rows
        }
    }

    /// A binary attribute that may keep its values in files: the destination column holds
    /// `0x01` + the value, or `0x02` + a file name + `0x00`.
    public struct ExternalData: Codable, Sendable, Equatable {
        /// `Entity.attribute`, for what the job reports.
        public var attribute: String
        /// The destination table and column.
        public var table: String
        public var column: String

        /// Creates an external-data attribute.
        public init(attribute: String, table: String, column: String) {
            self.attribute = attribute
            self.table = table
            self.column = column
        }
    }

    /// Creates the Core Data part of a plan.
    public init(entities: [String: String], derived: [DerivedValue] = [], externalData: [ExternalData] = []) {
        self.entities = entities
        self.derived = derived
        self.externalData = externalData
    }

    private enum CodingKeys: String, CodingKey { case entities, derived, externalData }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        entities = try container.decode([String: String].self, forKey: .entities)
        derived = try container.decodeIfPresent([DerivedValue].self, forKey: .derived) ?? []
        externalData = try container.decodeIfPresent([ExternalData].self, forKey: .externalData) ?? []
    }

    /// Leaves out the lists that are empty, so a plan without them reads as before.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(entities, forKey: .entities)
        if !derived.isEmpty { try container.encode(derived, forKey: .derived) }
        if !externalData.isEmpty { try container.encode(externalData, forKey: .externalData) }
    }
}
