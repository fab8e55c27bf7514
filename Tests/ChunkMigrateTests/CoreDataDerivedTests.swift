import Foundation
import Testing
@testable import ChunkMigrate

/// Derived attributes: the SQL Core Data keeps them with, read from the model's derivations.
@Suite("Core Data derived attributes")
struct CoreDataDerivedTests {
    @Test(
        "the triggers derived from the Photos model's derivedCameraCaptureDevice are the ones Apple's Photos wrote into its store",
        .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"))
    func photosTriggers() throws {
        let folder = try TemporaryFolder()
        let (layout, _, store) = try CoreDataLayoutTests.layout("PhotosLibrary/Photos.sqlite", in: folder)
        let database = try Database(path: store.path, mode: .source)
        var written: [String: String] = [:]
        for row in try database.rows("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'Z\\_DA\\_%' ESCAPE '\\'") {
            written[row[0].text!] = row[1].text!
        }
        #expect(written.count == 4)
        var derived: [CoreDataDerivation] = []
        for entity in layout.model.entities {
            for property in entity.properties where property.attribute?.derivation != nil {
                derived.append(try CoreDataDerivation(entity: entity.name, attribute: property.name, layout: layout))
            }
        }
        #expect(derived.map(\.attribute) == ["derivedCameraCaptureDevice"])
        let ours = derived.flatMap(\.triggers).map { $0.replacingOccurrences(of: "CREATE TRIGGER IF NOT EXISTS ", with: "CREATE TRIGGER ") }
        #expect(Set(ours) == Set(written.values), "\(ours.sorted()) against \(written.values.sorted())")
        #expect(
            derived[0].dataStatement
                == "UPDATE ZASSET SET ZDERIVEDCAMERACAPTUREDEVICE = (SELECT t.ZCAMERACAPTUREDEVICE FROM ZADDITIONALASSETATTRIBUTES AS t WHERE t.Z_PK = ZASSET.ZADDITIONALATTRIBUTES)"
        )
    }
}

/// Real stores with Core Data's triggers, migrated into an emptied copy of themselves.
@Suite("Core Data stores with triggers")
struct CoreDataTriggerStoreTests {
    @Test(
        "a Photos library migrates into an emptied copy of itself unchanged: every table, the R-tree's rows, the triggers as Photos wrote them",
        .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"))
    func photosIntoItself() throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataModelTests.copy("PhotosLibrary/Photos.sqlite", into: folder)
        let destination = try CoreDataTesting.emptiedCopy(of: source, named: "migrated.sqlite", in: folder)
        let triggers = try Database(path: destination.path, mode: .source).scalar(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'")
        #expect(triggers == .integer(21))
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, batchSize: 7)
        let difference = CoreDataTesting.difference(try CoreDataTesting.contents(destination), try CoreDataTesting.contents(source))
        #expect(difference == nil, "\(difference ?? "")\nnotes: \(inferred.notes)")
        let rtree = try Database(path: destination.path, mode: .source).scalar("SELECT count(*) FROM Z_RT_Asset_boundedByRect")
        #expect(rtree == (try Database(path: source.path, mode: .source).scalar("SELECT count(*) FROM ZASSET")))
    }
}

/// Derived attributes new in the destination model, computed from the migrated rows.
@Suite("Core Data derived attributes in a migration")
struct CoreDataDerivedMigrationTests {
    static let shelfEntities = """
        <entity name="Book">
            <attribute name="title" optional="YES" attributeType="String"/>
            <relationship name="shelf" optional="YES" maxCount="1" destinationEntity="Shelf" inverseName="books"/>
        </entity>
        <entity name="Novel" parentEntity="Book">
            <attribute name="genre" optional="YES" attributeType="String"/>
        </entity>
        <entity name="Shelf">
            <attribute name="name" optional="YES" attributeType="String"/>
            <relationship name="books" optional="YES" toMany="YES" destinationEntity="Book" inverseName="shelf"/>
            <relationship name="children" optional="YES" toMany="YES" destinationEntity="Shelf" inverseName="parent"/>
            <relationship name="parent" optional="YES" maxCount="1" destinationEntity="Shelf" inverseName="children"/>
        </entity>
        """

    /// Model N+1: Shelf counts its books and its child shelves, folds its name and names its
    /// parent (both in its own table), a book names its shelf and the time of the migration, a
    /// novel capitalizes its genre (a sub-entity: its rows only).
    static let derivedEntities =
        shelfEntities
        .replacingOccurrences(
            of: "<attribute name=\"name\" optional=\"YES\" attributeType=\"String\"/>",
            with: """
                <attribute name="bookCount" optional="YES" attributeType="Integer 64" derived="YES" derivationExpression="books.@count"/>
                <attribute name="canonicalName" optional="YES" attributeType="String" derived="YES" derivationExpression="canonical:(name)"/>
                <attribute name="childCount" optional="YES" attributeType="Integer 64" derived="YES" derivationExpression="children.@count"/>
                <attribute name="name" optional="YES" attributeType="String"/>
                <attribute name="parentName" optional="YES" attributeType="String" derived="YES" derivationExpression="parent.name"/>
                """
        )
        .replacingOccurrences(
            of: "<attribute name=\"title\" optional=\"YES\" attributeType=\"String\"/>",
            with: """
                <attribute name="migrated" optional="YES" attributeType="Date" derived="YES" derivationExpression="now()"/>
                <attribute name="shelfName" optional="YES" attributeType="String" derived="YES" derivationExpression="shelf.name"/>
                <attribute name="title" optional="YES" attributeType="String"/>
                """
        )
        .replacingOccurrences(
            of: "<attribute name=\"genre\" optional=\"YES\" attributeType=\"String\"/>",
            with: """
                <attribute name="genre" optional="YES" attributeType="String"/>
                <attribute name="loudGenre" optional="YES" attributeType="String" derived="YES" derivationExpression="uppercase:(genre)"/>
                """)

    @Test(
        "new derived attributes are computed from the migrated rows, paused after every batch; Core Data's triggers are there after, and count"
    )
    func newDerivedAttributes() throws {
        let folder = try TemporaryFolder()
        let old = try CoreDataTesting.model(Self.shelfEntities), new = try CoreDataTesting.model(Self.derivedEntities)
        // Book 1, Novel 2, Shelf 3.
        let source = try CoreDataTesting.store(
            old, at: folder.path("old.sqlite"), uuid: "B0000000-0000-0000-0000-000000000001",
            rows: """
                INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT, ZNAME, ZPARENT) VALUES (1, 3, 1, 'Café Crème', NULL), (2, 3, 1, 'Ñandú', 1), (4, 3, 1, NULL, 1);
                INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZSHELF, ZGENRE) VALUES
                    (1, 1, 1, 'a', 1, NULL), (2, 2, 1, 'b', 1, 'sci-fi'), (3, 2, 1, 'c', 2, 'crime'), (5, 1, 1, 'd', NULL, NULL),
                    (6, 1, 1, 'e', 1, NULL), (8, 2, 1, 'f', 4, NULL), (9, 1, 1, 'g', 2, NULL);
                """)
        let destination = try CoreDataTesting.store(new, at: folder.path("new.sqlite"), uuid: "B0000000-0000-0000-0000-000000000002")
        let inferred = try MigrationPlan.infer(source: source, destination: destination)
        #expect(
            inferred.plan.coreData?.derived.map(\.attribute).sorted()
                == [
                    "Book.migrated", "Book.shelfName", "Novel.loudGenre", "Shelf.bookCount", "Shelf.canonicalName", "Shelf.childCount",
                    "Shelf.parentName",
                ])
        _ = try MigrationJob.start(
            plan: inferred.plan, source: source, destination: destination, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 2), logger: quietLogger)
        var runs = 0
        while try MigrationJob.resume(at: folder.path("journal"), options: MigrationOptions(batchSize: 2), logger: quietLogger)
            .runBlocking(for: .zero) == .paused
        { runs += 1 }
        #expect(runs > 10)

        let database = try Database(path: destination.path, mode: .readWrite)
        #expect(
            try database.rows("SELECT Z_PK, ZBOOKCOUNT, ZCANONICALNAME, ZCHILDCOUNT, ZPARENTNAME FROM ZSHELF ORDER BY Z_PK") == [
                [.integer(1), .integer(3), .text("cafe creme"), .integer(2), .null],
                [.integer(2), .integer(2), .text("nandu"), .integer(0), .text("Café Crème")],
                [.integer(4), .integer(1), .null, .integer(0), .text("Café Crème")],
            ])
        #expect(
            try database.rows("SELECT Z_PK, ZSHELFNAME, ZLOUDGENRE FROM ZBOOK ORDER BY Z_PK") == [
                [.integer(1), .text("Café Crème"), .null], [.integer(2), .text("Café Crème"), .text("SCI-FI")],
                [.integer(3), .text("Ñandú"), .text("CRIME")],
                [.integer(5), .null, .null], [.integer(6), .text("Café Crème"), .null], [.integer(8), .null, .null],
                [.integer(9), .text("Ñandú"), .null],
            ])
        // now(): the time of the migration, in Core Data's seconds since 2001.
        let now = Date().timeIntervalSinceReferenceDate
        #expect(try database.scalar("SELECT count(*) FROM ZBOOK WHERE ZMIGRATED BETWEEN \(now - 60) AND \(now)") == .integer(7))
        // Every trigger Core Data keeps them with, once, and no job table left.
        let layout = try CoreDataLayout(model: new)
        let expected = try [
            "Shelf.bookCount", "Shelf.canonicalName", "Shelf.childCount", "Shelf.parentName", "Book.migrated", "Book.shelfName",
            "Novel.loudGenre",
        ].flatMap { name in
            let parts = name.split(separator: ".").map(String.init)
            return try CoreDataDerivation(entity: parts[0], attribute: parts[1], layout: layout).triggers
                .map { $0.replacingOccurrences(of: "CREATE TRIGGER IF NOT EXISTS ", with: "CREATE TRIGGER ") }
        }
        #expect(Set(try database.rows("SELECT sql FROM sqlite_schema WHERE type = 'trigger'").compactMap { $0[0].text }) == Set(expected))
        #expect(try database.scalar("SELECT count(*) FROM sqlite_schema WHERE name LIKE '\\_chunkmigrate%' ESCAPE '\\'") == .integer(0))
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])

        // The triggers work: with the functions Core Data's connection has (stand-ins here), a
        // new book on shelf 2 counts, and moving it to shelf 1 moves the count.
        for name in ["NSCoreDataDATriggerUpdatedAffectedObjectValue", "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue"] {
            try database.createFunction(name, argumentCount: 5, deterministic: false) { $0.resultNull() }
        }
        try CoreDataBookkeeping.registerDerivationFunctions(on: database)
        try database.execute("INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZSHELF) VALUES (10, 1, 1, 'h', 2)")
        #expect(try database.rows("SELECT ZBOOKCOUNT FROM ZSHELF ORDER BY Z_PK") == [[.integer(3)], [.integer(3)], [.integer(1)]])
        try database.execute("INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT, ZNAME, ZPARENT) VALUES (5, 3, 1, 'Low', 2)")
        #expect(try database.rows("SELECT ZCHILDCOUNT FROM ZSHELF WHERE Z_PK IN (2, 5) ORDER BY Z_PK") == [[.integer(1)], [.integer(0)]])
        #expect(try database.scalar("SELECT ZPARENTNAME FROM ZSHELF WHERE Z_PK = 5") == .text("Ñandú"))
        #expect(try database.scalar("SELECT ZSHELFNAME FROM ZBOOK WHERE Z_PK = 10") == .text("Ñandú"))
        try database.execute("UPDATE ZBOOK SET ZSHELF = 1 WHERE Z_PK = 10")
        #expect(
            try database.rows("SELECT ZBOOKCOUNT FROM ZSHELF ORDER BY Z_PK") == [
                [.integer(4)], [.integer(2)], [.integer(1)], [.integer(0)],
            ])
        try database.execute("UPDATE ZSHELF SET ZNAME = 'Über' WHERE Z_PK = 1")
        #expect(try database.rows("SELECT ZCANONICALNAME FROM ZSHELF WHERE Z_PK = 1") == [[.text("uber")]])
        #expect(try database.scalar("SELECT count(*) FROM ZBOOK WHERE ZSHELFNAME = 'Über'") == .integer(4))
        // The derived values the triggers kept are what the derivations give.
        try database.execute(
            "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ZBOOK) WHERE Z_ENT = 1; UPDATE Z_PRIMARYKEY SET Z_MAX = 5 WHERE Z_ENT = 3"
        )
        let check = try CoreDataStoreCheck.run(store: destination)
        #expect(check.violations == [], "\(check.violations)")
    }

    @Test("a count the source derived the same way is computed again when the migration leaves rows it counted out (a removed sub-entity)")
    func countOfRowsLeftOut() throws {
        let folder = try TemporaryFolder()
        let counted = Self.shelfEntities.replacingOccurrences(
            of: "<attribute name=\"name\" optional=\"YES\" attributeType=\"String\"/>",
            with: """
                <attribute name="bookCount" optional="YES" attributeType="Integer 64" derived="YES" derivationExpression="books.@count"/>
                <attribute name="name" optional="YES" attributeType="String"/>
                """)
        let withoutNovels = counted.replacingOccurrences(
            of: """
                <entity name="Novel" parentEntity="Book">
                    <attribute name="genre" optional="YES" attributeType="String"/>
                </entity>
                """, with: "")
        let old = try CoreDataTesting.model(counted), new = try CoreDataTesting.model(withoutNovels)
        // Book 1, Novel 2, Shelf 3 -> Book 1, Shelf 2. The source's counts are Core Data's.
        let source = try CoreDataTesting.store(
            old, at: folder.path("old.sqlite"), uuid: "B0000000-0000-0000-0000-000000000005",
            rows: """
                INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT, ZNAME, ZBOOKCOUNT) VALUES (1, 3, 1, 'A', 3);
                INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZSHELF) VALUES (1, 1, 1, 'a', 1), (2, 2, 1, 'b', 1), (3, 2, 1, 'c', 1);
                """)
        let destination = try CoreDataTesting.store(new, at: folder.path("new.sqlite"), uuid: "B0000000-0000-0000-0000-000000000006")
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder)
        #expect(
            inferred.decisions.contains {
                $0.hasPrefix("ZBOOKCOUNT: the derived attribute Shelf.bookCount reads other rows (books.@count)")
            })
        #expect(try Database(path: destination.path, mode: .source).scalar("SELECT ZBOOKCOUNT FROM ZSHELF") == .integer(1))
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
        // Copied where the derivation reads only the row: the same expression in either spelling.
        #expect(!CoreDataInference.computesDerived("canonical:(name)", was: "canonical(name)"))
        #expect(CoreDataInference.computesDerived("canonical:(title)", was: "canonical:(name)"))
        #expect(CoreDataInference.computesDerived("shelf.name", was: "shelf.name"))
    }

    @Test("an R-tree's insert trigger read as a fill: quoted names, a WHEN condition, NEW. taken off")
    func fetchIndexFill() throws {
        let fill = try #require(
            CoreDataFinishing.FetchIndexFill(
                trigger: """
                    CREATE TRIGGER "Z_RT_Place_area_INSERT" AFTER INSERT ON ZPLACE FOR EACH ROW WHEN NEW.Z_ENT = 4
                    BEGIN INSERT OR REPLACE INTO "Z_RT_Place_area" (Z_PK, ZLAT_MIN, ZLAT_MAX) VALUES (NEW.Z_PK, NEW.ZLAT, NEW.ZLAT) ; END
                    """, table: "ZPLACE"))
        #expect(
            fill
                == CoreDataFinishing.FetchIndexFill(
                    index: "Z_RT_Place_area", table: "ZPLACE", columns: "Z_PK, ZLAT_MIN, ZLAT_MAX",
                    values: "Z_PK, ZLAT, ZLAT", condition: "Z_ENT = 4"))
        #expect(
            CoreDataFinishing.FetchIndexFill(
                trigger: "CREATE TRIGGER x AFTER DELETE ON ZPLACE FOR EACH ROW BEGIN DELETE FROM y; END", table: "ZPLACE") == nil)
    }

    @Test("a derivation Core Data's SQL store does not support is refused naming the entity, the attribute and the expression")
    func unsupportedDerivation() throws {
        let model = try CoreDataTesting.model(
            Self.shelfEntities.replacingOccurrences(
                of: "<attribute name=\"name\" optional=\"YES\" attributeType=\"String\"/>",
                with:
                    "<attribute name=\"name\" optional=\"YES\" attributeType=\"String\"/><attribute name=\"x\" optional=\"YES\" attributeType=\"String\" derived=\"YES\" derivationExpression=\"books.shelf.name\"/>"
            ))
        let error = #expect(throws: MigrationError.self) {
            try CoreDataDerivation(entity: "Shelf", attribute: "x", layout: try CoreDataLayout(model: model))
        }
        #expect(error?.message.contains("Shelf.x (books.shelf.name)") == true && error?.entity == "Shelf", "\(String(describing: error))")
    }

    @Test("check-coredata names a derived value that is wrong, a missing trigger, and an R-tree missing rows")
    func checkFindsDerivedProblems() throws {
        let folder = try TemporaryFolder()
        let model = try CoreDataTesting.model(Self.derivedEntities)
        let store = try CoreDataTesting.store(model, at: folder.path("s.sqlite"), uuid: "B0000000-0000-0000-0000-000000000003")
        let database = try Database(path: store.path, mode: .readWrite)
        for name in ["NSCoreDataDATriggerUpdatedAffectedObjectValue", "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue"] {
            try database.createFunction(name, argumentCount: 5, deterministic: false) { $0.resultNull() }
        }
        try CoreDataBookkeeping.registerDerivationFunctions(on: database)
        try database.execute(
            """
            DROP TRIGGER Z_DA_ZBOOK_Shelf_bookCount_PARAMETER_DELETE;
            INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 3, 1, 'A');
            UPDATE ZSHELF SET ZBOOKCOUNT = 5;
            UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_ENT = 3;
            CREATE VIRTUAL TABLE Z_RT_Shelf_box USING RTREE (Z_PK INTEGER PRIMARY KEY, ZX_MIN FLOAT, ZX_MAX FLOAT);
            CREATE TRIGGER Z_RT_Shelf_box_INSERT AFTER INSERT ON ZSHELF FOR EACH ROW BEGIN INSERT OR REPLACE INTO Z_RT_Shelf_box (Z_PK, ZX_MIN, ZX_MAX) VALUES (NEW.Z_PK, NEW.Z_OPT, NEW.Z_OPT) ; END;
            CREATE TRIGGER Z_RT_Shelf_box_UPDATE AFTER UPDATE ON ZSHELF FOR EACH ROW BEGIN DELETE FROM Z_RT_Shelf_box WHERE Z_PK = NEW.Z_PK ; END;
            CREATE TRIGGER Z_RT_Shelf_box_DELETE AFTER DELETE ON ZSHELF FOR EACH ROW BEGIN DELETE FROM Z_RT_Shelf_box WHERE Z_PK = OLD.Z_PK ; END;
            """)
        let violations = try CoreDataStoreCheck.run(store: store).violations
        #expect(
            violations.contains {
                $0.contains("trigger Z_DA_ZBOOK_Shelf_bookCount_PARAMETER_DELETE of the derived attribute Shelf.bookCount is missing")
            })
        #expect(
            violations.contains {
                $0.hasPrefix(
                    "ZSHELF.ZBOOKCOUNT: 1 rows hold another value than the derived attribute Shelf.bookCount gives (books.@count), the first with Z_PK 1"
                )
            })
        #expect(violations.contains { $0 == "Z_RT_Shelf_box: 1 rows of ZSHELF are missing from the R-tree index, the first with Z_PK 1" })
        #expect(violations.count == 3, "\(violations)")
    }
}
