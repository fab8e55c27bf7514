/// An index of a table, as `PRAGMA index_list` and `PRAGMA index_info` describe it.
///
/// Modelled on GRDB's `IndexInfo`. Related SQLite documentation:
/// <https://www.sqlite.org/pragma.html#pragma_index_list>
struct IndexInfo: Equatable, Sendable {
    /// What made the index.
    enum Origin: String, Sendable {
        /// `CREATE INDEX`.
        case createIndex = "c"
        /// A `UNIQUE` constraint.
        case uniqueConstraint = "u"
        /// A `PRIMARY KEY` constraint: an index SQLite keeps beside the rowid b-tree (a key that is
        /// not an alias of the rowid), or the table's own b-tree (WITHOUT ROWID).
        case primaryKeyConstraint = "pk"
    }

    /// The index's name (`sqlite_autoindex_...` for one SQLite made for a constraint).
    var name: String
    /// The indexed columns, in index order; an expression is left out.
    var columns: [String]
    /// Whether the index is UNIQUE.
    var isUnique: Bool
    /// What made the index.
    var origin: Origin
    /// Whether the index covers only the rows of a `WHERE` clause.
    var isPartial: Bool

    /// Whether the index covers `column` alone (names compared as SQLite does, ignoring case).
    func covers(only column: String) -> Bool {
        columns.count == 1 && columns[0].lowercased() == column.lowercased()
    }
}
