/// A scalar SQL function implemented in Swift, callable from a plan's column expressions, for
/// transforms SQL cannot express (decoding a binary property list, say).
///
/// ```swift
/// let upper = SQLFunction(name: "shout", argumentCount: 1) { arguments in
///     guard case let .text(text) = arguments[0] else { return .null }
///     return .text(text.uppercased())
/// }
/// // plan: "columns": { "title": "shout(title)" }
/// ```
public struct SQLFunction: Sendable {
    /// The name column expressions call it by.
    public var name: String
    /// The number of arguments, or -1 for any.
    public var argumentCount: Int
    /// Whether the same arguments always give the same result (lets SQLite optimize; required
    /// for the output to be deterministic).
    public var isDeterministic: Bool
    /// The function. A thrown error fails the batch, and its description is the message.
    public var body: @Sendable ([SQLiteValue]) throws -> SQLiteValue

    /// Creates a function.
    public init(
        name: String, argumentCount: Int, isDeterministic: Bool = true,
        body: @escaping @Sendable ([SQLiteValue]) throws -> SQLiteValue
    ) {
        self.name = name
        self.argumentCount = argumentCount
        self.isDeterministic = isDeterministic
        self.body = body
    }
}
