import Foundation
import Testing
@testable import ChunkMigrate

@Suite("Table schemas")
struct SchemaTests {
    /// A store made of `sql`, opened for reading its schema.
    private func store(_ sql: String) throws -> (TemporaryFolder, Database) {
        let folder = try TemporaryFolder()
        let path = folder.path("store.sqlite")
        try execute(sql, on: path)
        return (folder, try Database(path: path.path, mode: .readOnly))
    }

    @Test("columns: name, declared type, NOT NULL, default, position in the primary key")
    func columns() throws {
        let (folder, database) = try store(
            """
            CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT 'nobody', age int, photo);
            """)
        _ = folder
        let table = try #require(try database.tableSchema("PERSON", in: "main"))
        #expect(table.name == "person")
        #expect(table.sql.hasPrefix("CREATE TABLE person"))
        // This SQLite reports the declared type `int` as `INT`.
        #expect(
            table.columns == [
                ColumnInfo(name: "id", type: "INTEGER", isNotNull: false, defaultValueSQL: nil, primaryKeyIndex: 1),
                ColumnInfo(name: "name", type: "TEXT", isNotNull: true, defaultValueSQL: "'nobody'", primaryKeyIndex: 0),
                ColumnInfo(name: "age", type: "INT", isNotNull: false, defaultValueSQL: nil, primaryKeyIndex: 0),
                ColumnInfo(name: "photo", type: "", isNotNull: false, defaultValueSQL: nil, primaryKeyIndex: 0),
            ])
        #expect(table.column(named: "NAME")?.name == "name")
        #expect(table.columns.map(\.affinity) == ["INTEGER", "TEXT", "INTEGER", "BLOB"])
        #expect(try database.tableSchema("nobody", in: "main") == nil)
    }

    @Test(
        "the rowid alias: only a lone INTEGER PRIMARY KEY of a rowid table",
        arguments: [
            ("CREATE TABLE t (id INTEGER PRIMARY KEY, x);", "id"),
            ("CREATE TABLE t (id integer primary key, x);", "id"),
            // As a table constraint, DESC keeps the alias; as a column constraint it does not.
            ("CREATE TABLE t (id INTEGER, x, PRIMARY KEY (id DESC));", "id"),
            ("CREATE TABLE t (id INTEGER PRIMARY KEY DESC, x);", nil),
            ("CREATE TABLE t (id INTEGER PRIMARY KEY, x) WITHOUT ROWID;", nil),
            ("CREATE TABLE t (id INT PRIMARY KEY, x);", nil),
            ("CREATE TABLE t (a INTEGER, b INTEGER, PRIMARY KEY (a, b));", nil),
            ("CREATE TABLE t (x);", nil),
        ] as [(String, String?)])
    func rowidAlias(sql: String, alias: String?) throws {
        let (folder, database) = try store(sql)
        _ = folder
        let table = try #require(try database.tableSchema("t", in: "main"))
        #expect(table.rowidAlias?.name == alias)
        #expect(table.isRowid(nil))
        #expect(table.isRowid("ROWID") && table.isRowid("oid") && table.isRowid("_rowid_"))
        #expect(table.isRowid("id") == (alias == "id"))
        #expect(table.names(ofKey: "id").contains("rowid") == (alias == "id"))
    }

    @Test("a composite primary key lists its columns in key order; a WITHOUT ROWID key is NOT NULL")
    func compositeKeys() throws {
        let (folder, database) = try store(
            """
            CREATE TABLE pair (b INTEGER, a INTEGER, label TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID;
            """)
        _ = folder
        let table = try #require(try database.tableSchema("pair", in: "main"))
        #expect(table.primaryKey.map(\.name) == ["a", "b"])
        #expect(table.integerPrimaryKey == nil)
        #expect(table.column(named: "a")?.isNotNull == true)
        #expect(table.indexes.map(\.origin) == [.primaryKeyConstraint])
        #expect(table.indexes.first?.columns == ["a", "b"])
        #expect(!table.assignsNextRowid)
    }

    @Test("indexes: origin, uniqueness, partial, columns in index order")
    func indexes() throws {
        let (folder, database) = try store(
            """
            CREATE TABLE item (id INTEGER PRIMARY KEY, code TEXT UNIQUE, a, b, c);
            CREATE INDEX item_ba ON item (b, a);
            CREATE UNIQUE INDEX item_c ON item (c);
            CREATE UNIQUE INDEX item_a_partial ON item (a) WHERE a IS NOT NULL;
            """)
        _ = folder
        let table = try #require(try database.tableSchema("item", in: "main"))
        let byName = Dictionary(uniqueKeysWithValues: table.indexes.map { ($0.name, $0) })
        #expect(Set(byName.keys) == ["sqlite_autoindex_item_1", "item_ba", "item_c", "item_a_partial"])
        #expect(
            byName["sqlite_autoindex_item_1"]
                == IndexInfo(
                    name: "sqlite_autoindex_item_1", columns: ["code"], isUnique: true,
                    origin: .uniqueConstraint, isPartial: false))
        #expect(
            byName["item_ba"] == IndexInfo(name: "item_ba", columns: ["b", "a"], isUnique: false, origin: .createIndex, isPartial: false))
        #expect(byName["item_c"]?.isUnique == true)
        #expect(byName["item_a_partial"]?.isPartial == true)
        // A partial index is no key: it leaves rows out.
        #expect(table.uniqueIndex(on: "a") == nil)
        #expect(table.uniqueIndex(on: "C")?.name == "item_c")
        #expect(table.uniqueIndex(on: "b") == nil)
        #expect(table.assignsNextRowid)
    }

    @Test("foreign keys: target table and column pairs, one entry per key")
    func foreignKeys() throws {
        let (folder, database) = try store(
            """
            CREATE TABLE parent (id INTEGER PRIMARY KEY, x, y, UNIQUE (x, y));
            CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent, px, py,
                                FOREIGN KEY (px, py) REFERENCES parent (x, y));
            """)
        _ = folder
        let table = try #require(try database.tableSchema("child", in: "main"))
        #expect(table.foreignKeys.count == 2)
        let single = try #require(table.foreignKeys.first { $0.originColumns == ["parent_id"] })
        #expect(single.destinationTable == "parent")
        #expect(single.mapping.first?.destination == nil)
        let pair = try #require(table.foreignKeys.first { $0.originColumns == ["px", "py"] })
        #expect(pair.mapping.map(\.destination) == ["x", "y"])
        #expect(try database.tableSchema("parent", in: "main")?.foreignKeys == [])
    }

    @Test("AUTOINCREMENT stops SQLite assigning the next rowid")
    func autoincrement() throws {
        let (folder, database) = try store("CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, x);")
        _ = folder
        let table = try #require(try database.tableSchema("t", in: "main"))
        #expect(table.isAutoincrement)
        #expect(table.rowidAlias?.name == "id")
        #expect(!table.assignsNextRowid)
    }

    @Test("a store's schema is read once and kept until it is forgotten")
    func readOnce() throws {
        let folder = try TemporaryFolder()
        let database = try Database(path: folder.path("store.sqlite").path, mode: .readWriteCreate)
        try database.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x)")
        let schema = StoreSchema(database: database, name: "main")
        #expect(try schema.table("t")?.columns.count == 2)
        try database.execute("ALTER TABLE t ADD COLUMN y")
        #expect(try schema.table("T")?.columns.count == 2)
        schema.forget()
        #expect(try schema.table("t")?.columns.count == 3)
        #expect(try schema.table("missing") == nil)
    }
}

@Suite("Transactions")
struct TransactionTests {
    private struct Refusal: Error {}

    /// A new store made of `sql`, open for writing; the folder lives as long as the test keeps it.
    private func store(_ sql: String) throws -> (folder: TemporaryFolder, path: URL, database: Database) {
        let folder = try TemporaryFolder()
        let path = folder.path("store.sqlite")
        let database = try Database(path: path.path, mode: .readWriteCreate)
        try database.execute(sql)
        return (folder, path, database)
    }

    @Test("a transaction commits when its body returns, and hands back the body's value")
    func commits() throws {
        let (folder, path, database) = try store("CREATE TABLE t (x)")
        _ = folder
        let count = try database.inTransaction(.immediate) {
            try database.execute("INSERT INTO t VALUES (1), (2)")
            #expect(database.inTransaction)
            return try database.scalar("SELECT count(*) FROM t").integer
        }
        #expect(count == 2)
        #expect(!database.inTransaction)
        // Another connection sees the rows: they are committed.
        #expect(try scalar("SELECT count(*) FROM t", on: path) == .integer(2))
    }

    @Test("a transaction rolls back when its body throws, and rethrows the body's error")
    func rollsBack() throws {
        let (folder, _, database) = try store("CREATE TABLE t (x NOT NULL); INSERT INTO t VALUES (0);")
        _ = folder
        #expect(throws: Refusal.self) {
            try database.inTransaction(.immediate) {
                try database.execute("INSERT INTO t VALUES (1)")
                throw Refusal()
            }
        }
        #expect(!database.inTransaction)
        #expect(try database.scalar("SELECT count(*) FROM t") == .integer(1))
        // An SQLite error inside is rethrown as it is, after the rollback.
        let error = #expect(throws: SQLiteError.self) {
            try database.inTransaction {
                try database.execute("INSERT INTO t VALUES (2)")
                try database.execute("INSERT INTO t VALUES (NULL)")
            }
        }
        #expect(error?.isConstraint == true)
        #expect(!database.inTransaction)
        #expect(try database.scalar("SELECT count(*) FROM t") == .integer(1))
    }

    @Test("a body that throws only SQLiteError makes a typed transaction; a COMMIT that fails rolls back")
    func typedAndFailedCommit() throws {
        let (folder, _, database) = try store(
            """
            PRAGMA foreign_keys = ON;
            CREATE TABLE parent (id INTEGER PRIMARY KEY);
            CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);
            """)
        _ = folder
        // Typed throws all the way: the caller's catch needs no cast.
        func insertOrphan() throws(SQLiteError) -> Int {
            try database.inTransaction(.immediate) { () throws(SQLiteError) -> Int in
                try database.execute("INSERT INTO child VALUES (1, 7)")
                return database.changes
            }
        }
        do {
            _ = try insertOrphan()
            Issue.record("the deferred foreign key should fail the COMMIT")
        } catch {
            #expect(error.isConstraint)
        }
        #expect(!database.inTransaction)
        #expect(try database.scalar("SELECT count(*) FROM child") == .integer(0))
    }

    @Test("an immediate transaction takes the write lock at BEGIN")
    func immediateLocks() throws {
        let (folder, path, database) = try store("CREATE TABLE t (x)")
        _ = folder
        let other = try Database(path: path.path, mode: .readWrite)
        try other.execute("PRAGMA busy_timeout = 0")
        try database.inTransaction(.immediate) {
            // No write yet, but the other connection cannot take the write lock.
            #expect(throws: SQLiteError.self) { try other.execute("BEGIN IMMEDIATE") }
        }
        try other.inTransaction(.immediate) { try other.execute("INSERT INTO t VALUES (1)") }
        #expect(try database.scalar("SELECT count(*) FROM t") == .integer(1))
    }
}
