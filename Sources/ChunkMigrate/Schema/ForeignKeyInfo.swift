/// A foreign key of a table, as `PRAGMA foreign_key_list` describes it.
///
/// Modelled on GRDB's `ForeignKeyInfo`. Related SQLite documentation:
/// <https://www.sqlite.org/pragma.html#pragma_foreign_key_list>
struct ForeignKeyInfo: Equatable, Sendable {
    /// The table the key refers to.
    var destinationTable: String
    /// Pairs of a column of this table and the column it refers to; the referred column is `nil`
    /// when the key names none (it then refers to the other table's primary key).
    var mapping: [(origin: String, destination: String?)]

    /// The columns of this table, in the key's order.
    var originColumns: [String] { mapping.map(\.origin) }

    static func == (lhs: ForeignKeyInfo, rhs: ForeignKeyInfo) -> Bool {
        lhs.destinationTable == rhs.destinationTable
            && lhs.mapping.map(\.origin) == rhs.mapping.map(\.origin)
            && lhs.mapping.map(\.destination) == rhs.mapping.map(\.destination)
    }
}
