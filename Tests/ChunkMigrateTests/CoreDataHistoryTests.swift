import Foundation
import Testing
@testable import ChunkMigrate

/// Persistent history and CloudKit mirroring, carried as Core Data's own migration carries them.
@Suite("Core Data persistent history and CloudKit mirroring")
struct CoreDataHistoryTests {
    /// Model N: Book (1), Loan (2), Shelf (3). Model N+1: Author (1) is new, Loan is gone, Shelf
    /// gains an attribute: Book 2, Shelf 3.
    static let old = """
        <entity name="Book"><attribute name="title" optional="YES" attributeType="String"/></entity>
        <entity name="Loan"><attribute name="due" optional="YES" attributeType="Date"/></entity>
        <entity name="Shelf"><attribute name="name" optional="YES" attributeType="String"/></entity>
        """
    static let new = """
        <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/></entity>
        <entity name="Book"><attribute name="title" optional="YES" attributeType="String"/></entity>
        <entity name="Shelf"><attribute name="name" optional="YES" attributeType="String"/><attribute name="room" optional="YES" attributeType="String"/></entity>
        """

    static func stores(in folder: TemporaryFolder, history: String, destinationHistory: Bool = true) throws -> (URL, URL) {
        let source = folder.path("old.sqlite"), destination = folder.path("new.sqlite")
        try CoreDataEmptyStore.create(
            at: source, model: try CoreDataTesting.model(old), uuid: "C0000000-0000-0000-0000-000000000001",
            persistentHistory: true)
        try Database(path: source.path, mode: .readWrite).execute(
            """
            BEGIN;
            INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (1, 1, 1, 'a'), (2, 1, 2, 'b');
            INSERT INTO ZLOAN (Z_PK, Z_ENT, Z_OPT) VALUES (1, 2, 1);
            INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (7, 3, 1, 'top');
            UPDATE Z_PRIMARYKEY SET Z_MAX = 2 WHERE Z_ENT = 1; UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_ENT = 2;
            UPDATE Z_PRIMARYKEY SET Z_MAX = 7 WHERE Z_ENT = 3;
            INSERT INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 16003, 1, 'app'), (2, 16003, 1, 'widget');
            \(history)
            COMMIT;
            """)
        try CoreDataEmptyStore.create(
            at: destination, model: try CoreDataTesting.model(new), uuid: "C0000000-0000-0000-0000-000000000002",
            persistentHistory: destinationHistory)
        return (source, destination)
    }

    /// Transactions 1-5: books inserted, a loan (an entity model N+1 drops) in 2, updates of a book
    /// and a shelf in 4, a shelf in 5. Numbering ran to 90 changes and 84 transactions before
    /// the history was pruned.
    static let history = """
        INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZTIMESTAMP) VALUES
            (80, 16002, 1, 1, 1.0), (81, 16002, 1, 2, 2.0), (82, 16002, 1, 1, 3.0), (83, 16002, 1, 1, 4.0), (84, 16002, 1, 2, 5.0);
        INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS) VALUES
            (85, 16001, 1, 0, 1, 1, 80, NULL), (86, 16001, 1, 0, 1, 2, 80, NULL), (87, 16001, 1, 0, 2, 1, 81, NULL),
            (88, 16001, 1, 1, 1, 2, 83, x'01'), (89, 16001, 1, 1, 3, 7, 83, x'01'), (90, 16001, 1, 0, 3, 7, 84, NULL);
        UPDATE Z_PRIMARYKEY SET Z_MAX = 90 WHERE Z_ENT = 16001; UPDATE Z_PRIMARYKEY SET Z_MAX = 84 WHERE Z_ENT = 16002;
        UPDATE Z_PRIMARYKEY SET Z_MAX = 2 WHERE Z_ENT = 16003;
        """

    @Test(
        "history is kept with its numbers, entity numbers by name, cut off after the last change of a removed entity, its numbering never behind"
    )
    func historyCarried() throws {
        let folder = try TemporaryFolder()
        let (source, destination) = try Self.stores(in: folder, history: Self.history)
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, batchSize: 2)
        #expect(
            inferred.notes.contains { $0.contains("transactions 1-81 recorded changes to entities the destination model does not have") })
        #expect(
            inferred.decisions.contains {
                $0.hasPrefix("ACHANGE.ZCOLUMNS: left empty for updates of entities whose properties changed (Shelf)")
            })

        let database = try Database(path: destination.path, mode: .source)
        #expect(try database.rows("SELECT Z_PK FROM ATRANSACTION ORDER BY Z_PK") == [[.integer(82)], [.integer(83)], [.integer(84)]])
        // Book 1 -> 2, Shelf 3 -> 3; the update of Shelf loses its column bits, Book's keeps them.
        #expect(
            try database.rows("SELECT Z_PK, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS FROM ACHANGE ORDER BY Z_PK") == [
                [.integer(88), .integer(1), .integer(2), .integer(2), .integer(83), .blob([1])],
                [.integer(89), .integer(1), .integer(3), .integer(7), .integer(83), .null],
                [.integer(90), .integer(0), .integer(3), .integer(7), .integer(84), .null],
            ])
        #expect(try database.rows("SELECT ZNAME FROM ATRANSACTIONSTRING ORDER BY Z_PK") == [[.text("app")], [.text("widget")]])
        #expect(
            try database.rows("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT > 16000 ORDER BY Z_ENT") == [
                [.integer(90)], [.integer(84)], [.integer(2)],
            ])
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
    }

    @Test("a destination without history tables: the history is not carried, said in a note")
    func destinationWithoutHistory() throws {
        let folder = try TemporaryFolder()
        let (source, destination) = try Self.stores(in: folder, history: Self.history, destinationHistory: false)
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder)
        #expect(
            inferred.notes.contains(
                "ACHANGE: the destination has no persistent history (created without NSPersistentHistoryTrackingKey); the source's is not carried"
            ))
        #expect(inferred.plan.entities.allSatisfy { !$0.destination.table.hasPrefix("A") })
    }

    /// CloudKit's record metadata as `NSPersistentCloudKitContainer` keeps it: one row per
    /// mirrored object, by entity number and key.
    static let mirroring = """
        CREATE TABLE ANSCKRECORDMETADATA ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZENTITYID INTEGER, ZENTITYPK INTEGER,
            ZNEEDSUPLOAD INTEGER, ZRECORDZONE INTEGER, ZCKRECORDNAME VARCHAR, ZCKRECORDSYSTEMFIELDS BLOB );
        CREATE TABLE ANSCKRECORDZONE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCKRECORDZONENAME VARCHAR,
            ZCKOWNERNAME VARCHAR, ZCURRENTCHANGETOKEN BLOB );
        CREATE UNIQUE INDEX Z_RecordMetadata_UNIQUE_entityId_entityPK ON ANSCKRECORDMETADATA (ZENTITYID COLLATE BINARY ASC, ZENTITYPK COLLATE BINARY ASC);
        """

    static func addMirroring(to store: URL, entities: (metadata: Int64, zone: Int64), rows: String) throws {
        try Database(path: store.path, mode: .readWrite).execute(
            """
            BEGIN; \(mirroring)
            INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (\(entities.metadata), 'NSCKRecordMetadata', 0, 0),
                (\(entities.zone), 'NSCKRecordZone', 0, 0);
            \(rows)
            COMMIT;
            """)
    }

    @Test("CloudKit record metadata is carried with its keys, each object's entity number by name, so nothing is uploaded again")
    func mirroringCarried() throws {
        let folder = try TemporaryFolder()
        let (source, destination) = try Self.stores(in: folder, history: "")
        try Self.addMirroring(
            to: source, entities: (16004, 16005),
            rows: """
                INSERT INTO ANSCKRECORDZONE VALUES (1, 16005, 1, 'com.apple.coredata.cloudkit.zone', '__defaultOwner__', x'cafe');
                INSERT INTO ANSCKRECORDMETADATA VALUES (3, 16004, 1, 1, 2, 0, 1, 'B2', x'0102'), (5, 16004, 1, 3, 7, 1, 1, 'S7', x'0304');
                UPDATE Z_PRIMARYKEY SET Z_MAX = 5 WHERE Z_ENT = 16004; UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_ENT = 16005;
                """)
        // The destination's container numbered its entities otherwise, and set up a zone of its
        // own: the source's mirroring state takes its place.
        try Self.addMirroring(
            to: destination, entities: (16010, 16011),
            rows: "INSERT INTO ANSCKRECORDZONE VALUES (1, 16011, 1, 'com.apple.coredata.cloudkit.zone', '__defaultOwner__', NULL);")
        try Database(path: source.path, mode: .readWrite).execute("DELETE FROM ZLOAN")
        _ = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder)
        let database = try Database(path: destination.path, mode: .source)
        #expect(
            try database.rows(
                "SELECT Z_PK, Z_ENT, ZENTITYID, ZENTITYPK, ZNEEDSUPLOAD, ZRECORDZONE, ZCKRECORDNAME, ZCKRECORDSYSTEMFIELDS FROM ANSCKRECORDMETADATA ORDER BY Z_PK"
            ) == [
                [.integer(3), .integer(16010), .integer(2), .integer(2), .integer(0), .integer(1), .text("B2"), .blob([1, 2])],
                [.integer(5), .integer(16010), .integer(3), .integer(7), .integer(1), .integer(1), .text("S7"), .blob([3, 4])],
            ])
        #expect(
            try database.rows("SELECT Z_ENT, ZCKRECORDZONENAME, ZCURRENTCHANGETOKEN FROM ANSCKRECORDZONE")
                == [[.integer(16011), .text("com.apple.coredata.cloudkit.zone"), .blob([0xca, 0xfe])]])
        #expect(
            try database.rows("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT IN (16010, 16011) ORDER BY Z_ENT") == [
                [.integer(5)], [.integer(1)],
            ])
    }

    @Test("CloudKit records of a removed entity, or a destination without mirroring tables, are refused with what to do")
    func mirroringRefused() throws {
        let folder = try TemporaryFolder()
        let (source, destination) = try Self.stores(in: folder, history: "")
        try Self.addMirroring(
            to: source, entities: (16004, 16005),
            rows: "INSERT INTO ANSCKRECORDMETADATA (Z_PK, Z_ENT, Z_OPT, ZENTITYID, ZENTITYPK) VALUES (1, 16004, 1, 2, 1);")
        let missing = #expect(throws: MigrationError.self) { try MigrationPlan.infer(source: source, destination: destination) }
        #expect(missing?.message.contains("the destination has no ANSCKRECORDMETADATA") == true, "\(String(describing: missing))")
        try Self.addMirroring(to: destination, entities: (16004, 16005), rows: "")
        let stray = #expect(throws: MigrationError.self) { try MigrationPlan.infer(source: source, destination: destination) }
        #expect(
            stray?.message.contains("ANSCKRECORDMETADATA holds 1 rows for objects of entities the destination model does not have") == true,
            "\(String(describing: stray))")
    }
}
