import Foundation
import Testing
@testable import ChunkMigrate

/// With every version of the model, one mapping from the store's version straight to the target,
/// as Core Data's automatic migration infers it; the versions between only for what that mapping
/// cannot see.
@Suite("Core Data: one mapping straight to the target version, the versions between read for renames")
struct CoreDataDirectInferenceTests {
    /// v1: Note(text); Item: a, r, x, size (Double), note (optional).
    /// v2: Note renamed Memo; Item: a renamed b, r renamed s, x removed, size an Integer 64, count
    /// added with default 5.
    /// v3: Memo renamed Jot; Item: b renamed c, s renamed back to r, x added again, size a Double
    /// again, count's default 7, note required with default "none".
    /// Each renaming identifier names only the name before.
    static let versions = [
        """
        <entity name="Item"><attribute name="a" optional="YES" attributeType="String"/><attribute name="r" optional="YES" attributeType="String"/>
            <attribute name="x" optional="YES" attributeType="String"/><attribute name="size" optional="YES" attributeType="Double"/>
            <attribute name="note" optional="YES" attributeType="String"/></entity>
        <entity name="Note"><attribute name="text" optional="YES" attributeType="String"/></entity>
        """,
        """
        <entity name="Item"><attribute name="b" optional="YES" attributeType="String" elementID="a"/>
            <attribute name="s" optional="YES" attributeType="String" elementID="r"/>
            <attribute name="size" optional="YES" attributeType="Integer 64"/>
            <attribute name="count" optional="YES" attributeType="Integer 32" defaultValueString="5"/>
            <attribute name="note" optional="YES" attributeType="String"/></entity>
        <entity name="Memo" elementID="Note"><attribute name="text" optional="YES" attributeType="String"/></entity>
        """,
        """
        <entity name="Item"><attribute name="c" optional="YES" attributeType="String" elementID="b"/>
            <attribute name="r" optional="YES" attributeType="String" elementID="s"/>
            <attribute name="x" optional="YES" attributeType="String"/><attribute name="size" optional="YES" attributeType="Double"/>
            <attribute name="count" optional="YES" attributeType="Integer 32" defaultValueString="7"/>
            <attribute name="note" attributeType="String" defaultValueString="none"/></entity>
        <entity name="Jot" elementID="Memo"><attribute name="text" optional="YES" attributeType="String"/></entity>
        """,
    ]

    @Test(
        "direct and through the versions between: a property and an entity renamed twice followed through the versions between; the rest as inferred straight: a property renamed back, the target's default, one type conversion, an attribute the versions between dropped kept"
    )
    func directAndChain() throws {
        let folder = try TemporaryFolder()
        // The first version, named after the model without a number, has no place its name
        // tells, and the renames on the way need the order: it is given.
        let bundle = try CoreDataModelBundle.read(contentsOf: try CoreDataVersionPathTests.bundle(Self.versions, in: folder)).ordered([
            "Model", "Model 2", "Model 3",
        ])
        let rows = """
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZA, ZR, ZX, ZSIZE, ZNOTE) VALUES (1, 1, 1, 'a1', 'r1', 'x1', 2.7, NULL), (2, 1, 1, 'a2', 'r2', NULL, 1.5, 'n');
            INSERT INTO ZNOTE (Z_PK, Z_ENT, Z_OPT, ZTEXT) VALUES (1, 2, 1, 't')
            """
        let source = try CoreDataTesting.store(
            bundle.versions[0].model, at: folder.path("v1.sqlite"), uuid: "E0000000-0000-0000-0000-000000000031", rows: rows)

        // Between v1 and v3 alone: c and Jot are new, x keeps its values, and so does r, renamed
        // back (by its name: Core Data's identifiers, s and r, differ).
        let alone = try CoreDataTesting.store(
            bundle.versions[2].model, at: folder.path("alone.sqlite"), uuid: "E0000000-0000-0000-0000-000000000032")
        let direct = try CoreDataMigrationTests.migrate(source, into: alone, folder: folder, journal: "alone")
        #expect(
            try CoreDataMigrationTests.rows(alone, "ZITEM", columns: "Z_PK, ZC, ZR, ZX, ZSIZE, ZCOUNT, ZNOTE")
                == [
                    [.integer(1), .null, .text("r1"), .text("x1"), .real(2.7), .integer(7), .text("none")],
                    [.integer(2), .null, .text("r2"), .null, .real(1.5), .integer(7), .text("n")],
                ])
        let byName =
            "Item.r: from Item.r by its name; Core Data's inference matches identifiers (renaming identifier, else name: s and r here) and would leave it new"
        #expect(direct.decisions.contains(byName), "\(direct.decisions)")
        #expect(try CoreDataMigrationTests.rows(alone, "ZJOT") == [])

        // With the versions between: the renames on the way too.
        let destination = try CoreDataTesting.store(
            bundle.versions[2].model, at: folder.path("v3.sqlite"), uuid: "E0000000-0000-0000-0000-000000000033")
        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, options: InferenceOptions(modelBundle: bundle))
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZITEM", columns: "Z_PK, ZC, ZR, ZX, ZSIZE, ZCOUNT, ZNOTE")
                == [
                    [.integer(1), .text("a1"), .text("r1"), .text("x1"), .real(2.7), .integer(7), .text("none")],
                    [.integer(2), .text("a2"), .text("r2"), .null, .real(1.5), .integer(7), .text("n")],
                ])
        #expect(try CoreDataMigrationTests.rows(destination, "ZJOT", columns: "Z_PK, ZTEXT") == [[.integer(1), .text("t")]])
        let straight = "Core Data's inference from Model straight to Model 3 leaves it new"
        for line in [
            "entity Jot: from Note through the versions between (Note in Model, Memo from Model 2, Jot from Model 3); \(straight)",
            "Item.c: from Item.a through the versions between (a in Model, b from Model 2, c from Model 3); \(straight)",
            byName,
            "Item.x: from Item.x as Core Data's inference from Model straight to Model 3 matches them, though Model 2 does not have it",
            "ZCOUNT: new in Item, takes the default 7",
        ] {
            #expect(inferred.decisions.contains(line), "\(line) in \(inferred.decisions)")
        }
        // One conversion from the source's type to the target's: none between two Doubles.
        #expect(!inferred.decisions.contains { $0.hasPrefix("ZSIZE") }, "\(inferred.decisions)")
    }

    @Test(
        "two models matched by identifier as Core Data matches them (one kept through versions of a renaming identifier used as a stable identifier); a stale renaming identifier matched by name, saying Core Data would not; a property of another kind new"
    )
    func identifiers() throws {
        let folder = try TemporaryFolder()
        let old = try CoreDataTesting.model(
            """
            <entity name="Item"><attribute name="b" optional="YES" attributeType="String" elementID="a"/>
                <attribute name="stale" optional="YES" attributeType="String" elementID="older"/>
                <attribute name="x" optional="YES" attributeType="Integer 64"/></entity>
            <entity name="Tag"/>
            """)
        let new = try CoreDataTesting.model(
            """
            <entity name="Item"><attribute name="c" optional="YES" attributeType="String" elementID="a"/>
                <attribute name="stale" optional="YES" attributeType="String"/>
                <relationship name="x" optional="YES" maxCount="1" destinationEntity="Tag"/></entity>
            <entity name="Tag"/>
            """)
        let source = try CoreDataTesting.store(
            old, at: folder.path("old.sqlite"), uuid: "E0000000-0000-0000-0000-000000000061",
            rows: "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZB, ZSTALE, ZX) VALUES (1, 1, 1, 'b1', 's1', 1)")
        let destination = try CoreDataTesting.store(new, at: folder.path("new.sqlite"), uuid: "E0000000-0000-0000-0000-000000000062")
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder)
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZITEM", columns: "Z_PK, ZC, ZSTALE, ZX") == [
                [.integer(1), .text("b1"), .text("s1"), .null]
            ])
        for line in [
            "Item.c: renamed from Item.b (renamingIdentifier)",
            "Item.stale: from Item.stale by its name; Core Data's inference matches identifiers (renaming identifier, else name: stale and older here) and would leave it new",
            "Item.x: a relationship, was the attribute Item.x; Core Data's inference maps no property to another kind, so it is new",
        ] {
            #expect(inferred.decisions.contains(line), "\(line) in \(inferred.decisions)")
        }
    }

    /// v1 -> v2 is a step Core Data cannot infer (a String becoming an Integer 64) and one where a
    /// to-one points at another entity tree; v3 is v1 again.
    static let blockedInBetween = [
        """
        <entity name="Item"><attribute name="label" optional="YES" attributeType="String"/>
            <relationship name="owner" optional="YES" maxCount="1" destinationEntity="Person"/></entity>
        <entity name="Person"><attribute name="name" optional="YES" attributeType="String"/></entity>
        <entity name="Team"><attribute name="title" optional="YES" attributeType="String"/></entity>
        """,
        """
        <entity name="Item"><attribute name="label" optional="YES" attributeType="Integer 64"/>
            <relationship name="owner" optional="YES" maxCount="1" destinationEntity="Team"/></entity>
        <entity name="Person"><attribute name="name" optional="YES" attributeType="String"/></entity>
        <entity name="Team"><attribute name="title" optional="YES" attributeType="String"/></entity>
        """,
    ]

    @Test(
        "a step between two versions on the way that Core Data cannot infer does not block a store whose mapping straight to the target it can"
    )
    func blockedStepBetween() throws {
        let folder = try TemporaryFolder()
        let bundle = try CoreDataModelBundle.read(
            contentsOf: try CoreDataVersionPathTests.bundle(Self.blockedInBetween + [Self.blockedInBetween[0]], in: folder))
        let rows = """
            INSERT INTO ZPERSON (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 2, 1, 'p');
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZLABEL, ZOWNER) VALUES (1, 1, 1, 'L', 1), (2, 1, 1, NULL, NULL)
            """
        let source = try CoreDataTesting.store(
            bundle.versions[0].model, at: folder.path("v1.sqlite"), uuid: "E0000000-0000-0000-0000-000000000041", rows: rows)
        // The step from v1 to v2 alone is refused, as Core Data refuses it.
        let v2 = try CoreDataTesting.store(
            bundle.versions[1].model, at: folder.path("v2.sqlite"), uuid: "E0000000-0000-0000-0000-000000000042")
        let refused = #expect(throws: MigrationError.self) { try MigrationPlan.infer(source: source, destination: v2) }
        #expect(
            refused?.message.contains("attribute Item.label changes type from String to Integer 64") == true,
            "\(String(describing: refused))")

        let v3 = try CoreDataTesting.store(
            bundle.versions[2].model, at: folder.path("v3.sqlite"), uuid: "E0000000-0000-0000-0000-000000000043")
        let inferred = try CoreDataMigrationTests.migrate(source, into: v3, folder: folder, options: InferenceOptions(modelBundle: bundle))
        // Model 3 is Model again: the two hash alike, one model to Core Data.
        #expect(
            inferred.decisions.contains("source store: version Model (its entity version hashes; alike: Model 3)"), "\(inferred.decisions)")
        #expect(
            try CoreDataMigrationTests.rows(v3, "ZITEM", columns: "Z_PK, ZLABEL, ZOWNER") == [
                [.integer(1), .text("L"), .integer(1)], [.integer(2), .null, .null],
            ])
        #expect(try CoreDataMigrationTests.rows(v3, "ZPERSON", columns: "Z_PK, ZNAME") == [[.integer(1), .text("p")]])
    }

    @Test(
        "a relationship whose destination entity changed: Core Data's inference maps it; left empty where none of the rows it pointed at become its new destination (a to-one and a many-to-many into another entity tree), kept where they do (a new abstract parent above the old rows)"
    )
    func changedDestination() throws {
        let folder = try TemporaryFolder()
        // Into another tree: Item.owner from Person to Team, Item.tags from Tag to Label.
        let old = try CoreDataTesting.model(
            """
            <entity name="Item"><relationship name="owner" optional="YES" maxCount="1" destinationEntity="Person"/>
                <relationship name="tags" optional="YES" toMany="YES" destinationEntity="Tag" inverseName="items" inverseEntity="Tag"/></entity>
            <entity name="Person"/><entity name="Team"/><entity name="Label"/>
            <entity name="Tag"><relationship name="items" optional="YES" toMany="YES" destinationEntity="Item" inverseName="tags" inverseEntity="Item"/></entity>
            """)
        let new = try CoreDataTesting.model(
            """
            <entity name="Item"><relationship name="owner" optional="YES" maxCount="1" destinationEntity="Team"/>
                <relationship name="tags" optional="YES" toMany="YES" destinationEntity="Label" inverseName="items" inverseEntity="Label"/></entity>
            <entity name="Person"/><entity name="Team"/><entity name="Tag"/>
            <entity name="Label"><relationship name="items" optional="YES" toMany="YES" destinationEntity="Item" inverseName="tags" inverseEntity="Item"/></entity>
            """)
        let oldJoin = try #require(try CoreDataLayout(model: old).joinTables.first),
            newJoin = try #require(try CoreDataLayout(model: new).joinTables.first)
        let numbers = try CoreDataLayout(model: old)
        let (item, person, team, tag, label) = try (
            #require(numbers.entity(named: "Item")?.number), #require(numbers.entity(named: "Person")?.number),
            #require(numbers.entity(named: "Team")?.number), #require(numbers.entity(named: "Tag")?.number),
            #require(numbers.entity(named: "Label")?.number)
        )
        let columns = oldJoin.sides.sorted { $0.entity < $1.entity }.map(\.column)  // Item's side, then Tag's
        let source = try CoreDataTesting.store(
            old, at: folder.path("old.sqlite"), uuid: "E0000000-0000-0000-0000-000000000051",
            rows: """
                INSERT INTO ZPERSON (Z_PK, Z_ENT, Z_OPT) VALUES (1, \(person), 1); INSERT INTO ZTEAM (Z_PK, Z_ENT, Z_OPT) VALUES (1, \(team), 1);
                INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT) VALUES (1, \(tag), 1); INSERT INTO ZLABEL (Z_PK, Z_ENT, Z_OPT) VALUES (1, \(label), 1);
                INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZOWNER) VALUES (1, \(item), 1, 1);
                INSERT INTO \(oldJoin.name) (\(columns[0]), \(columns[1])) VALUES (1, 1)
                """)
        let destination = try CoreDataTesting.store(new, at: folder.path("new.sqlite"), uuid: "E0000000-0000-0000-0000-000000000052")
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder)
        #expect(try CoreDataMigrationTests.rows(destination, "ZITEM", columns: "Z_PK, ZOWNER") == [[.integer(1), .null]])
        #expect(try CoreDataMigrationTests.rows(destination, newJoin.name) == [])
        #expect(try CoreDataMigrationTests.rows(destination, "ZTEAM", columns: "Z_PK") == [[.integer(1)]])
        #expect(
            inferred.decisions.contains(
                "Item.owner: points at Team, which no row of Person (where Item.owner pointed) becomes; left empty, as Core Data's migration manager leaves it"
            ),
            "\(inferred.decisions)")
        #expect(
            inferred.decisions.contains(
                "Item.tags: points at Label, which no row of Tag (where Item.tags pointed) becomes; left empty, as Core Data's migration manager leaves it"
            ),
            "\(inferred.decisions)")

        // Into the same tree: Sender.sent from Message to a new abstract parent of its rows.
        let before = try CoreDataTesting.model(
            """
            <entity name="Sender"><relationship name="sent" optional="YES" toMany="YES" destinationEntity="Message" inverseName="sender" inverseEntity="Message"/></entity>
            <entity name="Message" isAbstract="YES"><relationship name="sender" optional="YES" maxCount="1" destinationEntity="Sender" inverseName="sent" inverseEntity="Sender"/></entity>
            <entity name="Text" parentEntity="Message"><attribute name="body" optional="YES" attributeType="String"/></entity>
            """)
        let after = try CoreDataTesting.model(
            """
            <entity name="Sender"><relationship name="sent" optional="YES" toMany="YES" destinationEntity="AbstractMessage" inverseName="sender" inverseEntity="AbstractMessage"/></entity>
            <entity name="AbstractMessage" isAbstract="YES"><relationship name="sender" optional="YES" maxCount="1" destinationEntity="Sender" inverseName="sent" inverseEntity="Sender"/></entity>
            <entity name="Text" parentEntity="AbstractMessage"><attribute name="body" optional="YES" attributeType="String"/></entity>
            """)
        let text = try #require(try CoreDataLayout(model: before).entity(named: "Text")?.number),
            sender = try #require(try CoreDataLayout(model: before).entity(named: "Sender")?.number)
        let messages = try CoreDataTesting.store(
            before, at: folder.path("messages.sqlite"), uuid: "E0000000-0000-0000-0000-000000000053",
            rows: """
                INSERT INTO ZSENDER (Z_PK, Z_ENT, Z_OPT) VALUES (1, \(sender), 1);
                INSERT INTO ZMESSAGE (Z_PK, Z_ENT, Z_OPT, ZSENDER, ZBODY) VALUES (1, \(text), 1, 1, 'hi'), (2, \(text), 1, NULL, 'yo')
                """)
        let abstract = try CoreDataTesting.store(after, at: folder.path("abstract.sqlite"), uuid: "E0000000-0000-0000-0000-000000000054")
        try CoreDataMigrationTests.migrate(messages, into: abstract, folder: folder, journal: "abstract")
        let textAfter = try #require(try CoreDataLayout(model: after).entity(named: "Text")?.number)
        #expect(
            try CoreDataMigrationTests.rows(abstract, "ZABSTRACTMESSAGE", columns: "Z_PK, Z_ENT, ZSENDER, ZBODY")
                == [[.integer(1), .integer(textAfter), .integer(1), .text("hi")], [.integer(2), .integer(textAfter), .null, .text("yo")]])
    }

    static let bookmarks = "apps/ddg-browserserviceskit-bookmarks"

    @Test(
        "DuckDuckGo's bookmarks, V1 to V5, each straight to the current model, and each version to the next composed into one job (the step-by-step path, through the version where a to-one became the favorites' join table): the tree the app's migration test expects (uuids, titles, urls, folders, order), the legacy favorites folder's favorites in order (5, 4, 33, 32, 2)",
        .enabled(if: CoreDataStoreTests.fixture(bookmarks) != nil, "shared/fixtures/coredata is absent"),
        arguments: 1...5, [VersionPath.farthest, .stepByStep])
    func bookmarksToCurrent(_ version: Int, path: VersionPath) throws {
        let folder = try TemporaryFolder()
        var bundle = try CoreDataModelBundle.read(
            contentsOf: try #require(CoreDataStoreTests.fixture("\(Self.bookmarks)/BookmarksModel.xcdatamodeld")))
        #expect(bundle.current == "BookmarksModel 6")
        if path == .stepByStep {
            // The unnumbered first version's place, which a path through every version needs.
            bundle = try bundle.ordered(["BookmarksModel"] + (2...6).map { "BookmarksModel \($0)" })
        }
        let source = try CoreDataModelTests.copy("\(Self.bookmarks)/Bookmarks_V\(version).sqlite", into: folder)
        let destination = folder.path("current.sqlite")
        try CoreDataEmptyStore.create(at: destination, model: try #require(bundle.version(named: "BookmarksModel 6")).model)
        var options = InferenceOptions(modelBundle: bundle)
        options.versionPath = path
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, options: options)
        if path == .stepByStep, version < 5 {
            #expect(
                inferred.decisions.contains {
                    $0.hasPrefix(
                        "path: \(version == 1 ? "BookmarksModel" : "BookmarksModel \(version)") -> BookmarksModel 6, \(6 - version) steps, \(6 - version) parts composed"
                    )
                },
                "\(inferred.decisions)")
        }
        let found = version == 1 ? "BookmarksModel" : "BookmarksModel \(version)"
        #expect(
            inferred.decisions.contains { $0 == "source store: version \(found)" || $0.hasPrefix("source store: version \(found) (") },
            "\(inferred.decisions)")

        // The tree as the app's test builds it: (depth, uuid, title, url, isFolder).
        let database = try Database(path: destination.path, mode: .source)
        func children(of uuid: String) throws -> [String] {
            try database.rows(
                """
                SELECT c.ZUUID FROM ZBOOKMARKENTITY c JOIN ZBOOKMARKENTITY p ON p.Z_PK = c.ZPARENT WHERE p.ZUUID = '\(uuid)' ORDER BY c.Z_FOK_PARENT
                """
            ).compactMap { $0[0].text }
        }
        var tree: [[SQLiteValue]] = []
        func walk(_ uuid: String, depth: Int) throws {
            for child in try children(of: uuid) {
                let row = try database.rows(
                    "SELECT ZTITLE, ZURL, ZISFOLDER, ZISPENDINGDELETION, ifnull(ZISSTUB, 0) FROM ZBOOKMARKENTITY WHERE ZUUID = '\(child)'")
                tree.append([.integer(Int64(depth)), .text(child)] + (row.first ?? []))
                try walk(child, depth: depth + 1)
            }
        }
        try walk("bookmarks_root", depth: 0)
        func bookmark(_ id: String, _ depth: Int) -> [SQLiteValue] {
            [.integer(Int64(depth)), .text(id), .text(id), .text(id), .integer(0), .integer(0), .integer(0)]
        }
        func folderRow(_ id: String, _ depth: Int) -> [SQLiteValue] {
            [.integer(Int64(depth)), .text(id), .text(id), .null, .integer(1), .integer(0), .integer(0)]
        }
        #expect(
            tree == [
                bookmark("1", 0), bookmark("2", 0), folderRow("3", 0), folderRow("31", 1), bookmark("32", 1), bookmark("33", 1),
                bookmark("4", 0), bookmark("5", 0),
            ])
        // What the app's step copies into the form factors' folders, in order.
        let favorites = try database.rows(
            """
            SELECT b.ZUUID FROM Z_1FAVORITES j JOIN ZBOOKMARKENTITY f ON f.Z_PK = j.Z_1FAVORITEFOLDERS JOIN ZBOOKMARKENTITY b ON b.Z_PK = j.Z_1FAVORITES
            WHERE f.ZUUID = 'favorites_root' ORDER BY j.Z_FOK_1FAVORITES
            """
        ).compactMap { $0[0].text }
        #expect(favorites == ["5", "4", "33", "32", "2"])
        #expect(try database.scalar("SELECT count(*) FROM ZBOOKMARKENTITY") == .integer(10))
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
    }
}
