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

    @Test("a property renamed through a chain of renaming identifiers keeps its values from the oldest version to the newest; a property added on the way takes the default of the version that added it; NULLs take the default of the version that made it required")
    func chainOfRenames() throws {
        let folder = try TemporaryFolder()
        let bundle = try CoreDataModelBundle.read(contentsOf: try Self.bundle(Self.versions, in: folder))
        #expect(bundle.versions.map(\.name) == ["Model", "Model 2", "Model 3"] && bundle.current == "Model 3")
        let source = try CoreDataTesting.store(bundle.versions[0].model, at: folder.path("v1.sqlite"), uuid: "E0000000-0000-0000-0000-000000000001",
                                               metadata: [:], rows: "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZA, ZNOTE) VALUES (1, 1, 1, 'x', NULL), (4, 1, 1, 'y', 'kept')")
        let destination = try CoreDataTesting.store(bundle.versions[2].model, at: folder.path("v3.sqlite"), uuid: "E0000000-0000-0000-0000-000000000003")
        // Between the two models alone, c is new: its values would be lost.
        let direct = try MigrationPlan.infer(source: source, destination: destination)
        #expect(direct.plan.entities.first { $0.name == "Item" }?.columns["ZC"] == nil)

        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, options: InferenceOptions(modelBundle: bundle))
        #expect(inferred.decisions.contains("source store: version Model (by its version identifier v1)"))
        #expect(inferred.decisions.contains("Model 2 -> Model 3: Item.c: renamed from Item.b (renamingIdentifier)"))
        #expect(try Database(path: destination.path, mode: .source).rows("SELECT Z_PK, ZC, ZCOUNT, ZNOTE FROM ZITEM ORDER BY Z_PK")
                == [[.integer(1), .text("x"), .integer(5), .text("none")], [.integer(4), .text("y"), .integer(5), .text("kept")]])
    }

    @Test("a store's version: its version identifier, else its model cache (the newest of versions alike); a newer source is refused")
    func versionOfAStore() throws {
        let folder = try TemporaryFolder()
        // Versions 2 and 3 alike but for a version identifier the stores do not carry.
        let versions = [Self.versions[0], Self.versions[1], Self.versions[1]]
        let bundle = try CoreDataModelBundle.read(contentsOf: try Self.bundle(versions, in: folder))
        let store = folder.path("s.sqlite")
        try CoreDataEmptyStore.create(at: store, model: CoreDataModel(entities: bundle.versions[1].model.entities, versionIdentifiers: [""]))
        let (version, how) = try bundle.version(ofStoreAt: store)
        #expect(version.name == "Model 3" && how == "its model cache (alike: Model 2, Model 3)")

        let old = try CoreDataTesting.store(bundle.versions[0].model, at: folder.path("v1.sqlite"), uuid: "E0000000-0000-0000-0000-000000000004")
        let error = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: store, destination: old, options: InferenceOptions(modelBundle: bundle))
        }
        #expect(error?.message.contains("the source store is at version Model 3, newer than the destination's Model") == true, "\(String(describing: error))")
        #expect(CoreDataModelBundle.order("zmessaging2.10", "zmessaging2.100.0") && CoreDataModelBundle.order("zmessaging", "zmessaging1.27")
                && CoreDataModelBundle.order("Model 2", "Model 10") && !CoreDataModelBundle.order("zmessaging2.21.1", "zmessaging2.21.0"))
    }

    @Test("the Messenger store at 2.6 straight to 2.101.0 in one job equals the same path taken one version at a time, 83 steps",
          .enabled(if: CoreDataOracleTests.present, "shared/fixtures/coredata is absent"))
    func messengerWholePath() throws {
        let folder = try TemporaryFolder()
        let bundleURL = try #require(CoreDataStoreTests.fixture("Messenger/zmessaging.xcdatamodeld"))
        let bundle = try CoreDataModelBundle.read(contentsOf: bundleURL)
        #expect(bundle.versions.count == 90 && bundle.current == "zmessaging2.101.0")
        let source = try CoreDataModelTests.copy("Messenger/store2-6.wiredatabase", into: folder)
        let coreData = try CoreDataModelTests.copy("Messenger/store2-101-0.wiredatabase", into: folder)
        let destination = try CoreDataTesting.emptiedCopy(of: coreData, named: "direct.sqlite", in: folder)
        try CoreDataTesting.provideExternalFiles(for: source)
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, journal: "direct", batchSize: 7,
                                                          options: InferenceOptions(modelBundle: bundle))
        #expect(inferred.decisions.contains { $0.hasPrefix("path: zmessaging2.6 -> zmessaging2.7 -> zmessaging2.8 -> ... -> zmessaging2.100.0 -> zmessaging2.101.0, 83 steps") })

        // One version at a time: each step into an empty store of the next version.
        let path = try #require(bundle.path(from: "zmessaging2.6", to: "zmessaging2.101.0"))
        var store = source
        for (index, version) in path.enumerated().dropFirst() {
            let next = folder.path("step\(index).sqlite")
            try CoreDataEmptyStore.create(at: next, model: version.model)
            _ = try CoreDataMigrationTests.migrate(store, into: next, folder: folder, journal: "step\(index)", batchSize: 1000,
                                                   options: InferenceOptions(sourceModel: path[index - 1].model, destinationModel: version.model))
            if index > 1 { try CoreDataTesting.provideExternalFiles(for: next) }
            store = next
        }
        var direct = try CoreDataTesting.contents(destination), stepped = try CoreDataTesting.contents(store)
        for table in ["Z_METADATA", "(triggers)"] { direct[table] = nil; stepped[table] = nil }
        // A self many-to-many's join table is named from either side, which only Core Data's
        // order of the entity's properties decides: the empty stores of the steps name it from
        // the first in name order, Core Data's own store from the other.
        for join in try CoreDataLayout(model: path.last!.model).joinTables {
            guard let other = join.alternativeName, direct[join.name] == nil, stepped[other] == nil else { continue }
            stepped[other] = stepped.removeValue(forKey: join.name)
        }
        #expect(CoreDataTesting.difference(direct, stepped) == nil)
        // Every object of the source is there.
        let before = try Database(path: source.path, mode: .source), after = try Database(path: destination.path, mode: .source)
        for table in ["ZCONVERSATION", "ZMESSAGE", "ZUSER", "ZUSERCLIENT"] {
            #expect(try after.scalar("SELECT count(*) FROM \(table)") == (try before.scalar("SELECT count(*) FROM \(table)")), "\(table)")
        }
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
    }
}
