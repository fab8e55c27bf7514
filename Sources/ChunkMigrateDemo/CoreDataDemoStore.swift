import ChunkMigrate
import Foundation

/// A generated pair of Core Data stores: `old.sqlite`, full, at "model N", and `new.sqlite`, empty,
/// as Core Data creates it for "model N+1", whose entity numbers are all shifted by a new entity.
///
/// Both stores are written from their models (``sourceModelXML``, ``destinationModelXML``) by
/// ``CoreDataEmptyStore``, so the layout is the one Core Data derives (compare the real stores in
/// `shared/fixtures/coredata`): `Z_PRIMARYKEY`, `Z_METADATA` with a binary property list,
/// `Z_MODELCACHE` holding the model, one table per root entity holding its whole inheritance
/// tree, `Z_ENT` in every row, a polymorphic to-one column `Z<n>_<REL>`, an ordered
/// relationship's `Z_FOK_<REL>` and a many-to-many join table `Z_<n><REL>`, a derived count kept
/// by Core Data's triggers (`Folder.itemCount`), and persistent history. The old store's
/// metadata carries a key of the app's own (``appMetadata``). Used by the Core Data tests,
/// `Tools/bench-coredata` and `Tools/kill-resume --core-data`.
///
/// ```swift
/// let files = try CoreDataDemoStore.generate(in: folder, rows: 100_000)
/// // files.old: 100,000 items with folders, links and tags; files.new: the empty model N+1 store
/// ```
package enum CoreDataDemoStore {
    /// The files ``generate(in:rows:)`` writes.
    package struct Files: Sendable {
        /// The store at model N, `old.sqlite`.
        package var old: URL
        /// The empty store at model N+1, `new.sqlite`.
        package var new: URL
        /// The two models as Xcode saves them: `old.xcdatamodel/contents`, `new.xcdatamodel/contents`.
        package var oldModel: URL
        package var newModel: URL
    }

    /// Model N (`old.sqlite`), as Xcode saves it: Folder and Tag are roots, Item is an abstract
    /// root whose sub-entities Link and Note share its table `ZITEM`; a folder keeps its items in
    /// order (`Z_FOK_FOLDER`) and counts them (`itemCount`, derived: `items.@count`), an item may
    /// link to another of either sub-entity (`Z2_LINKED`), and items and tags are many-to-many
    /// (`Z_2TAGS`).
    package static let sourceModelXML = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" userDefinedModelVersionIdentifier="N">
            <entity name="Folder">
                <attribute name="itemCount" optional="YES" attributeType="Integer 64" derived="YES" derivationExpression="items.@count" usesScalarValueType="YES"/>
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="children" optional="YES" toMany="YES" destinationEntity="Folder" inverseName="parent"/>
                <relationship name="items" optional="YES" toMany="YES" ordered="YES" destinationEntity="Item" inverseName="folder"/>
                <relationship name="parent" optional="YES" maxCount="1" destinationEntity="Folder" inverseName="children"/>
            </entity>
            <entity name="Item" isAbstract="YES">
                <attribute name="created" optional="YES" attributeType="Date"/>
                <attribute name="size" optional="YES" attributeType="Integer 64"/>
                <attribute name="title" optional="YES" attributeType="String"/>
                <relationship name="folder" optional="YES" maxCount="1" destinationEntity="Folder" inverseName="items"/>
                <relationship name="linked" optional="YES" maxCount="1" destinationEntity="Item"/>
                <relationship name="tags" optional="YES" toMany="YES" destinationEntity="Tag" inverseName="items"/>
            </entity>
            <entity name="Link" parentEntity="Item">
                <attribute name="url" optional="YES" attributeType="String"/>
            </entity>
            <entity name="Note" parentEntity="Item">
                <attribute name="body" optional="YES" attributeType="String"/>
            </entity>
            <entity name="Tag">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="items" optional="YES" toMany="YES" destinationEntity="Item" inverseName="tags"/>
            </entity>
        </model>
        """

    /// Model N+1 (`new.sqlite`): a new root, Account, takes number 1 and every other entity moves
    /// up by one (`Z3_LINKED`, `Z_3TAGS`); Item gains an optional `pinned`, and Tag a derived
    /// count of its items (`items.@count` over the many-to-many), which the migration computes.
    package static let destinationModelXML =
        sourceModelXML
        .replacingOccurrences(of: "userDefinedModelVersionIdentifier=\"N\"", with: "userDefinedModelVersionIdentifier=\"N+1\"")
        .replacingOccurrences(
            of: "    <entity name=\"Folder\">",
            with: """
                    <entity name="Account">
                        <attribute name="name" optional="YES" attributeType="String"/>
                    </entity>
                    <entity name="Folder">
                """
        )
        .replacingOccurrences(
            of: "<attribute name=\"created\" optional=\"YES\" attributeType=\"Date\"/>",
            with: """
                <attribute name="created" optional="YES" attributeType="Date"/>
                            <attribute name="pinned" optional="YES" attributeType="Boolean"/>
                """
        )
        .replacingOccurrences(
            of: "    <entity name=\"Tag\">",
            with: """
                    <entity name="Tag">
                        <attribute name="itemCount" optional="YES" attributeType="Integer 64" derived="YES" derivationExpression="items.@count" usesScalarValueType="YES"/>
                """)

    /// Model N.
    package static var sourceModel: CoreDataModel {
        get throws { try CoreDataModel(xml: Data(sourceModelXML.utf8), file: "CoreDataDemoStore.sourceModelXML") }
    }

    /// Model N+1.
    package static var destinationModel: CoreDataModel {
        get throws { try CoreDataModel(xml: Data(destinationModelXML.utf8), file: "CoreDataDemoStore.destinationModelXML") }
    }

    /// `Z_METADATA.Z_UUID` of `old.sqlite`, and the `NSStoreUUID` of its metadata: the store's
    /// identity, which object-ID URIs contain.
    package static let sourceUUID = "5C0DE0A1-1D2E-4F60-8A7B-0123456789AB"

    /// `Z_METADATA.Z_UUID` of `new.sqlite` as created, before any migration.
    package static let destinationUUID = "A7E5F00D-3B4C-4D5E-9F60-FEDCBA987654"

    /// A metadata key the app of the demo set on its store (`setMetadata`): a sync token, which
    /// belongs to the data and follows it into the migrated store.
    package static let appMetadata = ["SyncToken": "demo-sync-token-42"]

    /// What a store's file starts as: the page size and incremental auto-vacuum Core Data uses,
    /// no journal while the store is filled (a failed generation is simply run again).
    static let bulkSettings = """
        PRAGMA page_size = 4096; PRAGMA auto_vacuum = INCREMENTAL;
        PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
        """

    /// Writes `old.sqlite` with `rows` items and `new.sqlite` into `directory`, replacing them if
    /// they exist. The same arguments give the same rows and the same metadata bytes.
    ///
    /// `old.sqlite` holds `max(1, rows / 100)` folders (each a child of an earlier one or a root),
    /// `rows` items (Links and Notes alternating irregularly, keys with gaps as after deletes, one
    /// in fifty outside any folder, about two in three linked to another item, earlier or later,
    /// of either sub-entity), `min(1000, max(1, rows / 10))` tags and about 1.9 tags per item.
    /// Folder's `Z_MAX` is 5 above its largest key (its last folders were deleted). Its persistent
    /// history holds `max(1, rows / 1000)` transactions of ten changes each, the latest items'
    /// inserts and updates, as an app that prunes its history keeps it.
    /// - Parameters:
    ///   - directory: created if needed.
    ///   - rows: the number of items, at least 1.
    /// - Returns: the two stores' URLs.
    /// - Throws: `SQLiteError` if a store cannot be written, or an encoding error of the metadata.
    @discardableResult
    package static func generate(in directory: URL, rows: Int) throws -> Files {
        precondition(rows >= 1, "a Core Data demo store needs at least one item")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let files = Files(
            old: directory.appendingPathComponent("old.sqlite"),
            new: directory.appendingPathComponent("new.sqlite"),
            oldModel: directory.appendingPathComponent("old.xcdatamodel/contents"),
            newModel: directory.appendingPathComponent("new.xcdatamodel/contents"))
        for store in [files.old, files.new] {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                try? FileManager.default.removeItem(atPath: store.path + suffix)
            }
        }
        try writeSource(at: files.old, rows: rows)
        try writeDestination(at: files.new)
        for (url, xml) in [(files.oldModel, sourceModelXML), (files.newModel, destinationModelXML)] {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(xml.utf8).write(to: url)
        }
        return files
    }

    /// The key of the `i`th item (1-based): one key in five and three in thirty-seven left out,
    /// as after deletes. Strictly increasing in `i`, so the items' order is the keys' order.
    private static func itemKey(_ i: String) -> String { "(\(i) + \(i) / 5 + \(i) / 37 * 3)" }

    /// The entity number of the `i`th item: 3 (Link) or 4 (Note), in no regular pattern.
    private static func itemEntity(_ i: String) -> String {
        "(CASE WHEN (\(i) * 7) % 11 < 5 OR \(i) % 13 = 0 THEN 3 ELSE 4 END)"
    }

    private static func writeSource(at url: URL, rows: Int) throws {
        let folders = max(1, rows / 100)
        let tags = min(1000, max(1, rows / 10))
        let transactions = max(1, rows / 1000)
        let model = try sourceModel
        try CoreDataEmptyStore.create(at: url, model: model, uuid: sourceUUID, metadata: appMetadata, persistentHistory: true)
        let database = try Database(path: url.path, mode: .readWrite)
        // Core Data's triggers call functions of its own connections: the rows go in without
        // them, the derived count is computed as Core Data computes it, then they are back.
        let triggers = try database.rows("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name")
        let itemCount = try CoreDataDerivation(entity: "Folder", attribute: "itemCount", layout: try CoreDataLayout(model: model))
        // The indexes are built after the rows (it is faster), as Core Data's own would be there.
        let indexes = try database.rows("SELECT sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
            .compactMap { $0[0].text }
        let dropIndexes = try database.rows("SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
            .compactMap { $0[0].text }.map { "DROP INDEX \(SQL.quote($0));" }.joined(separator: "\n")
        // Items fill the folders block by block: within block b (items b*F+1 ... b*F+F) every
        // folder gets exactly one item, so (b + 1) is the item's position in its folder's ordered
        // relationship, whatever the folder count.
        try database.execute(
            """
            PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
            BEGIN;
            \(triggers.map { "DROP TRIGGER \(SQL.quote($0[0].text!));" }.joined(separator: "\n"))
            \(dropIndexes)
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(folders))
            INSERT INTO ZFOLDER (Z_PK, Z_ENT, Z_OPT, ZPARENT, ZNAME)
            SELECT i, 1, 1 + i % 3, CASE WHEN i % 5 = 1 THEN NULL ELSE 1 + (i * 7919) % (i - 1) END, 'Folder ' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows)),
            item(i, linked, block, slot) AS (
                SELECT i,
                       CASE WHEN i % 3 = 0 THEN NULL
                            WHEN i % 10 = 1 AND i + 17 <= \(rows) THEN i + 17
                            WHEN i > 1 THEN max(1, i - 1 - (i * 13) % 40)
                            ELSE NULL END,
                       (i - 1) / \(folders), (i - 1) % \(folders)
                FROM n)
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZFOLDER, Z_FOK_FOLDER, ZLINKED, Z2_LINKED, ZCREATED, ZSIZE, ZTITLE, ZURL, ZBODY)
            SELECT \(itemKey("i")), \(itemEntity("i")), 1 + i % 4,
                   CASE WHEN i % 50 = 7 THEN NULL
                        ELSE 1 + ((CASE WHEN block % 2 = 0 THEN slot ELSE \(folders) - 1 - slot END) + block * 7) % \(folders) END,
                   CASE WHEN i % 50 = 7 THEN NULL ELSE block + 1 END,
                   \(itemKey("linked")),
                   CASE WHEN linked IS NULL THEN NULL ELSE \(itemEntity("linked")) END,
                   600000000.0 + i * 0.25,
                   (i * 2654435761) % 1000000,
                   CASE \(itemEntity("i")) WHEN 3 THEN 'Link ' ELSE 'Note ' END || i,
                   CASE \(itemEntity("i")) WHEN 3 THEN 'https://example.com/items/' || i || '?ref=' || ((i * 7) % 1000) END,
                   CASE \(itemEntity("i")) WHEN 4 THEN substr('Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur.', 1 + (i * 13) % 60, 60 + (i * 31) % 120) END
            FROM item;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(tags))
            INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZNAME) SELECT i, 5, 1, 'tag ' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows)),
            second(s) AS (VALUES (0), (1))
            INSERT INTO Z_2TAGS (Z_2ITEMS, Z_5TAGS)
            SELECT \(itemKey("i")),
                   1 + CASE s WHEN 0 THEN (i * 31) % \(tags) ELSE ((i * 31) % \(tags) + 1 + i % \(max(1, tags - 1))) % \(tags) END
            FROM n, second
            WHERE s = 0 OR (i % 10 <> 0 AND \(tags) > 1)
            ORDER BY 1, 2;
            \(indexes.map { $0 + ";" }.joined(separator: "\n"))
            \(itemCount.dataStatement);
            INSERT INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 16003, 1, 'demo-app'), (2, 16003, 1, 'com.example.demo'),
                (3, 16003, 1, 'import'), (4, 16003, 1, '4242');
            WITH RECURSIVE n(t) AS (SELECT 1 UNION ALL SELECT t + 1 FROM n WHERE t < \(transactions))
            INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZTIMESTAMP)
            SELECT t, 16002, 1, 1, 2, 3, 4, 700000000.0 + t * 60 FROM n;
            WITH RECURSIVE n(c) AS (SELECT 0 UNION ALL SELECT c + 1 FROM n WHERE c < \(transactions * 10 - 1)),
            change(c, i) AS (SELECT c, max(1, \(rows) - \(transactions * 10) + 1 + c) FROM n)
            INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS)
            SELECT c + 1, 16001, 1, c % 3 = 2, \(itemEntity("i")), \(itemKey("i")), 1 + c / 10, CASE WHEN c % 3 = 2 THEN x'04' END FROM change;
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(transactions * 10) WHERE Z_ENT = 16001;
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(transactions) WHERE Z_ENT = 16002;
            UPDATE Z_PRIMARYKEY SET Z_MAX = 4 WHERE Z_ENT = 16003;
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(folders + 5) WHERE Z_NAME = 'Folder';
            UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ZITEM) WHERE Z_NAME = 'Item';
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(tags) WHERE Z_NAME = 'Tag';
            \(triggers.map { $0[1].text! + ";" }.joined(separator: "\n"))
            COMMIT;
            PRAGMA journal_mode = WAL;
            """)
    }

    private static func writeDestination(at url: URL) throws {
        try CoreDataEmptyStore.create(at: url, model: try destinationModel, uuid: destinationUUID, persistentHistory: true)
    }
}
