import Foundation

/// Quoting for identifiers the plan names.
package enum SQL {
    /// `TABLE.COLUMN` (in capitals) of an index's first column, from `CREATE INDEX name ON table
    /// (column, ...)`.
    static func leadingColumn(ofIndex sql: String) -> String? {
        guard
            let range = sql.range(of: #"\bON\s+("[^"]+"|\S+?)\s*\(\s*("[^"]+"|[^\s,)]+)"#, options: [.regularExpression, .caseInsensitive])
        else {
            return nil
        }
        let parts = sql[range].dropFirst(2).trimmingCharacters(in: .whitespaces).split(separator: "(", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        func name(_ text: Substring) -> String { text.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")).uppercased() }
        return "\(name(parts[0])).\(name(parts[1]))"
    }

    /// How many terms `CREATE INDEX ... ON t (a, b COLLATE NOCASE, c)` has (3), or nil where it
    /// cannot tell.
    static func termCount(ofIndex sql: String) -> Int? {
        guard let on = sql.range(of: #"\bON\s+("[^"]+"|\S+?)\s*\("#, options: [.regularExpression, .caseInsensitive]) else { return nil }
        var depth = 0, terms = 1
        var quote: Character?
        for character in sql[on.upperBound...] {
            if let open = quote {
                if character == open { quote = nil }
                continue
            }
            switch character {
            case "\"", "'", "`", "[": quote = character == "[" ? "]" : character
            case "(": depth += 1
            case ")":
                if depth == 0 { return terms }
                depth -= 1
            case "," where depth == 0: terms += 1
            default: break
            }
        }
        return nil
    }

    /// `name` as a quoted SQL identifier: `"na""me"`.
    package static func quote(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// `name` as it reads best in an expression a person may edit: bare where it is a plain
    /// identifier and no keyword (`ZTITLE`), quoted otherwise (`"order"`, `"first name"`).
    static func identifier(_ name: String) -> String {
        let plain =
            name.first.map { $0 == "_" || ($0.isASCII && $0.isLetter) } == true
            && name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
        return plain && !Database.isKeyword(name) ? name : quote(name)
    }

    /// `text` as an SQL string literal: `'it''s'`.
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// The key column of a table side, or `rowid` when the plan names none.
    static func key(_ column: String?) -> String {
        column.map(quote) ?? "rowid"
    }
}
