/// The tables of one store of a connection (`main`, or the source attached as `src`), each read
/// from the store once and kept.
///
/// Not `Sendable`: it reads through the connection it was given, on that connection's thread.
/// A job reads a store's schema before it changes it; ``forget()`` drops what was read when the
/// schema changes.
final class StoreSchema {
    /// The connection.
    let database: Database
    /// The schema name in that connection: `main` or `src`.
    let name: String
    private var tables: [String: TableSchema?] = [:]

    init(database: Database, name: String) {
        self.database = database
        self.name = name
    }

    /// Whether this is the source attached as `src`.
    var isSource: Bool { name == "src" }

    /// `source` or `destination`, as messages say it.
    var word: String { isSource ? "source" : "destination" }

    /// The table named `table` (ignoring case), or `nil` when the store has none.
    func table(_ table: String) throws(SQLiteError) -> TableSchema? {
        if let known = tables[table.lowercased()] { return known }
        let read = try database.tableSchema(table, in: name)
        tables[table.lowercased()] = read
        return read
    }

    /// Forgets every table read, after the store's schema changed.
    func forget() {
        tables = [:]
    }
}
