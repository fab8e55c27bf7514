import Foundation

/// Quoting for identifiers the plan names.
enum SQL {
    /// `name` as a quoted SQL identifier: `"na""me"`.
    static func quote(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The key column of a table side, or `rowid` when the plan names none.
    static func key(_ column: String?) -> String {
        column.map(quote) ?? "rowid"
    }
}
