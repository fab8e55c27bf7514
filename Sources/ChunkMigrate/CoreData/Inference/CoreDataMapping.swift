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
/// - the job refuses a destination whose entity tables already hold rows.
///
/// ```json
/// "coreData": { "entities": { "Object": "Object", "Event": "Event", "Place": "Location" } }
/// ```
///
/// `chunkmigrate plan` writes it; a renamed entity is one entry whose two names differ.
public struct CoreDataMapping: Codable, Sendable, Equatable {
    /// Destination entity name -> the source entity whose rows it takes.
    public var entities: [String: String]

    /// Creates the Core Data part of a plan.
    public init(entities: [String: String]) {
        self.entities = entities
    }
}
