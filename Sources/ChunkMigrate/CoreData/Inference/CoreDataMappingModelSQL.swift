import Foundation

/// The SQL of what an app's mapping model says, over a row of the source entity's table (as `s`):
/// its filter predicates (`NSPredicate` format) as a `WHERE` condition, its value expressions as
/// a column's value. Key paths are resolved by the caller (``Resolver``): an attribute to its
/// column, a path through to-ones to a subquery, a to-many and a collection operator (`@count`,
/// `@sum`, `@avg`, `@min`, `@max`) to an aggregate over its targets.
///
/// What has no SQL equivalent here is refused with what it is (``Untranslatable``), never
/// dropped: a custom policy's function (`FUNCTION($entityPolicy, ...)`, the app's code), a
/// diacritic-insensitive comparison, `MATCHES`, a subquery, `ANY`/`ALL` over a to-many.
enum CoreDataMappingModelSQL {
    /// What cannot be translated, and why.
    struct Untranslatable: Error, CustomStringConvertible {
        var description: String
    }

    /// A key path (`name`, `author.name`) to the SQL of its value for the row, or `nil` where the
    /// source entity has no such path.
    typealias Resolver = (String) -> String?

    // MARK: - Value expressions

    /// The SQL of a value expression, or `nil` for a constant `nil`.
    static func value(_ expression: CoreDataMappingModelFile.Expression, resolve: Resolver) throws -> String? {
        switch expression {
        case let .constant(value):
            return literal(value)
        case let .function(operand, selector, arguments):
            if let path = expression.sourceKeyPath {
                guard let sql = resolve(path) else {
                    throw Untranslatable(
                        description: path.contains("@")
                            ? "\(path): a collection operator other than @count, @sum, @avg, @min, @max after a to-many"
                            : "the source entity has no key path \(path)")
                }
                return sql
            }
            if case .variable("entityPolicy") = operand {
                throw Untranslatable(description: "it calls the custom policy's \(selector), the app's code")
            }
            if case .variable("manager") = operand {
                throw Untranslatable(description: "it calls the migration manager's \(selector), which only a relationship's value can")
            }
            let values = try arguments.map { try value($0, resolve: resolve) ?? "NULL" }
            func unary(_ name: String) throws -> String {
                guard values.count == 1 else { throw Untranslatable(description: "\(selector) takes one argument") }
                return "\(name)(\(values[0]))"
            }
            func binary(_ op: String) throws -> String {
                guard values.count == 2 else { throw Untranslatable(description: "\(selector) takes two arguments") }
                return "(\(values[0]) \(op) \(values[1]))"
            }
            switch selector {
            case "add:to:": return try binary("+")
            case "from:subtract:": return try binary("-")
            case "multiply:by:": return try binary("*")
            case "divide:by:":
                // NSExpression divides as numbers do, not as integers.
                guard values.count == 2 else { throw Untranslatable(description: "\(selector) takes two arguments") }
                return "(CAST(\(values[0]) AS REAL) / \(values[1]))"
            case "modulus:by:": return try binary("%")
            case "abs:": return try unary("abs")
            case "uppercase:": return try unary("text_upper")
            case "lowercase:": return try unary("text_lower")
            case "length:": return try unary("length")
            case "sqrt:": return try unary("sqrt")
            case "now": return "(julianday('now') - 2451910.5) * 86400.0"
            case "valueForKeyPath:", "valueForKey:":
                throw Untranslatable(description: "a key path of \(operand), not of $source")
            default:
                throw Untranslatable(description: "the function \(selector) has no SQL here")
            }
        case .variable("source"), .evaluatedObject:
            throw Untranslatable(description: "the source object itself, not a value")
        case let .variable(name):
            throw Untranslatable(description: "the variable $\(name)")
        case let .keyPath(path):
            guard let sql = resolve(path) else { throw Untranslatable(description: "the source entity has no key path \(path)") }
            return sql
        case .fetch, .other:
            throw Untranslatable(description: "an expression of a kind chunkmigrate does not run (\(expression))")
        }
    }

    /// An SQL literal of a constant, as Core Data's SQLite store keeps it (booleans as 0 and 1,
    /// dates as seconds since 2001).
    static func literal(_ value: CoreDataMappingModelFile.Expression.Constant) -> String? {
        switch value {
        case .null: return nil
        case let .bool(flag): return flag ? "1" : "0"
        case let .integer(number): return String(number)
        case let .real(number): return number.isFinite ? String(number) : nil
        case let .string(text): return SQL.literal(text)
        case let .date(seconds): return String(seconds)
        case let .data(bytes): return "X'" + bytes.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }

    // MARK: - Filter predicates

    /// The SQL condition of a filter predicate in `NSPredicate`'s format.
    static func condition(_ predicate: String, resolve: @escaping Resolver) throws -> String {
        var parser = PredicateParser(tokens: try tokenize(predicate), resolve: resolve)
        let sql = try parser.or()
        guard parser.atEnd else { throw Untranslatable(description: "unexpected \(parser.peek.map { "\($0)" } ?? "end") in the predicate") }
        return sql
    }

    enum Token: Equatable, CustomStringConvertible {
        case word(String), number(String), string(String), symbol(String), options(String)
        var description: String {
            switch self {
            case let .word(text), let .number(text), let .symbol(text): text
            case let .string(text): "\"\(text)\""
            case let .options(text): "[\(text)]"
            }
        }
    }

    static func tokenize(_ text: String) throws -> [Token] {
        var tokens: [Token] = []
        let characters = Array(text)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            if character.isWhitespace { index += 1; continue }
            if character == "\"" || character == "'" {
                var value = ""
                index += 1
                while index < characters.count, characters[index] != character {
                    if characters[index] == "\\", index + 1 < characters.count {
                        index += 1
                        switch characters[index] {
                        case "t": value.append("\t")
                        case "n": value.append("\n")
                        case "r": value.append("\r")
                        case "\\", "\"", "'": value.append(characters[index])
                        default: throw Untranslatable(description: "the escape \\\(characters[index]) in a string of the predicate")
                        }
                        index += 1
                        continue
                    }
                    value.append(characters[index])
                    index += 1
                }
                guard index < characters.count else { throw Untranslatable(description: "an unclosed string in the predicate") }
                index += 1
                tokens.append(.string(value))
            } else if character == "[" {
                let end = characters[index...].firstIndex(of: "]") ?? characters.count
                tokens.append(.options(String(characters[(index + 1)..<min(end, characters.count)]).lowercased()))
                index = end + 1
            } else if character.isNumber
                || (character == "-" && index + 1 < characters.count && characters[index + 1].isNumber
                    && (tokens.last.map { if case .symbol = $0 { return true } else { return false } } ?? true))
            {
                var value = String(character)
                index += 1
                while index < characters.count, characters[index].isNumber || characters[index] == "." {
                    value.append(characters[index])
                    index += 1
                }
                guard value.filter({ $0 == "." }).count <= 1, !value.hasSuffix(".") else {
                    throw Untranslatable(description: "the number \(value) in the predicate")
                }
                tokens.append(.number(value))
            } else if character.isLetter || character == "_" || character == "$" || character == "@" {
                var value = ""
                while index < characters.count,
                    characters[index].isLetter || characters[index].isNumber
                        || "_$@.".contains(characters[index])
                {
                    value.append(characters[index])
                    index += 1
                }
                tokens.append(.word(value))
            } else {
                let two = index + 1 < characters.count ? String(characters[index...(index + 1)]) : ""
                if ["==", "!=", "<>", "<=", ">=", "=<", "=>", "&&", "||"].contains(two) {
                    tokens.append(.symbol(two))
                    index += 2
                } else if "=<>!(),{}".contains(character) {
                    tokens.append(.symbol(String(character)))
                    index += 1
                } else {
                    throw Untranslatable(description: "the character \(character) in the predicate")
                }
            }
        }
        return tokens
    }

    /// A recursive-descent reading of the predicate grammar: `OR` over `AND` over `NOT` over
    /// comparisons.
    struct PredicateParser {
        var tokens: [Token]
        let resolve: Resolver
        var position = 0

        var atEnd: Bool { position >= tokens.count }
        var peek: Token? { atEnd ? nil : tokens[position] }
        mutating func next() -> Token? { defer { position += 1 }; return peek }
        func isWord(_ token: Token?, _ words: String...) -> Bool {
            if case let .word(text)? = token { return words.contains(text.uppercased()) }
            return false
        }

        mutating func or() throws -> String {
            var parts = [try and()]
            while isWord(peek, "OR") || peek == .symbol("||") { position += 1; parts.append(try and()) }
            return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: " OR ") + ")"
        }

        mutating func and() throws -> String {
            var parts = [try not()]
            while isWord(peek, "AND") || peek == .symbol("&&") { position += 1; parts.append(try not()) }
            return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: " AND ") + ")"
        }

        mutating func not() throws -> String {
            if isWord(peek, "NOT") || peek == .symbol("!") {
                position += 1
                return "(NOT \(try not()))"
            }
            return try comparison()
        }

        mutating func comparison() throws -> String {
            if peek == .symbol("(") {
                position += 1
                let inner = try or()
                guard next() == .symbol(")") else { throw Untranslatable(description: "a parenthesis left open in the predicate") }
                return inner
            }
            if isWord(peek, "TRUEPREDICATE") { position += 1; return "1" }
            if isWord(peek, "FALSEPREDICATE") { position += 1; return "0" }
            let left = try operand()
            guard let op = next() else { throw Untranslatable(description: "a comparison without operator at the end of the predicate") }
            var options = ""
            if case let .options(text)? = peek { options = text; position += 1 }
            if options.contains("d") {
                throw Untranslatable(description: "the diacritic-insensitive comparison \(op)[\(options)], which SQLite cannot make")
            }
            let caseless = options.contains("c")
            if isWord(op, "IN") {
                guard next() == .symbol("{") else { throw Untranslatable(description: "IN over something other than a list {...}") }
                var items: [String] = []
                while peek != .symbol("}") {
                    items.append(try operand().sql)
                    if peek == .symbol(",") {
                        position += 1
                    } else if peek != .symbol("}") {
                        throw Untranslatable(description: "a list without its closing brace in the predicate")
                    }
                }
                position += 1
                let lhs = caseless ? "text_lower(\(left.sql))" : left.sql
                return "\(lhs) IN (\(items.map { caseless ? "text_lower(\($0))" : $0 }.joined(separator: ", ")))"
            }
            let right = try operand()
            let (l, r) = caseless ? ("text_lower(\(left.sql))", "text_lower(\(right.sql))") : (left.sql, right.sql)
            // `nil` on either side: whether the other is.
            let other = left.isNull ? right.sql : left.sql
            switch op {
            case .symbol("=="), .symbol("="):
                return left.isNull || right.isNull ? "\(other) IS NULL" : "\(l) = \(r)"
            case .symbol("!="), .symbol("<>"):
                return left.isNull || right.isNull ? "\(other) IS NOT NULL" : "\(l) IS NOT \(r)"
            case .symbol("<"): return "\(l) < \(r)"
            case .symbol("<="), .symbol("=<"): return "\(l) <= \(r)"
            case .symbol(">"): return "\(l) > \(r)"
            case .symbol(">="), .symbol("=>"): return "\(l) >= \(r)"
            default:
                if isWord(op, "BEGINSWITH") { return "substr(\(l), 1, length(\(r))) = \(r)" }
                if isWord(op, "ENDSWITH") { return "substr(\(l), -length(\(r))) = \(r)" }
                if isWord(op, "CONTAINS") { return "instr(\(l), \(r)) > 0" }
                if isWord(op, "LIKE") { return "\(l) GLOB \(right.glob(caseless: caseless))" }
                throw Untranslatable(description: "the operator \(op) has no SQL here")
            }
        }

        struct Operand {
            var sql: String
            var isNull = false
            var text: String?
            /// An `NSPredicate` LIKE pattern (`*` any, `?` one) as SQLite's GLOB.
            func glob(caseless: Bool) -> String {
                guard let text else { return caseless ? "text_lower(\(sql))" : sql }
                let value = caseless ? text.lowercased() : text
                return SQL.literal(value.replacingOccurrences(of: "[", with: "[[]"))
            }
        }

        mutating func operand() throws -> Operand {
            guard let token = next() else { throw Untranslatable(description: "the predicate ends where a value should be") }
            switch token {
            case let .number(text):
                return Operand(sql: text)
            case let .string(text):
                return Operand(sql: SQL.literal(text), text: text)
            case let .word(text):
                switch text.uppercased() {
                case "YES", "TRUE": return Operand(sql: "1")
                case "NO", "FALSE": return Operand(sql: "0")
                case "NIL", "NULL": return Operand(sql: "NULL", isNull: true)
                default:
                    guard !text.hasPrefix("$") else {
                        throw Untranslatable(description: "\(text) (a variable) in the predicate")
                    }
                    let path = text.hasPrefix("SELF.") ? String(text.dropFirst(5)) : text
                    guard let sql = resolve(path) else {
                        throw Untranslatable(
                            description: path.contains("@")
                                ? "\(path): a collection operator other than @count, @sum, @avg, @min, @max after a to-many"
                                : "the source entity has no key path \(path)")
                    }
                    return Operand(sql: sql)
                }
            default:
                throw Untranslatable(description: "\(token) where a value should be in the predicate")
            }
        }
    }
}
