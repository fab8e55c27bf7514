/// A table as its store describes it: columns, indexes, foreign keys, and the `CREATE`
/// statement. Read once per store by ``StoreSchema``; every question about a table's shape (is
/// this key the rowid? which index walks it in key order?) is answered here, from it.
struct TableSchema: Equatable, Sendable {
    /// The names SQLite gives the rowid of a table that has one.
    static let rowidNames: Set<String> = ["rowid", "_rowid_", "oid"]

    /// The table's name, as the store spells it.
    var name: String
    /// The table's `CREATE TABLE` statement.
    var sql: String
    /// The columns, in declaration order.
    var columns: [ColumnInfo]
    /// The indexes, in the order `PRAGMA index_list` gives them.
    var indexes: [IndexInfo]
    /// The foreign keys.
    var foreignKeys: [ForeignKeyInfo]

    /// The column named `name`, ignoring case as SQLite does.
    func column(named name: String) -> ColumnInfo? {
        columns.first { $0.name.lowercased() == name.lowercased() }
    }

    /// The primary key's columns, in key order; empty when the key is the bare rowid.
    var primaryKey: [ColumnInfo] {
        columns.filter { $0.primaryKeyIndex > 0 }.sorted { $0.primaryKeyIndex < $1.primaryKeyIndex }
    }

    /// The one column declared `INTEGER` that is the whole primary key, whether or not it is an
    /// alias of the rowid (it is not in a WITHOUT ROWID table, nor as `INTEGER PRIMARY KEY DESC`
    /// in a column constraint): what a person reads as the table's integer key.
    var integerPrimaryKey: ColumnInfo? {
        let key = primaryKey
        guard key.count == 1, key[0].type.uppercased() == "INTEGER" else { return nil }
        return key[0]
    }

    /// The column that is another name of the rowid (an `INTEGER PRIMARY KEY`), or `nil`.
    ///
    /// SQLite keeps an index of origin `pk` beside the table whenever its primary key is not the
    /// rowid: for `INTEGER PRIMARY KEY DESC` as a column constraint, and for every WITHOUT ROWID
    /// table. `PRIMARY KEY (id DESC)` as a table constraint is an alias all the same.
    /// Related SQLite documentation: <https://www.sqlite.org/lang_createtable.html#rowid>
    var rowidAlias: ColumnInfo? {
        guard !indexes.contains(where: { $0.origin == .primaryKeyConstraint }) else { return nil }
        return integerPrimaryKey
    }

    /// Whether `key` (a plan's key column; `nil` for none) names the rowid: no key, one of the
    /// rowid's own names, or the column that aliases it.
    func isRowid(_ key: String?) -> Bool {
        guard let key = key?.lowercased() else { return true }
        return Self.rowidNames.contains(key) || key == rowidAlias?.name.lowercased()
    }

    /// Every name `key` goes by in this table: the rowid's names and its alias when `key` is the
    /// rowid, else `key` alone (lowercased).
    func names(ofKey key: String?) -> Set<String> {
        guard isRowid(key) else { return [key?.lowercased() ?? ""] }
        var names = Self.rowidNames
        if let key { names.insert(key.lowercased()) }
        if let alias = rowidAlias { names.insert(alias.name.lowercased()) }
        return names
    }

    /// Whether the table is declared AUTOINCREMENT, which never reuses a rowid once deleted. The
    /// word is looked for in the `CREATE` statement; appearing anywhere in it (a default value, a
    /// comment) counts.
    var isAutoincrement: Bool {
        sql.uppercased().split { !$0.isLetter && $0 != "_" }.contains("AUTOINCREMENT")
    }

    /// Whether SQLite gives a row inserted without its key the rowid one past the table's
    /// largest, and that rowid is the key: the table has a rowid that its key is (no index of
    /// origin `pk`), and it is not AUTOINCREMENT. Errs on the side of the engine writing every
    /// key itself.
    var assignsNextRowid: Bool {
        !indexes.contains { $0.origin == .primaryKeyConstraint } && !isAutoincrement
    }

    /// ``assignsNextRowid`` for a plan's key column: with no key the key is the rowid itself,
    /// whatever the primary key (a join table's), so SQLite assigns it unless the table is
    /// AUTOINCREMENT or has no rowid.
    func assignsNextRowid(forKey key: String?) -> Bool {
        key == nil ? !isAutoincrement && !isWithoutRowid : assignsNextRowid
    }

    /// Whether the table is declared WITHOUT ROWID (looked for in its `CREATE` statement).
    var isWithoutRowid: Bool {
        sql.range(of: #"\bWITHOUT\s+ROWID\b"#, options: [.regularExpression, .caseInsensitive]) != nil
    }

    /// The first UNIQUE, non-partial index on `column` alone.
    func uniqueIndex(on column: String) -> IndexInfo? {
        indexes.first { $0.isUnique && !$0.isPartial && $0.covers(only: column) }
    }
}
