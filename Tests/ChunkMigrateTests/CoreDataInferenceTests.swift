import Foundation
import Testing
@testable import ChunkMigrate

/// The model changes lightweight migration infers, each on stores written from two models for the
/// test: the values land in the columns the new model gives them, whatever the two versions name
/// those columns; and the changes it cannot infer are refused before anything is written.
@Suite("Core Data inference")
struct CoreDataInferenceTests {
    /// Writes the two stores, migrates, and returns the destination and the plan.
    static func migrate(
        old: String, oldRows: String, new: String, batchSize: Int = 2,
        in folder: TemporaryFolder, allocate: Bool = false
    ) throws -> (URL, InferredPlan) {
        let source = try CoreDataTesting.store(try CoreDataTesting.model(old), at: folder.path("old.sqlite"), uuid: "OLD", rows: oldRows)
        let destination = try CoreDataTesting.store(try CoreDataTesting.model(new), at: folder.path("new.sqlite"), uuid: "NEW")
        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, batchSize: batchSize,
            options: InferenceOptions(keys: allocate ? .allocate : .preserve))
        let report = try CoreDataStoreCheck.run(store: destination)
        #expect(report.violations == [], "\(report.violations)")
        return (destination, inferred)
    }

    @Test(
        "an attribute moved up from sibling sub-entities, whose values lived in numbered columns, and a sibling added that renumbers another's column: every value in its new column"
    )
    func movedUpAndRenumberedSiblings() throws {
        let folder = try TemporaryFolder()
        // Old: Knock.delivered in ZDELIVERED, Text.delivered in ZDELIVERED1, Text.text in ZTEXT.
        let old = """
            <entity name="Message" isAbstract="YES"><attribute name="sent" optional="YES" attributeType="Date"/></entity>
            <entity name="Knock" parentEntity="Message"><attribute name="delivered" optional="YES" attributeType="Boolean"/></entity>
            <entity name="Text" parentEntity="Message"><attribute name="delivered" optional="YES" attributeType="Boolean"/>
              <attribute name="text" optional="YES" attributeType="String"/></entity>
            """
        // New: delivered declared by Message; Alert (sorting first) has its own text, so Text's moves to ZTEXT1.
        let new = """
            <entity name="Message" isAbstract="YES"><attribute name="delivered" optional="YES" attributeType="Boolean"/>
              <attribute name="sent" optional="YES" attributeType="Date"/></entity>
            <entity name="Alert" parentEntity="Message"><attribute name="text" optional="YES" attributeType="String"/></entity>
            <entity name="Knock" parentEntity="Message"/>
            <entity name="Text" parentEntity="Message"><attribute name="text" optional="YES" attributeType="String"/></entity>
            """
        let (destination, inferred) = try Self.migrate(
            old: old,
            oldRows: """
                INSERT INTO ZMESSAGE (Z_PK, Z_ENT, Z_OPT, ZSENT, ZDELIVERED, ZDELIVERED1, ZTEXT) VALUES
                    (1, 2, 1, 10.0, 1, NULL, NULL), (2, 3, 1, 20.0, NULL, 0, 'hello'), (3, 2, 1, 30.0, 0, NULL, NULL), (5, 3, 1, 50.0, NULL, 1, 'bye')
                """, new: new, in: folder)
        // (A whole number of seconds in a TIMESTAMP column reads back as an integer: SQLite's NUMERIC affinity.)
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZMESSAGE", columns: "Z_PK, Z_ENT, ZSENT, ZDELIVERED, ZTEXT, ZTEXT1") == [
                [.integer(1), .integer(3), .integer(10), .integer(1), .null, .null],
                [.integer(2), .integer(4), .integer(20), .integer(0), .null, .text("hello")],
                [.integer(3), .integer(3), .integer(30), .integer(0), .null, .null],
                [.integer(5), .integer(4), .integer(50), .integer(1), .null, .text("bye")],
            ])
        let message = try #require(inferred.plan.entities.first { $0.name == "Message" })
        #expect(message.columns["ZDELIVERED"] == "CASE WHEN Z_ENT = 2 THEN ZDELIVERED WHEN Z_ENT = 3 THEN ZDELIVERED1 END")
        #expect(message.columns["ZTEXT1"] == "ZTEXT")
    }

    @Test("a to-one becoming many-to-many, a relationship becoming ordered on either side, and a to-many becoming to-one")
    func relationshipShapes() throws {
        let folder = try TemporaryFolder()
        let old = """
            <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/>
              <relationship name="books" optional="YES" toMany="YES" destinationEntity="Book" inverseName="authors"/></entity>
            <entity name="Book"><attribute name="title" optional="YES" attributeType="String"/>
              <relationship name="authors" optional="YES" toMany="YES" destinationEntity="Author" inverseName="books"/>
              <relationship name="shelf" optional="YES" maxCount="1" destinationEntity="Shelf" inverseName="books"/>
              <relationship name="tags" optional="YES" toMany="YES" destinationEntity="Tag" inverseName="books"/>
              <relationship name="user" optional="YES" maxCount="1" destinationEntity="User" inverseName="books"/></entity>
            <entity name="Shelf"><relationship name="books" optional="YES" toMany="YES" destinationEntity="Book" inverseName="shelf"/></entity>
            <entity name="Tag"><relationship name="books" optional="YES" toMany="YES" destinationEntity="Book" inverseName="tags"/></entity>
            <entity name="User"><relationship name="books" optional="YES" toMany="YES" destinationEntity="Book" inverseName="user"/></entity>
            """
        // Book.user (to-one) becomes Book.users, many-to-many; Book.authors (many-to-many) becomes
        // the to-one Book.author, whose inverse is ordered; Shelf.books and Tag.books become ordered.
        let new = """
            <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/>
              <relationship name="books" optional="YES" toMany="YES" ordered="YES" destinationEntity="Book" inverseName="author"/></entity>
            <entity name="Book"><attribute name="title" optional="YES" attributeType="String"/>
              <relationship name="author" optional="YES" maxCount="1" destinationEntity="Author" inverseName="books" elementID="authors"/>
              <relationship name="shelf" optional="YES" maxCount="1" destinationEntity="Shelf" inverseName="books"/>
              <relationship name="tags" optional="YES" toMany="YES" destinationEntity="Tag" inverseName="books"/>
              <relationship name="users" optional="YES" toMany="YES" destinationEntity="User" inverseName="books" elementID="user"/></entity>
            <entity name="Shelf"><relationship name="books" optional="YES" toMany="YES" ordered="YES" destinationEntity="Book" inverseName="shelf"/></entity>
            <entity name="Tag"><relationship name="books" optional="YES" toMany="YES" ordered="YES" destinationEntity="Book" inverseName="tags"/></entity>
            <entity name="User"><relationship name="books" optional="YES" toMany="YES" destinationEntity="Book" inverseName="users"/></entity>
            """
        // Entities: Author 1, Book 2, Shelf 3, Tag 4, User 5 in both models. Two many-to-manys
        // lead to Book by a relationship named books: the second in name order gets Z_2BOOKS1
        // (Tag's in the old model, User's in the new, where Author's is no longer one).
        let (destination, inferred) = try Self.migrate(
            old: old,
            oldRows: """
                INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 1, 1, 'ann'), (2, 1, 1, 'bo');
                INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT) VALUES (1, 3, 1), (2, 3, 1);
                INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT) VALUES (1, 4, 1);
                INSERT INTO ZUSER (Z_PK, Z_ENT, Z_OPT) VALUES (1, 5, 1), (2, 5, 1);
                INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZSHELF, ZUSER) VALUES
                    (3, 2, 1, 'c', 1, 2), (4, 2, 1, 'd', 2, NULL), (6, 2, 1, 'f', 1, 1), (9, 2, 1, 'i', NULL, 2);
                INSERT INTO Z_1BOOKS (Z_1AUTHORS, Z_2BOOKS) VALUES (2, 3), (1, 3), (2, 6);
                INSERT INTO Z_2TAGS (Z_2BOOKS1, Z_4TAGS) VALUES (9, 1), (3, 1), (6, 1)
                """, new: new, in: folder)
        // The smallest author key of each book; the shelf's order the order of the book keys.
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZBOOK", columns: "Z_PK, ZAUTHOR, Z_FOK_AUTHOR, ZSHELF, Z_FOK_SHELF") == [
                [.integer(3), .integer(1), .integer(2048), .integer(1), .integer(2048)],
                [.integer(4), .null, .null, .integer(2), .integer(2048)],
                [.integer(6), .integer(2), .integer(2048), .integer(1), .integer(3072)], [.integer(9), .null, .null, .null, .null],
            ])
        #expect(
            try CoreDataMigrationTests.rows(destination, "Z_2USERS", columns: "Z_2BOOKS1, Z_5USERS")
                == [[.integer(3), .integer(2)], [.integer(6), .integer(1)], [.integer(9), .integer(2)]])
        #expect(
            try Database(path: destination.path, mode: .readOnly).rows(
                "SELECT Z_2BOOKS, Z_4TAGS, Z_FOK_2BOOKS FROM Z_2TAGS ORDER BY Z_2BOOKS")
                == [
                    [.integer(3), .integer(1), .integer(2048)], [.integer(6), .integer(1), .integer(3072)],
                    [.integer(9), .integer(1), .integer(4096)],
                ])
        #expect(inferred.decisions.contains("Book.author: to-many Book.authors becomes to-one: the target with the smallest key"))
        #expect(inferred.decisions.contains { $0 == "join table Z_2USERS (User.books): from ZBOOK.ZUSER, its to-one side before" })
    }

    @Test(
        "a many-to-many whose entities are both renamed, so that its join table and columns are renamed: rows follow the relationship; type changes between numbers are converted; a transient attribute made persistent starts empty"
    )
    func renamedManyToManyAndConversions() throws {
        let folder = try TemporaryFolder()
        let old = """
            <entity name="Group"><attribute name="title" optional="YES" attributeType="String"/>
              <relationship name="members" optional="YES" toMany="YES" destinationEntity="Owner" inverseName="groups"/></entity>
            <entity name="Owner"><attribute name="score" optional="YES" attributeType="Integer 32"/>
              <attribute name="nickname" optional="YES" attributeType="String"/>
              <attribute name="cache" optional="YES" transient="YES" attributeType="String"/>
              <relationship name="groups" optional="YES" toMany="YES" destinationEntity="Group" inverseName="members"/></entity>
            """
        // Group -> Team, Owner -> Person, members -> people, groups -> teams: Person now sorts first.
        let new = """
            <entity name="Person" elementID="Owner"><attribute name="score" optional="YES" attributeType="Double"/>
              <attribute name="nickname" optional="YES" transient="YES" attributeType="String"/>
              <attribute name="cache" optional="YES" attributeType="String"/>
              <relationship name="teams" optional="YES" toMany="YES" destinationEntity="Team" inverseName="people" elementID="groups"/></entity>
            <entity name="Team" elementID="Group"><attribute name="title" optional="YES" attributeType="String"/>
              <relationship name="people" optional="YES" toMany="YES" destinationEntity="Person" inverseName="teams" elementID="members"/></entity>
            """
        // Old: Group 1, Owner 2, join Z_1MEMBERS (Z_1GROUPS, Z_2MEMBERS). New: Person 1, Team 2, join Z_1TEAMS (Z_1PEOPLE, Z_2TEAMS).
        let (destination, inferred) = try Self.migrate(
            old: old,
            oldRows: """
                INSERT INTO ZGROUP (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (1, 1, 1, 'red'), (2, 1, 1, 'blue');
                INSERT INTO ZOWNER (Z_PK, Z_ENT, Z_OPT, ZSCORE, ZNICKNAME) VALUES (1, 2, 1, 7, 'a'), (2, 2, 1, NULL, 'b');
                INSERT INTO Z_1MEMBERS (Z_1GROUPS, Z_2MEMBERS) VALUES (1, 1), (1, 2), (2, 2)
                """, new: new, in: folder)
        #expect(
            try CoreDataMigrationTests.rows(destination, "Z_1TEAMS", columns: "Z_1PEOPLE, Z_2TEAMS")
                == [[.integer(1), .integer(1)], [.integer(2), .integer(1)], [.integer(2), .integer(2)]])
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZPERSON", columns: "Z_PK, Z_ENT, ZSCORE, ZCACHE")
                == [[.integer(1), .integer(1), .real(7), .null], [.integer(2), .integer(1), .null, .null]])
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZTEAM", columns: "Z_PK, Z_ENT, ZTITLE")
                == [[.integer(1), .integer(2), .text("red")], [.integer(2), .integer(2), .text("blue")]])
        #expect(inferred.decisions.contains("join table Z_1MEMBERS -> Z_1TEAMS (columns Z_2MEMBERS -> Z_1PEOPLE, Z_1GROUPS -> Z_2TEAMS)"))
        #expect(inferred.decisions.contains("ZSCORE: Integer 32 -> Double, CAST(ZSCORE AS REAL)"))
    }

    @Test(
        "relationships into rows that are not copied become NULL: a removed sub-entity's rows, a destination narrowed to a sub-entity, duplicates left out; a to-many without inverse gains one; a to-many's order becomes the to-one's"
    )
    func relationshipsIntoRowsLeftOut() throws {
        let folder = try TemporaryFolder()
        // Old: Animal 1 (Cat 2, Dog 3, Fish 4), Owner 5 with pets (to-many, no inverse), Show 6 with a
        // winner (any animal), Vet 7 with patients (many-to-many with Animal.vets, ordered on the Vet side).
        let old = """
            <entity name="Animal"><attribute name="name" optional="YES" attributeType="String"/>
              <relationship name="vets" optional="YES" toMany="YES" destinationEntity="Vet" inverseName="patients"/></entity>
            <entity name="Cat" parentEntity="Animal"/><entity name="Dog" parentEntity="Animal"/><entity name="Fish" parentEntity="Animal"/>
            <entity name="Owner"><relationship name="pets" optional="YES" toMany="YES" destinationEntity="Animal"/></entity>
            <entity name="Show"><relationship name="winner" optional="YES" maxCount="1" destinationEntity="Animal"/></entity>
            <entity name="Vet"><relationship name="patients" optional="YES" toMany="YES" ordered="YES" destinationEntity="Animal" inverseName="vets"/></entity>
            """
        // New: Fish removed; Show.winner narrowed to Dog; Owner.pets gains its inverse Animal.owner;
        // Animal.vets becomes the to-one Animal.vet, whose inverse stays ordered; Dog names are unique.
        let new = """
            <entity name="Animal"><attribute name="name" optional="YES" attributeType="String"/>
              <relationship name="owner" optional="YES" maxCount="1" destinationEntity="Owner" inverseName="pets"/>
              <relationship name="vet" optional="YES" maxCount="1" destinationEntity="Vet" inverseName="patients" elementID="vets"/></entity>
            <entity name="Cat" parentEntity="Animal"/>
            <entity name="Dog" parentEntity="Animal"><uniquenessConstraints><uniquenessConstraint><constraint value="name"/></uniquenessConstraint></uniquenessConstraints></entity>
            <entity name="Owner"><relationship name="pets" optional="YES" toMany="YES" destinationEntity="Animal" inverseName="owner"/></entity>
            <entity name="Show"><relationship name="winner" optional="YES" maxCount="1" destinationEntity="Dog"/></entity>
            <entity name="Vet"><relationship name="patients" optional="YES" toMany="YES" ordered="YES" destinationEntity="Animal" inverseName="vet"/></entity>
            """
        // Dogs 'max' (3, 5): 5 is a duplicate (Core Data's unique index spans the table, so the
        // constraint meets every row). Fish 4 is removed. Shows: 1 won by Cat 1, 2 by Dog 5 (left out), 3 by Dog 2, 4 by Fish 4.
        let source = try CoreDataTesting.store(
            try CoreDataTesting.model(old), at: folder.path("old.sqlite"), uuid: "OLD",
            rows: """
                INSERT INTO ZANIMAL (Z_PK, Z_ENT, Z_OPT, ZNAME, Z5PETS) VALUES
                    (1, 2, 1, 'tom', 1), (2, 3, 1, 'rex', 1), (3, 3, 1, 'max', NULL), (4, 4, 1, 'nemo', 2), (5, 3, 1, 'max', 2);
                INSERT INTO ZOWNER (Z_PK, Z_ENT, Z_OPT) VALUES (1, 5, 1), (2, 5, 1);
                INSERT INTO ZSHOW (Z_PK, Z_ENT, Z_OPT, ZWINNER, Z1_WINNER) VALUES (1, 6, 1, 1, 2), (2, 6, 1, 5, 3), (3, 6, 1, 2, 3), (4, 6, 1, 4, 4);
                INSERT INTO ZVET (Z_PK, Z_ENT, Z_OPT) VALUES (1, 7, 1);
                INSERT INTO Z_1VETS (Z_1PATIENTS, Z_7VETS, Z_FOK_1PATIENTS) VALUES (3, 1, 2048), (1, 1, 3072), (2, 1, 4096)
                """)
        let destination = try CoreDataTesting.store(try CoreDataTesting.model(new), at: folder.path("new.sqlite"), uuid: "NEW")
        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, batchSize: 2,
            options: InferenceOptions(keepFirstDuplicate: true))
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
        // New numbers: Animal 1, Cat 2, Dog 3, Owner 4, Show 5, Vet 6. Dog 5 is left out; the owner
        // comes from Owner.pets; the vet's order from the join table's order.
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZANIMAL", columns: "Z_PK, Z_ENT, ZNAME, ZOWNER, ZVET, Z_FOK_VET") == [
                [.integer(1), .integer(2), .text("tom"), .integer(1), .integer(1), .integer(3072)],
                [.integer(2), .integer(3), .text("rex"), .integer(1), .integer(1), .integer(4096)],
                [.integer(3), .integer(3), .text("max"), .null, .integer(1), .integer(2048)],
            ])
        // Winners that are not Dogs, or not copied: NULL (Dog has no sub-entities: no entity column).
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZSHOW", columns: "Z_PK, ZWINNER")
                == [[.integer(1), .null], [.integer(2), .null], [.integer(3), .integer(2)], [.integer(4), .null]])
        #expect(
            inferred.notes.contains { $0.hasPrefix("ZANIMAL(ZNAME): a new uniqueness constraint of Dog that 1 rows of the source violate") }
        )
        #expect(inferred.decisions.contains("Animal.owner: new, from its inverse Owner.pets"))
        #expect(inferred.decisions.contains("Show.winner: NULL where it points at a row that is not copied as Dog"))
    }

    @Test("keys allocated: the owner column of a to-many without inverse goes through the ID map too")
    func allocatedToManyWithoutInverse() throws {
        let folder = try TemporaryFolder()
        let model = """
            <entity name="Item"><attribute name="title" optional="YES" attributeType="String"/></entity>
            <entity name="List"><relationship name="items" optional="YES" toMany="YES" destinationEntity="Item"/></entity>
            """
        let (destination, inferred) = try Self.migrate(
            old: model,
            oldRows: """
                INSERT INTO ZLIST (Z_PK, Z_ENT, Z_OPT) VALUES (10, 2, 1), (20, 2, 1);
                INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZTITLE, Z2ITEMS) VALUES (5, 1, 1, 'a', 20), (6, 1, 1, 'b', 10), (7, 1, 1, 'c', NULL)
                """, new: model, in: folder, allocate: true)
        #expect(inferred.plan.entities.first { $0.name == "Item" }?.relationships["Z2ITEMS"] == .init(from: "Z2ITEMS", to: "List"))
        // Lists 10 and 20 became 1 and 2; items 5, 6, 7 became 1, 2, 3.
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZITEM", columns: "Z_PK, ZTITLE, Z2ITEMS")
                == [[.integer(1), .text("a"), .integer(2)], [.integer(2), .text("b"), .integer(1)], [.integer(3), .text("c"), .null]])
    }

    @Test("a property moved down from the parent to two siblings: each sibling's column holds its own rows' values only")
    func movedDownToSiblings() throws {
        let folder = try TemporaryFolder()
        let (destination, _) = try Self.migrate(
            old: """
                <entity name="Node"><attribute name="title" optional="YES" attributeType="String"/></entity>
                <entity name="File" parentEntity="Node"/><entity name="Link" parentEntity="Node"/>
                """, oldRows: "INSERT INTO ZNODE (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (1, 2, 1, 'f'), (2, 3, 1, 'l')",
            new: """
                <entity name="Node"/>
                <entity name="File" parentEntity="Node"><attribute name="title" optional="YES" attributeType="String"/></entity>
                <entity name="Link" parentEntity="Node"><attribute name="title" optional="YES" attributeType="String"/></entity>
                """, in: folder)
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZNODE", columns: "Z_PK, ZTITLE, ZTITLE1")
                == [[.integer(1), .text("f"), .null], [.integer(2), .null, .text("l")]])
    }

    /// A tree of three entities, `Item` with `title` and `ref`, and the changes that keep its table
    /// in place or make Core Data rebuild it.
    static let tree = """
        <entity name="Item"><attribute name="title" optional="YES" attributeType="String"/>
          <relationship name="ref" optional="YES" maxCount="1" destinationEntity="Item"/></entity>
        <entity name="Link" parentEntity="Item"><attribute name="url" optional="YES" attributeType="String"/></entity>
        <entity name="Memo" parentEntity="Item"/>
        """

    @Test(
        "which changes Core Data makes in place and which make it rebuild a table: added, renamed and renumbered keep it, removed or retyped properties and removed entities with properties rebuild it; over a path, straight from the store's version to the target"
    )
    func tableRebuilds() throws {
        func rebuild(_ new: String, from old: String = Self.tree, root: String = "Item", renames: [String: String] = [:]) throws -> String?
        {
            try CoreDataModelMapping(source: CoreDataTesting.model(old), destination: CoreDataTesting.model(new), renames: renames)
                .tableRebuild(ofTreeOf: root)
        }
        let memo = #"<entity name="Memo" parentEntity="Item"/>"#
        let pinned =
            #"<entity name="Memo" parentEntity="Item"><attribute name="pinned" attributeType="Boolean" defaultValueString="YES"/></entity>"#
        // In place: an attribute added with a default, a new sibling (renumbering the others), a
        // removed entity without properties of its own, a renamed attribute.
        #expect(try rebuild(Self.tree.replacingOccurrences(of: memo, with: pinned)) == nil)
        #expect(try rebuild(Self.tree + #"<entity name="Alert" parentEntity="Item"/>"#) == nil)
        #expect(try rebuild(Self.tree.replacingOccurrences(of: memo, with: "")) == nil)
        #expect(try rebuild(Self.tree.replacingOccurrences(of: #"name="title""#, with: #"name="heading" elementID="title""#)) == nil)
        // Rebuilt, with the reason.
        #expect(
            try rebuild(Self.tree.replacingOccurrences(of: #"<attribute name="url" optional="YES" attributeType="String"/>"#, with: ""))
                == "Link.url goes")
        #expect(
            try rebuild(
                Self.tree.replacingOccurrences(
                    of: #"name="url" optional="YES" attributeType="String""#,
                    with: #"name="url" optional="YES" attributeType="URI""#))
                == "Link.url changes type from String to URI")
        #expect(
            try rebuild(
                Self.tree.replacingOccurrences(
                    of: #"<entity name="Link" parentEntity="Item"><attribute name="url" optional="YES" attributeType="String"/></entity>"#,
                    with: ""))
                == "entity Link goes with url, an attribute or to-one of its own")
        #expect(
            try rebuild(Self.tree.replacingOccurrences(of: #"name="ref" optional="YES""#, with: #"name="ref""#))
                == "the to-one Item.ref becomes required")
        #expect(
            try rebuild(Self.tree.replacingOccurrences(of: "Item", with: "Entry"), root: "Entry", renames: ["Entry": "Item"])
                == "its root Item becomes Entry without a renaming identifier that says so")
        #expect(
            try rebuild(
                Self.tree.replacingOccurrences(of: #"<entity name="Item">"#, with: #"<entity name="Entry" elementID="Item">"#)
                    .replacingOccurrences(of: #"parentEntity="Item""#, with: #"parentEntity="Entry""#).replacingOccurrences(
                        of: #"destinationEntity="Item""#, with: #"destinationEntity="Entry""#),
                root: "Entry") == nil)

        // Over a path the migration is one step from the store's version straight to the target,
        // as Core Data's automatic migration takes it: pinned added by version 2, url removed by
        // version 3, the table rebuilt for url; pinned added on the way alone keeps it in place.
        let second = Self.tree.replacingOccurrences(of: memo, with: pinned)
        let third = second.replacingOccurrences(of: #"<attribute name="url" optional="YES" attributeType="String"/>"#, with: "")
        let path = try CoreDataModelMapping(path: [
            ("Model", CoreDataTesting.model(Self.tree)), ("Model 2", CoreDataTesting.model(second)),
            ("Model 3", CoreDataTesting.model(third)),
        ])
        #expect(path.tableRebuild(ofTreeOf: "Item") == "Link.url goes")
        let inPlace = try CoreDataModelMapping(path: [
            ("Model", CoreDataTesting.model(Self.tree)), ("Model 2", CoreDataTesting.model(Self.tree)),
            ("Model 3", CoreDataTesting.model(second)),
        ])
        #expect(inPlace.tableRebuild(ofTreeOf: "Item") == nil)
    }

    @Test(
        "an attribute new with a default in a sub-entity: in every row of its table where Core Data alters the table in place, in its own entity's rows where Core Data rebuilds it or is older than framework version 977"
    )
    func newDefaultInSubEntity() throws {
        let pinned = Self.tree.replacingOccurrences(
            of: #"<entity name="Memo" parentEntity="Item"/>"#,
            with:
                #"<entity name="Memo" parentEntity="Item"><attribute name="pinned" attributeType="Boolean" defaultValueString="YES"/></entity>"#
        )
        let rows =
            "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZURL) VALUES (1, 1, 1, 'item', NULL), (2, 2, 1, 'link', 'u'), (3, 3, 1, 'memo', NULL)"
        func migrate(to new: String, framework: Int? = nil) throws -> (rows: [[SQLiteValue]], plan: InferredPlan) {
            let folder = try TemporaryFolder()
            let source = try CoreDataTesting.store(
                try CoreDataTesting.model(Self.tree), at: folder.path("old.sqlite"), uuid: "OLD", rows: rows)
            let destination = try CoreDataTesting.store(try CoreDataTesting.model(new), at: folder.path("new.sqlite"), uuid: "NEW")
            var options = InferenceOptions()
            options.coreDataFramework = framework
            let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, options: options)
            return (try CoreDataMigrationTests.rows(destination, "ZITEM", columns: "Z_PK, ZPINNED"), inferred)
        }
        // In place (the store chunkmigrate creates says framework version 1000): every row.
        let inPlace = try migrate(to: pinned)
        #expect(inPlace.rows == [[.integer(1), .integer(1)], [.integer(2), .integer(1)], [.integer(3), .integer(1)]])
        #expect(inPlace.plan.plan.entities.first?.columns["ZPINNED"] == "1")
        #expect(
            inPlace.plan.decisions.contains(
                "ZPINNED: new in Memo, every row of ZITEM takes the default 1 (Item, Link too), as Core Data's in-place column add gives it"
            ))
        // Link.url removed too: Core Data rebuilds ZITEM, only Memo's row takes it.
        let rebuilt = try migrate(
            to: pinned.replacingOccurrences(of: #"<attribute name="url" optional="YES" attributeType="String"/>"#, with: ""))
        #expect(rebuilt.rows == [[.integer(1), .null], [.integer(2), .null], [.integer(3), .integer(1)]])
        #expect(
            rebuilt.plan.decisions.contains(
                "ZPINNED: new in Memo, takes the default 1 in its rows; those of Item, Link stay NULL, as Core Data rebuilds ZITEM: Link.url goes"
            ))
        // As Core Data 866 migrates: the table made anew.
        let older = try migrate(to: pinned, framework: 866)
        #expect(older.rows == [[.integer(1), .null], [.integer(2), .null], [.integer(3), .integer(1)]])
        #expect(
            older.plan.decisions.contains {
                $0.hasSuffix(
                    "as Core Data rebuilds ZITEM: Core Data before framework version 977 (the destination store's is 866) makes a table it adds such a column to anew"
                )
            })
    }

    @Test("a rename of an entity the destination model does not have is refused, naming it")
    func misspelledRename() throws {
        let folder = try TemporaryFolder()
        let model = try CoreDataTesting.model("<entity name=\"Memo\"/>")
        let source = try CoreDataTesting.store(
            try CoreDataTesting.model("<entity name=\"Note\"/>"), at: folder.path("old.sqlite"), uuid: "OLD")
        let destination = try CoreDataTesting.store(model, at: folder.path("new.sqlite"), uuid: "NEW")
        let error = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(renames: ["Memoo": "Note"]))
        }
        #expect(
            error?.message.contains("renames: the destination model has no entity \"Memoo\"; did you mean \"Memo\"?") == true,
            "\(String(describing: error))")
    }

    @Test(
        "changes lightweight migration cannot infer are refused naming the entity and property, and nothing is written",
        arguments: [
            (
                "<entity name=\"A\"><attribute name=\"x\" optional=\"YES\" attributeType=\"String\"/></entity>",
                "<entity name=\"A\"><attribute name=\"x\" optional=\"YES\" attributeType=\"Integer 64\"/></entity>",
                "attribute A.x changes type from String to Integer 64"
            ),
            (
                "<entity name=\"A\"><attribute name=\"x\" optional=\"YES\" attributeType=\"String\"/></entity>",
                "<entity name=\"A\"><attribute name=\"x\" optional=\"YES\" attributeType=\"String\"/><attribute name=\"y\" attributeType=\"String\"/></entity>",
                "attribute A.y is new, required and has no default value, and the source has 1 rows of A"
            ),
            (
                "<entity name=\"A\"><attribute name=\"x\" optional=\"YES\" attributeType=\"String\"/></entity><entity name=\"B\"><attribute name=\"y\" optional=\"YES\" attributeType=\"String\"/></entity>",
                "<entity name=\"A\"><attribute name=\"x\" optional=\"YES\" attributeType=\"String\"/></entity><entity name=\"B\" parentEntity=\"A\"><attribute name=\"y\" optional=\"YES\" attributeType=\"String\"/></entity>",
                "lightweight migration cannot merge entity hierarchies"
            ),
        ])
    func refusals(_ old: String, _ new: String, _ words: String) throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataTesting.store(
            try CoreDataTesting.model(old), at: folder.path("old.sqlite"), uuid: "OLD",
            rows: "INSERT INTO ZA (Z_PK, Z_ENT, Z_OPT) VALUES (1, 1, 1)")
        let destination = try CoreDataTesting.store(try CoreDataTesting.model(new), at: folder.path("new.sqlite"), uuid: "NEW")
        let before = try sha256(of: destination), sourceBefore = try sha256(of: source)
        let error = #expect(throws: MigrationError.self) { try MigrationPlan.infer(source: source, destination: destination) }
        #expect(error?.message.contains(words) == true, "\(String(describing: error))")
        #expect(try sha256(of: destination) == before && (try sha256(of: source)) == sourceBefore)
    }

    @Test(
        "a store without a model cache takes a model given for the other store where their hashes are equal, needs its own where they are not, and says which option gives it",
        .enabled(
            if: CoreDataStoreTests.fixture("kik.sqlite") != nil
                && CoreDataStoreTests.fixture("BookMigration/Model1.xcdatamodel.xml") != nil,
            "shared/fixtures/coredata is absent"))
    func storesWithoutModelCache() throws {
        let folder = try TemporaryFolder()
        // A 2013 store without a cache, a model given for it alone: its emptied copy, of the same
        // hashes, takes that model too.
        let books = try CoreDataStoreTests.copy("BookMigration/Model1.sqlite", into: folder)
        let empty = try CoreDataTesting.emptiedCopy(of: books, named: "books.sqlite", in: folder)
        let model = try CoreDataModel.read(contentsOf: try #require(CoreDataStoreTests.fixture("BookMigration/Model1.xcdatamodel.xml")))
        let inferred = try CoreDataMigrationTests.migrate(books, into: empty, folder: folder, options: InferenceOptions(sourceModel: model))
        #expect(
            inferred.decisions.first
                == "destination store: no model cache; its entity version hashes are the source's model's, so that is its model")
        #expect(try CoreDataMigrationTests.rows(empty, "ZBOOK") == (try CoreDataMigrationTests.rows(books, "ZBOOK")))

        // Another model's store: kik's model is not BookMigration's.
        let kik = try CoreDataStoreTests.copy("kik.sqlite", into: folder)
        let error = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: kik, destination: empty, options: InferenceOptions(destinationModel: model))
        }
        #expect(
            error?.file == kik.path && error?.message.contains("has no model cache") == true
                && error?.message.contains("--model-from") == true,
            "\(String(describing: error))")
    }
}
