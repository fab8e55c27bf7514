import Foundation
import Testing
@testable import ChunkMigrate

/// A store's version found as Core Data finds it, by its entity version hashes, with or without
/// a model cache or identifiers; the order of versions only as far as their names tell it.
@Suite("Core Data: a store's version by its hashes")
struct CoreDataStoreVersionTests {
    /// A bundle of versions named `names`, each with the entities of `models`.
    static func bundle(_ names: [String], models: [String]? = nil, in folder: TemporaryFolder) throws -> CoreDataModelBundle {
        let url = folder.path("Names\(names.count)-\(UUID().uuidString.prefix(4)).xcdatamodeld")
        let models =
            models ?? names.map { _ in #"<entity name="Item"><attribute name="a" optional="YES" attributeType="String"/></entity>"# }
        for (name, entities) in zip(names, models) {
            let version = url.appendingPathComponent("\(name).xcdatamodel")
            try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
            try Data(
                """
                <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
                <model type="com.apple.IDECoreDataModeler.DataModel">\(entities)</model>
                """.utf8
            ).write(to: version.appendingPathComponent("contents"))
        }
        return try CoreDataModelBundle.read(contentsOf: url)
    }

    @Test(
        "the order of versions is what their names tell: numbers of one scheme compared as numbers; a name without a number, the first version named after the model, or a second scheme has no place"
    )
    func orderFromNames() throws {
        let folder = try TemporaryFolder()
        for (names, unordered) in [
            (["Model 1", "Model 2", "Model 10"], [String]()), (["Model", "Model 2", "Model 10"], ["Model"]),
            (["zmessaging", "zmessaging2.6", "zmessaging2.10", "zmessaging2.100.0"], ["zmessaging"]),
            (["SampleModel3", "SampleModel3_v2", "SampleModel3_v3"], ["SampleModel3"]), (["Model", "Modelv4"], ["Model"]),
            (["AddTags", "Initial"], ["AddTags", "Initial"]), (["Model 2", "Model_v3"], ["Model 2", "Model_v3"]), (["Only"], []),
        ] {
            let bundle = try Self.bundle(names, in: folder)
            #expect(bundle.unorderedVersions == unordered, "\(names)")
            #expect(try bundle.ordered(bundle.versions.map(\.name).reversed()).unorderedVersions == [])
        }
        let messenger = try Self.bundle(["zmessaging", "zmessaging2.6", "zmessaging2.10", "zmessaging2.100.0"], in: folder)
        #expect(
            messenger.isKnown("zmessaging2.10", before: "zmessaging2.100.0") == true
                && messenger.isKnown("zmessaging2.100.0", before: "zmessaging2.6") == false)
        #expect(messenger.isKnown("zmessaging", before: "zmessaging2.6") == nil)
        // No rename anywhere: where the unnumbered version lies changes nothing, and is not asked.
        #expect(
            try messenger.versions(from: "zmessaging2.6", to: "zmessaging2.100.0").map(\.name) == [
                "zmessaging2.6", "zmessaging2.10", "zmessaging2.100.0",
            ])
        #expect(try messenger.versions(from: "zmessaging", to: "zmessaging2.100.0").map(\.name) == ["zmessaging", "zmessaging2.100.0"])
        let newer = #expect(throws: MigrationError.self) { try messenger.versions(from: "zmessaging2.100.0", to: "zmessaging2.6") }
        #expect(newer?.message.contains("newer than the destination's zmessaging2.6") == true)
        let wrong = #expect(throws: MigrationError.self) { try messenger.ordered(["zmessaging2.6", "zmessaging"]) }
        #expect(wrong?.message.contains("it lacks zmessaging2.10, zmessaging2.100.0") == true, "\(String(describing: wrong))")
    }

    @Test(
        "where the order is needed (a rename recorded by a version whose place is unknown, which the destination's version does not record) and not given, the plan is refused naming the versions, the rename and --version-order; given, the values follow the renames"
    )
    func orderNeeded() throws {
        let folder = try TemporaryFolder()
        // Item.a, then b (from a), then c (from b): the chain of CoreDataVersionPathTests under
        // names that tell no order.
        let bundle = try Self.bundle(["Initial", "Renamed", "Final"], models: CoreDataVersionPathTests.versions, in: folder)
        let source = try CoreDataTesting.store(
            try #require(bundle.version(named: "Initial")).model, at: folder.path("old.sqlite"),
            uuid: "E0000000-0000-0000-0000-000000000031", rows: "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZA) VALUES (1, 1, 1, 'kept')")
        let destination = try CoreDataTesting.store(
            try #require(bundle.version(named: "Final")).model, at: folder.path("new.sqlite"),
            uuid: "E0000000-0000-0000-0000-000000000032")
        let refused = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(modelBundle: bundle))
        }
        #expect(
            refused?.message.hasPrefix(
                "the order of the model's versions is not known from their names or the app's mapping models (Final, Initial, Renamed have no place among the others), and version Renamed, which may lie between the source's Initial and the destination's Final, records renames that Final does not (Renamed: Item.b (from a)): following them needs the order; give it with --version-order"
            ) == true,
            "\(String(describing: refused))")

        let ordered = try bundle.ordered(["Initial", "Renamed", "Final"])
        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, options: InferenceOptions(modelBundle: ordered))
        #expect(inferred.decisions.contains("source store: version Initial (its entity version hashes)"))
        #expect(try Database(path: destination.path, mode: .source).scalar("SELECT ZC FROM ZITEM") == .text("kept"))
    }

    @Test(
        "where the app's mapping model (with a policy) starts at a version whose place is unknown (SampleModel2 beside an unnumbered SampleModel), the plan asks for the order naming the mapping model and its policy, where it went straight to the destination and left the policy's entity empty; given, the policy is refused by name, with the version the store is at"
    )
    func orderNeededForAMappingModel() throws {
        let folder = try TemporaryFolder()
        let car = #"<entity name="Car"><attribute name="maker" optional="YES" attributeType="String"/></entity>"#
        let withMaker =
            #"<entity name="Car"><relationship name="maker" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Maker" inverseName="cars" inverseEntity="Maker"/></entity><entity name="Maker"><attribute name="name" optional="YES" attributeType="String"/><relationship name="cars" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Car" inverseName="maker" inverseEntity="Car"/></entity>"#
        var bundle = try Self.bundle(
            ["SampleModel", "SampleModel2", "SampleModel3"], models: [car, car + #"<entity name="Note"/>"#, withMaker], in: folder)
        var carToCar = CoreDataMappingModelFile.EntityMapping(
            name: "CarToCar", kind: "Custom", source: "Car", destination: "Car", policy: "CarMigrationPolicy")
        carToCar.relationships = [.init(name: "maker", value: nil)]
        bundle.mappingModels = [
            CoreDataMappingModelFile(
                url: folder.path("V2toV3.cdm"), source: "SampleModel2", destination: "SampleModel3", entityMappings: [carToCar])
        ]
        #expect(bundle.unorderedVersions == ["SampleModel"])
        let source = try CoreDataTesting.store(
            try #require(bundle.version(named: "SampleModel")).model, at: folder.path("old.sqlite"),
            uuid: "E0000000-0000-0000-0000-000000000041", rows: "INSERT INTO ZCAR (Z_PK, Z_ENT, Z_OPT, ZMAKER) VALUES (1, 1, 1, 'Fiat')")
        let destination = try CoreDataTesting.store(
            try #require(bundle.version(named: "SampleModel3")).model, at: folder.path("new.sqlite"),
            uuid: "E0000000-0000-0000-0000-000000000042")
        let refused = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(modelBundle: bundle))
        }
        #expect(
            refused?.message
                == "the order of the model's versions is not known from their names or the app's mapping models (SampleModel has no place among the others), and the app's mapping model V2toV3.cdm (SampleModel2 -> SampleModel3, with policies CarMigrationPolicy (Car -> Car)) may lie on the way from the source's SampleModel to the destination's SampleModel3: whether it runs needs the order; give it with --version-order, every version oldest first (SampleModel,SampleModel2,SampleModel3)",
            "\(String(describing: refused))")
        let ordered = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(
                source: source, destination: destination,
                options: InferenceOptions(modelBundle: try bundle.ordered(["SampleModel", "SampleModel2", "SampleModel3"])))
        }
        #expect(
            ordered?.message.contains("with custom migration policies, the app's code") == true
                && ordered?.message.contains("CarMigrationPolicy (Car -> Car)") == true,
            "\(String(describing: ordered))")
        // Where the store stands on that path.
        #expect(
            ordered?.message.hasSuffix("(the source store is at version SampleModel, the destination's SampleModel3)") == true,
            "\(String(describing: ordered))")
    }

    @Test(
        "a store whose Z_PRIMARYKEY keeps an entity's name from before a rename (its metadata's hashes right) is its version, with --models, with or without a model cache, and migrates (Core Data reads Z_PRIMARYKEY by number); it was refused as fitting no version",
        arguments: [true, false])
    func staleEntityName(withModelCache: Bool) throws {
        let folder = try TemporaryFolder()
        let bundle = try Self.bundle(
            ["Model", "Model 2", "Model 3"],
            models: [
                #"<entity name="Note"><attribute name="a" optional="YES" attributeType="String"/></entity>"#,
                #"<entity name="Memo" elementID="Note"><attribute name="a" optional="YES" attributeType="String"/></entity>"#,
                #"<entity name="Memo" elementID="Note"><attribute name="a" optional="YES" attributeType="String"/><attribute name="b" optional="YES" attributeType="String"/></entity>"#,
            ], in: folder)
        let source = try CoreDataTesting.store(
            try #require(bundle.version(named: "Model 2")).model, at: folder.path("old.sqlite"),
            uuid: "E0000000-0000-0000-0000-000000000091",
            rows:
                "INSERT INTO ZMEMO (Z_PK, Z_ENT, Z_OPT, ZA) VALUES (1, 1, 1, 'x'); UPDATE Z_PRIMARYKEY SET Z_NAME = 'Note' WHERE Z_NAME = 'Memo'"
        )
        if !withModelCache { try Database(path: source.path, mode: .readWrite).execute("DELETE FROM Z_MODELCACHE") }
        let destination = try CoreDataTesting.store(
            try #require(bundle.version(named: "Model 3")).model, at: folder.path("new.sqlite"),
            uuid: "E0000000-0000-0000-0000-000000000092")
        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, options: InferenceOptions(modelBundle: bundle))
        #expect(inferred.decisions.first == "source store: version Model 2 (its entity version hashes)", "\(inferred.decisions)")
        #expect(
            try Database(path: destination.path, mode: .source).rows("SELECT Z_PK, ZA, ZB FROM ZMEMO") == [
                [.integer(1), .text("x"), .null]
            ])
    }

    @Test(
        "version-order from the command line: one list per bundle, applied to the bundle that holds its versions",
        .enabled(
            if: CoreDataStoreTests.fixture("ProgressiveMigration/CoreDataMigration_Example.xcdatamodeld") != nil,
            "shared/fixtures/coredata is absent"))
    func orderOption() throws {
        let url = try #require(CoreDataStoreTests.fixture("ProgressiveMigration/CoreDataMigration_Example.xcdatamodeld"))
        let names = [
            "CoreDataMigration_Example", "CoreDataMigration_Example 2", "CoreDataMigration_Example 3", "CoreDataMigration_Example 4",
        ]
        #expect(try CoreDataModelBundle.read(contentsOf: [url]).unorderedVersions == ["CoreDataMigration_Example"])
        let bundle = try CoreDataModelBundle.read(contentsOf: [url], orders: [names])
        #expect(bundle.isOrderGiven && bundle.unorderedVersions.isEmpty && bundle.versions.map(\.name) == names)
        #expect(throws: MigrationError.self) { try CoreDataModelBundle.read(contentsOf: [url], orders: [["Model", "Model 2"]]) }
    }

    // MARK: - Fixtures

    static let messengerStores = CoreDataVersionHashTests.stores.filter { $0.hasPrefix("Messenger/") }
    static let messenger: CoreDataModelBundle? = CoreDataStoreTests.fixture("Messenger/zmessaging.xcdatamodeld")
        .flatMap { try? CoreDataModelBundle.read(contentsOf: $0) }

    @Test(
        "every Messenger store's version found by its entity version hashes is the version its NSStoreModelVersionIdentifiers names, or one alike; the store written by a model the bundle does not hold is refused naming the nearest version and what differs",
        .enabled(if: CoreDataVersionHashTests.present, "shared/fixtures/coredata is absent"), arguments: messengerStores)
    func messengerStore(_ name: String) throws {
        let bundle = try #require(Self.messenger)
        let folder = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy(name, into: folder)
        let identifiers = try #require(
            try CoreDataMetadata.read(Database(path: store.path, mode: .source), file: name).plist?["NSStoreModelVersionIdentifiers"]
                as? [String])
        if CoreDataVersionHashTests.writtenByAnotherModel.contains(name) {
            let error = #expect(throws: MigrationError.self) { try bundle.version(ofStoreAt: store) }
            #expect(
                error?.message.hasPrefix(
                    "the store's entity version hashes match no version of the model bundle, and its schema is no version's layout: it was written by a model the bundle does not hold"
                ) == true, "\(String(describing: error))")
            #expect(
                error?.message.contains(
                    "nearest version zmessaging2.69.0: entity AssetClientMessage differs (isDownloading only in zmessaging2.69.0); entity Member differs"
                ) == true, "\(String(describing: error))")
            #expect(
                error?.message.contains("entity User differs") == true
                    && error?.message.contains("its model cache hashes as its metadata records") == true)
            return
        }
        let found = try bundle.version(ofStoreAt: store)
        #expect(found.evidence == .hashes && found.how.hasPrefix("its entity version hashes"))
        let named = ([found.version.name] + found.alike).compactMap { bundle.version(named: $0)?.model.versionIdentifiers }
        #expect(named.contains(identifiers), "\(name): \(identifiers) found as \(found.version.name), alike \(found.alike)")
    }

    @Test(
        "SplitName's stores, without a model cache: each one's version by its hashes",
        .enabled(if: CoreDataStoreTests.fixture("SplitName/MWKCoreDataTests.xcdatamodeld") != nil, "shared/fixtures/coredata is absent"),
        arguments: [("SplitName/MWKCoreDataTests.sqlite", "MWKCoreDataTests"), ("SplitName/MWKCoreDataTests2.sqlite", "MWKCoreDataTests2")])
    func splitName(_ name: String, _ version: String) throws {
        let bundle = try CoreDataModelBundle.read(
            contentsOf: try #require(CoreDataStoreTests.fixture("SplitName/MWKCoreDataTests.xcdatamodeld")))
        let folder = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy(name, into: folder)
        #expect(try CoreDataModel.read(store: store) == nil)
        let found = try bundle.version(ofStoreAt: store)
        #expect(found.version.name == version && found.evidence == .hashes && found.alike.isEmpty)
    }

    /// Every old store of the apps' fixtures, its bundles and the version Core Data finds for it.
    static let appStores: [(store: String, bundles: [String], version: String)] = [
        ("apptentive-ios/ATDataModelv1.sqlite", ["ATDataModel.xcdatamodeld"], "ATDataModel"),
        ("apptentive-ios/ATDataModelv2.sqlite", ["ATDataModel.xcdatamodeld"], "ATDataModel 2"),
        ("apptentive-ios/ATDataModelv3.sqlite", ["ATDataModel.xcdatamodeld"], "ATDataModel 3"),
        ("apptentive-ios/ATDataModelv4.sqlite", ["ATDataModel.xcdatamodeld"], "ATDataModel 4"),
        ("apptentive-ios/ATDataModelv5.sqlite", ["ATDataModel.xcdatamodeld"], "ATDataModel 5"),
        ("apptentive-ios/ATDataModelv6.sqlite", ["ATDataModel.xcdatamodeld"], "ATDataModel 6"),
        ("apptentive-ios/v2WALDatabase/ATDataModel.sqlite", ["ATDataModel.xcdatamodeld"], "ATDataModel 2"),
        ("apptentive-ios/v3WALDatabase/ATDataModel.sqlite", ["ATDataModel.xcdatamodeld"], "ATDataModel 3"),
        ("apptentive-ios/v2CorruptDatabase/ATDataModel.sqlite", ["ATDataModel.xcdatamodeld"], "ATDataModel 3"),
        ("apptentive-ios/container-3.5.0/ATDataModel.sqlite", ["ATDataModel.xcdatamodeld"], "ATDataModel 5"),
        ("coredataplus-samplemodel3/SampleModel3_V1.sqlite", ["SampleModel3.xcdatamodeld"], "SampleModel3"),
        ("ddg-browserserviceskit-bookmarks/Bookmarks_V1.sqlite", ["BookmarksModel.xcdatamodeld"], "BookmarksModel"),
        ("ddg-browserserviceskit-bookmarks/Bookmarks_V2.sqlite", ["BookmarksModel.xcdatamodeld"], "BookmarksModel 2"),
        ("ddg-browserserviceskit-bookmarks/Bookmarks_V3.sqlite", ["BookmarksModel.xcdatamodeld"], "BookmarksModel 3"),
        ("ddg-browserserviceskit-bookmarks/Bookmarks_V4.sqlite", ["BookmarksModel.xcdatamodeld"], "BookmarksModel 4"),
        ("ddg-browserserviceskit-bookmarks/Bookmarks_V5.sqlite", ["BookmarksModel.xcdatamodeld"], "BookmarksModel 5"),
        ("ddg-browserserviceskit-syncmetadata/SyncMetadata_V3.sqlite", ["SyncMetadata.xcdatamodeld"], "SyncMetadata 3"),
        (
            "ddg-ios-appratingprompt/AppRatingPrompt_v1/Database.sqlite",
            ["AppRatingPrompt.xcdatamodeld", "merged-models/RemoteMessaging.xcdatamodeld", "merged-models/HTTPSUpgrade.xcdatamodeld"],
            "AppRatingPrompt + RemoteMessaging + HTTPSUpgrade 3"
        ),
        ("loopkit/Model-v1.sqlite", ["Model.xcdatamodeld"], "Model"),
    ]

    /// The app folder of an apps' fixture store.
    static func app(of store: String) -> String { "apps/" + store.split(separator: "/")[0] + "/" }

    @Test(
        "every old store of the apps' fixtures: its version found by its entity version hashes, as Core Data finds it, with the app's bundles and no hint; the one whose tables are another version's than its hashes name migrates from the version of its tables, with a note",
        .enabled(if: CoreDataStoreTests.fixture("apps/INDEX.md") != nil, "shared/fixtures/coredata/apps is absent"),
        arguments: appStores.map(\.store))
    func appStore(_ name: String) throws {
        let (_, bundles, version) = try #require(Self.appStores.first { $0.store == name })
        let app = Self.app(of: name)
        let bundle = try CoreDataModelBundle.read(contentsOf: try bundles.map { try #require(CoreDataStoreTests.fixture(app + $0)) })
        let folder = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy("apps/" + name, into: folder)
        let found = try bundle.version(ofStoreAt: store)
        if name.hasPrefix("apptentive-ios/v2CorruptDatabase/") {
            // Core Data takes it for version 3 by its hashes; its tables are version 2's.
            #expect(found.namedByHashes == version && found.version.name == "ATDataModel 2" && found.evidence == .schema)
            #expect(
                found.how
                    == "its schema fits version ATDataModel 2 exactly; its hashes are version ATDataModel 3's, whose layout it does not have: ZATRECORD has no column ZCUSTOMDATA for attribute ATAbstractMessage.customData of the store's model: the store does not fit the model (was the model edited after the store was written?)",
                "\(found.how)")
        } else {
            #expect(
                found.version.name == version && found.evidence == .hashes && found.namedByHashes == nil,
                "\(name): \(found.version.name) by \(found.how)")
        }
    }

    @Test(
        "a store of three bundles merged at run time into an empty store of their current versions merged: its version is one version of each bundle whose hashes together are the store's, and every row arrives",
        .enabled(
            if: CoreDataStoreTests.fixture("apps/ddg-ios-appratingprompt/AppRatingPrompt_v1/Database.sqlite") != nil,
            "shared/fixtures/coredata/apps is absent"))
    func mergedBundles() throws {
        let app = "apps/ddg-ios-appratingprompt/"
        let bundle = try CoreDataModelBundle.read(
            contentsOf: try [
                "AppRatingPrompt.xcdatamodeld", "merged-models/RemoteMessaging.xcdatamodeld", "merged-models/HTTPSUpgrade.xcdatamodeld",
            ]
            .map { try #require(CoreDataStoreTests.fixture(app + $0)) })
        #expect(
            bundle.versions.map(\.name) == [
                "AppRatingPrompt + RemoteMessaging + HTTPSUpgrade 3", "AppRatingPrompt 2 + RemoteMessaging + HTTPSUpgrade 3",
            ])
        #expect(bundle.current == "AppRatingPrompt 2 + RemoteMessaging + HTTPSUpgrade 3")
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy(app + "AppRatingPrompt_v1/Database.sqlite", into: folder)
        let destination = folder.path("new.sqlite")
        try CoreDataEmptyStore.create(at: destination, model: try #require(bundle.version(named: bundle.current)).model)
        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, options: InferenceOptions(modelBundle: bundle))
        #expect(
            inferred.decisions.prefix(2) == [
                "source store: version AppRatingPrompt + RemoteMessaging + HTTPSUpgrade 3 (its entity version hashes)",
                "destination store: version AppRatingPrompt 2 + RemoteMessaging + HTTPSUpgrade 3 (its entity version hashes)",
            ])
        for table in [
            "ZAPPRATINGPROMPTENTITY", "ZHTTPSEXCLUDEDDOMAIN", "ZHTTPSSTOREDBLOOMFILTERSPECIFICATION", "ZREMOTEMESSAGINGCONFIGMANAGEDOBJECT",
        ] {
            #expect(
                try CoreDataMigrationTests.rows(destination, table).count == (try CoreDataMigrationTests.rows(source, table).count)
                    && (try CoreDataMigrationTests.rows(source, table).count) > 0, "\(table)")
        }
    }

    @Test(
        "the app's mapping models beside its bundle: one with custom policies refuses the path through it, naming them (LoopKit); one without is used in place of inference (Apptentive 5 to 6); they place a version its name does not (Apptentive's first)",
        .enabled(if: CoreDataStoreTests.fixture("apps/INDEX.md") != nil, "shared/fixtures/coredata/apps is absent"))
    func mappingModels() throws {
        let folder = try TemporaryFolder()
        let loopKit = try CoreDataModelBundle.read(contentsOf: try #require(CoreDataStoreTests.fixture("apps/loopkit/Model.xcdatamodeld")))
        #expect(
            loopKit.mappingModels.map { "\($0.source) -> \($0.destination): \($0.policies)" }
                == [
                    "Model -> Modelv4: [\"LoopKit.CachedCarbObjectv3EntityMigrationPolicy (CachedCarbObject -> CachedCarbObject)\", \"LoopKit.DeletedCarbObjectv3EntityMigrationPolicy (DeletedCarbObject -> CachedCarbObject)\"]"
                ])
        let source = try CoreDataStoreTests.copy("apps/loopkit/Model-v1.sqlite", into: folder)
        let destination = folder.path("loopkit-new.sqlite")
        try CoreDataEmptyStore.create(at: destination, model: try #require(loopKit.version(named: loopKit.current)).model)
        let refused = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(modelBundle: loopKit))
        }
        #expect(
            refused?.message.hasPrefix(
                "the app's mapping model Modelv1v4.xcmappingmodel migrates version Model to Modelv4 with custom migration policies, the app's code, which Core Data runs in place of an inferred mapping and chunkmigrate cannot: LoopKit.CachedCarbObjectv3EntityMigrationPolicy (CachedCarbObject -> CachedCarbObject), LoopKit.DeletedCarbObjectv3EntityMigrationPolicy (DeletedCarbObject -> CachedCarbObject)"
            ) == true,
            "\(String(describing: refused))")

        let apptentive = try CoreDataModelBundle.read(
            contentsOf: try #require(CoreDataStoreTests.fixture("apps/apptentive-ios/ATDataModel.xcdatamodeld")))
        #expect(apptentive.mappingModels.count == 5 && apptentive.mappingModels.allSatisfy(\.policies.isEmpty))
        #expect(apptentive.unorderedVersions.isEmpty && apptentive.isKnown("ATDataModel", before: "ATDataModel 6") == true)
        let v5 = try CoreDataStoreTests.copy("apps/apptentive-ios/ATDataModelv5.sqlite", into: folder)
        let v6 = folder.path("apptentive-new.sqlite")
        try CoreDataEmptyStore.create(at: v6, model: try #require(apptentive.version(named: apptentive.current)).model)
        let inferred = try MigrationPlan.infer(source: v5, destination: v6, options: InferenceOptions(modelBundle: apptentive))
        #expect(
            inferred.decisions.contains {
                $0.hasPrefix(
                    "ATDataModel 5 -> ATDataModel 6: the app's mapping model ATDataModel v5 to v6.xcmappingmodel, in place of an inferred mapping"
                )
            },
            "\(inferred.decisions)")
    }

    // MARK: - Stores without a model cache

    @Test(
        "a store without a model cache into an emptied copy of itself, neither carrying a model: equal hashes (kik) or, without hashes, the same schema (NotesV7) make them one model; every table copied as it is",
        .enabled(if: CoreDataStoreTests.fixture("kik.sqlite") != nil, "shared/fixtures/coredata is absent"),
        arguments: ["kik.sqlite", "NotesV7.storedata"])
    func identityWithoutModel(_ name: String) throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy(name, into: folder)
        let destination = try CoreDataTesting.emptiedCopy(of: source, named: "new.sqlite", in: folder)
        #expect(try CoreDataModel.read(store: source) == nil && CoreDataModel.read(store: destination) == nil)
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder)
        let evidence =
            name == "kik.sqlite"
            ? "their entity version hashes are equal" : "neither records entity version hashes and their schemas are the same"
        #expect(
            inferred.decisions.first
                == "one model: neither store carries it (no model cache, none given), and \(evidence), as Core Data tells a store's model; every table copied as it is, column for column, keys preserved, entity numbers by name"
        )
        var before = try CoreDataTesting.contents(source), after = try CoreDataTesting.contents(destination)
        #expect(after.values.map(\.count).reduce(0, +) > 30)
        // The metadata: the destination's own, the source's UUID.
        for table in ["Z_METADATA"] { before[table] = nil; after[table] = nil }
        #expect(CoreDataTesting.difference(after, before) == nil)
        let uuid = { (url: URL) in try CoreDataMetadata.read(Database(path: url.path, mode: .source), file: url.path).uuid }
        #expect(try uuid(destination) == uuid(source))

        // In place, into a store of the same model: nothing to do, the store left as it is.
        let other = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy(name, into: other)
        let target = try CoreDataTesting.emptiedCopy(of: source, named: "target.sqlite", in: folder)
        let contents = try CoreDataTesting.contents(store)
        #expect(try InPlaceMigration.startOrResume(plan: inferred.plan, store: store, target: target).runBlocking() == .complete)
        #expect(CoreDataTesting.difference(try CoreDataTesting.contents(store), contents) == nil)
    }

    @Test(
        "a store without a model cache takes the other store's model where its hashes are that model's; refused, naming it, where they are not"
    )
    func modelFromTheOtherStore() throws {
        let folder = try TemporaryFolder()
        let v1 = try CoreDataTesting.model(CoreDataVersionPathTests.versions[0]),
            v2 = try CoreDataTesting.model(CoreDataVersionPathTests.versions[1])
        let source = try CoreDataTesting.store(
            v1, at: folder.path("old.sqlite"), uuid: "E0000000-0000-0000-0000-000000000041",
            rows: "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZA) VALUES (1, 1, 1, 'x')")
        try Database(path: source.path, mode: .readWrite).execute("DROP TABLE Z_MODELCACHE")
        let same = try CoreDataTesting.store(v1, at: folder.path("same.sqlite"), uuid: "E0000000-0000-0000-0000-000000000042")
        let inferred = try CoreDataMigrationTests.migrate(source, into: same, folder: folder)
        #expect(
            inferred.decisions.first
                == "source store: no model cache; its entity version hashes are the destination's model's, so that is its model")
        #expect(try Database(path: same.path, mode: .source).scalar("SELECT ZA FROM ZITEM") == .text("x"))

        let other = try CoreDataTesting.store(v2, at: folder.path("other.sqlite"), uuid: "E0000000-0000-0000-0000-000000000043")
        let refused = #expect(throws: MigrationError.self) { try MigrationPlan.infer(source: source, destination: other) }
        #expect(
            refused?.file == source.path
                && refused?.message
                    == "the store has no model cache (Z_MODELCACHE, written since iOS 10), and its entity version hashes are not the other store's model's: give its model with --model-from (the .xcdatamodel folder inside the .xcdatamodeld, or a compiled .mom), or every version of the app's model with --models",
            "\(String(describing: refused))")
        // A model given for one store gives the other its model by their hashes too.
        let given = try MigrationPlan.infer(source: source, destination: other, options: InferenceOptions(sourceModel: v1))
        #expect(given.plan.entities.first?.columns["ZB"] == "ZA")
    }
}
