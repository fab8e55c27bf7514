/// A value as SQLite stores it: one of its five storage classes.
public enum SQLiteValue: Sendable, Equatable, Hashable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// The value as an integer, when it is one.
    public var integer: Int64? {
        if case let .integer(value) = self { return value }
        return nil
    }

    /// The value as text, when it is text.
    public var text: String? {
        if case let .text(value) = self { return value }
        return nil
    }

    public var description: String {
        switch self {
        case .null: "NULL"
        case let .integer(value): String(value)
        case let .real(value): String(value)
        case let .text(value): "'\(value)'"
        case let .blob(bytes): "x'\(bytes.map { String($0, radix: 16) }.joined())'"
        }
    }
}
