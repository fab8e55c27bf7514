import Foundation
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// A Core Data store migrated inside its own file.
@Suite("In place")
struct InPlaceMigrationTests {
    /// Runs an in-place migration to the end, paused after every batch.
    static func migrateInPlace(_ plan: MigrationPlan, store: URL, target: URL, batchSize: Int = 2) throws -> Int {
        var options = MigrationOptions(batchSize: batchSize)
        options.checksFreeSpace = false
        var runs = 0
        while try InPlaceMigration.startOrResume(plan: plan, store: store, target: target, options: options).runBlocking(for: .zero)
            == .paused
        {
            runs += 1
        }
        return runs
    }

    @Test(
        "the demo pair (every entity renumbered, a join table renamed, a new derived count, history, triggers) in place, paused after every batch, equals the copy path; a half-migrated store is told apart"
    )
    func demoEqualsCopyPath() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 600)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        let copied = folder.path("copied.sqlite")
        try FileManager.default.copyItem(at: files.new, to: copied)
        let job = try MigrationJob.start(
            plan: plan, source: files.old, destination: copied, journal: folder.path("journal"), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)

        let store = folder.path("store.sqlite")
        try FileManager.default.copyItem(at: files.old, to: store)
        // One batch, then the store is half-migrated: every entry point says so.
        var options = MigrationOptions(batchSize: 2)
        options.checksFreeSpace = false
        #expect(
            try InPlaceMigration.startOrResume(plan: plan, store: store, target: files.new, options: options).runBlocking(for: .zero)
                == .paused)
        #expect(InPlaceMigration.isHalfMigrated(store))
        for attempt in [
            { _ = try CoreDataStoreCheck.run(store: store) },
            { _ = try MigrationPlan.infer(source: store, destination: files.new) },
        ] as [() throws -> Void] {
            let error = #expect(throws: MigrationError.self) { try attempt() }
            #expect(error?.message.contains("part-way through an in-place migration") == true, "\(String(describing: error))")
        }
        let journalError = #expect(throws: MigrationError.self) { try MigrationJob.resume(at: store, logger: quietLogger) }
        #expect(journalError?.message.contains("this is a store, not a journal") == true, "\(String(describing: journalError))")
        let status = try #require(try InPlaceMigration.status(of: store))
        #expect(status.target == files.new.path && status.stepsDone < status.steps && status.currentStep != nil, "\(status)")
        // Towards another model than the one it started with: refused.
        let other = #expect(throws: MigrationError.self) {
            try InPlaceMigration.startOrResume(plan: plan, store: store, target: files.old, options: options)
        }
        #expect(other?.code == .mismatch, "\(String(describing: other))")
        // Paused from its progress, then continued from the store alone, one batch a run.
        let pausing = try #require(try InPlaceMigration.resume(store: store, options: options))
        #expect(try pausing.runBlocking { _ in pausing.pause() } == .paused)
        #expect(try #require(try InPlaceMigration.status(of: store)).stepsDone >= status.stepsDone)
        var runs = 0
        while let job = try InPlaceMigration.resume(store: store, options: options) {
            _ = try job.runBlocking(for: .zero)
            runs += 1
        }
        #expect(runs > 100 && !InPlaceMigration.isHalfMigrated(store))
        #expect(try InPlaceMigration.status(of: store) == nil)
        #expect(CoreDataTesting.difference(try CoreDataTesting.contents(store), try CoreDataTesting.contents(copied)) == nil)
        #expect(try CoreDataStoreCheck.run(store: store).violations == [])
        let indexes = "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name"
        #expect(
            try Database(path: store.path, mode: .source).rows(indexes) == (try Database(path: files.new.path, mode: .source).rows(indexes))
        )
    }

    @Test(
        "the renamed join table's index is the store's, renamed (its entry of sqlite_schema kept, not dropped and built again), and SQLite finds it whole; where the store's index is not as the plan found it, the step drops it and builds the target's; both equal the copy path"
    )
    func takesTheRenamedJoinTablesIndex() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 600)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        let copied = folder.path("copied.sqlite")
        try FileManager.default.copyItem(at: files.new, to: copied)
        #expect(
            try MigrationJob.start(
                plan: plan, source: files.old, destination: copied, journal: folder.path("journal"), logger: quietLogger
            ).runBlocking() == .complete)
        let entry = "SELECT rowid, sql FROM sqlite_schema WHERE type = 'index' AND name = ?1"
        let old = try #require(try Database(path: files.old.path, mode: .source).rows(entry, .text("Z_2TAGS_Z_5TAGS_INDEX")).first)
        let target = try #require(try Database(path: files.new.path, mode: .source).rows(entry, .text("Z_3TAGS_Z_6TAGS_INDEX")).first)
        var options = MigrationOptions(batchSize: 50)
        options.checksFreeSpace = false
        for tampered in [false, true] {
            let store = folder.path("store-\(tampered).sqlite")
            try FileManager.default.copyItem(at: files.old, to: store)
            let job = try InPlaceMigration.startOrResume(plan: plan, store: store, target: files.new, options: options)
            #expect(try job.runBlocking(for: .zero) == .paused)
            let steps = try Database(path: store.path, mode: .source).rows(
                "SELECT json_extract(step, '$.takes') FROM \(InPlaceMigration.stepTable) WHERE json_extract(step, '$.index') = ?1",
                .text("Z_3TAGS_Z_6TAGS_INDEX"))
            #expect(steps == [[.text("Z_2TAGS_Z_5TAGS_INDEX")]])
            if tampered {
                // The same name, another column: not the index the plan found.
                try Database(path: store.path, mode: .readWrite).execute(
                    "DROP INDEX Z_2TAGS_Z_5TAGS_INDEX; CREATE INDEX Z_2TAGS_Z_5TAGS_INDEX ON Z_2TAGS (Z_2ITEMS)")
            }
            _ = try Self.migrateInPlace(plan, store: store, target: files.new, batchSize: 50)
            let database = try Database(path: store.path, mode: .source)
            let index = try #require(try database.rows(entry, .text("Z_3TAGS_Z_6TAGS_INDEX")).first)
            #expect(index[1] == target[1])
            #expect((index[0] == old[0]) == !tampered, "the entry's rowid: \(index[0]), the store's index's \(old[0])")
            #expect(try database.rows(entry, .text("Z_2TAGS_Z_5TAGS_INDEX")).isEmpty)
            #expect(try database.scalar("PRAGMA integrity_check") == .text("ok"))
            #expect(CoreDataTesting.difference(try CoreDataTesting.contents(store), try CoreDataTesting.contents(copied)) == nil)
        }
    }

    @Test(
        "a small change (an optional attribute on Folder) in place: a column added, a derived count that stays right left as it is, the copy path's store; the check at the end looks up no key into Folder and computes no count the job did not write"
    )
    func smallChange() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 600)
        let xml = CoreDataDemoStore.sourceModelXML.replacingOccurrences(
            of: "<entity name=\"Folder\">",
            with: """
                <entity name="Folder">
                        <attribute name="color" optional="YES" attributeType="String"/>
                """)
        #expect(xml != CoreDataDemoStore.sourceModelXML)
        let target = folder.path("target.sqlite")
        try CoreDataEmptyStore.create(at: target, model: try CoreDataModel(xml: Data(xml.utf8), file: "small"), persistentHistory: true)
        let plan = try MigrationPlan.infer(source: files.old, destination: target).plan
        #expect(plan.coreData?.derived.map(\.attribute).contains("Folder.itemCount") == true)
        let copied = folder.path("copied.sqlite")
        try FileManager.default.copyItem(at: target, to: copied)
        #expect(
            try MigrationJob.start(
                plan: plan, source: files.old, destination: copied, journal: folder.path("journal"),
                logger: quietLogger
            ).runBlocking() == .complete)
        let store = folder.path("store.sqlite")
        try FileManager.default.copyItem(at: files.old, to: store)
        let entry = "SELECT rowid, sql FROM sqlite_schema WHERE type = 'index' AND name = 'ZFOLDER_ZPARENT_INDEX'"
        let before = try Database(path: store.path, mode: .source).rows(entry)
        var options = MigrationOptions(batchSize: 50)
        options.checksFreeSpace = false
        let job = try InPlaceMigration.startOrResume(plan: plan, store: store, target: target, options: options)
        let steps = try Database(path: store.path, mode: .readOnly).rows("SELECT step FROM _chunkmigrate_inplace_step").compactMap(
            \.first?.text)
        #expect(
            !steps.contains { $0.contains("derive Folder.itemCount") } && steps.contains { $0.contains("add columns to ZFOLDER") },
            "\(steps)")
        #expect(job.touchedTables == ["ACHANGE", "ZFOLDER"])
        #expect(job.keptTables == ["ZFOLDER": ["ZCOLOR"]])
        #expect(try job.runBlocking() == .complete)
        // Folder's index, whose table only gains a column, stays: its entry, under its own name.
        let after = try Database(path: store.path, mode: .source).rows(entry)
        #expect(before.count == 1 && after == before)
        #expect(try job.checkStore().violations == [])
        #expect(CoreDataTesting.difference(try CoreDataTesting.contents(store), try CoreDataTesting.contents(copied)) == nil)
        #expect(try CoreDataStoreCheck.run(store: store).violations == [])

        // What the job kept is not read again: a key into Folder and a derived count, both
        // broken after the job, are found by a check of every column of the tables it touched,
        // and by one where it wrote the derived column, not by the job's own.
        // (Core Data's triggers call functions only its connections have: out of the way meanwhile.)
        let writer = try Database(path: store.path, mode: .readWrite)
        let triggers = try writer.rows("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'")
        try writer.execute(
            "BEGIN; "
                + triggers.map { "DROP TRIGGER \(SQL.quote($0[0].text ?? "")); " }.joined()
                    + """
                    UPDATE ZITEM SET ZFOLDER = 999999 WHERE Z_PK = (SELECT min(Z_PK) FROM ZITEM WHERE ZFOLDER IS NOT NULL);
                    UPDATE ZFOLDER SET ZITEMCOUNT = ZITEMCOUNT + 5 WHERE Z_PK = (SELECT min(Z_PK) FROM ZFOLDER);
                    """
                + triggers.map { "\($0[1].text ?? ""); " }.joined() + "COMMIT")
        writer.close()
        func found(_ kept: [String: Set<String>]) throws -> [String] {
            try CoreDataStoreCheck.run(store: store, model: nil, tables: Set(job.touchedTables), kept: kept).violations.map {
                String($0.prefix { $0 != ":" })
            }
        }
        #expect(try found(job.keptTables) == [])
        #expect(try job.checkStore().violations == [])
        #expect(try found([:]).sorted() == ["ZFOLDER.ZITEMCOUNT", "ZITEM.ZFOLDER"])
        #expect(try found(["ZFOLDER": ["ZCOLOR", "ZITEMCOUNT"]]) == ["ZFOLDER.ZITEMCOUNT"])
    }

    @Test(
        "an in-place job runs as a copy runs: a cancelled task pauses it before its first batch; run(for:) on its own thread reports its batches to progressUpdates(), the fraction never going back and 1 only in the last report; status is read from another thread while it runs; the store then equals the one runBlocking migrates"
    )
    func runsThroughTheJobShell() async throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 300)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        var options = MigrationOptions(batchSize: 40)
        options.checksFreeSpace = false
        let blocking = folder.path("blocking.sqlite"), store = folder.path("store.sqlite")
        for copy in [blocking, store] { try FileManager.default.copyItem(at: files.old, to: copy) }
        // The run that migrates the store to compare with is held after its first batch, while
        // another thread reads where it stands.
        let parked = try InPlaceMigration.startOrResume(plan: plan, store: blocking, target: files.new, options: options)
        let seen = Locked<InPlaceMigration.Status??>(nil)
        #expect(
            try parked.runBlocking { _ in
                guard seen.withLock({ $0 == nil }) else { return }
                let read = DispatchSemaphore(value: 0)
                Thread {
                    seen.withLock { $0 = .some(parked.status) }
                    read.signal()
                }.start()
                read.wait()
            } == .complete)
        let midRun = try #require(seen.withLock { $0 } ?? nil)
        #expect(midRun.stepsDone > 0 || midRun.cursor != nil, "\(midRun)")

        let job = try InPlaceMigration.startOrResume(plan: plan, store: store, target: files.new, options: options)
        #expect(try #require(job.status).steps > 1)
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await job.run()
        }
        #expect(try await cancelled.value == .paused)
        #expect(job.status?.stepsDone == 0 && !job.isComplete)

        let updates = job.progressUpdates()
        let watcher = Task {
            var reports: [MigrationProgress] = [], statuses: [InPlaceMigration.Status?] = []
            for await report in updates {
                reports.append(report)
                statuses.append(job.status)
            }
            return (reports, statuses)
        }
        #expect(try await job.run(for: nil) == .complete)
        let (reports, statuses) = await watcher.value
        let fractions = reports.map(\.fraction)
        // The stream keeps the newest 16 reports where its reader lags: some may be left out,
        // never the last.
        #expect(reports.count >= 2 && zip(fractions, fractions.dropFirst()).allSatisfy { $0 <= $1 }, "\(fractions)")
        #expect(reports.last?.phase == .complete && reports.last?.fraction == 1 && fractions.dropLast().allSatisfy { $0 < 1 })
        #expect(reports.dropLast().allSatisfy { if case .inPlace(let step) = $0.phase { step == $0.entity } else { false } })
        // A chunked step's report counts its table's rowids, the last done within the largest.
        #expect(reports.contains { $0.table != nil && $0.rowsTotal > 0 && $0.rowsDone <= $0.rowsTotal })
        // Read on the stream's side while the run went (or after it: the reader may lag): never
        // past the job's steps.
        #expect(statuses.allSatisfy { ($0?.stepsDone ?? 0) <= ($0?.steps ?? 0) } && job.status == nil && job.isComplete)
        #expect(CoreDataTesting.difference(try CoreDataTesting.contents(store), try CoreDataTesting.contents(blocking)) == nil)
    }

    @Test(
        "one in-place job per store: while a job runs, another job of the store is refused (busy) before it reads or writes anything, as is a second run of the same job; once the job is done, the store opens again with nothing to do and no lock file left beside it"
    )
    func oneJobPerStore() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 300)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        let store = folder.path("store.sqlite")
        try FileManager.default.copyItem(at: files.old, to: store)
        var options = MigrationOptions(batchSize: 50)
        options.checksFreeSpace = false
        let first = try InPlaceMigration.startOrResume(plan: plan, store: store, target: files.new, options: options)
        // From the run's own progress report, after its first batch: another job of the store,
        // and another run of this one.
        var other: MigrationError?, resumed: MigrationError?, nested: MigrationError?
        var contents: [String: [[SQLiteValue]]]?, after: [String: [[SQLiteValue]]]?
        #expect(
            try first.runBlocking { _ in
                guard other == nil else { return }
                contents = try? CoreDataTesting.contents(store)
                other = #expect(throws: MigrationError.self) {
                    _ = try InPlaceMigration.startOrResume(plan: plan, store: store, target: files.new, options: options)
                }
                resumed = #expect(throws: MigrationError.self) { _ = try InPlaceMigration.resume(store: store, options: options) }
                nested = #expect(throws: MigrationError.self) { _ = try first.runBlocking() }
                after = try? CoreDataTesting.contents(store)
            } == .complete)
        for error in [other, resumed] {
            #expect(
                error?.code == .busy && error?.message.contains(InPlaceMigration.lockPath(of: store)) == true,
                "\(String(describing: error))")
        }
        #expect(nested?.code == .busy, "\(String(describing: nested))")
        #expect(contents != nil && after != nil && CoreDataTesting.difference(after!, contents!) == nil)
        #expect(!FileManager.default.fileExists(atPath: InPlaceMigration.lockPath(of: store)))
        #expect(try InPlaceMigration.resume(store: store, options: options) == nil)
        #expect(try CoreDataStoreCheck.run(store: store).violations == [])
    }

    @Test(
        "the Messenger stores migrated in place equal Core Data's own migration of them, table by table",
        .enabled(if: CoreDataOracleTests.present, "shared/fixtures/coredata is absent"),
        arguments: CoreDataOracleTests.pairs.map { "\($0.old) -> \($0.new)" })
    func sameAsCoreData(_ pair: String) throws {
        let (old, new, change) = CoreDataOracleTests.pairs.first { "\($0.old) -> \($0.new)" == pair }!
        let folder = try TemporaryFolder()
        let store = try CoreDataModelTests.copy(old, into: folder)
        try CoreDataTesting.provideExternalFiles(for: store)
        let coreData = try CoreDataModelTests.copy(new, into: folder)
        let target = try CoreDataTesting.emptiedCopy(of: coreData, named: "target.sqlite", in: folder)
        let plan = try MigrationPlan.infer(source: store, destination: target).plan
        _ = try Self.migrateInPlace(plan, store: store, target: target, batchSize: 3)
        var ours = try CoreDataTesting.contents(store), theirs = try CoreDataTesting.contents(coreData)
        ours["(triggers)"] = nil
        theirs["(triggers)"] = nil
        #expect(CoreDataTesting.difference(ours, theirs) == nil, "\(change)")
        #expect(try CoreDataStoreCheck.run(store: store).violations == [])
    }

    @Test(
        "every pair of Messenger/pairs.txt migrated in place equals Core Data's own migration, table by table",
        .enabled(if: !CoreDataOracleTests.everyPair.isEmpty, "shared/fixtures/coredata/Messenger/pairs.txt is absent"),
        arguments: CoreDataOracleTests.everyPair)
    func everyPairSameAsCoreData(_ pair: String) throws {
        let (old, new) = CoreDataOracleTests.stores(of: pair)
        let folder = try TemporaryFolder()
        let store = try CoreDataModelTests.copy(old, into: folder)
        // The rows of 21 pairs name external data files the fixtures come without: in place,
        // the references stay as they are.
        let coreData = try CoreDataModelTests.copy(new, into: folder)
        let target = try CoreDataTesting.emptiedCopy(of: coreData, named: "target.sqlite", in: folder)
        let plan = try MigrationPlan.infer(source: store, destination: target).plan
        var options = MigrationOptions(batchSize: 1_000)
        options.checksFreeSpace = false
        #expect(try InPlaceMigration.startOrResume(plan: plan, store: store, target: target, options: options).runBlocking() == .complete)
        var ours = try CoreDataTesting.contents(store), theirs = try CoreDataTesting.contents(coreData)
        ours["(triggers)"] = nil
        theirs["(triggers)"] = nil
        let difference = CoreDataTesting.difference(ours, theirs)
        #expect(difference == nil, "\(difference ?? "")")
    }

    @Test(
        "a store without a model cache (written before iOS 10) migrates in place to a target without one, its models given to the plan, as the copy path migrates it; entity numbers from each store's Z_PRIMARYKEY"
    )
    func withoutModelCache() throws {
        let folder = try TemporaryFolder()
        let old = try CoreDataTesting.model(CoreDataCarriedTests.model)
        // The new model adds an entity that sorts first (every number shifts) and an attribute with a default.
        let new = try CoreDataTesting.model(
            """
            <entity name="Archive"><attribute name="title" optional="YES" attributeType="String"/></entity>
            """
                + CoreDataCarriedTests.model.replacingOccurrences(
                    of: #"<attribute name="body" attributeType="String"/>"#,
                    with:
                        #"<attribute name="body" attributeType="String"/><attribute name="pinned" attributeType="Boolean" defaultValueString="NO"/>"#
                ))
        let stores = try CoreDataCarriedTests.stores(in: folder)
        let target = try CoreDataTesting.store(new, at: folder.path("Target.sqlite"), uuid: "C0000000-0000-0000-0000-000000000003")
        for store in [stores.source, target] {
            try Database(path: store.path, mode: .readWrite).execute("DELETE FROM Z_MODELCACHE")
        }
        #expect(try CoreDataModel.read(store: stores.source) == nil)
        let plan = try MigrationPlan.infer(
            source: stores.source, destination: target,
            options: InferenceOptions(sourceModel: old, destinationModel: new)
        ).plan
        let copied = folder.path("copied.sqlite")
        try FileManager.default.copyItem(at: target, to: copied)
        var options = MigrationOptions(batchSize: 2)
        options.checksStore = false
        #expect(
            try MigrationJob.start(
                plan: plan, source: stores.source, destination: copied, journal: folder.path("journal"),
                options: options, logger: quietLogger
            ).runBlocking() == .complete)
        #expect(try Self.migrateInPlace(plan, store: stores.source, target: target) > 2)
        #expect(CoreDataTesting.difference(try CoreDataTesting.contents(stores.source), try CoreDataTesting.contents(copied)) == nil)
        #expect(
            try CoreDataMigrationTests.rows(stores.source, "ZNOTE", columns: "Z_ENT, ZPINNED")
                == Array(repeating: [SQLiteValue.integer(3), .integer(0)], count: 4))
    }

    @Test(
        "in place, the check at the end carries what the store already was (required values left NULL, a join row to a deleted row) and fails on what the job brought about"
    )
    func sourceAnomaliesCarriedInPlace() throws {
        let folder = try TemporaryFolder()
        let new = try CoreDataTesting.model(
            CoreDataCarriedTests.model.replacingOccurrences(
                of: #"<attribute name="body" attributeType="String"/>"#,
                with:
                    #"<attribute name="body" attributeType="String"/><attribute name="pinned" attributeType="Boolean" defaultValueString="NO"/>"#
            ))
        let stores = try CoreDataCarriedTests.stores(in: folder)
        let target = try CoreDataTesting.store(new, at: folder.path("Target.sqlite"), uuid: "C0000000-0000-0000-0000-000000000003")
        var plan = try MigrationPlan.infer(source: stores.source, destination: target).plan
        var options = MigrationOptions(batchSize: 2)
        options.checksFreeSpace = false
        let job = try InPlaceMigration.startOrResume(plan: plan, store: stores.source, target: target, options: options)
        #expect(try job.runBlocking() == .complete)
        let report = try job.checkStore()
        #expect(
            report.isValid && report.carried.count == 1
                && report.carried[0].hasPrefix("ZNOTE.ZBODY: 2 rows of Note have no value for the required Note.body"),
            "\(report.violations) \(report.carried)")

        // The same store, a plan that writes NULL into a third row: that one is the job's.
        let other = try TemporaryFolder()
        let again = try CoreDataCarriedTests.stores(in: other)
        let note = try #require(plan.entities.firstIndex { $0.destination.table == "ZNOTE" })
        plan.entities[note].columns["ZBODY"] = "CASE WHEN Z_PK = 4 THEN NULL ELSE ZBODY END"
        let broken = try InPlaceMigration.startOrResume(plan: plan, store: again.source, target: target, options: options)
        #expect(try broken.runBlocking() == .complete)
        #expect(
            try broken.checkStore().violations == [
                "ZNOTE.ZBODY: 3 rows of Note have no value for the required Note.body, the first with Z_PK 2"
            ])
    }

    @Test(
        "in place, the check beside the last steps and the check at the end find together what the check at the end alone finds (the check off: nothing beside the job): keys into Folder and a polymorphic key the job wrote dangling; the same when the run is paused in the index builds and finished by another"
    )
    func checkBesideTheLastSteps() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 3000)
        var plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        let item = try #require(plan.entities.firstIndex { $0.destination.table == "ZITEM" })
        // Keys into Folder that point nowhere (a lookup), and one polymorphic key (in the
        // table's own pass).
        plan.entities[item].columns["ZFOLDER"] = "CASE WHEN Z_PK % 50 = 7 THEN ZFOLDER + 1000000 ELSE ZFOLDER END"
        let linked = try #require(plan.entities[item].columns["ZLINKED"])
        plan.entities[item].columns["ZLINKED"] = "CASE WHEN Z_PK = 12 THEN 999999 ELSE (\(linked)) END"
        var options = MigrationOptions()
        options.checksFreeSpace = false
        func store(_ name: String) throws -> URL {
            let url = folder.path(name)
            try FileManager.default.copyItem(at: files.old, to: url)
            return url
        }

        // One run to the end: the rows checked beside the last steps.
        let whole = try store("whole.sqlite")
        let job = try InPlaceMigration.startOrResume(plan: plan, store: whole, target: files.new, options: options)
        #expect(try job.runBlocking() == .complete)
        let beside = try #require(job.checkedBeside)
        #expect(beside.ran.contains("T:ZITEM") && beside.ran.contains("K:ZITEM.ZFOLDER"), "\(beside.ran.sorted())")
        // The tables the job derives counts into after the rows are checked once it has.
        #expect(!beside.ran.contains("T:ZFOLDER") && !beside.ran.contains("T:ZTAG"), "\(beside.ran.sorted())")
        let report = try job.checkStore()
        #expect(
            report.violations.sorted() == [
                "ZITEM.ZFOLDER: 58 rows point at no row of Folder, the first with Z_PK 7",
                "ZITEM.ZLINKED: 1 rows point at no row of Item or disagree with Z3_LINKED, the first with Z_PK 12",
            ], "\(report.violations)")

        // Paused once an index is built, finished by another run: its check beside starts again.
        let paused = try store("paused.sqlite")
        let first = try InPlaceMigration.startOrResume(plan: plan, store: paused, target: files.new, options: options)
        var indexSteps: Set<String> = []
        #expect(
            try first.runBlocking { _ in
                if let step = first.status?.currentStep, step.hasPrefix("index ") { indexSteps.insert(step) }
                if indexSteps.count == 2 { first.pause() }
            } == .paused)
        #expect(first.checkedBeside == nil)
        let second = try #require(try InPlaceMigration.resume(store: paused, options: options))
        #expect(try second.runBlocking() == .complete)
        #expect(second.checkedBeside != nil)
        let resumed = try second.checkStore()
        #expect(resumed.violations.sorted() == report.violations.sorted() && resumed.notes.sorted() == report.notes.sorted())

        // With the check off, nothing runs beside the job; the check at the end finds the same.
        let off = try store("off.sqlite")
        var unchecked = options
        unchecked.checksStore = false
        let quiet = try InPlaceMigration.startOrResume(plan: plan, store: off, target: files.new, options: unchecked)
        #expect(try quiet.runBlocking() == .complete)
        #expect(quiet.checkedBeside == nil)
        let after = try quiet.checkStore()
        #expect(
            after.violations.sorted() == report.violations.sorted() && after.notes.sorted() == report.notes.sorted()
                && after.carried.sorted() == report.carried.sorted() && after.unchecked == report.unchecked)
    }

    @Test(
        "a chunked step's batches double while one takes under half of 0.2 s (or the options' shorter target) and halve while one takes over twice, within the options' bounds and a twentieth of the table; a size given stays"
    )
    func batchSizeAdapts() {
        var options = MigrationOptions()
        options.minimumBatchSize = 100
        options.maximumBatchSize = 50_000
        #expect(InPlaceMigration.batchTarget(options) == .milliseconds(200))
        #expect(InPlaceMigration.adapt(10_000, took: .milliseconds(20), options: options) == 20_000)
        #expect(InPlaceMigration.adapt(40_000, took: .milliseconds(20), options: options) == 50_000)
        #expect(InPlaceMigration.adapt(10_000, took: .milliseconds(150), options: options) == 10_000)
        #expect(InPlaceMigration.adapt(10_000, took: .milliseconds(500), options: options) == 5_000)
        #expect(InPlaceMigration.adapt(150, took: .seconds(2), options: options) == 100)
        options.batchTimeTarget = .milliseconds(40)
        #expect(InPlaceMigration.adapt(10_000, took: .milliseconds(30), options: options) == 10_000)
        #expect(InPlaceMigration.adapt(10_000, took: .milliseconds(90), options: options) == 5_000)
        // At most a twentieth of the table's rowids, never fewer than the first batch's.
        #expect(InPlaceMigration.ceiling(first: 10_000, extent: 1_000_000) == 50_000)
        #expect(InPlaceMigration.ceiling(first: 10_000, extent: 30_000) == 10_000)
        #expect(InPlaceMigration.ceiling(first: 10_000, extent: nil) == 10_000)
        options.batchSize = 7
        #expect(InPlaceMigration.adapt(7, took: .milliseconds(1), options: options) == 7)
        #expect(InPlaceMigration.adapt(7, took: .seconds(9), options: options) == 7)
    }

    @Test("a plan that needs the copy path is refused with the reason, the store untouched")
    func refused() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 50)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new, options: InferenceOptions(keys: .allocate)).plan
        let before = try Data(contentsOf: files.old)
        let error = #expect(throws: MigrationError.self) {
            try InPlaceMigration.startOrResume(plan: plan, store: files.old, target: files.new)
        }
        #expect(
            error?.message.hasPrefix("this migration needs the copy path (run without --in-place): entities[") == true
                && error?.message.contains("gives its rows new keys") == true, "\(String(describing: error))")
        #expect(try Data(contentsOf: files.old) == before && !InPlaceMigration.isHalfMigrated(files.old))
    }
}

/// A plain SQLite store migrated inside its own file.
@Suite("In place, plain SQLite")
struct PlainInPlaceTests {
    static let oldSchema = """
        CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, email TEXT, age INTEGER);
        CREATE TABLE note (id INTEGER PRIMARY KEY, person_id INTEGER, body TEXT, archived INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE tag (id INTEGER PRIMARY KEY, label TEXT NOT NULL);
        CREATE UNIQUE INDEX tag_label ON tag (label);
        CREATE TABLE legacy (x);
        CREATE INDEX note_body ON note (body);
        CREATE VIEW adults AS SELECT * FROM person WHERE age >= 18;
        """
    static let newSchema = """
        CREATE TABLE people (id INTEGER PRIMARY KEY, full_name TEXT NOT NULL, email TEXT, age INTEGER, nickname TEXT DEFAULT 'n/a');
        CREATE TABLE note (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES people (id), body TEXT);
        CREATE TABLE tag (id INTEGER PRIMARY KEY, label TEXT NOT NULL);
        CREATE UNIQUE INDEX tag_label ON tag (label);
        CREATE INDEX note_person ON note (person_id);
        CREATE VIEW adults AS SELECT * FROM people WHERE age >= 18;
        CREATE TRIGGER note_touch AFTER UPDATE ON note BEGIN SELECT 1; END;
        """
    static let plan = """
        { "entities": [
            { "name": "Person", "source": { "table": "person", "key": "id" }, "destination": { "table": "people", "key": "id" },
              "keys": "preserve", "columns": { "full_name": "ifnull(name, '?')", "email": "lower(email)", "age": "age" } },
            { "name": "Note", "source": { "table": "note", "key": "id", "where": "archived = 0" }, "destination": { "table": "note", "key": "id" },
              "keys": "preserve", "columns": { "person_id": "person_id", "body": "body" } },
            { "name": "Tag", "source": { "table": "tag", "key": "id" }, "destination": { "table": "tag", "key": "id" },
              "keys": "preserve", "columns": { "label": "label" } } ] }
        """

    /// Every table's rows, and every table's definition (after its name), index, view and trigger.
    static func contents(_ store: URL) throws -> [String: [[SQLiteValue]]] {
        let database = try Database(path: store.path, mode: .source)
        var result: [String: [[SQLiteValue]]] = [:]
        for row in try database.rows("SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name") {
            let type = row[0].text!, name = row[1].text!
            result["(schema) \(type) \(name)"] = [[.text(type == "table" ? InPlacePlanner.body(of: row[2].text) ?? "" : row[2].text ?? "")]]
            if type == "table" {
                let columns = try database.rows("SELECT name FROM pragma_table_info(?1)", .text(name)).compactMap { $0[0].text }
                let list = columns.map(SQL.quote).joined(separator: ", ")
                let withoutRowid = (row[2].text ?? "").uppercased().contains("WITHOUT ROWID")
                result[name] = try database.rows(
                    withoutRowid
                        ? "SELECT \(list) FROM \(SQL.quote(name)) ORDER BY 1"
                        : "SELECT rowid, \(list) FROM \(SQL.quote(name)) ORDER BY rowid")
            }
        }
        return result
    }

    @Test(
        "a plain store in place, paused after every batch: a table renamed with a column renamed, one added and one converted, a filter, a column removed, an unchanged table left as it is, views, indexes and triggers: the copy path's store"
    )
    func equalsCopyPath() throws {
        let folder = try TemporaryFolder()
        let store = folder.path("store.sqlite")
        let database = try Database(path: store.path, mode: .readWriteCreate)
        try database.execute(Self.oldSchema)
        // Sparse keys, NULLs, archived notes.
        try database.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
            INSERT INTO person (id, name, email, age) SELECT i * 7, CASE WHEN i % 10 = 0 THEN NULL ELSE 'P' || i END, 'P' || i || '@X.ORG', i % 60 FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 900)
            INSERT INTO note (id, person_id, body, archived) SELECT i * 3 + 1, (i % 300 + 1) * 7, 'note ' || i, i % 4 = 0 FROM n;
            INSERT INTO tag (id, label) VALUES (5, 'red'), (9, 'blue'), (40, 'green');
            INSERT INTO legacy VALUES (1), (2);
            """)
        let before = try Database(path: store.path, mode: .source).rows("SELECT rowid, label FROM tag")
        let target = folder.path("target.sqlite")
        try InPlaceMigration.createTarget(at: target, schema: Self.newSchema)
        let plan = try MigrationPlan.decode(json: Data(Self.plan.utf8), file: "plan.json")

        let copied = folder.path("copied.sqlite")
        try InPlaceMigration.createTarget(at: copied, schema: Self.newSchema)
        let job = try MigrationJob.start(
            plan: plan, source: store, destination: copied, journal: folder.path("journal"), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)

        let runs = try InPlaceMigrationTests.migrateInPlace(plan, store: store, target: target, batchSize: 50)
        #expect(runs > 20 && !InPlaceMigration.isHalfMigrated(store))
        let ours = try Self.contents(store), theirs = try Self.contents(copied)
        #expect(CoreDataTesting.difference(ours, theirs) == nil)
        #expect(ours["note"]?.count == 675 && ours["people"]?.count == 300 && ours["legacy"] == nil)
        #expect(try Database(path: store.path, mode: .source).rows("SELECT rowid, label FROM tag") == before)
        // Run again: the store is at the target's schema, nothing to do.
        let again = try InPlaceMigration.startOrResume(plan: plan, store: store, target: target)
        #expect(try again.runBlocking() == .complete && again.touchedTables.isEmpty && !again.isCoreData)
    }

    @Test("a plain plan that needs the copy path is refused with the reason")
    func refusals() throws {
        let folder = try TemporaryFolder()
        let store = folder.path("store.sqlite")
        try Database(path: store.path, mode: .readWriteCreate).execute(Self.oldSchema)
        let target = folder.path("target.sqlite")
        try InPlaceMigration.createTarget(at: target, schema: Self.newSchema)
        for (change, reason) in [
            (#""keys": "preserve""#, "gives its rows new keys"),
            (#""columns": { "person_id""#, "resolves relationships through the ID map"),
        ] {
            let replacement =
                change.contains("keys")
                ? #""keys": "allocate""#
                : #""relationships": { "person_id": { "from": "person_id", "to": "Person" } }, "columns": { "person_id_unused""#
            let json = Self.plan.replacingOccurrences(of: change, with: replacement).replacingOccurrences(
                of: #", "person_id_unused": "person_id""#, with: "")
            let plan = try MigrationPlan.decode(json: Data(json.utf8), file: "plan.json")
            let error = #expect(throws: MigrationError.self) {
                try InPlaceMigration.startOrResume(plan: plan, store: store, target: target)
            }
            #expect(error?.message.contains(reason) == true, "\(String(describing: error))")
            #expect(!InPlaceMigration.isHalfMigrated(store))
        }
    }

    /// A store of `schema` with rows, and a target of `target`; the plan decoded.
    static func stores(_ schema: String, rows: String, target: String, plan: String, in folder: TemporaryFolder) throws -> (
        store: URL, target: URL, plan: MigrationPlan
    ) {
        let store = folder.path("store.sqlite")
        try Database(path: store.path, mode: .readWriteCreate).execute(schema + rows)
        let targetURL = folder.path("target.sqlite")
        try InPlaceMigration.createTarget(at: targetURL, schema: target)
        return (store, targetURL, try MigrationPlan.decode(json: Data(plan.utf8), file: "plan.json"))
    }

    @Test(
        "refused before anything is written: a plan that changes rows but no table, a row reading its own table, a WITHOUT ROWID table, rows that would break a unique index of the target, also where the store holds them unique under another collation"
    )
    func refusedBeforeWriting() throws {
        let person =
            "CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, boss INTEGER, email TEXT); CREATE INDEX person_name ON person (name);"
        let rows = "INSERT INTO person VALUES (1, 'ann', NULL, 'A@x'), (2, 'bob', 1, 'a@X'), (3, 'cy', 2, 'c@x');"
        func plan(_ columns: String, where condition: String? = nil, table: String = "person") -> String {
            #"{ "entities": [ { "name": "Person", "source": { "table": "person", "key": "id""#
                + (condition.map { #", "where": "\#($0)""# } ?? "")
                + #" }, "destination": { "table": "\#(table)", "key": "id" }, "keys": "preserve", "columns": { \#(columns) } } ] }"#
        }
        let renamed = "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, boss INTEGER, email TEXT, boss_name TEXT);"
        let cases: [(schema: String, target: String, plan: String, reason: String)] = [
            (
                person, person, plan(#""name": "upper(name)", "boss": "boss", "email": "email""#, where: "id > 1"),
                "changes rows of person but no table"
            ),
            (
                person, renamed,
                plan(
                    #""name": "name", "boss": "boss", "email": "email", "boss_name": "(SELECT p.name FROM src.person p WHERE p.id = s.boss)""#,
                    table: "people"),
                "reads other rows of person, its own table"
            ),
            (
                person, renamed, plan(#""name": "name", "boss": "boss", "email": "(SELECT count(*) FROM main.people)""#, table: "people"),
                "reads the destination (main.)"
            ),
            (
                "CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, boss INTEGER, email TEXT) WITHOUT ROWID;", renamed,
                plan(#""name": "name", "boss": "boss", "email": "email""#, table: "people"), "WITHOUT ROWID"
            ),
            (
                person, renamed + "CREATE UNIQUE INDEX people_email ON people (email COLLATE NOCASE);",
                plan(#""name": "name", "boss": "boss", "email": "lower(email)""#, table: "people"),
                "unique index people_email on people: 2 rows would have ('a@x')"
            ),
            // Unique in the store, but under another collation than the target's: still looked for.
            (
                person + "CREATE UNIQUE INDEX person_email ON person (email);",
                renamed + "CREATE UNIQUE INDEX people_email ON people (email COLLATE NOCASE);",
                plan(#""name": "name", "boss": "boss", "email": "email""#, table: "people"),
                "unique index people_email on people: 2 rows would have"
            ),
        ]
        for (schema, target, json, reason) in cases {
            let folder = try TemporaryFolder()
            let given = try Self.stores(schema, rows: rows, target: target, plan: json, in: folder)
            let before = try Self.contents(given.store)
            let error = #expect(throws: MigrationError.self) {
                try InPlaceMigration.startOrResume(plan: given.plan, store: given.store, target: given.target)
            }
            #expect(error?.message.contains(reason) == true, "\(reason): \(String(describing: error))")
            #expect(try Self.contents(given.store) == before && !InPlaceMigration.isHalfMigrated(given.store), "\(reason)")
        }
    }

    @Test("a view with an INSTEAD OF trigger in the target; a WAL store stays WAL, also when the finished job is run again")
    func viewsTriggersAndJournalMode() throws {
        let folder = try TemporaryFolder()
        let target = """
            CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT);
            CREATE VIEW names AS SELECT name FROM people;
            CREATE TRIGGER names_insert INSTEAD OF INSERT ON names BEGIN INSERT INTO people (name) VALUES (NEW.name); END;
            """
        let given = try Self.stores(
            "CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, age INTEGER);",
            rows: "INSERT INTO person VALUES (1, 'ann', 30), (5, 'bob', 40);", target: target,
            plan:
                #"{ "entities": [ { "name": "Person", "source": { "table": "person", "key": "id" }, "destination": { "table": "people", "key": "id" }, "keys": "preserve", "columns": { "name": "name" } } ] }"#,
            in: folder)
        _ = try Database(path: given.store.path, mode: .readWrite).scalar("PRAGMA journal_mode = WAL")
        for _ in 0..<2 {
            #expect(
                try InPlaceMigration.startOrResume(plan: given.plan, store: given.store, target: given.target).runBlocking() == .complete)
            let database = try Database(path: given.store.path, mode: .readWrite)
            #expect(try database.scalar("PRAGMA journal_mode").text == "wal")
            #expect(
                try database.rows("SELECT id, name FROM people ORDER BY id") == [
                    [.integer(1), .text("ann")], [.integer(5), .text("bob")],
                ])
        }
        let database = try Database(path: given.store.path, mode: .readWrite)
        try database.execute("INSERT INTO names (name) VALUES ('cy')")
        #expect(try database.scalar("SELECT count(*) FROM people").integer == 3)
    }
}
