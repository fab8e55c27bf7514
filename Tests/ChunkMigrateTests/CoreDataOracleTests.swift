import Foundation
import Testing
@testable import ChunkMigrate

/// Core Data as the oracle: stores that Core Data itself migrated from one model version to the
/// next (its automatic lightweight migration in a production messenger, a renaming identifier in
/// ProgressiveMigration). The store at N is migrated into an emptied copy of Core Data's store at
/// N+1 with the plan inferred from the two stores alone, and the result must equal Core Data's:
/// every table, row by row, column by column, `Z_PRIMARYKEY` with its `Z_MAX`, the store UUID and
/// the metadata, the app's own keys included.
@Suite("Core Data as the oracle")
struct CoreDataOracleTests {
    /// Each pair: the store at N, Core Data's own migration of it to N+1, and what the model change was.
    static let pairs: [(old: String, new: String, change: String)] = [
        ("Messenger/store2-6.wiredatabase", "Messenger/store2-7.wiredatabase", "attributes added with defaults, one in a sub-entity"),
        (
            "Messenger/store2-29-0.wiredatabase", "Messenger/store2-30-0.wiredatabase",
            "entities added that sort in the middle: every later entity renumbered"
        ),
        (
            "Messenger/store2-95-0.wiredatabase", "Messenger/store2-96-0.wiredatabase",
            "a self many-to-many's join table replaced, a required attribute added"
        ),
        (
            "Messenger/store2-100-0.wiredatabase", "Messenger/store2-101-0.wiredatabase",
            "an entity removed: numbers, join tables, polymorphic and ordering columns renamed"
        ),
        (
            "ProgressiveMigration/CoreDataMigration_Example_1.sqlite", "ProgressiveMigration/CoreDataMigration_Example_2.sqlite",
            "an attribute renamed through a renaming identifier"
        ),
        (
            "Messenger/store2-88-0.wiredatabase", "Messenger/store2-89-0.wiredatabase",
            "an attribute with a default new in a sub-entity, the table altered in place: every row of the table takes the default"
        ),
        (
            "Messenger/store2-90-0.wiredatabase", "Messenger/store2-91-0.wiredatabase",
            "an attribute with a default new in a sub-entity, the table altered in place: every row of the table takes the default"
        ),
    ]
    static let present = pairs.allSatisfy { CoreDataStoreTests.fixture($0.old) != nil && CoreDataStoreTests.fixture($0.new) != nil }

    /// Every pair of `Messenger/pairs.txt`: each a store and Core Data's own migration of it to the
    /// next model version (paths relative to the fixtures' folder).
    static let everyPair: [String] = {
        guard let list = CoreDataStoreTests.fixture("Messenger/pairs.txt"), let text = try? String(contentsOf: list, encoding: .utf8) else {
            return []
        }
        return text.split(separator: "\n").compactMap { line in
            let names = line.split(separator: " ").map { ("Messenger/" + $0 as NSString).standardizingPath }
            return names.count == 2 ? "\(names[0]) -> \(names[1])" : nil
        }
    }()

    /// The two stores of an ``everyPair`` argument.
    static func stores(of pair: String) -> (old: String, new: String) {
        let names = pair.components(separatedBy: " -> ")
        return (names[0], names[1])
    }

    @Test(
        "the store at N migrated into an emptied copy of Core Data's store at N+1 equals Core Data's own migration, table by table, row by row",
        .enabled(if: present, "shared/fixtures/coredata is absent"), arguments: pairs.map { "\($0.old) -> \($0.new)" })
    func sameAsCoreData(_ pair: String) throws {
        let (old, new, change) = Self.pairs.first { "\($0.old) -> \($0.new)" == pair }!
        let folder = try TemporaryFolder()
        let source = try CoreDataModelTests.copy(old, into: folder)
        let coreData = try CoreDataModelTests.copy(new, into: folder)
        let destination = try CoreDataTesting.emptiedCopy(of: coreData, named: "migrated.sqlite", in: folder)
        #expect(try scalar("SELECT count(*) FROM Z_PRIMARYKEY WHERE Z_MAX > 0", on: destination) == .integer(0))
        let files = try CoreDataTesting.provideExternalFiles(for: source)

        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, batchSize: 3)
        // Every file the copied rows name is in the destination's external data folder, whole.
        #expect(CoreDataTesting.externalFiles(of: destination) == Array(Set(files)).sorted())
        for name in CoreDataTesting.externalFiles(of: destination) {
            let data = try Data(contentsOf: CoreDataFinishing.externalDataFolder(of: destination.path).appendingPathComponent(name))
            #expect(data == Data(name.utf8))
        }
        let difference = CoreDataTesting.difference(try CoreDataTesting.contents(destination), try CoreDataTesting.contents(coreData))
        #expect(difference == nil, "\(change): \(difference ?? "")\ndecided: \(inferred.decisions)\nnotes: \(inferred.notes)")
        #expect(try CoreDataStoreCheck.run(store: destination).violations == [])
    }

    @Test(
        "every pair of Messenger/pairs.txt: the store at N migrated into an emptied copy of Core Data's store at N+1 equals Core Data's own migration",
        .enabled(if: !everyPair.isEmpty, "shared/fixtures/coredata/Messenger/pairs.txt is absent"), arguments: everyPair)
    func everyPairSameAsCoreData(_ pair: String) throws {
        let (old, new) = Self.stores(of: pair)
        let folder = try TemporaryFolder()
        let source = try CoreDataModelTests.copy(old, into: folder)
        let coreData = try CoreDataModelTests.copy(new, into: folder)
        let destination = try CoreDataTesting.emptiedCopy(of: coreData, named: "migrated.sqlite", in: folder)
        // The rows of 21 pairs name external data files the fixtures come without, as Core Data
        // migrated them: the references are carried as they are, and so are the stores' other
        // anomalies; the job's check passes.
        let inferred = try MigrationPlan.infer(source: source, destination: destination)
        let job = try MigrationJob.start(
            plan: inferred.plan, source: source, destination: destination, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 1_000), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        #expect(job.storeCheck?.isValid == true, "\(job.storeCheck?.violations ?? [])")
        let difference = CoreDataTesting.difference(try CoreDataTesting.contents(destination), try CoreDataTesting.contents(coreData))
        #expect(difference == nil, "\(difference ?? "")\ndecided: \(inferred.decisions)\nnotes: \(inferred.notes)")
    }

    @Test(
        "what the plans decided: the renamed attribute's values, the defaults in existing rows, the renumbered join tables",
        .enabled(if: present, "shared/fixtures/coredata is absent"))
    func decisions() throws {
        let folder = try TemporaryFolder()
        func infer(_ index: Int) throws -> InferredPlan {
            let pair = Self.pairs[index]
            let source = try CoreDataModelTests.copy(pair.old, into: folder)
            let destination = try CoreDataTesting.emptiedCopy(
                of: try CoreDataModelTests.copy(pair.new, into: folder),
                named: "empty\(index).sqlite", in: folder)
            return try MigrationPlan.infer(source: source, destination: destination)
        }
        let renamed = try infer(4)
        #expect(renamed.decisions.contains("Post.hexColor: renamed from Post.color (renamingIdentifier)"))
        #expect(renamed.plan.entities.first?.columns["ZHEXCOLOR"] == "ZCOLOR")

        let defaults = try infer(0)
        let message = try #require(defaults.plan.entities.first { $0.name == "Message" })
        // linkPreviewState is ClientMessage's (entity 6): its rows take the default, the others stay
        // NULL, as Core Data 641 (store 2.7's) made ZMESSAGE anew.
        #expect(message.columns["ZLINKPREVIEWSTATE"] == "CASE WHEN Z_ENT = 6 THEN 0 END")
        #expect(
            defaults.decisions.contains {
                $0.hasPrefix(
                    "ZLINKPREVIEWSTATE: new in ClientMessage, takes the default 0 in its rows; those of Message, AssetClientMessage, ")
                    && $0.hasSuffix(
                        "stay NULL, as Core Data rebuilds ZMESSAGE: Core Data before framework version 977 (the destination store's is 641) makes a table it adds such a column to anew"
                    )
            },
            "\(defaults.decisions)")

        // decryptionErrorCode is SystemMessage's: Core Data 977 (store 2.89's) added the column to
        // ZMESSAGE in place and wrote the default into every row.
        let inPlace = try infer(5)
        #expect(inPlace.plan.entities.first { $0.name == "Message" }?.columns["ZDECRYPTIONERRORCODE"] == "0")
        #expect(
            inPlace.decisions.contains {
                $0.hasPrefix("ZDECRYPTIONERRORCODE: new in SystemMessage, every row of ZMESSAGE takes the default 0 (Message, ")
                    && $0.hasSuffix(" too), as Core Data's in-place column add gives it")
            }, "\(inPlace.decisions)")

        let renumbered = try infer(3)
        #expect(
            renumbered.decisions.contains {
                $0.hasPrefix(
                    "join table Z_16USERS -> Z_15USERS (columns Z_16SYSTEMMESSAGES -> Z_15SYSTEMMESSAGES, Z_24USERS1 -> Z_23USERS1)")
            })
        #expect(renumbered.notes.contains("entity FeatureFlag (7): no counterpart in the destination model; its 0 rows are not copied"))
    }

    @Test(
        "stopped after every batch and resumed, the migration still equals Core Data's",
        .enabled(if: present, "shared/fixtures/coredata is absent"))
    func pausedStillSameAsCoreData() throws {
        let pair = Self.pairs[1]
        let folder = try TemporaryFolder()
        let source = try CoreDataModelTests.copy(pair.old, into: folder)
        let coreData = try CoreDataModelTests.copy(pair.new, into: folder)
        let destination = try CoreDataTesting.emptiedCopy(of: coreData, named: "migrated.sqlite", in: folder)
        let files = try CoreDataTesting.provideExternalFiles(for: source)
        let plan = try MigrationPlan.infer(source: source, destination: destination).plan
        _ = try MigrationJob.start(
            plan: plan, source: source, destination: destination, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 2), logger: quietLogger)
        var runs = 0
        while try MigrationJob.resume(at: folder.path("journal"), options: MigrationOptions(batchSize: 2), logger: quietLogger)
            .runBlocking(for: .zero) == .paused
        {
            runs += 1
        }
        #expect(runs > 20)
        #expect(!files.isEmpty && CoreDataTesting.externalFiles(of: destination) == Array(Set(files)).sorted())
        #expect(CoreDataTesting.difference(try CoreDataTesting.contents(destination), try CoreDataTesting.contents(coreData)) == nil)
    }
}
