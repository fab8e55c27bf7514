/// How a batch walks a table in key order: by its rowid, or by a unique index on its key column.
/// A batch relies on rows flowing through `INSERT ... SELECT ... ORDER BY key` in key order, one
/// at a time, without a sort; the plan is refused when a table offers no such path
/// (``PlanCheck/keyAccess(_:of:named:in:planPath:entity:)``).
enum KeyAccess: Equatable {
    /// The rowid (the key is omitted, or is the table's INTEGER PRIMARY KEY).
    case rowid
    /// A unique index on the key column alone, which is NOT NULL.
    case index(String)

    /// The `FROM` clause's indexing: `NOT INDEXED` walks the rowid b-tree; `INDEXED BY` the key's index.
    var hint: String {
        switch self {
        case .rowid: "NOT INDEXED"
        case let .index(name): "INDEXED BY \(SQL.quote(name))"
        }
    }
}
