import Foundation
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// The check a Core Data job makes of the store it wrote, partly alongside its index builds.
@Suite("The job's own store check")
struct StoreCheckInJobTests {
    /// The demo's old store of 2,000 items, and a connection writing it, its triggers dropped:
    /// they call functions only Core Data's connections have.
    /// With `dangling`, something for the check to find: to-ones into `ZFOLDER` and join rows
    /// into `ZTAG` whose targets are not there.
    static func demoStore(in folder: TemporaryFolder, rows: Int = 2_000, dangling: Bool = false) throws -> (
        files: CoreDataDemoStore.Files, writer: Database
    ) {
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: rows)
        let writer = try Database(path: files.old.path, mode: .readWrite)
        for trigger in try writer.rows("SELECT name FROM sqlite_schema WHERE type = 'trigger'").compactMap({ $0[0].text }) {
            try writer.execute("DROP TRIGGER \(SQL.quote(trigger))")
        }
        if dangling {
            try writer.execute(
                """
                UPDATE ZITEM SET ZFOLDER = ZFOLDER + 1000000 WHERE Z_PK % 7 = 0;
                UPDATE Z_2TAGS SET Z_5TAGS = Z_5TAGS + 100000 WHERE rowid % 11 = 0;
                """)
        }
        return (files, writer)
    }

    /// What the check of the store at `path` finds as a job runs it after the copy, while
    /// `writer`, the job, makes `writes` transactions one after another (`write(i)`), giving the
    /// check's reads in its way a chance to stop; and how often the writer found one of them in
    /// its way, they stopped, and a step ran again for a changed schema.
    static func checkBeside(_ path: String, writer: Database, writes: Int, _ write: (Int) throws -> Void) throws
        -> (report: CoreDataStoreCheck.Report, busy: Int, gaveWay: Int, rereads: Int)
    {
        let check = CoreDataStoreCheck.Overlapped(path: path, cacheKiB: 2048, indexes: [], entities: nil)
        let busy = Locked(0)
        writer.onBusy { count in
            busy.withLock { $0 += 1 }
            check.yieldToJob()
            usleep(100)
            return count < 600_000
        }
        defer { writer.waitWhenBusy() }
        try check.rowsIn()
        for index in 0..<writes { try write(index) }
        check.indexesBuilt()
        check.storeFinished()
        let rows = check.rows()
        return (rows.report.merged(with: check.rest()), busy.withLock { $0 }, check.timesGivenWay, check.timesSchemaChanged)
    }

    @Test(
        "a job that writes dangling to-ones completes with a report naming them: the lookup that waits for the index it reads, and the part over the rows"
    )
    func findsViolations() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 3_000)
        var plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        let item = try #require(plan.entities.firstIndex { $0.name == "Item" })
        // ZFOLDER's lookup reads ZITEM_ZFOLDER_INDEX, which the job builds: postponed. ZLINKED
        // has a polymorphic column, so its rows are read alongside the index builds.
        plan.entities[item].columns["ZFOLDER"] = "CASE WHEN Z_PK % 7 = 0 THEN ZFOLDER + 1000000 ELSE ZFOLDER END"
        plan.entities[item].columns["ZLINKED"] = "CASE WHEN ZLINKED IS NOT NULL AND Z_PK % 5 = 0 THEN ZLINKED + 1000000 ELSE ZLINKED END"
        // Tag.itemCount copied as a wrong number instead of derived: the values the check computes
        // while the job builds its indexes differ from those the job wrote.
        let tag = try #require(plan.entities.firstIndex { $0.name == "Tag" })
        #expect(plan.coreData?.derived.contains { $0.attribute == "Tag.itemCount" } == true)
        plan.coreData?.derived.removeAll { $0.attribute == "Tag.itemCount" }
        plan.entities[tag].columns["ZITEMCOUNT"] =
            "CASE WHEN Z_PK % 4 = 0 THEN -1 ELSE (SELECT count(*) FROM src.Z_2TAGS WHERE Z_5TAGS = s.Z_PK) END"
        let job = try MigrationJob.start(
            plan: plan, source: files.old, destination: files.new, journal: folder.path("journal"),
            options: MigrationOptions(batchSize: 500), logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        let report = try #require(job.storeCheck)
        #expect(!report.isValid)
        #expect(
            report.violations.contains { $0.hasPrefix("ZITEM.ZFOLDER: ") && $0.contains("point at no row of Folder") },
            "\(report.violations)")
        #expect(report.violations.contains { $0.hasPrefix("ZITEM.ZLINKED: ") }, "\(report.violations)")
        #expect(
            report.violations.contains {
                $0.hasPrefix("ZTAG.ZITEMCOUNT: ") && $0.contains("another value than the derived attribute Tag.itemCount")
            },
            "\(report.violations)")
        // The same as check-coredata's, made apart on the finished store.
        let apart = try CoreDataStoreCheck.run(store: files.new)
        #expect(Set(apart.violations) == Set(report.violations) && apart.checked == report.checked)
        #expect(job.lastRunPhases.map { $0.checkAlongside > 0 && $0.indexes > 0 } == true)
        // The check started while the job copied: the tables it finished first were checked
        // while it copied the join table's 5,700 rows, batch by batch.
        #expect(job.lastRunPhases.map { $0.checkDuringCopy > 0 } == true)
    }

    @Test(
        "the part a job runs while it copies reads only the tables it has finished, and with the rows part after it finds what the rows part alone finds"
    )
    func earlyPart() throws {
        let folder = try TemporaryFolder()
        let (files, writer) = try Self.demoStore(in: folder, dangling: true)
        // A stray Z_ENT (which the polymorphic ZLINKED of the rows pointing there disagrees
        // with), dangling to-ones into another table and into the same one, dangling join rows,
        // Z_MAX behind the keys.
        try writer.execute(
            """
            UPDATE ZITEM SET Z_ENT = 99 WHERE Z_PK % 13 = 0;
            UPDATE ZFOLDER SET ZPARENT = 999999 WHERE Z_PK % 5 = 0;
            UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Item';
            """)
        writer.close()

        let database = try Database(path: files.old.path, mode: .readOnly)
        let model = try CoreDataModel.read(database, schema: "main", file: files.old.path)
        let entities = try CoreDataEntities.read(database, file: files.old.path)
        let file = files.old.path
        // ZITEM.ZFOLDER's lookup waits for an index, as in a job: in no rows part.
        for postponed: Set<String> in [[], ["ZITEM.ZFOLDER"]] {
            let whole = try CoreDataStoreCheck.check(database, model: model, file: file, part: .rows, postponed: postponed)
            #expect(
                whole.violations.count >= 5 && whole.violations.contains { $0.hasPrefix("Z_PRIMARYKEY: Z_MAX of Item") },
                "\(whole.violations)")
            let tables: Set<String> = ["ZFOLDER", "ZITEM", "ZTAG", "Z_2TAGS"]
            // One early part, or two where the job finished more tables in between.
            for rounds: [Set<String>] in [
                [["ZITEM"]], [["ZITEM", "ZFOLDER"]], [["ZFOLDER", "ZTAG", "Z_2TAGS"]], [tables], [["ZITEM"], tables],
            ] {
                var report = CoreDataStoreCheck.Report(violations: [], checked: 0, unchecked: [])
                var ran: Set<String> = []
                for readable in rounds {
                    let (early, read) = try database.recordingReads(in: "main") {
                        try CoreDataStoreCheck.check(
                            database, model: model, file: file, part: .early, postponed: postponed,
                            readable: readable, entities: entities, done: ran)
                    }
                    // The schema, and the pragmas that read it as the connection holds it (whether
                    // a key is the rowid, which index a column leads), are no table's rows.
                    let outside = Set(read.keys.map { $0.uppercased() }).subtracting(readable).subtracting([
                        "SQLITE_MASTER", "SQLITE_SCHEMA", "PRAGMA_TABLE_INFO", "PRAGMA_INDEX_LIST", "PRAGMA_INDEX_INFO",
                    ])
                    #expect(outside.isEmpty, "the early part over \(readable.sorted()) read \(outside.sorted())")
                    #expect(early.ran.isDisjoint(with: ran), "\(early.ran) ran again")
                    report = report.merged(with: early.report)
                    ran.formUnion(early.ran)
                }
                let rest = try CoreDataStoreCheck.check(database, model: model, file: file, part: .rows, postponed: postponed, done: ran)
                    .report
                let label = "\(rounds.map { $0.sorted() }), postponed \(postponed.sorted())"
                #expect((report.violations + rest.violations).sorted() == whole.violations.sorted(), "\(label)")
                #expect(
                    (report.notes + rest.notes).sorted() == whole.notes.sorted() && report.unchecked + rest.unchecked == whole.unchecked,
                    "\(label)")
                #expect(report.checked + rest.checked == whole.checked, "\(label)")
                if rounds == [["ZITEM"]] {
                    // Its rows and the polymorphic to-one into its own table; not the to-one into ZFOLDER.
                    #expect(ran == ["T:ZITEM", "K:ZITEM.ZLINKED"])
                    #expect(
                        report.violations.contains { $0.hasPrefix("ZITEM: ") }
                            && report.violations.contains { $0.hasPrefix("ZITEM.ZLINKED: ") })
                }
                if rounds.last == tables {
                    // Left to the rows part: Z_MAX, which reads Z_PRIMARYKEY.
                    #expect(
                        rest.violations.allSatisfy { $0.hasPrefix("Z_PRIMARYKEY: ") }
                            && rest.checked == ran.filter { $0.hasPrefix("T:") }.count,
                        "\(rest.violations)")
                    #expect(ran.contains("K:ZITEM.ZFOLDER") == postponed.isEmpty)
                }
            }
        }
    }

    @Test(
        "a round of the part run while the job copies that fails is tried again; where every try fails, its checks run after the copy, with the same findings, and the check says why"
    )
    func earlyRoundTriedAgain() throws {
        let folder = try TemporaryFolder()
        let (files, writer) = try Self.demoStore(in: folder, dangling: true)
        // Something for each part to find: dangling to-ones, dangling join rows, Z_MAX behind.
        try writer.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Item'")
        writer.close()
        let path = files.old.path
        let reader = try Database(path: path, mode: .readOnly)
        let entities = try CoreDataEntities.read(reader, file: path)
        let tables = Set(try reader.rows("SELECT upper(name) FROM sqlite_schema WHERE type = 'table'").compactMap { $0[0].text })
        reader.close()

        /// The check of the store as a job runs it, its unlocked connections failing `failures`
        /// times: the copy over once the check has had time for its rounds.
        func check(failing failures: Int) -> (report: CoreDataStoreCheck.Report, duringCopy: Double, earlyFailure: String?) {
            let failed = Locked(0)
            let check = CoreDataStoreCheck.Overlapped(path: path, cacheKiB: 2048, indexes: [], entities: entities) {
                path, mode throws(SQLiteError) in
                if mode == .unlocked,
                    failed.withLock({ count in
                        count += 1; return count <= failures
                    })
                {
                    // SQLITE_CORRUPT, as a torn read of the header page gives.
                    throw SQLiteError(.corrupt, message: "database disk image is malformed", sql: nil, file: path)
                }
                return try Database(path: path, mode: mode)
            }
            check.tablesFinished(tables)
            Thread.sleep(forTimeInterval: 0.5)
            #expect(throws: Never.self) { try check.rowsIn() }
            check.indexesBuilt()
            check.storeFinished()
            let rows = check.rows()
            return (rows.report.merged(with: check.rest()), rows.duringCopy, rows.earlyFailure)
        }

        let clean = check(failing: 0)
        #expect(clean.earlyFailure == nil && clean.duringCopy > 0)
        #expect(clean.report.violations.count >= 3, "\(clean.report.violations)")
        // Fewer failures than tries: the round runs in the end, during the copy.
        let retried = check(failing: CoreDataStoreCheck.Overlapped.earlyAttempts - 1)
        #expect(retried.earlyFailure == nil)
        #expect(retried.report.violations.sorted() == clean.report.violations.sorted())
        #expect(retried.report.checked == clean.report.checked)
        // As many as the tries: left to the part after the copy, which finds the same.
        let failed = check(failing: CoreDataStoreCheck.Overlapped.earlyAttempts)
        #expect(failed.earlyFailure?.contains("malformed") == true)
        #expect(failed.report.violations.sorted() == clean.report.violations.sorted())
        #expect(failed.report.checked == clean.report.checked)
    }

    @Test(
        "the job writes while the check reads the store in its rollback journal: a read in the way stops and runs again after the job's commit, and the check finds what it finds alone"
    )
    func checkGivesWay() throws {
        let folder = try TemporaryFolder()
        // Something to find: dangling to-ones and join rows, Z_MAX behind the keys.
        let (files, writer) = try Self.demoStore(in: folder, rows: 60_000, dangling: true)
        try writer.execute(
            """
            UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Item';
            PRAGMA journal_mode = TRUNCATE;
            CREATE TABLE scratch (x BLOB);
            """)
        let path = files.old.path

        /// The check beside `writes` transactions of the job, each writing a page.
        func check(writes: Int) throws -> (report: CoreDataStoreCheck.Report, busy: Int, gaveWay: Int, rereads: Int) {
            try Self.checkBeside(path, writer: writer, writes: writes) { _ in
                try writer.execute("BEGIN IMMEDIATE; INSERT INTO scratch VALUES (zeroblob(3000)); COMMIT")
                usleep(2_000)
            }
        }

        let alone = try check(writes: 0)
        #expect(alone.gaveWay == 0)
        #expect(alone.report.violations.count >= 3, "\(alone.report.violations)")
        let beside = try check(writes: 200)
        #expect(beside.busy > 0, "the job's writes met the check's reads")
        #expect(beside.gaveWay > 0, "the check gave way")
        #expect(beside.report.violations.sorted() == alone.report.violations.sorted())
        #expect(beside.report.checked == alone.report.checked)
        #expect(try writer.scalar("SELECT count(*) FROM scratch") == .integer(200))
        writer.close()
    }

    @Test(
        "the job changes the schema with each index it builds while the check reads: a read that finds the schema changed runs again, and the check finds what it finds alone"
    )
    func schemaChangesBeside() throws {
        let folder = try TemporaryFolder()
        let (files, writer) = try Self.demoStore(in: folder, dangling: true)
        try writer.execute(
            """
            PRAGMA journal_mode = TRUNCATE;
            CREATE TABLE scratch (x);
            """)
        let path = files.old.path

        /// The check beside `changes` schema changes of the job one after another, as it makes
        /// building the indexes of many small tables.
        func check(changes: Int) throws -> (report: CoreDataStoreCheck.Report, busy: Int, gaveWay: Int, rereads: Int) {
            try Self.checkBeside(path, writer: writer, writes: changes) { change in
                try writer.execute(change % 2 == 0 ? "CREATE INDEX scratch_x ON scratch (x)" : "DROP INDEX scratch_x")
            }
        }

        let alone = try check(changes: 0)
        #expect(alone.rereads == 0)
        #expect(alone.report.violations.count >= 2, "\(alone.report.violations)")
        // Whether a read meets a statement SQLite gave up on is a matter of timing here (about
        // one round in two on an idle machine): `schemaChangedWhilePreparing` makes it certain.
        try writer.execute("PRAGMA synchronous = OFF")
        for _ in 0..<2 {
            let beside = try check(changes: 2_000)
            #expect(beside.report.violations.sorted() == alone.report.violations.sorted())
            #expect(beside.report.checked == alone.report.checked)
        }
        writer.close()
    }

    /// Changes the schema of a store each time another connection prepares a statement reading
    /// `table`, `changes` times: SQLite prepares a statement again where the schema changed
    /// before it ran, up to 50 times, then gives up (`SQLITE_SCHEMA`).
    final class SchemaChanger: @unchecked Sendable {
        let writer: Database
        let table: String
        let lock = NSLock()
        private var left: Int
        private var next = 0
        init(writer: Database, table: String, changes: Int) {
            self.writer = writer
            self.table = table
            left = changes
        }

        /// Prepares of statements reading `table` on `database` change the schema first.
        func watch(_ database: Database) {
            database.onRead { [self] read in
                if read == table { change() }
            }
        }

        private func change() {
            lock.lock()
            defer { lock.unlock() }
            guard left > 0 else { return }
            left -= 1
            next += 1
            try? writer.execute(next % 2 == 1 ? "CREATE INDEX scratch_x ON scratch (x)" : "DROP INDEX scratch_x")
        }
    }

    @Test(
        "the schema changes each time the check prepares its read of the model: while the job writes, the read runs again until it goes through; once the job has finished, five times, then the check says it could not run"
    )
    func schemaChangedWhilePreparing() throws {
        let folder = try TemporaryFolder()
        let (files, writer) = try Self.demoStore(in: folder, dangling: true)
        try writer.execute(
            """
            PRAGMA journal_mode = TRUNCATE;
            PRAGMA synchronous = OFF;
            CREATE TABLE scratch (x);
            """)
        let path = files.old.path

        /// The check after the copy, its connection watched by `changer`; `finished`: the job has
        /// finished the store before the check reads it.
        func check(_ changer: SchemaChanger?, finished: Bool) throws -> (report: CoreDataStoreCheck.Report, rereads: Int) {
            let check = CoreDataStoreCheck.Overlapped(path: path, cacheKiB: 2048, indexes: [], entities: nil) {
                path, mode throws(SQLiteError) in
                let database = try Database(path: path, mode: mode)
                changer?.watch(database)
                return database
            }
            if finished { check.storeFinished() }
            try check.rowsIn()
            check.indexesBuilt()
            check.storeFinished()
            let rows = check.rows()
            return (rows.report.merged(with: check.rest()), check.timesSchemaChanged)
        }

        let alone = try check(nil, finished: false)
        #expect(alone.rereads == 0 && alone.report.violations.contains { $0.contains("ZFOLDER") }, "\(alone.report.violations)")
        // Enough changes for a few reads to give up (SQLite prepares a statement again up to 50
        // times), then none.
        let writing = try check(SchemaChanger(writer: writer, table: "Z_MODELCACHE", changes: 110), finished: false)
        #expect(writing.rereads >= 1)
        #expect(writing.report.violations.sorted() == alone.report.violations.sorted())
        #expect(writing.report.checked == alone.report.checked)

        let finished = try check(SchemaChanger(writer: writer, table: "Z_MODELCACHE", changes: .max), finished: true)
        #expect(finished.rereads == CoreDataStoreCheck.Overlapped.schemaTriesOnceFinished)
        #expect(
            finished.report.violations.contains { $0.contains("could not run") && $0.contains("schema has changed") },
            "\(finished.report.violations)")
        writer.close()
    }

    @Test("paused in the index builds and finished by another run: the check of the run that completes the job; off, none")
    func pausedAndOff() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 3_000)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        // One batch a run: the runs stop everywhere, in the index builds and the finishing steps too.
        var runs = 0, reports = 0
        while true {
            let job = try MigrationJob.startOrResume(
                plan: plan, source: files.old, destination: files.new, journal: folder.path("journal"),
                options: MigrationOptions(batchSize: 700), logger: quietLogger)
            let outcome = try job.runBlocking(for: .zero)
            runs += 1
            if job.storeCheck != nil { reports += 1 }
            if outcome == .complete {
                #expect(job.storeCheck?.isValid == true && job.storeCheck?.violations == [], "\(String(describing: job.storeCheck))")
                break
            }
        }
        #expect(runs > 10 && reports == 1)
        #expect(try CoreDataStoreCheck.run(store: files.new).isValid)

        let other = try TemporaryFolder()
        let second = try CoreDataDemoStore.generate(in: other.url, rows: 300)
        var options = MigrationOptions()
        options.checksStore = false
        let job = try MigrationJob.start(
            plan: try MigrationPlan.infer(source: second.old, destination: second.new).plan, source: second.old,
            destination: second.new, journal: other.path("journal"), options: options, logger: quietLogger)
        #expect(try job.runBlocking() == .complete && job.storeCheck == nil && job.lastRunPhases?.check == 0)
    }

    @Test(
        "the derived values the check computes alongside: every derivation but now() and those reading a value the job writes last; typed as their column; a changed value found"
    )
    func expectedValues() throws {
        let folder = try TemporaryFolder()
        // Book.shelfNumber: a number into a text column. Book.shelfCanonical reads a derived value.
        let entities = CoreDataDerivedMigrationTests.derivedEntities
            .replacingOccurrences(
                of: "<attribute name=\"name\" optional=\"YES\" attributeType=\"String\"/>",
                with: """
                    <attribute name="name" optional="YES" attributeType="String"/>
                    <attribute name="number" optional="YES" attributeType="Integer 64"/>
                    """
            )
            .replacingOccurrences(
                of: "<attribute name=\"shelfName\"",
                with: """
                    <attribute name="shelfNumber" optional="YES" attributeType="String" derived="YES" derivationExpression="shelf.number"/>
                    <attribute name="shelfCanonical" optional="YES" attributeType="String" derived="YES" derivationExpression="shelf.canonicalName"/>
                    <attribute name="shelfName"
                    """)
        let model = try CoreDataTesting.model(entities)
        // Book 1, Novel 2, Shelf 3.
        let store = try CoreDataTesting.store(
            model, at: folder.path("store.sqlite"), uuid: "B0000000-0000-0000-0000-000000000003",
            rows: """
                INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT, ZNAME, ZNUMBER, ZPARENT) VALUES (1, 3, 1, 'Café', 5, NULL), (2, 3, 1, 'Ñandú', NULL, 1), (4, 3, 1, NULL, 12, 1);
                INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZSHELF, ZGENRE) VALUES (1, 1, 1, 'a', 1, NULL), (2, 2, 1, 'b', 4, 'sci-fi'), (3, 2, 1, 'c', 2, 'crime'), (5, 1, 1, 'd', NULL, NULL);
                """)
        let layout = try CoreDataLayout(model: model)
        let writer = try Database(path: store.path, mode: .readWrite)
        try CoreDataBookkeeping.registerDerivationFunctions(on: writer)
        // Core Data's triggers call functions only its connections have: out of the way.
        for trigger in try writer.rows("SELECT name FROM sqlite_schema WHERE type = 'trigger'").compactMap({ $0[0].text }) {
            try writer.execute("DROP TRIGGER \(SQL.quote(trigger))")
        }
        for entity in model.entities {
            for property in entity.properties where property.attribute?.derivation != nil {
                try writer.execute(try CoreDataDerivation(entity: entity.name, attribute: property.name, layout: layout).dataStatement)
            }
        }
        #expect(try writer.scalar("SELECT typeof(ZSHELFNUMBER) || ZSHELFNUMBER FROM ZBOOK WHERE Z_PK = 1") == .text("text5"))

        let database = try Database(path: store.path, mode: .readOnly)
        let all = try CoreDataStoreCheck.ExpectedValues.all(
            in: database, layout: layout.resolved(against: database, schema: "main", file: store.path).0)
        #expect(
            Set(all.map(\.key)) == [
                "Book.shelfName", "Book.shelfNumber", "Novel.loudGenre", "Shelf.bookCount", "Shelf.canonicalName",
                "Shelf.childCount", "Shelf.parentName",
            ])
        for values in all { try values.compute(in: database) }
        #expect(try all.compactMap { try $0.compare(in: database) } == [])
        // A value changed after the check computed its own: named, with the row.
        try writer.execute("UPDATE ZSHELF SET ZBOOKCOUNT = 7 WHERE Z_PK = 2")
        let count = try #require(all.first { $0.key == "Shelf.bookCount" })
        #expect(
            try count.compare(in: database)?.hasPrefix(
                "ZSHELF.ZBOOKCOUNT: 1 rows hold another value than the derived attribute Shelf.bookCount") == true)
    }

    @Test(
        "a derived value's step writes the values the check computed where it has them, batch by batch, and computes them where it has not or cannot read them"
    )
    func finishingWritesComputedValues() throws {
        let folder = try TemporaryFolder()
        let store = try Database(path: folder.path("store.sqlite").path, mode: .readWriteCreate)
        try store.execute(
            """
            CREATE TABLE ZTAG (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, ZITEMCOUNT INTEGER);
            CREATE TABLE Z_1TAGS (Z_1ITEMS INTEGER, Z_2TAGS INTEGER);
            INSERT INTO ZTAG (Z_PK, Z_ENT) VALUES (1, 2), (2, 2), (5, 2), (9, 3);
            INSERT INTO Z_1TAGS VALUES (10, 1), (11, 1), (12, 5), (13, 9);
            """)
        let value = CoreDataMapping.DerivedValue(
            attribute: "Tag.itemCount", table: "ZTAG", column: "ZITEMCOUNT",
            value: "(SELECT count(*) FROM Z_1TAGS AS j WHERE j.Z_2TAGS = ZTAG.Z_PK)", rows: "Z_ENT IN (2)")
        // Values no derivation gives, so that only a step that reads them writes them.
        let file = folder.path("computed.sqlite").path
        let computed = try Database(path: file, mode: .readWriteCreate)
        try computed.execute(
            "CREATE TABLE cm_expected_0 (cm_k INTEGER PRIMARY KEY, cm_v INTEGER); INSERT INTO cm_expected_0 VALUES (1, 100), (2, 200), (5, 500);"
        )
        computed.close()
        let plan = MigrationPlan(entities: [], coreData: CoreDataMapping(entities: [:], derived: [value]))
        let finishing = CoreDataFinishing(database: store, plan: plan, sourcePath: folder.path("source.sqlite").path)
        func counts() throws -> [SQLiteValue] { try store.rows("SELECT ZITEMCOUNT FROM ZTAG ORDER BY Z_PK").map { $0[0] } }
        func runStep(_ from: ((file: String, table: String)?)) throws -> Int {
            try store.execute("DROP TABLE IF EXISTS \(CheckpointStore.stepTable); UPDATE ZTAG SET ZITEMCOUNT = NULL")
            var asked = 0
            finishing.precomputed = {
                asked += 1; return $0 == value ? from : nil
            }
            // Two keys a batch: three batches, each with its own transaction.
            while try !finishing.runBatch(.derived(value), size: 2) {}
            // Nothing stays attached.
            #expect(try store.rows("PRAGMA database_list").compactMap { $0[1].text } == ["main"])
            return asked
        }
        #expect(try runStep((file, "cm_expected_0")) == 3)
        #expect(try counts() == [.integer(100), .integer(200), .integer(500), .null])
        #expect(try runStep(nil) == 3)
        #expect(try counts() == [.integer(2), .integer(0), .integer(1), .null])
        // A file gone with its check (its folder, or the file alone): computed here, nothing
        // made in its place.
        for gone in [folder.path("none").appendingPathComponent("missing.sqlite").path, folder.path("missing.sqlite").path] {
            #expect(try runStep((gone, "cm_expected_0")) == 3)
            #expect(try counts() == [.integer(2), .integer(0), .integer(1), .null])
            #expect(!FileManager.default.fileExists(atPath: gone))
        }
    }

    @Test(
        "a job with its check writes the same derived values as a job without it; only a derivation the plan shares with the model matches the check's"
    )
    func jobWritesComputedValues() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 3_000)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        let derived = try #require(plan.coreData?.derived)
        #expect(Set(derived.map(\.attribute)) == ["Folder.itemCount", "Tag.itemCount"])
        let unchecked = folder.path("unchecked.sqlite")
        try FileManager.default.copyItem(at: files.new, to: unchecked)
        for (destination, checks) in [(files.new, true), (unchecked, false)] {
            var options = MigrationOptions(batchSize: 700)
            options.checksStore = checks
            let job = try MigrationJob.start(
                plan: plan, source: files.old, destination: destination,
                journal: folder.path("journal-\(checks)"), options: options, logger: quietLogger)
            #expect(try job.runBlocking() == .complete)
            #expect(job.storeCheck.map { $0.isValid && $0.checked > 0 } ?? !checks, "\(String(describing: job.storeCheck))")
        }
        let checked = try Database(path: files.new.path, mode: .readOnly)
        try checked.execute("ATTACH DATABASE '\(unchecked.path)' AS u")
        for table in ["ZFOLDER", "ZTAG"] {
            #expect(
                try checked.scalar(
                    "SELECT count(*) FROM main.\(table) AS a JOIN u.\(table) AS b USING (Z_PK) WHERE a.ZITEMCOUNT IS NOT b.ZITEMCOUNT")
                    == .integer(0))
            #expect(try checked.scalar("SELECT count(*) FROM main.\(table) WHERE ZITEMCOUNT > 0").integer ?? 0 > 0)
        }
        // What the check computes matches the plan's derivation of the same attribute, and no other.
        let database = try Database(path: files.new.path, mode: .readOnly)
        let model = try #require(try CoreDataModel.read(database, schema: "main", file: files.new.path))
        let layout = try CoreDataLayout(model: model).resolved(against: database, schema: "main", file: files.new.path).0
        let all = try CoreDataStoreCheck.ExpectedValues.all(in: database, layout: layout)
        for value in derived {
            #expect(all.filter { $0.matches(value) }.map(\.key) == [value.attribute])
            var other = value
            other.value = "(\(value.value) + 1)"
            #expect(!all.contains { $0.matches(other) })
            other = value
            other.rows = "Z_ENT > 0"
            #expect(!all.contains { $0.matches(other) })
        }
        #expect(all.first { $0.key == "Tag.itemCount" }?.columns.contains("Z_3TAGS.Z_6TAGS") == true)
    }

    @Test(
        "a join table's keys checked in one pass over their table where they reach much of it, by lookups where they are few: each kind of dangling key found"
    )
    func joinKeysInOnePass() throws {
        let folder = try TemporaryFolder()
        let (files, writer) = try Self.demoStore(in: folder)
        // Item's keys: every item has tags, so they reach all of ZITEM; Tag's: 1,000 rows.
        #expect(try CoreDataStoreCheck.passesOver("ZITEM", forKeysOf: "Z_2ITEMS", in: "Z_2TAGS", database: writer))
        #expect(try !CoreDataStoreCheck.passesOver("ZTAG", forKeysOf: "Z_5TAGS", in: "Z_2TAGS", database: writer))
        func danglingItems() throws -> Int64 {
            try writer.scalar(
                """
                SELECT count(*) FROM Z_2TAGS AS j WHERE NOT EXISTS (SELECT 1 FROM ZITEM AS t WHERE t.Z_PK = j.Z_2ITEMS AND t.Z_ENT IN (2, 3, 4))
                """
            ).integer ?? -1
        }
        func reported() throws -> [String] {
            try CoreDataStoreCheck.run(store: files.old).violations.filter { $0.hasPrefix("Z_2TAGS.") }
        }
        #expect(try danglingItems() == 0 && reported() == [])
        // One kind of dangling key at a time, so that the pass must find each kind itself: a key
        // past the table's last, one before its first, one in a gap between its keys, one at a
        // row of another entity, a NULL key.
        let item = try #require(try writer.scalar("SELECT Z_2ITEMS FROM Z_2TAGS WHERE rowid = 10").integer)
        let entity = try #require(try writer.scalar("SELECT Z_ENT FROM ZITEM WHERE Z_PK = ?1", .integer(item)).integer)
        let kinds: [(change: String, undo: String)] = [
            (
                "UPDATE Z_2TAGS SET Z_2ITEMS = Z_2ITEMS + 1000000 WHERE rowid = 3",
                "UPDATE Z_2TAGS SET Z_2ITEMS = Z_2ITEMS - 1000000 WHERE rowid = 3"
            ),
            (
                "UPDATE Z_2TAGS SET Z_2ITEMS = -Z_2ITEMS WHERE rowid = 3",
                "UPDATE Z_2TAGS SET Z_2ITEMS = -Z_2ITEMS WHERE rowid = 3"
            ),
            ("UPDATE ZITEM SET Z_ENT = 99 WHERE Z_PK = \(item)", "UPDATE ZITEM SET Z_ENT = \(entity) WHERE Z_PK = \(item)"),
            ("UPDATE Z_2TAGS SET Z_2ITEMS = NULL WHERE rowid = 20", "DELETE FROM Z_2TAGS WHERE rowid = 20"),
            (
                """
                UPDATE Z_2TAGS SET Z_2ITEMS = (SELECT min(a.Z_PK) + 1 FROM ZITEM AS a WHERE NOT EXISTS (SELECT 1 FROM ZITEM AS b WHERE b.Z_PK = a.Z_PK + 1)
                                               AND a.Z_PK < (SELECT max(Z_PK) FROM ZITEM)) WHERE rowid = 5
                """, "DELETE FROM Z_2TAGS WHERE rowid = 5"
            ),
        ]
        for kind in kinds {
            try writer.execute(kind.change)
            let dangling = try danglingItems()
            #expect(dangling > 0, "\(kind.change)")
            #expect(try CoreDataStoreCheck.passesOver("ZITEM", forKeysOf: "Z_2ITEMS", in: "Z_2TAGS", database: writer))
            #expect(try reported() == ["Z_2TAGS.Z_2ITEMS: \(dangling) rows point at no row of Item"], "\(kind.change)")
            try writer.execute(kind.undo)
            #expect(try danglingItems() == 0 && reported() == [], "\(kind.change) undone")
        }
        // A tag gone: Tag's side, by lookups.
        try writer.execute("DELETE FROM ZTAG WHERE Z_PK = (SELECT Z_5TAGS FROM Z_2TAGS WHERE rowid = 30)")
        let danglingTags =
            try writer.scalar("SELECT count(*) FROM Z_2TAGS AS j WHERE NOT EXISTS (SELECT 1 FROM ZTAG AS t WHERE t.Z_PK = j.Z_5TAGS)")
            .integer ?? 0
        #expect(danglingTags > 0)
        #expect(try reported() == ["Z_2TAGS.Z_5TAGS: \(danglingTags) rows point at no row of Tag"])
    }

    @Test(
        "the check's connection reads the store and cannot write it, and writes the file of derived values it attaches, which the job reads read-only meanwhile"
    )
    func checkConnectionWritesOnlyItsFile() throws {
        let folder = try TemporaryFolder()
        let store = folder.path("store.sqlite").path
        let writer = try Database(path: store, mode: .readWriteCreate)
        try writer.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'a')")
        writer.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        let database = try Database(path: store, mode: .readOnlyAttachingWritable)
        #expect(try database.scalar("SELECT v FROM t WHERE k = 1") == .text("a"))
        #expect(throws: SQLiteError.self) { try database.execute("INSERT INTO t VALUES (2, 'b')") }
        #expect(throws: SQLiteError.self) { try database.execute("CREATE TABLE main.u (x)") }
        let scratch = folder.path("check")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        try Data("left by a killed run".utf8).write(to: scratch.appendingPathComponent("old"))
        let file = try CoreDataStoreCheck.Overlapped.ExpectedValuesFile(in: scratch, attachedTo: database, cacheKiB: 256)
        #expect(!FileManager.default.fileExists(atPath: scratch.appendingPathComponent("old").path))
        try database.execute(
            "CREATE TABLE cm_values.e (cm_k INTEGER PRIMARY KEY, cm_v); INSERT INTO cm_values.e SELECT k, upper(v) FROM main.t")
        // The job's connection attaches it read-only and reads one table in a transaction of its
        // own while the check writes the next.
        let job = try Database(path: folder.path("job.sqlite").path, mode: .readWriteCreate)
        try job.attach(Database.readOnlyURI(file.path), as: "v")
        try job.execute("BEGIN IMMEDIATE")
        #expect(try job.scalar("SELECT cm_v FROM v.e WHERE cm_k = 1") == .text("A"))
        try database.execute("CREATE TABLE cm_values.f (cm_k INTEGER PRIMARY KEY, cm_v); INSERT INTO cm_values.f VALUES (1, 2)")
        #expect(throws: SQLiteError.self) { try job.execute("INSERT INTO v.e VALUES (3, 'c')") }
        try job.execute("COMMIT; DETACH DATABASE v")
        file.detach(from: database)
        #expect(try database.rows("PRAGMA database_list").compactMap { $0[1].text } == ["main"])
        database.close()
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }

    @Test(
        "the check publishes each derived attribute's values once the indexes its derivation reads are built, with the model's derivation; the job's thread removes their file when it ends the check"
    )
    func checkPublishesValues() throws {
        let folder = try TemporaryFolder()
        let files = try CoreDataDemoStore.generate(in: folder.url, rows: 3_000)
        let plan = try MigrationPlan.infer(source: files.old, destination: files.new).plan
        var options = MigrationOptions(batchSize: 700)
        options.checksStore = false
        let job = try MigrationJob.start(
            plan: plan, source: files.old, destination: files.new, journal: folder.path("journal"),
            options: options, logger: quietLogger)
        #expect(try job.runBlocking() == .complete)
        let derived = try #require(plan.coreData?.derived)
        #expect(derived.count == 2)
        let reader = try Database(path: files.new.path, mode: .readWrite)
        try CoreDataBookkeeping.registerDerivationFunctions(on: reader)
        let indexes = try reader.rows("SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL").map {
            ($0[0].text!, $0[1].text!)
        }
        for ending in ["rows", "cancel"] {
            let scratch = folder.path("check-\(ending)")
            let check = CoreDataStoreCheck.Overlapped(
                path: files.new.path, cacheKiB: 2048, indexes: indexes, entities: nil, scratch: scratch)
            try check.rowsIn()
            // Not before the indexes on what the derivations read are built.
            Thread.sleep(forTimeInterval: 0.3)
            #expect(derived.allSatisfy { check.expectedValues(for: $0) == nil })
            for index in indexes { check.indexBuilt(index.0) }
            var found: [(file: String, table: String)] = []
            let deadline = Date().addingTimeInterval(30)
            while found.count < derived.count && Date() < deadline {
                found = derived.compactMap(check.expectedValues(for:))
                Thread.sleep(forTimeInterval: 0.01)
            }
            #expect(found.count == derived.count)
            // As the job reads them: read-only, each row's value the derivation's.
            for (value, computed) in zip(derived, found) {
                try reader.attach(Database.readOnlyURI(computed.file), as: "v")
                let table = SQL.quote(value.table)
                #expect(
                    try reader.scalar(
                        "SELECT count(*) FROM main.\(table) JOIN v.\(SQL.quote(computed.table)) AS e ON e.cm_k = \(table).Z_PK WHERE e.cm_v IS NOT \(value.value)"
                    ) == .integer(0))
                #expect(
                    try reader.scalar("SELECT count(*) FROM v.\(SQL.quote(computed.table))")
                        == reader.scalar("SELECT count(*) FROM main.\(table)"))
                try reader.execute("DETACH DATABASE v")
            }
            // Another derivation of the same attribute is not taken.
            var other = derived[0]
            other.value = "(\(other.value) + 1)"
            #expect(check.expectedValues(for: other) == nil)
            if ending == "rows" {
                check.indexesBuilt()
                check.storeFinished()
                #expect(FileManager.default.fileExists(atPath: found[0].file))
                let rows = check.rows()
                #expect(rows.report.isValid, "\(rows.report.violations)")
            } else {
                check.cancel()
            }
            #expect(!FileManager.default.fileExists(atPath: scratch.path))
            #expect(derived.allSatisfy { check.expectedValues(for: $0) == nil })
        }
    }
}

@Suite("The store check's statements")
struct StoreCheckStatementTests {
    @Test(
        "a table's keys are read in ranges that cover every key there can be, one after another, each of at least 65,536 keys, at most 64")
    func keyRanges() {
        #expect(CoreDataStoreCheck.ranges(low: nil, high: nil).map { [$0.0, $0.1] } == [[.min, .max]])
        #expect(CoreDataStoreCheck.ranges(low: 7, high: 7).map { [$0.0, $0.1] } == [[.min, .max]])
        for (low, high) in [
            (Int64(1), Int64(1_000_000)), (-5, 200_000), (1, 65_535), (0, 10_000_000_000), (.min, .max), (.min + 1, .max - 1),
        ] {
            let ranges = CoreDataStoreCheck.ranges(low: low, high: high)
            #expect(ranges.first?.0 == .min && ranges.last?.1 == .max, "\(low)...\(high)")
            #expect(ranges.count >= 1 && ranges.count <= CoreDataStoreCheck.rangesPerTable, "\(low)...\(high)")
            for (range, next) in zip(ranges, ranges.dropFirst()) {
                #expect(range.0 <= range.1 && range.1 &+ 1 == next.0, "\(low)...\(high): \(range) then \(next)")
                #expect(range.1 >= low && next.0 <= high, "\(low)...\(high): every range reaches the keys")
            }
            for range in ranges.dropFirst().dropLast() {
                #expect(UInt64(bitPattern: range.1 &- range.0) + 1 >= UInt64(CoreDataStoreCheck.keysPerRange), "\(range)")
            }
        }
        #expect(CoreDataStoreCheck.ranges(low: 1, high: 1_000_000).count == 15)
        #expect(CoreDataStoreCheck.ranges(low: 1, high: 100_000_000).count == 64)
    }

    @Test(
        "the ranges' conditions hold every value but NULL exactly once: integers at their ends, a real between two ranges, a text, a blob, numbers past any key"
    )
    func rangeConditionsHoldEveryValue() throws {
        let database = try Database(path: ":memory:", mode: .readWrite)
        for (low, high) in [(Int64(1), Int64(1_000_000)), (1, 10), (-200_000, 200_000)] {
            let conditions = CoreDataStoreCheck.rangeConditions(low: low, high: high)
            #expect(conditions.count == CoreDataStoreCheck.ranges(low: low, high: high).count)
            var values: [SQLiteValue] = [.text("z"), .blob([1, 2]), .real(1e30), .real(-1e30), .real(0.5), .integer(.min), .integer(.max)]
            for range in CoreDataStoreCheck.ranges(low: low, high: high) {
                for end in [range.0, range.1] where end != .min && end != .max {
                    values += [.integer(end), .real(Double(end) + 0.5), .real(Double(end) - 0.5)]
                }
            }
            for value in values {
                var holding = 0
                for condition in conditions {
                    let sql = "SELECT " + condition.sql.replacingOccurrences(of: "$K", with: "?\(condition.arguments.count + 1)")
                    if try database.rows(sql, arguments: condition.arguments + [value])[0][0].integer == 1 { holding += 1 }
                }
                #expect(holding == 1, "\(value) in \(low)...\(high): \(holding) conditions")
            }
            for condition in conditions {
                let sql = "SELECT " + condition.sql.replacingOccurrences(of: "$K", with: "?\(condition.arguments.count + 1)")
                #expect(try database.rows(sql, arguments: condition.arguments + [.null])[0][0].integer != 1)
            }
        }
    }

    @Test("membership in a set of entity numbers is what SQLite's IN gives, NULL included, written as ranges and comparisons")
    func membership() throws {
        let database = try Database(path: ":memory:", mode: .readWrite)
        for numbers: Set<Int64> in [[3], [3, 4, 5], [1, 3, 4, 9], [2, 4, 6], [-1, 0, 1], Set(2...9), [1, 3, 4, 5, 6, 7, 8, 12]] {
            let list = numbers.sorted().map(String.init).joined(separator: ", ")
            let sql = CoreDataStoreCheck.member("x", of: numbers)
            #expect(!sql.contains(" IN "), "\(sql)")
            for value: SQLiteValue in [
                .null, .integer(-1), .integer(0), .integer(2), .integer(3), .integer(5), .integer(9), .integer(10), .real(3.5), .real(4.0),
                .text("4"), .text("x"), .blob([4]),
            ] {
                let row = try database.rows("SELECT x IN (\(list)), \(sql), x NOT IN (\(list)), NOT \(sql) FROM (SELECT ?1 AS x)", value)[0]
                #expect(row[0] == row[1] && row[2] == row[3], "\(value) in \(list): \(row)")
            }
        }
    }
}
