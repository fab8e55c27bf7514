import Foundation
import Testing
@testable import ChunkMigrate

/// One job from any version of a model to a later one: the app's whole model history.
@Suite("Core Data: any old version to the current one")
struct CoreDataVersionPathTests {
    /// Writes an `.xcdatamodeld` with one version per XML `<entity>` list, named `Model`, `Model 2`, ...
    static func bundle(_ versions: [String], in folder: TemporaryFolder) throws -> URL {
        let bundle = folder.path("Model.xcdatamodeld")
        for (index, entities) in versions.enumerated() {
            let name = index == 0 ? "Model" : "Model \(index + 1)"
            let version = bundle.appendingPathComponent("\(name).xcdatamodel")
            try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
            let xml = """
                <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
                <model type="com.apple.IDECoreDataModeler.DataModel" userDefinedModelVersionIdentifier="v\(index + 1)">
                \(entities)
                </model>
                """
            try Data(xml.utf8).write(to: version.appendingPathComponent("contents"))
        }
        return bundle
    }

    /// v1: Item.a. v2: a renamed b, count added (default 5), note optional. v3: b renamed c,
    /// count's default now 7, note required with default "none", Tag added.
    static let versions = [
        """
        <entity name="Item"><attribute name="a" optional="YES" attributeType="String"/><attribute name="note" optional="YES" attributeType="String"/></entity>
        """,
        """
        <entity name="Item"><attribute name="b" optional="YES" attributeType="String" elementID="a"/>
            <attribute name="count" optional="YES" attributeType="Integer 32" defaultValueString="5"/>
            <attribute name="note" optional="YES" attributeType="String"/></entity>
        """,
        """
        <entity name="Item"><attribute name="c" optional="YES" attributeType="String" elementID="b"/>
            <attribute name="count" optional="YES" attributeType="Integer 32" defaultValueString="7"/>
            <attribute name="note" attributeType="String" defaultValueString="none"/></entity>
        <entity name="Tag"><attribute name="name" optional="YES" attributeType="String"/></entity>
        """,
    ]

    @Test(
        "a property renamed through a chain of renaming identifiers keeps its values from the oldest version to the newest; a property added on the way takes the newest version's default, as Core Data's inference straight to it writes; NULLs take the default where the newest version makes it required"
    )
    func chainOfRenames() throws {
        let folder = try TemporaryFolder()
        // The first version, named after the model without a number, has no place its name
        // tells: the order is given.
        let bundle = try CoreDataModelBundle.read(contentsOf: try Self.bundle(Self.versions, in: folder)).ordered([
            "Model", "Model 2", "Model 3",
        ])
        #expect(bundle.versions.map(\.name) == ["Model", "Model 2", "Model 3"] && bundle.current == "Model 3")
        let source = try CoreDataTesting.store(
            bundle.versions[0].model, at: folder.path("v1.sqlite"), uuid: "E0000000-0000-0000-0000-000000000001",
            metadata: [:], rows: "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZA, ZNOTE) VALUES (1, 1, 1, 'x', NULL), (4, 1, 1, 'y', 'kept')")
        let destination = try CoreDataTesting.store(
            bundle.versions[2].model, at: folder.path("v3.sqlite"), uuid: "E0000000-0000-0000-0000-000000000003")
        // Between the two models alone, c is new: its values would be lost.
        let direct = try MigrationPlan.infer(source: source, destination: destination)
        #expect(direct.plan.entities.first { $0.name == "Item" }?.columns["ZC"] == nil)

        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, options: InferenceOptions(modelBundle: bundle))
        #expect(inferred.decisions.contains("source store: version Model (its entity version hashes)"), "\(inferred.decisions)")
        #expect(
            inferred.decisions.contains(
                "Item.c: from Item.a through the versions between (a in Model, b from Model 2, c from Model 3); Core Data's inference from Model straight to Model 3 leaves it new"
            ),
            "\(inferred.decisions)")
        // count: Core Data's migration from Model straight to Model 3 writes Model 3's default.
        #expect(
            try Database(path: destination.path, mode: .source).rows("SELECT Z_PK, ZC, ZCOUNT, ZNOTE FROM ZITEM ORDER BY Z_PK")
                == [[.integer(1), .text("x"), .integer(7), .text("none")], [.integer(4), .text("y"), .integer(7), .text("kept")]])
    }

    @Test(
        "a store's version: the one whose entity version hashes are its own, with or without a model cache or identifiers (the oldest of versions alike); a newer source is refused"
    )
    func versionOfAStore() throws {
        let folder = try TemporaryFolder()
        // Versions 2 and 3 alike but for a version identifier the store does not carry.
        let versions = [Self.versions[0], Self.versions[1], Self.versions[1]]
        let bundle = try CoreDataModelBundle.read(contentsOf: try Self.bundle(versions, in: folder)).ordered([
            "Model", "Model 2", "Model 3",
        ])
        let store = folder.path("s.sqlite")
        try CoreDataEmptyStore.create(
            at: store, model: CoreDataModel(entities: bundle.versions[1].model.entities, versionIdentifiers: ["v1"]))
        try Database(path: store.path, mode: .readWrite).execute("DELETE FROM Z_MODELCACHE")
        let found = try bundle.version(ofStoreAt: store)
        #expect(
            found.version.name == "Model 2" && found.evidence == .hashes && found.alike == ["Model 3"]
                && found.how == "its entity version hashes; alike: Model 3")

        let old = try CoreDataTesting.store(
            bundle.versions[0].model, at: folder.path("v1.sqlite"), uuid: "E0000000-0000-0000-0000-000000000004")
        let error = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: store, destination: old, options: InferenceOptions(modelBundle: bundle))
        }
        #expect(
            error?.message.contains("the source store is at version Model 2, newer than the destination's Model") == true,
            "\(String(describing: error))")
        #expect(
            CoreDataModelBundle.order("zmessaging2.10", "zmessaging2.100.0") && CoreDataModelBundle.order("zmessaging", "zmessaging1.27")
                && CoreDataModelBundle.order("Model 2", "Model 10") && !CoreDataModelBundle.order("zmessaging2.21.1", "zmessaging2.21.0"))
    }

    @Test(
        "over several versions: one type conversion from the first version's type to the last's, renames that apply nowhere refused, versions of unknown order refused, a compiled .momd read"
    )
    func pathDetails() throws {
        let folder = try TemporaryFolder()
        let versions = [
            #"<entity name="Item"><attribute name="size" optional="YES" attributeType="Double"/></entity>"#,
            #"<entity name="Item"><attribute name="size" optional="YES" attributeType="Integer 64"/></entity>"#,
            #"<entity name="Item"><attribute name="size" optional="YES" attributeType="Double"/></entity>"#,
        ]
        let bundle = try CoreDataModelBundle.read(contentsOf: try Self.bundle(versions, in: folder)).ordered([
            "Model", "Model 2", "Model 3",
        ])
        let source = try CoreDataTesting.store(
            bundle.versions[0].model, at: folder.path("v1.sqlite"), uuid: "E0000000-0000-0000-0000-000000000011",
            rows: "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZSIZE) VALUES (1, 1, 1, 2.7)")
        let destination = try CoreDataTesting.store(
            bundle.versions[2].model, at: folder.path("v3.sqlite"), uuid: "E0000000-0000-0000-0000-000000000012")
        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, options: InferenceOptions(modelBundle: bundle))
        // Versions 1 and 3 hash alike (one model to Core Data): the source takes the first, the
        // destination the current.
        #expect(
            inferred.decisions.prefix(2) == [
                "source store: version Model (its entity version hashes; alike: Model 3)",
                "destination store: version Model 3 (its entity version hashes; alike: Model)",
            ])
        // A Double in Model and Model 3: Core Data's migration straight from one to the other
        // keeps the fraction that Model 2 (an Integer 64) would have cut.
        #expect(!inferred.decisions.contains { $0.hasPrefix("ZSIZE") }, "\(inferred.decisions)")
        #expect(try Database(path: destination.path, mode: .source).scalar("SELECT ZSIZE FROM ZITEM") == .real(2.7))

        let renamed = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(
                source: source, destination: destination, options: InferenceOptions(renames: ["Itme": "Item"], modelBundle: bundle))
        }
        #expect(renamed?.message == "renames: no version from Model to Model 3 has an entity Itme where the version before has Item")

        // A compiled bundle: .mom archives and VersionInfo.plist.
        let momd = folder.path("Model.momd")
        try FileManager.default.createDirectory(at: momd, withIntermediateDirectories: true)
        for version in bundle.versions { try Data(version.model.archived()).write(to: momd.appendingPathComponent("\(version.name).mom")) }
        try PropertyListSerialization.data(
            fromPropertyList: ["NSManagedObjectModel_CurrentVersionName": "Model 2"], format: .xml, options: 0
        )
        .write(to: momd.appendingPathComponent("VersionInfo.plist"))
        let compiled = try CoreDataModelBundle.read(contentsOf: momd)
        #expect(compiled.versions.map(\.name) == ["Model", "Model 2", "Model 3"] && compiled.current == "Model 2")
        #expect(
            compiled.versions.map { CoreDataModelBundle.signature($0.model) }
                == bundle.versions.map { CoreDataModelBundle.signature($0.model) })
    }

    @Test(
        "a current version whose name has dots (XCServerCoreData2.0.2) is that version, named by a compiled bundle's VersionInfo.plist or by .xccurrentversion; it was cut at its last dot and refused"
    )
    func currentVersionWithDots() throws {
        let folder = try TemporaryFolder()
        let models = try ["2.0.1", "2.0.2", "2.1"].map { _ in
            try CoreDataTesting.model(#"<entity name="Item"><attribute name="a" optional="YES" attributeType="String"/></entity>"#)
        }
        let momd = folder.path("XCServerCoreData.momd")
        try FileManager.default.createDirectory(at: momd, withIntermediateDirectories: true)
        for (name, model) in zip(["2.0.1", "2.0.2", "2.1"], models) {
            try Data(model.archived()).write(to: momd.appendingPathComponent("XCServerCoreData\(name).mom"))
        }
        try PropertyListSerialization.data(
            fromPropertyList: ["NSManagedObjectModel_CurrentVersionName": "XCServerCoreData2.0.2"], format: .xml, options: 0
        )
        .write(to: momd.appendingPathComponent("VersionInfo.plist"))
        #expect(try CoreDataModelBundle.read(contentsOf: momd).current == "XCServerCoreData2.0.2")

        let source = folder.path("XCServerCoreData.xcdatamodeld")
        for name in ["2.0.1", "2.0.2", "2.1"] {
            let version = source.appendingPathComponent("XCServerCoreData\(name).xcdatamodel")
            try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
            try Data(#"<model><entity name="Item"/></model>"#.utf8).write(to: version.appendingPathComponent("contents"))
        }
        try PropertyListSerialization.data(
            fromPropertyList: ["_XCCurrentVersionName": "XCServerCoreData2.0.2.xcdatamodel"], format: .xml, options: 0
        )
        .write(to: source.appendingPathComponent(".xccurrentversion"))
        #expect(try CoreDataModelBundle.read(contentsOf: source).current == "XCServerCoreData2.0.2")
    }

    @Test(
        "the Messenger store at 2.6 straight to 2.101.0 in one job: what Core Data's inference from 2.6 straight to 2.101.0 gives, and the values of the properties renamed on the way, which the versions between tell",
        .enabled(if: CoreDataOracleTests.present, "shared/fixtures/coredata is absent"))
    func messengerWholePath() throws {
        let folder = try TemporaryFolder()
        let bundleURL = try #require(CoreDataStoreTests.fixture("Messenger/zmessaging.xcdatamodeld"))
        let bundle = try CoreDataModelBundle.read(contentsOf: bundleURL)
        #expect(bundle.versions.count == 90 && bundle.current == "zmessaging2.101.0")
        let source = try CoreDataModelTests.copy("Messenger/store2-6.wiredatabase", into: folder)
        // A muted conversation (this copy only): 2.53 renamed isSilenced mutedStatus.
        try Database(path: source.path, mode: .readWrite).execute("UPDATE ZCONVERSATION SET ZISSILENCED = 1 WHERE Z_PK = 2")
        let coreData = try CoreDataModelTests.copy("Messenger/store2-101-0.wiredatabase", into: folder)
        let destination = try CoreDataTesting.emptiedCopy(of: coreData, named: "direct.sqlite", in: folder)
        try CoreDataTesting.provideExternalFiles(for: source)
        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, journal: "direct", batchSize: 7,
            options: InferenceOptions(modelBundle: bundle))
        let pathLine =
            "path: zmessaging2.6 -> zmessaging2.7 -> zmessaging2.8 -> ... -> zmessaging2.100.0 -> zmessaging2.101.0, 83 steps in one job: inferred from zmessaging2.6 straight to zmessaging2.101.0, as Core Data does, the versions between read for renames on the way"
        let muted =
            "Conversation.mutedStatus: from Conversation.isSilenced through the versions between (isSilenced in zmessaging2.6, mutedStatus from zmessaging2.54.0); Core Data's inference from zmessaging2.6 straight to zmessaging2.101.0 leaves it new"
        #expect(inferred.decisions.contains(pathLine) && inferred.decisions.contains(muted), "\(inferred.decisions)")
        let before = try Database(path: source.path, mode: .source), after = try Database(path: destination.path, mode: .source)
        #expect(
            try after.rows("SELECT Z_PK, ZMUTEDSTATUS FROM ZCONVERSATION ORDER BY Z_PK")
                == (try before.rows("SELECT Z_PK, ZISSILENCED FROM ZCONVERSATION ORDER BY Z_PK")))
        // Every object of the source is there.
        for table in ["ZCONVERSATION", "ZMESSAGE", "ZUSER", "ZUSERCLIENT"] {
            #expect(try after.scalar("SELECT count(*) FROM \(table)") == (try before.scalar("SELECT count(*) FROM \(table)")), "\(table)")
        }
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])

        // Core Data's inference from 2.6 straight to 2.101.0, the two models alone: the same
        // store but for mutedStatus, new there (its default, 0).
        let path = try #require(bundle.path(from: "zmessaging2.6", to: "zmessaging2.101.0"))
        let alone = try CoreDataTesting.emptiedCopy(of: coreData, named: "alone.sqlite", in: folder)
        let straight = try CoreDataMigrationTests.migrate(
            source, into: alone, folder: folder, journal: "alone", batchSize: 1000,
            options: InferenceOptions(sourceModel: path.first!.model, destinationModel: path.last!.model))
        #expect(
            Set(inferred.decisions).symmetricDifference(straight.decisions)
                == [
                    pathLine, muted, "source store: version zmessaging2.6 (its entity version hashes)",
                    "destination store: version zmessaging2.101.0 (its entity version hashes)",
                    "ZMUTEDSTATUS: new in Conversation, takes the default 0",
                ])
        #expect(
            try Database(path: alone.path, mode: .source).scalar("SELECT count(*) FROM ZCONVERSATION WHERE ZMUTEDSTATUS <> 0")
                == .integer(0))
        try Database(path: destination.path, mode: .readWrite).execute("UPDATE ZCONVERSATION SET ZMUTEDSTATUS = 0")
        var withVersions = try CoreDataTesting.contents(destination), twoModels = try CoreDataTesting.contents(alone)
        for table in ["Z_METADATA", "(triggers)"] { withVersions[table] = nil; twoModels[table] = nil }
        #expect(CoreDataTesting.difference(withVersions, twoModels) == nil)
    }
}

/// Custom steps composed with the inferred ones into one job.
@Suite("Core Data: custom steps in a whole path")
struct CoreDataStepTests {
    static let progressive = "ProgressiveMigration/CoreDataMigration_Example.xcdatamodeld"
    static let splitName = "SplitName/MWKCoreDataTests.xcdatamodeld"
    static var present: Bool { CoreDataStoreTests.fixture(progressive) != nil && CoreDataStoreTests.fixture(splitName) != nil }
    /// ProgressiveMigration's versions, oldest first: the first, named after the model, has no
    /// number to tell its place, and steps need the order.
    static let progressiveOrder = [
        "CoreDataMigration_Example", "CoreDataMigration_Example 2", "CoreDataMigration_Example 3", "CoreDataMigration_Example 4",
    ]

    /// ProgressiveMigration's 2 -> 3 mapping model and policy as a step: one Section per Post, its
    /// body the post's content, its title the first 4 characters and "...", index 0.
    static let sections = CoreDataStep(
        from: "CoreDataMigration_Example 2", to: "CoreDataMigration_Example 3",
        entities: [
            EntityMapping(
                name: "Section", source: .init(table: "ZPOST", key: "Z_PK"), destination: .init(table: "ZSECTION", key: "Z_PK"),
                keys: .allocate,
                columns: [
                    "Z_ENT": "coredata_entity_number('Section')", "Z_OPT": "1", "ZBODY": "ZCONTENT",
                    "ZTITLE": "substr(ZCONTENT, 1, 4) || '...'", "ZINDEX": "0",
                ],
                relationships: ["ZPOST": .init(from: "Z_PK", to: "Post")])
        ])

    /// An empty store of `version` of the bundle at `name`.
    static func emptyStore(_ bundle: CoreDataModelBundle, version: String, at url: URL) throws -> URL {
        try CoreDataEmptyStore.create(at: url, model: try #require(bundle.version(named: version)).model)
        return url
    }

    @Test(
        "ProgressiveMigration: version 1 straight to 4 in one job, through the 2 -> 3 step, paused after every batch: 10 posts with their colours, 10 sections, the new Boolean at its default",
        .enabled(if: present, "shared/fixtures/coredata is absent"))
    func progressiveMigration() throws {
        let folder = try TemporaryFolder()
        let bundle = try CoreDataModelBundle.read(contentsOf: try #require(CoreDataStoreTests.fixture(Self.progressive))).ordered(
            Self.progressiveOrder)
        let source = try CoreDataModelTests.copy("ProgressiveMigration/CoreDataMigration_Example_1.sqlite", into: folder)
        let destination = try Self.emptyStore(bundle, version: "CoreDataMigration_Example 4", at: folder.path("v4.sqlite"))
        var options = InferenceOptions(modelBundle: bundle)
        options.steps = [Self.sections]
        let inferred = try MigrationPlan.infer(source: source, destination: destination, options: options)
        #expect(
            inferred.decisions.prefix(3) == [
                "source store: version CoreDataMigration_Example", "destination store: version CoreDataMigration_Example 4",
                "path: CoreDataMigration_Example -> CoreDataMigration_Example 4, 3 steps, 3 parts composed into one job",
            ])
        #expect(inferred.plan.entities.map(\.name) == ["Post", "Section"])
        // Numbers written out and composed: Section's Z_ENT a number, Post's title from v1's content.
        #expect(
            inferred.plan.entities[1].columns["Z_ENT"] == "2"
                && inferred.plan.entities[1].columns["ZTITLE"] == "(substr(ZCONTENT, 1, 4) || '...')")

        _ = try MigrationJob.start(
            plan: inferred.plan, source: source, destination: destination, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 1), logger: quietLogger)
        var runs = 0
        while try MigrationJob.resume(at: folder.path("journal"), options: MigrationOptions(batchSize: 1), logger: quietLogger)
            .runBlocking(for: .zero) == .paused
        { runs += 1 }
        #expect(runs >= 20)

        let database = try Database(path: destination.path, mode: .source)
        #expect(try database.scalar("SELECT count(*) FROM ZPOST") == .integer(10))
        #expect(try database.scalar("SELECT ZHEXCOLOR FROM ZPOST WHERE ZPOSTID LIKE 'FFFECB21-%'") == .text("1BB732"))
        #expect(try database.scalar("SELECT count(*) FROM ZPOST WHERE ZSOFTDELETED = 0") == .integer(10))
        let old = try Database(path: source.path, mode: .source)
        let expected = try old.rows("SELECT ZPOSTID, ZCONTENT, substr(ZCONTENT, 1, 4) || '...' FROM ZPOST ORDER BY ZPOSTID")
        let sections = try database.rows(
            """
            SELECT p.ZPOSTID, s.ZBODY, s.ZTITLE FROM ZSECTION s JOIN ZPOST p ON p.Z_PK = s.ZPOST WHERE s.ZINDEX = 0 AND s.Z_ENT = 2 ORDER BY p.ZPOSTID
            """)
        #expect(sections == expected && sections.count == 10)
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
    }

    @Test(
        "SplitName: the name split by a step, the department added before it: Adam/Smith/Marketing, Bob/Johnson/Shipping, Carla/Jones/Engineering; from version 1 the same names, no departments",
        .enabled(if: present, "shared/fixtures/coredata is absent"))
    func splitName() throws {
        let folder = try TemporaryFolder()
        let bundle = try CoreDataModelBundle.read(contentsOf: try #require(CoreDataStoreTests.fixture(Self.splitName))).ordered([
            "MWKCoreDataTests", "MWKCoreDataTests2", "MWKCoreDataTests3",
        ])
        let step = CoreDataStep(
            from: "MWKCoreDataTests2", to: "MWKCoreDataTests3",
            entities: [
                EntityMapping(
                    name: "Employee", source: .init(table: "ZEMPLOYEE", key: "Z_PK"), destination: .init(table: "ZEMPLOYEE", key: "Z_PK"),
                    keys: .preserve,
                    columns: [
                        "Z_ENT": "coredata_entity_number('Employee')", "Z_OPT": "Z_OPT", "ZDEPT": "ZDEPT",
                        "ZFIRSTNAME": "substr(ZNAME, 1, instr(ZNAME, ' ') - 1)", "ZLASTNAME": "substr(ZNAME, instr(ZNAME, ' ') + 1)",
                    ])
            ])
        var options = InferenceOptions(modelBundle: bundle)
        options.steps = [step]
        for (store, departments) in [
            ("SplitName/MWKCoreDataTests2.sqlite", ["Marketing", "Shipping", "Engineering"]),
            ("SplitName/MWKCoreDataTests.sqlite", [nil, nil, nil]),
        ] {
            let source = try CoreDataModelTests.copy(store, into: folder)
            let destination = try Self.emptyStore(bundle, version: "MWKCoreDataTests3", at: folder.path("v3-\(source.lastPathComponent)"))
            let inferred = try CoreDataMigrationTests.migrate(
                source, into: destination, folder: folder, journal: "journal-" + source.lastPathComponent, options: options)
            #expect(
                inferred.decisions.contains { $0.contains("source store: version \(source.deletingPathExtension().lastPathComponent)") })
            let rows = try Database(path: destination.path, mode: .source).rows(
                "SELECT e.ZFIRSTNAME, e.ZLASTNAME, d.ZNAME FROM ZEMPLOYEE e LEFT JOIN ZDEPT d ON d.Z_PK = e.ZDEPT ORDER BY 1")
            #expect(
                rows
                    == zip(["Adam", "Bob", "Carla"], zip(["Smith", "Johnson", "Jones"], departments)).map {
                        [.text($0.0), .text($0.1.0), $0.1.1.map(SQLiteValue.text) ?? .null]
                    })
            #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
        }
    }

    @Test(
        "a step that reads the keys of rows an earlier step gives new keys is refused, naming the step, the entity and the column",
        .enabled(if: present, "shared/fixtures/coredata is absent"))
    func compositionRefused() throws {
        let folder = try TemporaryFolder()
        let bundle = try CoreDataModelBundle.read(contentsOf: try #require(CoreDataStoreTests.fixture(Self.progressive))).ordered(
            Self.progressiveOrder)
        let source = try CoreDataModelTests.copy("ProgressiveMigration/CoreDataMigration_Example_1.sqlite", into: folder)
        let destination = try Self.emptyStore(bundle, version: "CoreDataMigration_Example 4", at: folder.path("v4.sqlite"))
        let renumbered = CoreDataStep(
            from: "CoreDataMigration_Example", to: "CoreDataMigration_Example 2",
            entities: [
                EntityMapping(
                    name: "Post", source: .init(table: "ZPOST", key: "Z_PK"), destination: .init(table: "ZPOST", key: "Z_PK"),
                    keys: .allocate,
                    columns: ["Z_ENT": "coredata_entity_number('Post')", "Z_OPT": "1", "ZHEXCOLOR": "ZCOLOR", "ZCONTENT": "ZCONTENT"])
            ])
        // Keys given anew by the first step: a relationship to the posts still resolves through
        // their ID map, a column reading the old key cannot.
        var options = InferenceOptions(modelBundle: bundle)
        options.steps = [renumbered, Self.sections]
        let composed = try MigrationPlan.infer(source: source, destination: destination, options: options)
        #expect(composed.plan.entities.first { $0.name == "Section" }?.relationships["ZPOST"] == .init(from: "Z_PK", to: "Post"))
        var indexed = Self.sections
        indexed.entities[0].columns["ZINDEX"] = "Z_PK"
        options.steps = [renumbered, indexed]
        let error = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: options)
        }
        #expect(
            error?.message
                == "step CoreDataMigration_Example 2 -> CoreDataMigration_Example 3 cannot be composed with the steps before it: Section.ZINDEX: it reads the key of ZPOST, which Post gives new keys before (the source store is at version CoreDataMigration_Example, the destination's CoreDataMigration_Example 4)",
            "\(String(describing: error))")

        // A step that names what its versions do not have is refused before anything runs.
        var typo = Self.sections
        typo.entities[0].destination.table = "ZSECTON"
        options.steps = [typo]
        let wrongTable = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: options)
        }
        #expect(
            wrongTable?.message
                == "step CoreDataMigration_Example 2 -> CoreDataMigration_Example 3: entities[0].destination.table: version CoreDataMigration_Example 3 has no table ZSECTON (the source store is at version CoreDataMigration_Example, the destination's CoreDataMigration_Example 4)"
        )
        typo = Self.sections
        typo.entities[0].columns["ZBODY"] = "ZCONTENTS"
        options.steps = [typo]
        let wrongColumn = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: options)
        }
        #expect(
            wrongColumn?.message.hasPrefix(
                "step CoreDataMigration_Example 2 -> CoreDataMigration_Example 3: entities[0].columns.ZBODY: SQLite rejects \"ZCONTENTS\"")
                == true,
            "\(String(describing: wrongColumn))")
        // A step off the path of this store is not its concern; one across its end is refused.
        options.steps = [Self.sections]
        options.sourceVersion = "CoreDataMigration_Example 3"
        let v3 = try Self.emptyStore(bundle, version: "CoreDataMigration_Example 3", at: folder.path("v3.sqlite"))
        #expect(throws: Never.self) { try MigrationPlan.infer(source: v3, destination: destination, options: options) }
        options.sourceVersion = nil
        var long = Self.sections
        long.to = "CoreDataMigration_Example 4"
        options.steps = [long]
        let across = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: v3, options: options)
        }
        #expect(across?.message.contains("goes across an end of the path") == true, "\(String(describing: across))")
    }

    @Test("through a step: derived attributes of any version computed, a required attribute added after the step without a default refused")
    func derivedAndRequiredThroughAStep() throws {
        let folder = try TemporaryFolder()
        let versions = [
            #"<entity name="Item"><attribute name="name" optional="YES" attributeType="String"/></entity>"#,
            #"<entity name="Item"><attribute name="loud" optional="YES" attributeType="String" derived="YES" derivationExpression="uppercase:(name)"/><attribute name="name" optional="YES" attributeType="String"/></entity>"#,
            #"<entity name="Item"><attribute name="loud" optional="YES" attributeType="String" derived="YES" derivationExpression="uppercase:(title)"/><attribute name="title" optional="YES" attributeType="String"/></entity>"#,
            #"<entity name="Item"><attribute name="loud" optional="YES" attributeType="String" derived="YES" derivationExpression="uppercase:(title)"/><attribute name="title" optional="YES" attributeType="String"/><attribute name="code" attributeType="String"/></entity>"#,
        ]
        let bundle = try CoreDataModelBundle.read(contentsOf: try CoreDataVersionPathTests.bundle(versions, in: folder)).ordered([
            "Model", "Model 2", "Model 3", "Model 4",
        ])
        let source = try CoreDataTesting.store(
            bundle.versions[0].model, at: folder.path("v1.sqlite"), uuid: "E0000000-0000-0000-0000-000000000021",
            rows: "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 1, 1, 'ab'), (2, 1, 1, 'cd')")
        let step = CoreDataStep(
            from: "Model 2", to: "Model 3",
            entities: [
                EntityMapping(
                    name: "Item", source: .init(table: "ZITEM", key: "Z_PK"), destination: .init(table: "ZITEM", key: "Z_PK"),
                    keys: .preserve,
                    columns: ["Z_ENT": "coredata_entity_number('Item')", "Z_OPT": "Z_OPT", "ZTITLE": "ZNAME || '!'"])
            ])
        var options = InferenceOptions(modelBundle: bundle)
        options.steps = [step]
        let v3 = try CoreDataTesting.store(
            bundle.versions[2].model, at: folder.path("v3.sqlite"), uuid: "E0000000-0000-0000-0000-000000000023")
        let inferred = try CoreDataMigrationTests.migrate(source, into: v3, folder: folder, options: options)
        #expect(inferred.plan.coreData?.derived.map(\.attribute) == ["Item.loud"])
        #expect(
            try Database(path: v3.path, mode: .source).rows("SELECT ZTITLE, ZLOUD FROM ZITEM ORDER BY Z_PK")
                == [[.text("ab!"), .text("AB!")], [.text("cd!"), .text("CD!")]])

        let v4 = try CoreDataTesting.store(
            bundle.versions[3].model, at: folder.path("v4.sqlite"), uuid: "E0000000-0000-0000-0000-000000000024")
        let error = #expect(throws: MigrationError.self) { try MigrationPlan.infer(source: source, destination: v4, options: options) }
        #expect(
            error?.message
                == "attribute Item.code is required and no step on the path gives it a value (no default where it was added), and 2 rows of the source become Item: give it a default in the model, or a value in a step (the source store is at version \(bundle.versions[0].name), the destination's \(bundle.versions[3].name))",
            "\(String(describing: error))")
    }

    @Test("identifiers of an expression: strings, quoted names, qualifiers and functions left alone where they must be")
    func identifiers() throws {
        let out = try SQLIdentifiers.replacing(in: #"substr(ZNAME, 1, 4) || 'ZNAME''s' || "ZNAME" || s.ZNAME || t.ZNAME || 1e3 || ZNAME2"#)
        { name, qualifier in
            name == "ZNAME" && (qualifier == nil || qualifier == "s") ? "(x)" : nil
        }
        #expect(out == #"substr((x), 1, 4) || 'ZNAME''s' || (x) || (x) || t.ZNAME || 1e3 || ZNAME2"#)
        #expect(CoreDataStepComposition.folded("(CASE (2) WHEN 1 THEN 1 WHEN 2 THEN 3 END)") == "3")
        // Entity numbers written out whatever the spelling; a call left over is refused.
        let model = try CoreDataTesting.model(#"<entity name="A"/><entity name="B"/>"#)
        let plan = MigrationPlan(
            entities: [
                EntityMapping(
                    name: "A", source: .init(table: "ZA"), destination: .init(table: "ZA"),
                    columns: ["Z_ENT": "COREDATA_ENTITY(ifnull(Z_ENT, 1))", "ZB": #"coredata_entity_number( "B" )"#])
            ],
            coreData: CoreDataMapping(entities: ["A": "A", "B": "B"]))
        // Numbers that do not change are left as they are; others mapped by name.
        #expect(
            try CoreDataStepComposition.entityNumbersWrittenOut(plan, from: model, to: model, step: nil).entities[0].columns
                == ["Z_ENT": "(ifnull(Z_ENT, 1))", "ZB": "2"])
        let shifted = try CoreDataTesting.model(#"<entity name="A"/><entity name="AA"/><entity name="B"/>"#)
        #expect(
            try CoreDataStepComposition.entityNumbersWrittenOut(plan, from: model, to: shifted, step: nil).entities[0].columns
                == ["Z_ENT": "(CASE ifnull(Z_ENT, 1) WHEN 1 THEN 1 WHEN 2 THEN 3 END)", "ZB": "3"])
        var leftover = plan
        leftover.entities[0].columns["ZB"] = "coredata_entity_number(B)"
        #expect(throws: MigrationError.self) {
            try CoreDataStepComposition.entityNumbersWrittenOut(leftover, from: model, to: model, step: nil)
        }
    }
}
