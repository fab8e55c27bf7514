/// A column of a table, as `PRAGMA table_info` describes it.
///
/// Modelled on GRDB's `ColumnInfo`. Related SQLite documentation:
/// <https://www.sqlite.org/pragma.html#pragma_table_info>
struct ColumnInfo: Equatable, Sendable {
    /// The column's name, as declared.
    var name: String
    /// The declared type (`INTEGER`, `VARCHAR(20)`, or empty when none is declared).
    var type: String
    /// Whether the column is NOT NULL (declared so, or a key column of a WITHOUT ROWID table).
    var isNotNull: Bool
    /// The SQL of the default value, or `nil` when the column has none.
    var defaultValueSQL: String?
    /// The column's position in the table's primary key, from 1; 0 when it is not part of it.
    var primaryKeyIndex: Int

    /// The type affinity SQLite gives the column, by its declared type: `INTEGER`, `TEXT`,
    /// `BLOB`, `REAL` or `NUMERIC`.
    var affinity: String { Self.affinity(of: type) }

    /// A declared type's affinity, by SQLite's rules
    /// (<https://www.sqlite.org/datatype3.html#determination_of_column_affinity>).
    static func affinity(of declared: String) -> String {
        let type = declared.uppercased()
        if type.contains("INT") { return "INTEGER" }
        if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return "TEXT" }
        if type.contains("BLOB") || type.isEmpty { return "BLOB" }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return "REAL" }
        return "NUMERIC"
    }
}
