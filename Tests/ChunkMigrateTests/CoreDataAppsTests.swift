import Foundation
import Testing
@testable import ChunkMigrate

/// Stores written by old versions of real apps, migrated to the app's current model with the
/// app's model bundles and no hint, as the app itself opens them: each reaches the current model
/// with every row, key and unchanged value kept and the app's own tests' assertions true, or,
/// where the path needs the app's code or its mapping models, is refused naming them.
@Suite("Core Data: the apps' old stores to their current model")
struct CoreDataAppsTests {
    /// What a store comes to: the current model, or a refusal whose message holds the text.
    enum Outcome: Sendable {
        case reaches
        case refused(String)
    }

    static let outcomes: [String: Outcome] = [
        "loopkit/Model-v1.sqlite": .refused(
            "the app's mapping model Modelv1v4.xcmappingmodel migrates version Model to Modelv4 with custom migration policies")
    ]

    static let stores = CoreDataStoreVersionTests.appStores.map(\.store)

    @Test(
        "each store reaches the app's current model (every row, key and value of what the two models share kept, the job's check passing), or is refused naming the mapping model or the code its path needs",
        .enabled(if: CoreDataStoreTests.fixture("apps/INDEX.md") != nil, "shared/fixtures/coredata/apps is absent"), arguments: stores)
    func reachesTheCurrentModel(_ name: String) throws {
        let (_, bundles, _) = try #require(CoreDataStoreVersionTests.appStores.first { $0.store == name })
        let app = CoreDataStoreVersionTests.app(of: name)
        let bundle = try CoreDataModelBundle.read(contentsOf: try bundles.map { try #require(CoreDataStoreTests.fixture(app + $0)) })
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy("apps/" + name, into: folder)
        let destination = folder.path("current.sqlite")
        let current = try #require(bundle.version(named: bundle.current)).model
        try CoreDataEmptyStore.create(at: destination, model: current)
        if case let .refused(text) = Self.outcomes[name] {
            let error = #expect(throws: MigrationError.self) {
                try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(modelBundle: bundle))
            }
            #expect(error?.message.contains(text) == true, "\(String(describing: error))")
            return
        }
        let inferred = try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(modelBundle: bundle))
        let job = try MigrationJob.start(
            plan: inferred.plan, source: source, destination: destination, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 3), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        #expect(job.storeCheck?.isValid == true, "\(job.storeCheck?.violations ?? [])")
        try Self.expectSharedValuesKept(from: source, to: destination, bundle: bundle)
    }

    /// Every entity both stores' models have: the same keys, and in every attribute of the same
    /// name and type in both, the same values.
    static func expectSharedValuesKept(from source: URL, to destination: URL, bundle: CoreDataModelBundle) throws {
        let before = try bundle.version(ofStoreAt: source).version.model
        let after = try bundle.version(ofStoreAt: destination, asTarget: true).version.model
        let (old, new) = (try CoreDataLayout(model: before), try CoreDataLayout(model: after))
        // An abstract entity has no rows of its own to keep (an app's mapping model may fill the
        // entity of that name with other entities' rows: Apptentive's ATMessage).
        for entity in before.entities where after.entity(named: entity.name) != nil && !entity.isAbstract {
            guard let a = old.entity(named: entity.name), let b = new.entity(named: entity.name),
                let fromTable = old.table(of: entity.name), let toTable = new.table(of: entity.name)
            else { continue }
            var columns: [(String, String)] = []
            for (_, property) in before.allProperties(of: entity.name) {
                guard let type = property.attribute?.type, property.attribute?.derivation == nil, !property.isTransient,
                    after.property(property.name, of: entity.name)?.property.attribute?.type == type,
                    let x = old.column(of: property.name, entity: entity.name), let y = new.column(of: property.name, entity: entity.name)
                else { continue }
                columns.append((x.name, y.name))
            }
            let fromColumns = (["Z_PK"] + columns.map(\.0)).map(SQL.quote).joined(separator: ", ")
            let toColumns = (["Z_PK"] + columns.map(\.1)).map(SQL.quote).joined(separator: ", ")
            let kept = try Database(path: source.path, mode: .source)
                .rows("SELECT \(fromColumns) FROM \(SQL.quote(fromTable.name)) WHERE Z_ENT = \(a.number) ORDER BY Z_PK")
            let arrived = try Database(path: destination.path, mode: .source)
                .rows("SELECT \(toColumns) FROM \(SQL.quote(toTable.name)) WHERE Z_ENT = \(b.number) ORDER BY Z_PK")
            #expect(arrived == kept, "\(entity.name): \(arrived.count) rows against \(kept.count)")
        }
    }

    @Test(
        "Apptentive's stores through the app's five mapping models: its text, file and automated messages merged into one message entity, automated 0, 0 and 1 as the mapping model's constants say, its upgrade requests and display types dropped, every event, survey response, sender and attachment kept",
        .enabled(if: CoreDataStoreTests.fixture("apps/apptentive-ios/CASE.md") != nil, "shared/fixtures/coredata/apps is absent"),
        arguments: [
            "ATDataModelv1.sqlite", "ATDataModelv2.sqlite", "ATDataModelv3.sqlite", "ATDataModelv4.sqlite",
            "v2WALDatabase/ATDataModel.sqlite",
            "v3WALDatabase/ATDataModel.sqlite", "v2CorruptDatabase/ATDataModel.sqlite",
        ])
    func apptentiveMessagesMerged(_ name: String) throws {
        let app = "apps/apptentive-ios/"
        let bundle = try CoreDataModelBundle.read(contentsOf: try #require(CoreDataStoreTests.fixture(app + "ATDataModel.xcdatamodeld")))
        #expect(bundle.mappingModels.count == 5)
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy(app + name, into: folder)
        let destination = folder.path("current.sqlite")
        try CoreDataEmptyStore.create(at: destination, model: try #require(bundle.version(named: bundle.current)).model)
        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, options: InferenceOptions(modelBundle: bundle))
        #expect(
            inferred.decisions.contains { $0.contains("ATDataModel v4 to v5.xcmappingmodel, in place of an inferred mapping") },
            "\(inferred.decisions)")
        let old = try Database(path: source.path, mode: .source), new = try Database(path: destination.path, mode: .source)
        func count(_ database: Database, _ entity: String) throws -> Int64 {
            try database.scalar("SELECT count(*) FROM ZATRECORD WHERE Z_ENT = (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = '\(entity)')")
                .integer ?? -1
        }
        let text = try count(old, "ATTextMessage"), file = try count(old, "ATFileMessage"), automated = try count(old, "ATAutomatedMessage")
        // The messages, by key: each source message's row, automated as its entity mapping says.
        let expected = try old.rows(
            """
            SELECT r.Z_PK, CASE p.Z_NAME WHEN 'ATAutomatedMessage' THEN 1 ELSE 0 END FROM ZATRECORD AS r JOIN Z_PRIMARYKEY AS p ON p.Z_ENT = r.Z_ENT
            WHERE p.Z_NAME IN ('ATTextMessage', 'ATFileMessage', 'ATAutomatedMessage') ORDER BY r.Z_PK
            """)
        let messages = try new.rows(
            "SELECT Z_PK, ZAUTOMATED FROM ZATRECORD WHERE Z_ENT = (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'ATMessage') ORDER BY Z_PK"
        )
        #expect(messages == expected, "\(messages) against \(expected)")
        #expect(Int64(messages.count) == text + file + automated)
        for entity in ["ATEvent", "ATSurveyResponse"] {
            #expect(try count(new, entity) == count(old, entity), "\(entity)")
        }
        #expect(
            try new.scalar("SELECT count(*) FROM ZATMESSAGESENDER").integer == old.scalar("SELECT count(*) FROM ZATMESSAGESENDER").integer)
        #expect(
            try new.scalar("SELECT count(*) FROM ZATFILEATTACHMENT").integer == old.scalar("SELECT count(*) FROM ZATFILEATTACHMENT").integer
        )
        if name == "ATDataModelv4.sqlite" {
            // What the fixture's own account of it says: 3 text and 2 automated messages, 2 of the
            // 5 automated.
            #expect(messages.count == 5 && messages.filter { $0[1] == .integer(1) }.count == 2, "\(messages)")
        }
    }

    @Test(
        "the sync metadata at version 3 to 4: what the app's own test asserts after its migration (features, their states and timestamps, the settings' metadata, the new lastSyncLocalTimestamp empty)",
        .enabled(
            if: CoreDataStoreTests.fixture("apps/ddg-browserserviceskit-syncmetadata/SyncMetadata_V3.sqlite") != nil,
            "shared/fixtures/coredata/apps is absent"))
    func syncMetadata() throws {
        let app = "apps/ddg-browserserviceskit-syncmetadata/"
        let bundle = try CoreDataModelBundle.read(contentsOf: try #require(CoreDataStoreTests.fixture(app + "SyncMetadata.xcdatamodeld")))
        let folder = try TemporaryFolder()
        let source = try CoreDataStoreTests.copy(app + "SyncMetadata_V3.sqlite", into: folder)
        let destination = folder.path("current.sqlite")
        try CoreDataEmptyStore.create(at: destination, model: try #require(bundle.version(named: bundle.current)).model)
        _ = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, options: InferenceOptions(modelBundle: bundle))
        let database = try Database(path: destination.path, mode: .source)
        let features = try database.rows(
            "SELECT ZNAME, ZSTATE, ZLASTMODIFIED, ZLASTSYNCLOCALTIMESTAMP FROM ZSYNCFEATUREENTITY ORDER BY ZNAME")
        #expect(features.map { $0[0] } == [.text("TestFeature-01"), .text("TestFeature-02")], "\(features)")
        #expect(features.map { $0[1] } == [.text("needsRemoteDataFetch"), .text("readyToSync")])
        #expect(features[0][2] == .null && features[1][2] == .text("1234"), "\(features)")
        #expect(features.allSatisfy { $0[3] == .null })
        let settings = try database.rows("SELECT ZKEY, ZLASTMODIFIED IS NULL FROM ZSYNCABLESETTINGSMETADATA ORDER BY ZKEY")
        #expect(settings == [[.text("TestSetting-01"), .integer(1)], [.text("TestSetting-02"), .integer(0)]], "\(settings)")
    }
}
