import ChunkMigrate
import Foundation
import Testing

/// `chunkmigrate plan`, `run` and `check-coredata` on real Core Data stores from the shared
/// fixtures (copied into the test's directory first; skipped when absent), and a Core Data job
/// killed with SIGKILL at each crash point, then run again.
@Suite("chunkmigrate on Core Data stores")
struct ChunkMigrateCoreDataTests {
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/fixtures/coredata").path
    static let present = ["knowledgec-10.13.db", "knowledgec-10.14.db"].allSatisfy {
        FileManager.default.fileExists(atPath: fixtures + "/" + $0)
    }

    /// knowledgeC 10.13 as the source and an emptied copy of 10.14 as the destination, in `directory`.
    struct Stores {
        let directory: String
        var source: String { directory + "/old.db" }
        var emptyDestination: String { directory + "/empty.db" }
        func destination(_ name: String) -> String { directory + "/" + name + ".db" }
        func journal(_ name: String) -> String { directory + "/" + name + ".journal" }
        var plan: String { directory + "/plan.json" }

        init(in directory: String) throws {
            self.directory = directory
            try FileManager.default.copyItem(atPath: fixtures + "/knowledgec-10.13.db", toPath: source)
            try FileManager.default.copyItem(atPath: fixtures + "/knowledgec-10.14.db", toPath: emptyDestination)
            let tables = try SQLiteShell.query(
                emptyDestination,
                """
                SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT IN ('Z_PRIMARYKEY', 'Z_METADATA', 'Z_MODELCACHE')
                """
            ).map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "'")) }
            try SQLiteShell.execute(emptyDestination, tables.map { "DELETE FROM \($0);" }.joined() + "UPDATE Z_PRIMARYKEY SET Z_MAX = 0;")
        }

        /// A fresh copy of the empty destination named `name`.
        func newDestination(_ name: String) throws -> String {
            try FileManager.default.copyItem(atPath: emptyDestination, toPath: destination(name))
            return destination(name)
        }

        func runArguments(_ name: String) -> [String] {
            [
                "run", "--source", source, "--destination", destination(name), "--plan", plan, "--journal", journal(name),
                "--batch-size", "2", "--quiet",
            ]
        }
    }

    @Test(
        "plan infers from the two stores, reports on stderr and writes the plan; run migrates and checks the result",
        .enabled(if: present, "shared/fixtures/coredata is absent"))
    func planAndRun() throws {
        try withTemporaryDirectory { directory in
            let stores = try Stores(in: directory)
            let plan = try chunkmigrate("plan", "--source", stores.source, "--destination", stores.emptyDestination, "--out", stores.plan)
            #expect(plan.exitCode == 0, "\(plan)")
            #expect(plan.stderr.contains("decided: entity Object: number 8 -> 9"))
            #expect(plan.stderr.contains("note: entity KeyValue (8): new in the destination model; left empty"))
            #expect(plan.stderr.contains("note: ACHANGE: the destination has no persistent history"))
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stores.plan))) as? [String: Any]
            #expect((json?["coreData"] as? [String: Any])?["entities"] != nil)

            _ = try stores.newDestination("migrated")
            var arguments = stores.runArguments("migrated")
            arguments.removeLast()  // without --quiet: the check's verdict and what is not copied
            let run = try chunkmigrate(arguments)
            #expect(run.exitCode == 0, "\(run)")
            #expect(run.stderr.contains("not copied (no entity of the plan reads them): ACHANGE, ATRANSACTION"))
            #expect(run.stderr.contains("check-coredata:") && run.stderr.contains("checks passed"))
            #expect(try SQLiteShell.integer(stores.destination("migrated"), "SELECT count(*) FROM ZOBJECT WHERE Z_ENT = 11") == 21)

            let check = try chunkmigrate("check-coredata", stores.destination("migrated"))
            #expect(check.exitCode == 0 && check.stdout.contains("checks passed"), "\(check)")
        }
    }

    @Test(
        "check-coredata exits 1 naming the violation, and 3 naming a file that is not a Core Data store",
        .enabled(if: present, "shared/fixtures/coredata is absent"))
    func checkExitCodes() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store.db"
            try FileManager.default.copyItem(atPath: Self.fixtures + "/knowledgec-10.13.db", toPath: store)
            try SQLiteShell.execute(store, "UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Object'")
            let broken = try chunkmigrate("check-coredata", store)
            #expect(broken.exitCode == 1, "\(broken)")
            #expect(broken.stdout.contains("violation: Z_PRIMARYKEY: Z_MAX of Object is 1 but ZOBJECT holds key"))

            let plain = directory + "/plain.db"
            try SQLiteShell.execute(plain, "CREATE TABLE t (x)")
            let notCoreData = try chunkmigrate("check-coredata", plain)
            #expect(notCoreData.exitCode == 3 && notCoreData.stderr.contains("\(plain): not a Core Data store"), "\(notCoreData)")
        }
    }

    @Test(
        "a store without a model cache: into a copy of itself emptied (the same hashes), copied table for table; into another model's store, plan exits 3 naming the option that gives its model, and runs with the models given; check-coredata takes the model too",
        .enabled(
            if: FileManager.default.fileExists(atPath: fixtures + "/BookMigration/Model1.sqlite"), "shared/fixtures/coredata is absent"))
    func storeWithoutModelCache() throws {
        try withTemporaryDirectory { directory in
            let source = directory + "/Model1.sqlite", destination = directory + "/new.sqlite", model = directory + "/Model1.xml"
            try FileManager.default.copyItem(atPath: Self.fixtures + "/BookMigration/Model1.sqlite", toPath: source)
            try FileManager.default.copyItem(atPath: Self.fixtures + "/BookMigration/Model1.sqlite", toPath: destination)
            try FileManager.default.copyItem(atPath: Self.fixtures + "/BookMigration/Model1.xcdatamodel.xml", toPath: model)
            try SQLiteShell.execute(destination, "DELETE FROM ZBOOK; DELETE FROM ZUSER; UPDATE Z_PRIMARYKEY SET Z_MAX = 0;")
            let same = try chunkmigrate("plan", "--source", source, "--destination", destination, "--out", directory + "/same.json")
            #expect(
                same.exitCode == 0
                    && same.stderr.contains(
                        "decided: one model: neither store carries it (no model cache, none given), and their entity version hashes are equal"
                    ), "\(same)")

            let other = directory + "/model2.sqlite"
            #expect(
                try chunkmigrate("empty-store", "--model", Self.fixtures + "/BookMigration/Model2.xcdatamodel.xml", other).exitCode == 0)
            let refused = try chunkmigrate("plan", "--source", source, "--destination", other, "--out", directory + "/plan.json")
            #expect(
                refused.exitCode == 3 && refused.stderr.contains("\(source): the store has no model cache")
                    && refused.stderr.contains("--model-from"), "\(refused)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/plan.json"))

            let plan = try chunkmigrate(
                "plan", "--source", source, "--destination", destination, "--out", directory + "/plan.json",
                "--model-from", model, "--model-to", model)
            #expect(plan.exitCode == 0, "\(plan)")
            let run = try chunkmigrate(
                "run", "--source", source, "--destination", destination, "--plan", directory + "/plan.json",
                "--journal", directory + "/journal")
            #expect(run.exitCode == 0 && run.stderr.contains("not checked: the store has no model cache"), "\(run)")
            let check = try chunkmigrate("check-coredata", destination, "--model", model)
            #expect(check.exitCode == 0 && !check.stdout.contains("not checked") && check.stdout.contains("checks passed"), "\(check)")
            #expect(try SQLiteShell.integer(destination, "SELECT count(*) FROM ZBOOK") == 4)
        }
    }

    @Test(
        "--models once per bundle an app merges: empty-store writes their current versions merged, plan finds the store's version of each by its hashes and says how, run carries every row",
        .enabled(
            if: FileManager.default.fileExists(atPath: fixtures + "/apps/ddg-ios-appratingprompt/AppRatingPrompt_v1/Database.sqlite"),
            "shared/fixtures/coredata/apps is absent"))
    func mergedBundles() throws {
        try withTemporaryDirectory { directory in
            let app = Self.fixtures + "/apps/ddg-ios-appratingprompt/"
            let models = [
                "AppRatingPrompt.xcdatamodeld", "merged-models/RemoteMessaging.xcdatamodeld", "merged-models/HTTPSUpgrade.xcdatamodeld",
            ]
            .flatMap { ["--models", app + $0] }
            let source = directory + "/Database.sqlite", destination = directory + "/new.sqlite"
            for suffix in ["", "-wal", "-shm"] {
                try FileManager.default.copyItem(atPath: app + "AppRatingPrompt_v1/Database.sqlite" + suffix, toPath: source + suffix)
            }
            #expect(try chunkmigrate(["empty-store"] + models + [destination]).exitCode == 0)
            let plan = try chunkmigrate(
                ["plan", "--source", source, "--destination", destination, "--out", directory + "/plan.json"] + models)
            #expect(
                plan.exitCode == 0
                    && plan.stderr.contains(
                        "decided: source store: version AppRatingPrompt + RemoteMessaging + HTTPSUpgrade 3 (its entity version hashes)\n")
                    && plan.stderr.contains(
                        "decided: destination store: version AppRatingPrompt 2 + RemoteMessaging + HTTPSUpgrade 3 (its entity version hashes)\n"
                    ), "\(plan)")
            let run = try chunkmigrate(
                "run", "--source", source, "--destination", destination, "--plan", directory + "/plan.json", "--journal",
                directory + "/journal")
            #expect(run.exitCode == 0, "\(run)")
            #expect(try SQLiteShell.integer(destination, "SELECT count(*) FROM ZHTTPSEXCLUDEDDOMAIN") == 30)
            #expect(try SQLiteShell.integer(destination, "SELECT count(*) FROM ZAPPRATINGPROMPTENTITY") == 1)
        }
    }

    @Test(
        "empty-store --model STORE: the empty store of the model in a store's cache, its metadata holding the entity version hashes, their digest and the version identifiers the store records; a store without a model cache is refused, naming it",
        .enabled(
            if: ["Messenger/store2-101-0.wiredatabase", "BookMigration/Model1.sqlite"].allSatisfy {
                FileManager.default.fileExists(atPath: fixtures + "/" + $0)
            },
            "shared/fixtures/coredata is absent"))
    func emptyStoreOfAStore() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store.sqlite", empty = directory + "/empty.sqlite"
            for suffix in ["", "-wal", "-shm"]
            where FileManager.default.fileExists(atPath: Self.fixtures + "/Messenger/store2-101-0.wiredatabase" + suffix) {
                try FileManager.default.copyItem(
                    atPath: Self.fixtures + "/Messenger/store2-101-0.wiredatabase" + suffix, toPath: store + suffix)
            }
            let created = try chunkmigrate("empty-store", "--model", store, empty)
            #expect(created.exitCode == 0 && created.stdout == empty + "\n", "\(created)")
            func metadata(_ path: String) throws -> [String: Any] {
                let hex = try #require(try SQLiteShell.query(path, "SELECT hex(Z_PLIST) FROM Z_METADATA").first).trimmingCharacters(
                    in: CharacterSet(charactersIn: "'"))
                var bytes: [UInt8] = []
                var index = hex.startIndex
                while index < hex.endIndex, let byte = UInt8(hex[index..<hex.index(index, offsetBy: 2)], radix: 16) {
                    bytes.append(byte)
                    index = hex.index(index, offsetBy: 2)
                }
                return try #require(try PropertyListSerialization.propertyList(from: Data(bytes), format: nil) as? [String: Any])
            }
            let (original, written) = (try metadata(store), try metadata(empty))
            let hashes = try #require(original["NSStoreModelVersionHashes"] as? [String: Data])
            #expect(hashes.count == 24)
            #expect(written["NSStoreModelVersionHashes"] as? [String: Data] == hashes)
            #expect(written["NSStoreModelVersionHashesDigest"] as? String == original["NSStoreModelVersionHashesDigest"] as? String)
            #expect(written["NSStoreModelVersionIdentifiers"] as? [String] == ["2.101.0"])

            let plain = directory + "/Model1.sqlite"
            try FileManager.default.copyItem(atPath: Self.fixtures + "/BookMigration/Model1.sqlite", toPath: plain)
            let refused = try chunkmigrate("empty-store", "--model", plain, directory + "/other.sqlite")
            #expect(refused.exitCode != 0 && refused.stderr.contains("\(plain): the store has no model cache"), "\(refused)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/other.sqlite"))
        }
    }

    static let killPoints = [
        "before-start-commit:job:0", "after-segment:Object:3", "before-commit:Object:3", "after-commit:Object:3", "mid-record:Object:3",
        "after-index:ZOBJECT_ZSOURCE_INDEX:0",
        "after-complete:job:0",
    ]

    @Test(
        "a Core Data job killed at each crash point and run again gives the destination of an uninterrupted run",
        .enabled(if: present, "shared/fixtures/coredata is absent"), arguments: killPoints)
    func killAndRunAgain(_ point: String) throws {
        try withTemporaryDirectory { directory in
            let stores = try Stores(in: directory)
            // A Z_MAX behind the keys in the source: only the batches themselves keep it ahead.
            try SQLiteShell.execute(stores.source, "UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Object'")
            let plan = try chunkmigrate("plan", "--source", stores.source, "--destination", stores.emptyDestination, "--out", stores.plan)
            #expect(plan.exitCode == 0, "\(plan)")
            _ = try stores.newDestination("reference")
            let reference = try chunkmigrate(stores.runArguments("reference"))
            #expect(reference.exitCode == 0, "\(reference)")

            _ = try stores.newDestination("killed")
            let killed = try chunkmigrate(stores.runArguments("killed"), environment: ["CHUNKMIGRATE_KILL_AT": point])
            #expect(killed.killedBySignal && killed.signal == SIGKILL, "\(killed)")
            // Whatever committed, Z_MAX is ahead of every key, and the store identity is the source's.
            #expect(
                try SQLiteShell.integer(
                    stores.destination("killed"),
                    "SELECT count(*) FROM Z_PRIMARYKEY WHERE Z_NAME = 'Object' AND Z_MAX < (SELECT ifnull(max(Z_PK), 0) FROM ZOBJECT)") == 0
            )

            let again = try chunkmigrate(stores.runArguments("killed"))
            #expect(again.exitCode == 0 && !again.killedBySignal, "\(again)")
            #expect(try SQLiteShell.dump(stores.destination("killed")) == (try SQLiteShell.dump(stores.destination("reference"))))
            let check = try chunkmigrate("check-coredata", stores.destination("killed"))
            #expect(check.exitCode == 0, "\(check)")
        }
    }

    static let demoKillPoints = ["after-commit:Item:2", "after-step:derive Tag.itemCount:1", "after-step:triggers:1"]

    @Test(
        "the Core Data demo pair (a derived count kept by triggers, a new derived count, history, the models as XML) killed in its copy, in a derived value's batch and at its triggers: run again, it equals an uninterrupted run, triggers back as the new store had them",
        arguments: demoKillPoints)
    func demoKilledAndRunAgain(_ point: String) throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            let generated = try chunkmigrate("generate", "--core-data", "--rows", "600", store)
            #expect(generated.exitCode == 0, "\(generated)")
            let plan = try chunkmigrate(
                "plan", "--source", store + "/old.sqlite", "--destination", store + "/new.sqlite",
                "--model-from", store + "/old.xcdatamodel", "--model-to", store + "/new.xcdatamodel",
                "--out", directory + "/plan.json")
            #expect(plan.exitCode == 0 && plan.stderr.contains("the derived attribute Tag.itemCount is new"), "\(plan)")
            func run(_ name: String, environment: [String: String] = [:]) throws -> CommandResult {
                try Self.runJob(
                    name, in: directory, source: store + "/old.sqlite", empty: store + "/new.sqlite", batchSize: 50,
                    environment: environment)
            }
            #expect(try run("reference").exitCode == 0)
            let killed = try run("killed", environment: ["CHUNKMIGRATE_KILL_AT": point])
            #expect(killed.killedBySignal && killed.signal == SIGKILL, "\(killed)")
            let destination = directory + "/killed.sqlite"
            if point.hasPrefix("after-step:derive") {
                // Between the copy and the end, the triggers are recorded, not in the store.
                #expect(try SQLiteShell.integer(destination, "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'") == 0)
                #expect(try SQLiteShell.integer(destination, "SELECT count(*) FROM _chunkmigrate_trigger") == 8)
            }
            let again = try run("killed")
            #expect(again.exitCode == 0 && !again.killedBySignal, "\(again)")
            #expect(try SQLiteShell.dump(destination) == (try SQLiteShell.dump(directory + "/reference.sqlite")))
            let triggers = "SELECT name || ' ' || sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name"
            #expect(try SQLiteShell.query(destination, triggers) == (try SQLiteShell.query(store + "/new.sqlite", triggers)))
            #expect(
                try SQLiteShell.integer(
                    destination, "SELECT count(*) FROM ZTAG t WHERE ZITEMCOUNT IS NOT (SELECT count(*) FROM Z_3TAGS WHERE Z_6TAGS = t.Z_PK)"
                ) == 0)
            #expect(try SQLiteShell.integer(destination, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'TRANSACTION'") == 1)
            let check = try chunkmigrate("check-coredata", destination)
            #expect(check.exitCode == 0, "\(check)")
        }
    }

    /// `chunkmigrate run` of `directory/plan.json` from `source` into `directory/NAME.sqlite` (a
    /// copy of `empty` the first time), journal `directory/NAME.journal`.
    static func runJob(
        _ name: String, in directory: String, source: String, empty: String, batchSize: Int,
        environment: [String: String] = [:]
    ) throws -> CommandResult {
        if !FileManager.default.fileExists(atPath: directory + "/\(name).sqlite") {
            try FileManager.default.copyItem(atPath: empty, toPath: directory + "/\(name).sqlite")
        }
        return try chunkmigrate(
            [
                "run", "--source", source, "--destination", directory + "/\(name).sqlite", "--plan", directory + "/plan.json",
                "--journal", directory + "/\(name).journal", "--batch-size", String(batchSize), "--quiet",
            ], environment: environment)
    }

    static let stepKillPoints = ["after-commit:Post:3", "before-commit:Section:2", "after-commit:Section:5"]

    @Test(
        "ProgressiveMigration version 1 to 4 through a custom step, one composed job killed in each entity and run again: the destination of an uninterrupted run",
        .enabled(if: FileManager.default.fileExists(atPath: fixtures + "/ProgressiveMigration/CoreDataMigration_Example_1.sqlite")),
        arguments: stepKillPoints)
    func composedJobKilled(_ point: String) throws {
        try withTemporaryDirectory { directory in
            let models = Self.fixtures + "/ProgressiveMigration/CoreDataMigration_Example.xcdatamodeld"
            let source = directory + "/v1.sqlite"
            try FileManager.default.copyItem(
                atPath: Self.fixtures + "/ProgressiveMigration/CoreDataMigration_Example_1.sqlite", toPath: source)
            let empty = directory + "/v4.sqlite"
            let created = try chunkmigrate("empty-store", "--models", models, empty)
            #expect(created.exitCode == 0 && created.stdout == empty + "\n", "\(created)")
            try Data(
                """
                { "from": "CoreDataMigration_Example 2", "to": "CoreDataMigration_Example 3",
                  "entities": [ { "name": "Section", "source": { "table": "ZPOST", "key": "Z_PK" },
                                  "destination": { "table": "ZSECTION", "key": "Z_PK" }, "keys": "allocate",
                                  "columns": { "Z_ENT": "coredata_entity_number('Section')", "Z_OPT": "1", "ZBODY": "ZCONTENT",
                                               "ZTITLE": "substr(ZCONTENT, 1, 4) || '...'", "ZINDEX": "0" },
                                  "relationships": { "ZPOST": { "from": "Z_PK", "to": "Post" } } } ] }
                """.utf8
            ).write(to: URL(fileURLWithPath: directory + "/step.json"))
            let plan = try chunkmigrate(
                "plan", "--source", source, "--destination", empty, "--models", models, "--step", directory + "/step.json",
                "--version-order",
                "CoreDataMigration_Example,CoreDataMigration_Example 2,CoreDataMigration_Example 3,CoreDataMigration_Example 4",
                "--out", directory + "/plan.json")
            #expect(plan.exitCode == 0 && plan.stderr.contains("3 parts composed into one job"), "\(plan)")
            func run(_ name: String, environment: [String: String] = [:]) throws -> CommandResult {
                try Self.runJob(name, in: directory, source: source, empty: empty, batchSize: 2, environment: environment)
            }
            #expect(try run("reference").exitCode == 0)
            let killed = try run("killed", environment: ["CHUNKMIGRATE_KILL_AT": point])
            #expect(killed.killedBySignal && killed.signal == SIGKILL, "\(killed)")
            let again = try run("killed")
            #expect(again.exitCode == 0, "\(again)")
            #expect(try SQLiteShell.dump(directory + "/killed.sqlite") == (try SQLiteShell.dump(directory + "/reference.sqlite")))
            #expect(
                try SQLiteShell.integer(directory + "/killed.sqlite", "SELECT count(*) FROM ZSECTION s JOIN ZPOST p ON p.Z_PK = s.ZPOST")
                    == 10)
        }
    }

    @Test(
        "SplitMigrationSample's mapping model, unsplit, killed in each entity and run again (once with the mapping model given by --mapping): the destination of an uninterrupted run, every relationship pointing back",
        .enabled(if: FileManager.default.fileExists(atPath: fixtures + "/SplitMigrationSample/Model1-2.xcmappingmodel/xcmapping.xml")),
        arguments: ["after-commit:EntityA:3", "before-commit:EntityB:2", "after-commit:EntityB:7"])
    func mappingModelJobKilled(_ point: String) throws {
        try withTemporaryDirectory { directory in
            let models = Self.fixtures + "/SplitMigrationSample/Model.xcdatamodeld"
            let source = directory + "/model1.sqlite", empty = directory + "/model2.sqlite"
            #expect(try chunkmigrate("empty-store", "--models", models, "--model-version", "Model 1", source).exitCode == 0)
            #expect(try chunkmigrate("empty-store", "--models", models, empty).exitCode == 0)
            try SQLiteShell.execute(
                source,
                """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
                INSERT INTO ZENTITYA (Z_PK, Z_ENT, Z_OPT, ZGROUP, ZNAME, ZRELATIONSHIP) SELECT 3 * i, 1, 1, i % 8, 'a' || i, 5 * i + 1 FROM n;
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
                INSERT INTO ZENTITYB (Z_PK, Z_ENT, Z_OPT, ZGROUP, ZNAME, ZRELATIONSHIP) SELECT 5 * i + 1, 2, 1, i % 8, 'b' || i, 3 * i FROM n;
                UPDATE Z_PRIMARYKEY SET Z_MAX = CASE Z_NAME WHEN 'EntityA' THEN 120 ELSE 201 END;
                """)
            let plan = try chunkmigrate(
                "plan", "--source", source, "--destination", empty, "--models", models, "--out", directory + "/plan.json")
            #expect(
                plan.exitCode == 0
                    && plan.stderr.contains("the app's mapping model Model1-2.xcmappingmodel, in place of an inferred mapping"), "\(plan)")
            // The same mapping model given, from a folder of the user's: the same plan.
            try FileManager.default.createDirectory(atPath: directory + "/models", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: models + "/Model 1.xcdatamodel", toPath: directory + "/models/Model 1.xcdatamodel")
            try FileManager.default.copyItem(atPath: models + "/Model 2.xcdatamodel", toPath: directory + "/models/Model 2.xcdatamodel")
            let given = try chunkmigrate(
                "plan", "--source", source, "--destination", empty, "--models", directory + "/models",
                "--mapping", Self.fixtures + "/SplitMigrationSample/Model1-2.xcmappingmodel", "--out", directory + "/given.json")
            #expect(given.exitCode == 0 && given.stderr.contains("Model1-2.xcmappingmodel, in place of an inferred mapping"), "\(given)")
            #expect(
                FileManager.default.contents(atPath: directory + "/given.json")
                    == FileManager.default.contents(atPath: directory + "/plan.json"))
            func run(_ name: String, environment: [String: String] = [:]) throws -> CommandResult {
                try Self.runJob(name, in: directory, source: source, empty: empty, batchSize: 4, environment: environment)
            }
            #expect(try run("reference").exitCode == 0)
            let killed = try run("killed", environment: ["CHUNKMIGRATE_KILL_AT": point])
            #expect(killed.killedBySignal && killed.signal == SIGKILL, "\(killed)")
            #expect(try run("killed").exitCode == 0)
            #expect(try SQLiteShell.dump(directory + "/killed.sqlite") == (try SQLiteShell.dump(directory + "/reference.sqlite")))
            #expect(
                try SQLiteShell.integer(
                    directory + "/killed.sqlite",
                    "SELECT count(*) FROM ZENTITYA a JOIN ZENTITYB b ON b.Z_PK = a.ZRELATIONSHIP AND b.ZRELATIONSHIP = a.Z_PK") == 40)
        }
    }

    static let inPlaceKillPoints = [
        "after-step:add columns to ZTAG:1", "after-step:update ZITEM:3", "after-step:update ZFOLDER:1",
        "after-step:drop, rename and create tables:1", "after-step:index ZITEM_ZFOLDER_INDEX:1",
        "after-step:derive Tag.itemCount:1", "before-commit:update ZITEM:2", "after-step:journal mode:1",
    ]

    @Test(
        "the demo store migrated in place, killed at a step: check-coredata, status and the copy path tell the half-migrated store apart; the same command or resume with the store finishes it, to the store an uninterrupted in-place run gives",
        arguments: inPlaceKillPoints)
    func inPlaceKilled(_ point: String) throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            #expect(try chunkmigrate("generate", "--core-data", "--rows", "600", store).exitCode == 0)
            #expect(
                try chunkmigrate(
                    "plan", "--source", store + "/old.sqlite", "--destination", store + "/new.sqlite", "--out", directory + "/plan.json"
                ).exitCode == 0)
            func inPlace(_ name: String, environment: [String: String] = [:]) throws -> CommandResult {
                if !FileManager.default.fileExists(atPath: directory + "/\(name).sqlite") {
                    try FileManager.default.copyItem(atPath: store + "/old.sqlite", toPath: directory + "/\(name).sqlite")
                }
                return try chunkmigrate(
                    [
                        "run", "--in-place", "--source", directory + "/\(name).sqlite", "--destination", store + "/new.sqlite",
                        "--plan", directory + "/plan.json", "--batch-size", "50", "--quiet",
                    ], environment: environment)
            }
            #expect(try inPlace("reference").exitCode == 0)
            let killed = try inPlace("killed", environment: ["CHUNKMIGRATE_KILL_AT": point])
            #expect(killed.killedBySignal && killed.signal == SIGKILL, "\(killed)")
            // Half-migrated: every entry point tells it apart and says what to do.
            let killedStore = directory + "/killed.sqlite"
            let check = try chunkmigrate("check-coredata", killedStore)
            #expect(check.exitCode == 3 && check.stderr.contains("chunkmigrate resume \(killedStore)"), "\(check)")
            let status = try chunkmigrate("status", killedStore)
            #expect(
                status.exitCode == 0 && status.stdout.contains("in place: part-way")
                    && status.stdout.contains("to finish: chunkmigrate resume \(killedStore)"),
                "\(status)")
            try FileManager.default.copyItem(atPath: store + "/new.sqlite", toPath: directory + "/copy.sqlite")
            let copy = try chunkmigrate(
                "run", "--source", killedStore, "--destination", directory + "/copy.sqlite", "--plan", directory + "/plan.json",
                "--journal", directory + "/copy.journal", "--quiet")
            #expect(copy.exitCode != 0 && copy.stderr.contains("part-way through an in-place migration"), "\(copy)")
            // Finished by the same command, or by `resume` with the store alone.
            let again =
                Self.inPlaceKillPoints.firstIndex(of: point)! % 2 == 0
                ? try inPlace("killed") : try chunkmigrate("resume", killedStore, "--batch-size", "50", "--quiet")
            #expect(again.exitCode == 0, "\(again)")
            let after = try chunkmigrate("status", killedStore)
            #expect(after.exitCode != 0 && after.stderr.contains("neither a journal directory nor a store part-way"), "\(after)")
            #expect(try SQLiteShell.dump(directory + "/killed.sqlite") == (try SQLiteShell.dump(directory + "/reference.sqlite")))
            let schema = "SELECT type, name, sql FROM sqlite_schema ORDER BY type, name"
            #expect(
                try SQLiteShell.query(directory + "/killed.sqlite", schema)
                    == (try SQLiteShell.query(directory + "/reference.sqlite", schema)))
        }
    }

    @Test(
        "two in-place jobs of one store at once: while the first runs, the second exits 5 naming the lock the first holds, and the store is as the first leaves it; once the first is done, the same command finds nothing to do"
    )
    func inPlaceTwiceAtOnce() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            #expect(try chunkmigrate("generate", "--core-data", "--rows", "300", store).exitCode == 0)
            #expect(
                try chunkmigrate(
                    "plan", "--source", store + "/old.sqlite", "--destination", store + "/new.sqlite", "--out", directory + "/plan.json"
                ).exitCode == 0)
            let migrated = directory + "/store.sqlite"
            try FileManager.default.copyItem(atPath: store + "/old.sqlite", toPath: migrated)
            let plan = try JSONDecoder().decode(MigrationPlan.self, from: Data(contentsOf: URL(fileURLWithPath: directory + "/plan.json")))
            var options = MigrationOptions(batchSize: 50)
            options.checksFreeSpace = false
            let first = try InPlaceMigration.startOrResume(
                plan: plan, store: URL(fileURLWithPath: migrated),
                target: URL(fileURLWithPath: store + "/new.sqlite"), options: options)
            let arguments = [
                "run", "--in-place", "--source", migrated, "--destination", store + "/new.sqlite", "--plan", directory + "/plan.json",
                "--batch-size", "50", "--quiet",
            ]
            // The second job, from the first's progress report after its first batch.
            var second: CommandResult?
            var before: [String: [String]]?, after: [String: [String]]?
            #expect(
                try first.runBlocking { _ in
                    guard second == nil else { return }
                    before = try? SQLiteShell.dump(migrated)
                    second = try? chunkmigrate(arguments)
                    after = try? SQLiteShell.dump(migrated)
                } == .complete)
            #expect(
                second?.exitCode == 5 && second?.stderr.contains(InPlaceMigration.lockPath(of: URL(fileURLWithPath: migrated))) == true,
                "\(String(describing: second))")
            #expect(before != nil && before == after)
            let again = try chunkmigrate(arguments)
            #expect(again.exitCode == 0, "\(again)")
            #expect(try chunkmigrate("check-coredata", migrated).exitCode == 0)
        }
    }

    /// Whether this machine lets the tests mount a tmpfs (root, and a kernel that allows it).
    static let canMountTmpfs: Bool = {
        (try? withTemporaryDirectory { directory in
            let mounted = try runExecutable(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=1m", "tmpfs", directory])
            guard mounted.exitCode == 0 else { return false }
            _ = try runExecutable(URL(fileURLWithPath: "/bin/umount"), [directory])
            return true
        }) ?? false
    }()

    @Test(
        "on a file system with room for 1.3 times the store, the copy path refuses before writing, naming the space and that in place fits; in place finishes there, killed three times, with the copy path's store",
        .enabled(if: canMountTmpfs, "cannot mount a tmpfs here"))
    func inPlaceWhereTheCopyDoesNotFit() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            #expect(try chunkmigrate("generate", "--core-data", "--rows", "20000", store).exitCode == 0)
            #expect(
                try chunkmigrate(
                    "plan", "--source", store + "/old.sqlite", "--destination", store + "/new.sqlite", "--out", directory + "/plan.json"
                ).exitCode == 0)
            // The copy path's result, on the big file system.
            try FileManager.default.copyItem(atPath: store + "/new.sqlite", toPath: directory + "/copied.sqlite")
            #expect(
                try chunkmigrate(
                    "run", "--source", store + "/old.sqlite", "--destination", directory + "/copied.sqlite", "--plan",
                    directory + "/plan.json",
                    "--journal", directory + "/copied.journal", "--quiet"
                ).exitCode == 0)

            let size = try FileManager.default.attributesOfItem(atPath: store + "/old.sqlite")[.size] as! NSNumber
            let small = directory + "/small"
            try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
            let room = (size.int64Value * 13 / 10 / 4096 + 1) * 4096
            #expect(
                try runExecutable(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=\(room)", "tmpfs", small]).exitCode == 0)
            defer { _ = try? runExecutable(URL(fileURLWithPath: "/bin/umount"), [small]) }
            try FileManager.default.copyItem(atPath: store + "/old.sqlite", toPath: small + "/store.sqlite")
            try FileManager.default.copyItem(atPath: store + "/new.sqlite", toPath: small + "/new.sqlite")

            let copy = try chunkmigrate(
                "run", "--source", small + "/store.sqlite", "--destination", small + "/new.sqlite", "--plan", directory + "/plan.json",
                "--journal", small + "/job.journal", "--quiet")
            #expect(
                copy.exitCode == 4 && copy.stderr.contains("not enough free space for the job")
                    && copy.stderr.contains("--in-place) it would need about")
                    && copy.stderr.contains("which fits"), "\(copy)")
            #expect(!FileManager.default.fileExists(atPath: small + "/job.journal"))

            let arguments = [
                "run", "--in-place", "--source", small + "/store.sqlite", "--destination", store + "/new.sqlite", "--plan",
                directory + "/plan.json",
                "--batch-size", "1000", "--quiet",
            ]
            for point in [
                "after-step:drop index ZITEM_ZFOLDER_INDEX:1", "after-step:update ZITEM:4", "after-step:index Z_3TAGS_Z_6TAGS_INDEX:1",
            ] {
                let killed = try chunkmigrate(arguments, environment: ["CHUNKMIGRATE_KILL_AT": point])
                #expect(killed.killedBySignal && killed.signal == SIGKILL, "\(point): \(killed)")
            }
            let finished = try chunkmigrate(arguments)
            #expect(finished.exitCode == 0, "\(finished)")
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let compared = try runExecutable(
                URL(fileURLWithPath: "/usr/bin/python3"),
                [root.appendingPathComponent("Tools/compare-stores.py").path, directory + "/copied.sqlite", small + "/store.sqlite"])
            #expect(compared.stdout.hasSuffix("differences: 0\n"), "\(compared)")
        }
    }
}
