import Foundation
import Testing
@testable import ChunkMigrate

/// What composing the parts of a path writes, checked by what SQLite computes from it.
@Suite("Core Data: parts of a path composed")
struct CoreDataCompositionTests {
    /// Entity numbers mapped once per version, each mapping around the one before, as a path of
    /// many versions writes them.
    static func nested(_ maps: [[(Int64, Int64)]]) -> String {
        maps.reduce("(Z_ENT)") { inner, map in
            "(CASE ((\(inner))) \(map.map { "WHEN \($0.0) THEN \($0.1)" }.joined(separator: " ")) END)"
        }
    }

    @Test(
        "mappings of entity numbers nested per version are folded into one CASE that gives what the nested ones give for every number, NULL where a version drops it; 120 versions, past SQLite's parser stack nested, fold into one; other text is left alone"
    )
    func entityNumberMapsFold() throws {
        // Each version renumbers: 1...12 shift by one, and every tenth version drops its 7.
        var maps: [[(Int64, Int64)]] = []
        for version in 0..<120 {
            var map: [(Int64, Int64)] = []
            for number: Int64 in 1...40 where !(version % 10 == 9 && number == 7) {
                map.append((number, number % 40 + 1))
            }
            maps.append(map)
        }
        let database = try Database(path: ":memory:", mode: .readWriteCreate)
        try database.execute(
            "CREATE TABLE t (Z_ENT INTEGER); WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < 41) INSERT INTO t SELECT x FROM n"
        )
        // Nested as they come, 12 versions are within SQLite's reach: the fold gives the same.
        let short = Array(maps.prefix(12))
        let folded = try #require(EntityNumberMap(Self.nested(short)))
        #expect(folded.name == "Z_ENT")
        #expect(
            try database.rows("SELECT Z_ENT, \(Self.nested(short)) FROM t ORDER BY Z_ENT")
                == (try database.rows("SELECT Z_ENT, \(folded.sql) FROM t ORDER BY Z_ENT")))
        // 120 versions nested: SQLite refuses the text; folded, one CASE of 40 numbers at most,
        // whose values are the maps applied one after the other.
        #expect(throws: SQLiteError.self) { try database.rows("SELECT \(Self.nested(maps)) FROM t") }
        let long = try #require(EntityNumberMap(Self.nested(maps)))
        #expect(long.pairs.count <= 40)
        for number: Int64 in 0...41 {
            var expected: Int64? = number
            for map in maps {
                let value = expected
                expected = map.first { $0.0 == value }?.1
            }
            let want: SQLiteValue = expected.map { .integer($0) } ?? .null
            #expect(try database.scalar("SELECT \(long.sql) FROM t WHERE Z_ENT = \(number)") == want, "\(number)")
        }
        // Nothing maps: NULL. A single mapping, or anything else, is not this fold's.
        #expect(EntityNumberMap("(CASE (CASE Z_ENT WHEN 1 THEN 2 END) WHEN 3 THEN 4 END)")?.sql == "NULL")
        for other in [
            "(CASE Z_ENT WHEN 1 THEN 2 END)", "(CASE (CASE ZKIND WHEN 'a' THEN 2 END) WHEN 2 THEN 3 END)",
            "(CASE (CASE Z_ENT + 1 WHEN 1 THEN 2 END) WHEN 2 THEN 3 END)", "CASE WHEN Z_ENT > 1 THEN 2 END", "ZNAME",
        ] {
            #expect(EntityNumberMap(other) == nil, "\(other)")
        }
    }

    @Test(
        "a table of the version between, read by a later part: as the earlier parts fill it from the source (every entity mapping filling it, their rows together), empty where none fills it, refused where one gives new keys"
    )
    func tablesOfTheVersionBetween() throws {
        let folder = try TemporaryFolder()
        let between = try Database(path: folder.path("between.sqlite").path, mode: .readWriteCreate)
        try between.execute(
            "CREATE TABLE ZORG (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, ZNAME TEXT); CREATE TABLE ZTEAM (Z_PK INTEGER PRIMARY KEY, ZORG INTEGER)"
        )
        let source = try Database(path: folder.path("source.sqlite").path, mode: .readWriteCreate)
        try source.execute(
            """
            CREATE TABLE ZCOMPANY (Z_PK INTEGER PRIMARY KEY, ZTITLE TEXT); INSERT INTO ZCOMPANY VALUES (1, 'a'), (4, 'b');
            CREATE TABLE ZCLUB (Z_PK INTEGER PRIMARY KEY, ZLABEL TEXT); INSERT INTO ZCLUB VALUES (9, 'c');
            """)
        source.close()
        try between.attach(Database.sourceURI(folder.path("source.sqlite").path), as: "src")
        func entity(_ source: String, _ columns: [String: String], keys: EntityMapping.KeyPolicy = .preserve) -> EntityMapping {
            var entity = EntityMapping(
                name: source, source: .init(table: source, key: "Z_PK"), destination: .init(table: "ZORG", key: "Z_PK"), keys: keys)
            entity.columns = columns
            return entity
        }
        let both = MigrationPlan(entities: [
            entity("ZCOMPANY", ["Z_ENT": "1", "ZNAME": "ZTITLE"]), entity("ZCLUB", ["Z_ENT": "2", "ZNAME": "upper(ZLABEL)"]),
        ])
        let table = try #require(try CoreDataStepComposition.derivedTable("ZORG", first: both, between: between))
        #expect(
            try between.rows("SELECT Z_PK, Z_ENT, ZNAME FROM \(table) ORDER BY Z_PK")
                == [
                    [.integer(1), .integer(1), .text("a")], [.integer(4), .integer(1), .text("b")], [.integer(9), .integer(2), .text("C")],
                ])
        let none = try #require(try CoreDataStepComposition.derivedTable("ZTEAM", first: both, between: between))
        #expect(try between.rows("SELECT Z_PK, ZORG FROM \(none)") == [])
        let allocated = MigrationPlan(entities: [
            entity("ZCOMPANY", ["ZNAME": "ZTITLE"]), entity("ZCLUB", ["ZNAME": "ZLABEL"], keys: .allocate),
        ])
        #expect(try CoreDataStepComposition.derivedTable("ZORG", first: allocated, between: between) == nil)
    }
}
