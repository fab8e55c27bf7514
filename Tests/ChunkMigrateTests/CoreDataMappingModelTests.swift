import Foundation
import Testing
@testable import ChunkMigrate

/// The app's mapping models, read in both forms and run in batches in place of inference.
@Suite("Core Data: the app's mapping models")
struct CoreDataMappingModelTests {
    static let split = "SplitMigrationSample/"

    @Test(
        "the compiled .cdm and Xcode's source of one mapping model read as the same entity mappings, policies, filters and written value expressions; the .cdm's entity version hashes and generated expressions are read as they are",
        .enabled(if: CoreDataStoreTests.fixture("CompiledMappingModel/V2toV3.cdm") != nil, "shared/fixtures/coredata is absent"))
    func bothForms() throws {
        let compiled = try CoreDataMappingModelFile.read(
            contentsOf: try #require(CoreDataStoreTests.fixture("CompiledMappingModel/V2toV3.cdm")))
        let source = try CoreDataMappingModelFile.read(
            contentsOf: try #require(CoreDataStoreTests.fixture("CompiledMappingModel/V2toV3.xcmappingmodel")))
        #expect(source.source == "SampleModel2" && source.destination == "SampleModel3", "\(source.source) -> \(source.destination)")
        func byName(_ file: CoreDataMappingModelFile) -> [String: CoreDataMappingModelFile.EntityMapping] {
            Dictionary(uniqueKeysWithValues: file.entityMappings.map { ($0.name, $0) })
        }
        let (a, b) = (byName(compiled), byName(source))
        #expect(Set(a.keys) == ["CarToCar", "LuxuryCarToLuxuryCar", "Maker", "PersonToPerson", "SportCarToSportCar"])
        #expect(Set(a.keys) == Set(b.keys))
        for (name, mapping) in a {
            let other = try #require(b[name])
            #expect(mapping.source == other.source && mapping.destination == other.destination && mapping.policy == other.policy, "\(name)")
            #expect(mapping.filter == other.filter && mapping.filter == nil, "\(name)")
            #expect(mapping.attributes.map(\.name) == other.attributes.map(\.name), "\(name)")
            #expect(mapping.relationships.map(\.name) == other.relationships.map(\.name), "\(name)")
            // What Xcode's source writes out, the .cdm holds as it is.
            for property in other.attributes + other.relationships {
                guard let written = property.value else { continue }
                let compiledValue = (mapping.attributes + mapping.relationships).first { $0.name == property.name }?.value
                #expect(compiledValue == written, "\(name).\(property.name)")
            }
            if mapping.source != nil {
                #expect(mapping.sourceHash?.count == 32 && mapping.destinationHash?.count == 32, "\(name)")
            }
        }
        #expect(a["CarToCar"]?.policy == "REPLACE_AT_RUNTIME.V2to3MakerPolicy" && a["CarToCar"]?.kind == "Custom")
        #expect(a["PersonToPerson"]?.kind == "Copy" && a["Maker"]?.kind == "Add" && a["Maker"]?.source == nil)
        #expect(a["CarToCar"]?.attributes.first { $0.name == "model" }?.value?.description == "$source.model")
        #expect(
            a["PersonToPerson"]?.relationships.first { $0.name == "cars" }?.value?.description
                == #"FUNCTION($manager, "destinationInstancesForSourceRelationshipNamed:sourceInstances:", "cars", $source.cars)"#)
    }

    @Test("a mapping model that does not read is an error naming the file")
    func unreadable() throws {
        let folder = try TemporaryFolder()
        let url = URL(fileURLWithPath: folder.path("Broken.cdm").path)
        try Data("bplist00 not really".utf8).write(to: url)
        let error = #expect(throws: MigrationError.self) { try CoreDataMappingModelFile.read(contentsOf: url) }
        #expect(error?.file == url.path && error?.message.contains("not a compiled mapping model") == true, "\(String(describing: error))")
    }

    @Test(
        "filter predicates as SQL conditions: comparisons, AND/OR/NOT, IN, BEGINSWITH/ENDSWITH/CONTAINS/LIKE with [c], nil, key paths through to-ones; what has no SQL refused with what it is"
    )
    func predicates() throws {
        let columns = [
            "group": "ZGROUP", "name": "ZNAME",
            "author.name": "(SELECT t2.\"ZNAME\" FROM src.\"ZAUTHOR\" AS t2 WHERE t2.Z_PK = s.\"ZAUTHOR\")",
        ]
        func sql(_ predicate: String) throws -> String { try CoreDataMappingModelSQL.condition(predicate) { columns[$0] } }
        #expect(try sql("group == 1") == "ZGROUP = 1")
        #expect(try sql("group >= 2 AND (name != nil OR NOT group < 0)") == "(ZGROUP >= 2 AND (ZNAME IS NOT NULL OR (NOT ZGROUP < 0)))")
        #expect(try sql("group IN {1, 2, 3}") == "ZGROUP IN (1, 2, 3)")
        #expect(try sql("name BEGINSWITH[c] 'Ab'") == "substr(text_lower(ZNAME), 1, length(text_lower('Ab'))) = text_lower('Ab')")
        #expect(try sql("nil == name") == "ZNAME IS NULL")
        #expect(try sql(#"name == "a\tb""#) == "ZNAME = 'a\tb'")
        #expect(try sql("name LIKE 'a*b?'") == "ZNAME GLOB 'a*b?'")
        #expect(
            try sql("author.name == \"Ann\"") == "(SELECT t2.\"ZNAME\" FROM src.\"ZAUTHOR\" AS t2 WHERE t2.Z_PK = s.\"ZAUTHOR\") = 'Ann'")
        #expect(try sql("TRUEPREDICATE") == "1")
        for refused in [
            "name CONTAINS[cd] 'a'", "name MATCHES 'a.*'", "unknown == 1", "SUBQUERY(x, $x, $x.a == 1).@count > 0", "group == 1.2.3",
            #"name == "\u00e9""#,
        ] {
            #expect(throws: CoreDataMappingModelSQL.Untranslatable.self, "\(refused)") { try sql(refused) }
        }
        // Against SQLite: the conditions select what the predicates mean.
        let database = try Database(path: ":memory:", mode: .readWrite)
        try ValueFunctions.registerText(on: database)
        try database.execute(
            "CREATE TABLE t (ZGROUP INTEGER, ZNAME TEXT); INSERT INTO t VALUES (1, 'Abc'), (2, 'abd'), (3, NULL), (NULL, 'x'), (4, 'École')"
        )
        func count(_ predicate: String) throws -> Int64? {
            try database.scalar("SELECT count(*) FROM t WHERE \(try sql(predicate))").integer
        }
        #expect(try count("name BEGINSWITH[c] 'ab'") == 2)
        // Letters of every script, as NSString compares them without case.
        #expect(try count("name ==[c] 'école'") == 1)
        #expect(try count("name LIKE[c] 'éco*'") == 1)
        #expect(try count("name BEGINSWITH 'ab'") == 1)
        #expect(try count("group != 1") == 4)
        #expect(try count("name == nil") == 1)
        #expect(try count("name ENDSWITH 'd' OR group IN {3}") == 2)
    }

    @Test(
        "value expressions as SQL: constants, arithmetic and string functions over $source's key paths; a custom policy's function refused naming it"
    )
    func values() throws {
        typealias E = CoreDataMappingModelFile.Expression
        let resolve: CoreDataMappingModelSQL.Resolver = { ["grams": "ZGRAMS", "name": "ZNAME"][$0] }
        #expect(try CoreDataMappingModelSQL.value(.constant(.integer(1)), resolve: resolve) == "1")
        #expect(try CoreDataMappingModelSQL.value(.constant(.null), resolve: resolve) == nil)
        #expect(
            try CoreDataMappingModelSQL.value(
                .function(
                    operand: .other("NSPredicateUtilities"), selector: "multiply:by:",
                    arguments: [.sourceKeyPath("grams"), .constant(.integer(1000))]), resolve: resolve) == "(ZGRAMS * 1000)")
        #expect(
            try CoreDataMappingModelSQL.value(
                .function(operand: .other("NSPredicateUtilities"), selector: "uppercase:", arguments: [.sourceKeyPath("name")]),
                resolve: resolve) == "text_upper(ZNAME)")
        #expect(
            try CoreDataMappingModelSQL.value(
                .function(
                    operand: .other("NSPredicateUtilities"), selector: "divide:by:",
                    arguments: [.sourceKeyPath("grams"), .constant(.integer(2))]), resolve: resolve) == "(CAST(ZGRAMS AS REAL) / 2)")
        let policy = E.function(operand: .variable("entityPolicy"), selector: "fullNameOf:", arguments: [.variable("source")])
        let error = #expect(throws: CoreDataMappingModelSQL.Untranslatable.self) {
            try CoreDataMappingModelSQL.value(policy, resolve: resolve)
        }
        #expect(error?.description.contains("fullNameOf:") == true)
    }

    /// A Model 1 store of SplitMigrationSample: `count` rows of each entity, sparse keys, each A
    /// pointing at its B and back.
    static func splitStore(_ folder: TemporaryFolder, bundle: CoreDataModelBundle, count: Int) throws -> (source: URL, destination: URL) {
        let source = folder.path("model1.sqlite"), destination = folder.path("model2.sqlite")
        try CoreDataEmptyStore.create(at: source, model: try #require(bundle.version(named: "Model 1")).model)
        try CoreDataEmptyStore.create(at: destination, model: try #require(bundle.version(named: bundle.current)).model)
        let database = try Database(path: source.path, mode: .readWrite)
        try database.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))
            INSERT INTO ZENTITYA (Z_PK, Z_ENT, Z_OPT, ZGROUP, ZNAME, ZRELATIONSHIP) SELECT 3 * i, 1, 1, i % 8, 'a' || i, 5 * i + 1 FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))
            INSERT INTO ZENTITYB (Z_PK, Z_ENT, Z_OPT, ZGROUP, ZNAME, ZRELATIONSHIP) SELECT 5 * i + 1, 2, 1, i % 8, 'b' || i, 3 * i FROM n;
            UPDATE Z_PRIMARYKEY SET Z_MAX = CASE Z_NAME WHEN 'EntityA' THEN \(3 * count) ELSE \(5 * count + 1) END;
            """)
        return (source, destination)
    }

    @Test(
        "SplitMigrationSample: its one mapping model, unsplit, in batches: every row and relationship as the 16 hand-split passes would leave them, and a filter predicate added to it taking only its group's rows, the relationships to the others left empty",
        .enabled(if: CoreDataStoreTests.fixture("SplitMigrationSample/CASE.md") != nil, "shared/fixtures/coredata is absent"))
    func splitMigrationSample() throws {
        let folder = try TemporaryFolder()
        let original = try #require(CoreDataStoreTests.fixture(Self.split + "Model.xcdatamodeld"))
        let bundle = try CoreDataModelBundle.read(contentsOf: original)
        #expect(bundle.mappingModels.map(\.url.lastPathComponent) == ["Model1-2.xcmappingmodel"])
        let (source, destination) = try Self.splitStore(folder, bundle: bundle, count: 500)
        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, batchSize: 37, options: InferenceOptions(modelBundle: bundle))
        #expect(
            inferred.decisions.contains { $0.contains("the app's mapping model Model1-2.xcmappingmodel, in place of an inferred mapping") },
            "\(inferred.decisions)")
        let columns = "Z_PK, Z_ENT, ZGROUP, ZNAME, ZRELATIONSHIP"
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZENTITYA", columns: columns)
                == CoreDataMigrationTests.rows(source, "ZENTITYA", columns: columns))
        #expect(
            try CoreDataMigrationTests.rows(destination, "ZENTITYB", columns: columns)
                == CoreDataMigrationTests.rows(source, "ZENTITYB", columns: columns))

        // The same mapping model with a filter on EntityA's mapping, beside a copy of the bundle.
        let project = folder.path("project")
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: original, to: project.appendingPathComponent("Model.xcdatamodeld"))
        let mappingFolder = project.appendingPathComponent("Model1-2.xcmappingmodel")
        try FileManager.default.createDirectory(at: mappingFolder, withIntermediateDirectories: true)
        var xml = try String(
            contentsOf: try #require(CoreDataStoreTests.fixture(Self.split + "Model1-2.xcmappingmodel/xcmapping.xml")), encoding: .utf8)
        let marker = #"<attribute name="sourcename" type="string">EntityA</attribute>"#
        #expect(xml.contains(marker))
        xml = xml.replacingOccurrences(
            of: marker,
            with: marker + #"<attribute name="sourcefilterpredicatestring" type="string">group == 3 OR name ENDSWITH "7"</attribute>"#)
        try xml.write(to: mappingFolder.appendingPathComponent("xcmapping.xml"), atomically: true, encoding: .utf8)
        let filtered = try CoreDataModelBundle.read(contentsOf: project.appendingPathComponent("Model.xcdatamodeld"))
        #expect(
            filtered.mappingModels.first?.entityMappings.first { $0.source == "EntityA" }?.filter == #"group == 3 OR name ENDSWITH "7""#)
        let second = folder.path("filtered.sqlite")
        try CoreDataEmptyStore.create(at: second, model: try #require(filtered.version(named: filtered.current)).model)
        try CoreDataMigrationTests.migrate(
            source, into: second, folder: folder, journal: "journal2", batchSize: 37, options: InferenceOptions(modelBundle: filtered))
        let kept = try CoreDataMigrationTests.rows(source, "ZENTITYA", columns: "Z_PK").filter { _ in true }
        let expected = try Database(path: source.path, mode: .source).rows(
            "SELECT Z_PK FROM ZENTITYA WHERE ZGROUP = 3 OR ZNAME LIKE '%7' ORDER BY Z_PK")
        #expect(try CoreDataMigrationTests.rows(second, "ZENTITYA", columns: "Z_PK") == expected)
        #expect(expected.count > 60 && expected.count < kept.count, "\(expected.count) of \(kept.count)")
        // Every B row kept; its relationship to an A row left out is empty, the others kept.
        let b = try Database(path: second.path, mode: .source).rows("SELECT count(*), count(ZRELATIONSHIP) FROM ZENTITYB")
        #expect(b == [[.integer(500), .integer(Int64(expected.count))]], "\(b)")
    }

    @Test(
        "a mapping model with a custom policy, given with --mapping (SplitName's V2ToV3, ProgressiveMigration's 2 to 3): refused naming the policy and the file without a step; with the step a user writes, the step takes its place and the app's own results follow",
        .enabled(if: CoreDataStoreTests.fixture("SplitName/V2ToV3.xcmapping.xml") != nil, "shared/fixtures/coredata is absent"))
    func policyWaitsForAStep() throws {
        let folder = try TemporaryFolder()
        let cases: [(bundle: String, order: [String], mapping: String, policy: String, store: String, target: String, step: CoreDataStep)] =
            [
                (
                    CoreDataStepTests.splitName, ["MWKCoreDataTests", "MWKCoreDataTests2", "MWKCoreDataTests3"],
                    "SplitName/V2ToV3.xcmapping.xml",
                    "EmployeeToEmployeePolicy (Employee -> Employee)", "SplitName/MWKCoreDataTests2.sqlite", "MWKCoreDataTests3",
                    CoreDataStep(
                        from: "MWKCoreDataTests2", to: "MWKCoreDataTests3",
                        entities: [
                            EntityMapping(
                                name: "Employee", source: .init(table: "ZEMPLOYEE", key: "Z_PK"),
                                destination: .init(table: "ZEMPLOYEE", key: "Z_PK"),
                                keys: .preserve,
                                columns: [
                                    "Z_ENT": "coredata_entity_number('Employee')", "Z_OPT": "Z_OPT", "ZDEPT": "ZDEPT",
                                    "ZFIRSTNAME": "substr(ZNAME, 1, instr(ZNAME, ' ') - 1)",
                                    "ZLASTNAME": "substr(ZNAME, instr(ZNAME, ' ') + 1)",
                                ])
                        ])
                ),
                (
                    CoreDataStepTests.progressive, CoreDataStepTests.progressiveOrder, "ProgressiveMigration/Migration2to3.xcmapping.xml",
                    "CoreDataMigration_Example.Post2ToPost3MigrationPolicy (Post -> Post)",
                    "ProgressiveMigration/CoreDataMigration_Example_2.sqlite",
                    "CoreDataMigration_Example 3", CoreDataStepTests.sections
                ),
            ]
        for item in cases {
            let mapping = try #require(CoreDataStoreTests.fixture(item.mapping))
            let bundle = try CoreDataModelBundle.read(contentsOf: try #require(CoreDataStoreTests.fixture(item.bundle))).ordered(item.order)
                .adding(mappingModels: [mapping])
            let source = try CoreDataModelTests.copy(item.store, into: folder)
            let destination = try CoreDataStepTests.emptyStore(
                bundle, version: item.target, at: folder.path("target-" + source.lastPathComponent))
            let error = #expect(throws: MigrationError.self) {
                try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(modelBundle: bundle))
            }
            #expect(error?.message.contains(item.policy) == true && error?.file == mapping.path, "\(String(describing: error))")
            if item.mapping.hasPrefix("SplitName") {
                // What the policy reads: the version it splits names for.
                #expect(bundle.mappingModels.last?.entityMappings.first { $0.source == "Employee" }?.userInfo == ["destModelVersion": "3"])
            }
            var options = InferenceOptions(modelBundle: bundle)
            options.steps = [item.step]
            let inferred = try CoreDataMigrationTests.migrate(
                source, into: destination, folder: folder, journal: "journal-" + source.lastPathComponent, options: options)
            #expect(inferred.decisions.contains { $0.hasPrefix("step \(item.step.from) -> \(item.step.to): ") }, "\(inferred.decisions)")
        }
        let rows = try Database(path: folder.path("target-MWKCoreDataTests2.sqlite").path, mode: .source).rows(
            "SELECT ZFIRSTNAME, ZLASTNAME FROM ZEMPLOYEE ORDER BY 1")
        #expect(rows == [[.text("Adam"), .text("Smith")], [.text("Bob"), .text("Johnson")], [.text("Carla"), .text("Jones")]])
    }

    /// LoopKit's two custom policies of `Modelv1v4` as the step a user writes in their place
    /// (LoopKit's `Operation`: create 0, update 1, delete 2; `HKSource.default().bundleIdentifier`
    /// is the app's bundle identifier, a constant here): a carb entry the app created takes the
    /// app's provenance and, synced more than once, the update operation; an external ID without
    /// sync identifier becomes the sync identifier at version 1; a deleted carb entry becomes a
    /// carb entry whose operation is delete. The required `anchorKey`, new in Modelv4 without a
    /// default, is what the app's object sets when it is saved, an increasing number: the source
    /// keys in their order here.
    static let loopKitStep = CoreDataStep(
        from: "Model", to: "Modelv4",
        entities: [
            EntityMapping(
                name: "CachedCarbObject", source: .init(table: "ZCACHEDCARBOBJECT", key: "Z_PK"),
                destination: .init(table: "ZCACHEDCARBOBJECT", key: "Z_PK"), keys: .allocate,
                columns: [
                    "Z_ENT": "coredata_entity_number('CachedCarbObject')", "Z_OPT": "1",
                    "ZCREATEDBYCURRENTAPP": "ZCREATEDBYCURRENTAPP", "ZABSORPTIONTIME": "ZABSORPTIONTIME", "ZGRAMS": "ZGRAMS",
                    "ZSTARTDATE": "ZSTARTDATE", "ZFOODTYPE": "ZFOODTYPE", "ZUUID": "ZUUID",
                    "ZPROVENANCEIDENTIFIER": "CASE WHEN ZCREATEDBYCURRENTAPP = 1 THEN 'com.loopkit.Loop' END",
                    "ZOPERATION":
                        "CASE WHEN ZCREATEDBYCURRENTAPP = 1 AND ZSYNCIDENTIFIER IS NOT NULL AND ZSYNCVERSION > 1 THEN 1 ELSE 0 END",
                    "ZSYNCIDENTIFIER": "ifnull(ZSYNCIDENTIFIER, ZEXTERNALID)",
                    "ZSYNCVERSION": "CASE WHEN ZSYNCIDENTIFIER IS NULL AND ZEXTERNALID IS NOT NULL THEN 1 ELSE ZSYNCVERSION END",
                    "ZANCHORKEY": "Z_PK",
                ]),
            EntityMapping(
                name: "DeletedCarbObject", source: .init(table: "ZDELETEDCARBOBJECT", key: "Z_PK"),
                destination: .init(table: "ZCACHEDCARBOBJECT", key: "Z_PK"), keys: .allocate,
                columns: [
                    "Z_ENT": "coredata_entity_number('CachedCarbObject')", "Z_OPT": "1", "ZCREATEDBYCURRENTAPP": "0",
                    "ZSTARTDATE": "ZSTARTDATE", "ZOPERATION": "2", "ZSYNCIDENTIFIER": "ZEXTERNALID", "ZANCHORKEY": "Z_PK",
                    "ZSYNCVERSION": "CASE WHEN ZEXTERNALID IS NOT NULL THEN 1 END",
                ]),
        ])

    @Test(
        "LoopKit's Modelv1v4 with its two custom policies: refused naming them without a step; with the step in their place, what the app's own migration test asserts (one carb entry, kept with its sync identifier, the app's provenance, operation create; glucose with device and trend)",
        .enabled(if: CoreDataStoreTests.fixture("apps/loopkit/Model-v1.sqlite") != nil, "shared/fixtures/coredata/apps is absent"))
    func loopKit() throws {
        let folder = try TemporaryFolder()
        let bundle = try CoreDataModelBundle.read(contentsOf: try #require(CoreDataStoreTests.fixture("apps/loopkit/Model.xcdatamodeld")))
        let source = try CoreDataStoreTests.copy("apps/loopkit/Model-v1.sqlite", into: folder)
        let destination = try CoreDataStepTests.emptyStore(bundle, version: bundle.current, at: folder.path("v4.sqlite"))
        let error = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(modelBundle: bundle))
        }
        #expect(
            error?.message.contains(
                "LoopKit.CachedCarbObjectv3EntityMigrationPolicy (CachedCarbObject -> CachedCarbObject), LoopKit.DeletedCarbObjectv3EntityMigrationPolicy (DeletedCarbObject -> CachedCarbObject)"
            ) == true,
            "\(String(describing: error))")
        var options = InferenceOptions(modelBundle: bundle)
        options.steps = [Self.loopKitStep]
        try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, options: options)
        let old = try Database(path: source.path, mode: .source), new = try Database(path: destination.path, mode: .source)
        let carbs = try new.rows(
            "SELECT ZSYNCIDENTIFIER, ZSYNCVERSION, ZOPERATION, ZPROVENANCEIDENTIFIER, ZGRAMS, ZUUID FROM ZCACHEDCARBOBJECT")
        let was = try old.rows("SELECT ZSYNCIDENTIFIER, ZSYNCVERSION, 0, 'com.loopkit.Loop', ZGRAMS, ZUUID FROM ZCACHEDCARBOBJECT")
        #expect(carbs.count == 1 && carbs == was, "\(carbs) against \(was)")
        let glucose = try new.rows(
            "SELECT name FROM pragma_table_info('ZCACHEDGLUCOSEOBJECT') WHERE name IN ('ZDEVICE', 'ZTREND') ORDER BY name")
        #expect(glucose == [[.text("ZDEVICE")], [.text("ZTREND")]])
        #expect(try new.scalar("SELECT count(*) FROM ZCACHEDGLUCOSEOBJECT") == old.scalar("SELECT count(*) FROM ZCACHEDGLUCOSEOBJECT"))
    }

    @Test(
        "a mapping model over models of its own: two entities merged into one, a relationship into the merged entity through the second's entity mapping kept, a renamed entity's relationship generated as Xcode generates it, a required attribute given by a constant; given twice, one mapping model"
    )
    func mergedRenamedRequired() throws {
        let folder = try TemporaryFolder()
        let before = try CoreDataTesting.model(
            """
            <entity name="Record" isAbstract="YES"><attribute name="title" optional="YES" attributeType="String"/></entity>
            <entity name="TextMessage" parentEntity="Record"><attribute name="body" optional="YES" attributeType="String"/></entity>
            <entity name="FileMessage" parentEntity="Record"><attribute name="path" optional="YES" attributeType="String"/></entity>
            <entity name="Conversation"><relationship name="last" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Record"/></entity>
            <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/><relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="author" inverseEntity="Book"/></entity>
            <entity name="Book"><attribute name="title" optional="YES" attributeType="String"/><relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/></entity>
            """)
        let after = try CoreDataTesting.model(
            """
            <entity name="Message"><attribute name="title" optional="YES" attributeType="String"/><attribute name="kind" attributeType="String"/></entity>
            <entity name="Conversation"><relationship name="last" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Message"/></entity>
            <entity name="Writer"><attribute name="name" optional="YES" attributeType="String"/><relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="author" inverseEntity="Book"/></entity>
            <entity name="Book"><attribute name="title" optional="YES" attributeType="String"/><relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Writer" inverseName="books" inverseEntity="Writer"/></entity>
            """)
        let layout = try CoreDataLayout(model: before)
        let last = try #require(
            layout.table(of: "Conversation")?.columns.first { $0.role == .toOneEntity(entity: "Conversation", property: "last") })
        func number(_ name: String) -> Int64 { layout.entity(named: name)?.number ?? -1 }
        let source = try CoreDataTesting.store(
            before, at: folder.path("v1.sqlite"), uuid: "V1",
            rows: """
                INSERT INTO ZRECORD (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZBODY, ZPATH) VALUES (1, \(number("TextMessage")), 1, 'hello', 'hi', NULL),
                    (2, \(number("FileMessage")), 1, 'photo', NULL, '/a.jpg'), (3, \(number("TextMessage")), 1, 'bye', 'ciao', NULL);
                INSERT INTO ZCONVERSATION (Z_PK, Z_ENT, Z_OPT, ZLAST, \(last.name)) VALUES (1, \(number("Conversation")), 1, 2, \(number("FileMessage")));
                INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (7, \(number("Author")), 1, 'Ann');
                INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZAUTHOR) VALUES (4, \(number("Book")), 1, 'Notes', 7);
                """)
        let destination = try CoreDataTesting.store(after, at: folder.path("v2.sqlite"), uuid: "V2")
        typealias Mapping = CoreDataMappingModelFile.EntityMapping
        func mapping(
            _ name: String, _ from: String, _ to: String, attributes: [(String, CoreDataMappingModelFile.Expression?)] = [],
            relationships: [(String, CoreDataMappingModelFile.Expression?)] = []
        ) -> Mapping {
            var mapping = Mapping(name: name, kind: "Undefined", source: from, destination: to)
            mapping.attributes = attributes.map { .init(name: $0.0, value: $0.1) }
            mapping.relationships = relationships.map { .init(name: $0.0, value: $0.1) }
            mapping.expressionsComplete = false
            return mapping
        }
        let file = CoreDataMappingModelFile(
            url: folder.path("V1toV2.xcmappingmodel"), source: "V1", destination: "V2",
            entityMappings: [
                mapping(
                    "TextMessageToMessage", "TextMessage", "Message", attributes: [("title", nil), ("kind", .constant(.string("text")))]),
                mapping(
                    "FileMessageToMessage", "FileMessage", "Message", attributes: [("title", nil), ("kind", .constant(.string("file")))]),
                mapping(
                    "ConversationToConversation", "Conversation", "Conversation",
                    relationships: [
                        (
                            "last",
                            .function(
                                operand: .variable("manager"), selector: "destinationInstancesForEntityMappingNamed:sourceInstances:",
                                arguments: [.constant(.string("FileMessageToMessage")), .sourceKeyPath("last")])
                        )
                    ]),
                mapping("AuthorToWriter", "Author", "Writer", attributes: [("name", nil)], relationships: [("books", nil)]),
                mapping("BookToBook", "Book", "Book", attributes: [("title", nil)], relationships: [("author", nil)]),
            ])
        var bundle = CoreDataModelBundle(versions: [.init(name: "V1", model: before), .init(name: "V2", model: after)], current: "V2")
        bundle.mappingModels = [file, file]
        let inferred = try CoreDataMigrationTests.migrate(
            source, into: destination, folder: folder, options: InferenceOptions(modelBundle: bundle))
        #expect(
            inferred.decisions.contains {
                $0.hasPrefix("V1 -> V2: the app's mapping model V1toV2.xcmappingmodel, in place of an inferred mapping")
            }, "\(inferred.decisions)")
        let new = try Database(path: destination.path, mode: .source)
        #expect(
            try new.rows("SELECT Z_PK, ZTITLE, ZKIND FROM ZMESSAGE ORDER BY Z_PK")
                == [
                    [.integer(1), .text("hello"), .text("text")], [.integer(2), .text("photo"), .text("file")],
                    [.integer(3), .text("bye"), .text("text")],
                ])
        #expect(try new.rows("SELECT ZLAST FROM ZCONVERSATION") == [[.integer(2)]])
        #expect(try new.rows("SELECT ZTITLE, ZAUTHOR FROM ZBOOK") == [[.text("Notes"), .integer(7)]])
        #expect(try new.rows("SELECT ZNAME FROM ZWRITER WHERE Z_PK = 7") == [[.text("Ann")]])
    }

    @Test(
        "the path through an app's mapping models: by default from each version the one that goes farthest, the others named as not taken; step by step, each version to the next through its mapping model or inferred, as a progressive migrator runs it, the one that skips versions named as not taken; each gives its own values",
        arguments: [VersionPath.farthest, .stepByStep])
    func versionPath(_ path: VersionPath) throws {
        let folder = try TemporaryFolder()
        // The note goes in V2 and comes back in V3; the score comes in V2.
        let v1 = try CoreDataTesting.model(
            """
            <entity name="Item"><attribute name="name" optional="YES" attributeType="String"/><attribute name="note" optional="YES" attributeType="String"/></entity>
            """)
        let v2 = try CoreDataTesting.model(
            """
            <entity name="Item"><attribute name="name" optional="YES" attributeType="String"/><attribute name="score" optional="YES" attributeType="Integer 64" usesScalarValueType="YES"/></entity>
            """)
        let v3 = try CoreDataTesting.model(
            """
            <entity name="Item"><attribute name="name" optional="YES" attributeType="String"/><attribute name="note" optional="YES" attributeType="String"/><attribute name="score" optional="YES" attributeType="Integer 64" usesScalarValueType="YES"/></entity>
            """)
        typealias E = CoreDataMappingModelFile.Expression
        func source(_ key: String) -> E {
            .function(operand: .variable("source"), selector: "valueForKeyPath:", arguments: [.keyPath(key)])
        }
        func file(_ from: String, _ to: String, _ attributes: [(String, E)]) -> CoreDataMappingModelFile {
            var mapping = CoreDataMappingModelFile.EntityMapping(name: "ItemToItem", kind: "Undefined", source: "Item", destination: "Item")
            mapping.attributes = attributes.map { .init(name: $0.0, value: $0.1) }
            return CoreDataMappingModelFile(
                url: folder.path("\(from)to\(to).xcmappingmodel"), source: from, destination: to, entityMappings: [mapping])
        }
        var bundle = CoreDataModelBundle(
            versions: [.init(name: "V1", model: v1), .init(name: "V2", model: v2), .init(name: "V3", model: v3)], current: "V3")
        func migrate(_ name: String, mappingModels: [CoreDataMappingModelFile]) throws -> (decisions: [String], rows: [[SQLiteValue]]) {
            let store = try CoreDataTesting.store(
                v1, at: folder.path("\(name)-v1.sqlite"), uuid: "V1",
                rows: """
                    INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZNAME, ZNOTE) VALUES (1, 1, 1, 'a', 'kept'), (5, 1, 1, 'b', NULL);
                    """)
            let destination = try CoreDataTesting.store(v3, at: folder.path("\(name)-v3.sqlite"), uuid: "V3")
            bundle.mappingModels = mappingModels
            var options = InferenceOptions(modelBundle: bundle)
            options.versionPath = path
            let inferred = try CoreDataMigrationTests.migrate(
                store, into: destination, folder: folder, journal: "\(name)-journal", options: options)
            return (inferred.decisions, try CoreDataMigrationTests.rows(destination, "ZITEM", columns: "Z_PK, ZNAME, ZNOTE, ZSCORE"))
        }
        let skipping = file("V1", "V3", [("name", source("name")), ("note", source("note")), ("score", .constant(.integer(100)))])
        let first = file("V1", "V2", [("name", source("name")), ("score", .constant(.integer(10)))])
        let second = file("V2", "V3", [("name", source("name")), ("score", source("score")), ("note", .constant(.string("v3")))])
        let mapped = try migrate("mapped", mappingModels: [first, skipping, second])
        // Nothing inferred but the path: the note a version between drops.
        let inferred = try migrate("inferred", mappingModels: [])
        switch path {
        case .farthest:
            #expect(
                mapped.rows == [[.integer(1), .text("a"), .text("kept"), .integer(100)], [.integer(5), .text("b"), .null, .integer(100)]])
            for name in ["V1toV2.xcmappingmodel (V1 -> V2)", "V2toV3.xcmappingmodel (V2 -> V3)"] {
                #expect(mapped.decisions.contains { $0.contains("mapping model \(name) is not on the path taken") }, "\(mapped.decisions)")
            }
            #expect(
                mapped.decisions.contains {
                    $0.contains(
                        "V1toV2.xcmappingmodel (V1 -> V2) is not on the path taken: the app's mapping model V1toV3.xcmappingmodel goes across it (the step-by-step path, --path step-by-step, takes it)"
                    )
                },
                "\(mapped.decisions)")
            #expect(inferred.rows == [[.integer(1), .text("a"), .text("kept"), .null], [.integer(5), .text("b"), .null, .null]])
        case .stepByStep:
            #expect(
                mapped.rows == [
                    [.integer(1), .text("a"), .text("v3"), .integer(10)], [.integer(5), .text("b"), .text("v3"), .integer(10)],
                ])
            #expect(
                mapped.decisions.contains {
                    $0.contains(
                        "mapping model V1toV3.xcmappingmodel (V1 -> V3) is not on the path taken: it skips V2, and the path goes step by step"
                    )
                },
                "\(mapped.decisions)")
            #expect(
                !mapped.decisions.contains {
                    $0.contains("V1toV2.xcmappingmodel (V1 -> V2) is not on the path")
                        || $0.contains("V2toV3.xcmappingmodel (V2 -> V3) is not on the path")
                })
            #expect(inferred.rows == [[.integer(1), .text("a"), .null, .null], [.integer(5), .text("b"), .null, .null]])
        }
    }

    @Test(
        "key paths through to-ones: an attribute from $source.author.org.name, a to-one from the migration manager's destination instances of $source.author.org through a named entity mapping (only the rows that mapping migrates, as Core Data's association table by mapping gives them; a target of a sub-entity with its entity number), in both forms Xcode archives a key path; the same through a path of four versions composed into one job",
        arguments: [false, true])
    func keyPathsThroughToOnes(composed: Bool) throws {
        let folder = try TemporaryFolder()
        let org =
            #"<entity name="Org"><attribute name="name" optional="YES" attributeType="String"/></entity><entity name="Company" parentEntity="Org"><attribute name="ticker" optional="YES" attributeType="String"/></entity>"#
        let author =
            #"<entity name="Author"><attribute name="name" optional="YES" attributeType="String"/><relationship name="org" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Org"/></entity>"#
        let post =
            #"<entity name="Post"><attribute name="title" optional="YES" attributeType="String"/><relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author"/></entity>"#
        let newPost =
            #"<entity name="Post"><attribute name="title" optional="YES" attributeType="String"/><attribute name="orgName" optional="YES" attributeType="String"/><relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author"/><relationship name="org" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Org"/></entity>"#
        // V0 has an attribute V1 drops, and an entity first by name that V1 drops (each entity's
        // number moves by one), V3 an attribute V2 lacks: inferred steps around the mapping model.
        let gone = #"<entity name="Abacus"><attribute name="beads" optional="YES" attributeType="Integer 32"/></entity>"#
        let v0 = try CoreDataTesting.model(
            gone + org
                + author.replacingOccurrences(
                    of: "<attribute name=\"name\"",
                    with: "<attribute name=\"age\" optional=\"YES\" attributeType=\"Integer 32\"/><attribute name=\"name\"") + post)
        let v1 = try CoreDataTesting.model(org + author + post)
        let v2 = try CoreDataTesting.model(org + author + newPost)
        let v3 = try CoreDataTesting.model(
            org.replacingOccurrences(
                of: "<entity name=\"Org\">",
                with: "<entity name=\"Org\"><attribute name=\"extra\" optional=\"YES\" attributeType=\"String\"/>") + author + newPost)
        let first = composed ? v0 : v1
        let layout = try CoreDataLayout(model: first)
        func number(_ name: String) -> Int64 { layout.entity(named: name)?.number ?? -1 }
        if composed {
            #expect(try CoreDataLayout(model: v1).entity(named: "Company")?.number != number("Company"))
        }
        let source = try CoreDataTesting.store(
            first, at: folder.path("old.sqlite"), uuid: "E0000000-0000-0000-0000-000000000051",
            rows: """
                INSERT INTO ZORG (Z_PK, Z_ENT, Z_OPT, ZNAME, ZTICKER) VALUES (1, \(number("Org")), 1, 'Acme', NULL), (2, \(number("Company")), 1, 'Beta', 'BET'), (3, \(number("Company")), 1, 'Gamma', NULL);
                INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME, ZORG) VALUES (5, \(number("Author")), 1, 'Ann', 2), (6, \(number("Author")), 1, 'Bob', 1), (7, \(number("Author")), 1, 'Cy', 3);
                INSERT INTO ZPOST (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZAUTHOR) VALUES (10, \(number("Post")), 1, 'a', 5), (11, \(number("Post")), 1, 'b', 6), (12, \(number("Post")), 1, 'c', 7), (14, \(number("Post")), 1, 'd', NULL);
                """)
        let last = composed ? v3 : v2
        let destination = try CoreDataTesting.store(last, at: folder.path("new.sqlite"), uuid: "E0000000-0000-0000-0000-000000000052")
        typealias Mapping = CoreDataMappingModelFile.EntityMapping
        typealias E = CoreDataMappingModelFile.Expression
        func mapping(
            _ name: String, _ entity: String, attributes: [(String, E?)] = [], relationships: [(String, E?)] = [], filter: String? = nil
        ) -> Mapping {
            var mapping = Mapping(name: name, kind: "Undefined", source: entity, destination: entity, filter: filter)
            mapping.attributes = attributes.map { .init(name: $0.0, value: $0.1) }
            mapping.relationships = relationships.map { .init(name: $0.0, value: $0.1) }
            mapping.expressionsComplete = false
            return mapping
        }
        let versions: [CoreDataModelBundle.Version] =
            composed
            ? [.init(name: "V0", model: v0), .init(name: "V1", model: v1), .init(name: "V2", model: v2), .init(name: "V3", model: v3)]
            : [.init(name: "V1", model: v1), .init(name: "V2", model: v2)]
        // `$source.author.org` as one key path, and as Xcode also archives it: `$source.author` then `.org`.
        for (index, path) in [
            E.sourceKeyPath("author.org"),
            .function(operand: .sourceKeyPath("author"), selector: "valueForKeyPath:", arguments: [.keyPath("org")]),
        ].enumerated() {
            let file = CoreDataMappingModelFile(
                url: folder.path("V1toV2.xcmappingmodel"), source: "V1", destination: "V2",
                entityMappings: [
                    mapping("OrgToOrg", "Org", attributes: [("name", nil)]),
                    mapping("CompanyToCompany", "Company", attributes: [("name", nil), ("ticker", nil)], filter: "ticker != nil"),
                    mapping("AuthorToAuthor", "Author", attributes: [("name", nil)], relationships: [("org", nil)]),
                    mapping(
                        "PostToPost", "Post", attributes: [("title", nil), ("orgName", .sourceKeyPath("author.org.name"))],
                        relationships: [
                            ("author", nil),
                            (
                                "org",
                                .function(
                                    operand: .variable("manager"), selector: "destinationInstancesForEntityMappingNamed:sourceInstances:",
                                    arguments: [.constant(.string("CompanyToCompany")), path])
                            ),
                        ]),
                ])
            var bundle = CoreDataModelBundle(versions: versions, current: versions.last!.name)
            bundle.mappingModels = [file]
            let into = folder.path("new\(index).sqlite")
            try FileManager.default.copyItem(at: destination, to: into)
            let inferred = try CoreDataMigrationTests.migrate(
                source, into: into, folder: folder, journal: "journal\(index)", batchSize: 2,
                options: InferenceOptions(modelBundle: bundle))
            #expect(
                inferred.propertyMappings.contains {
                    $0.entityMapping == "PostToPost" && $0.property == "org" && $0.outcome == .translated
                }, "\(inferred.propertyMappings)")
            let after = try CoreDataLayout(model: last)
            let orgEntity = try #require(
                after.table(of: "Post")?.columns.first { $0.role == .toOneEntity(entity: "Post", property: "org") })
            let rows = try Database(path: into.path, mode: .source).rows(
                "SELECT Z_PK, ZTITLE, ZORGNAME, ZORG, \(orgEntity.name) FROM ZPOST ORDER BY Z_PK")
            let company = after.entity(named: "Company")!.number
            // Ann's org is a Company (CompanyToCompany migrates it); Bob's a plain Org, which that
            // mapping does not migrate: no destination instance, NULL; Cy's a Company its filter
            // leaves out (no ticker): NULL too, its name read all the same; d has no author.
            #expect(
                rows == [
                    [.integer(10), .text("a"), .text("Beta"), .integer(2), .integer(company)],
                    [.integer(11), .text("b"), .text("Acme"), .null, .null],
                    [.integer(12), .text("c"), .text("Gamma"), .null, .null],
                    [.integer(14), .text("d"), .null, .null, .null],
                ], "\(rows)")
            // An author's org: NULL where CompanyToCompany's filter leaves it out (Cy's Gamma).
            let orgs = try Database(path: into.path, mode: .source).rows("SELECT ZNAME, ZORG FROM ZAUTHOR ORDER BY Z_PK")
            #expect(orgs == [[.text("Ann"), .integer(2)], [.text("Bob"), .integer(1)], [.text("Cy"), .null]], "\(orgs)")
        }
    }

    @Test(
        "collection operators over a to-many, as Foundation's key-value coding computes them on a set: @count, @sum (0 for none), @avg (nil for none, nil values counted), @min and @max (nil values left out), over a one-to-many and a many-to-many, through a to-one before the to-many and after the operator; in a filter predicate too; another operator refused by name"
    )
    func collectionOperators() throws {
        let folder = try TemporaryFolder()
        let before = try CoreDataTesting.model(
            """
            <entity name="Shelf"><attribute name="label" optional="YES" attributeType="String"/><relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="shelves" inverseEntity="Book"/></entity>
            <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/><relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="author" inverseEntity="Book"/></entity>
            <entity name="Book"><attribute name="pages" optional="YES" attributeType="Integer 32"/><attribute name="title" optional="YES" attributeType="String"/><relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/><relationship name="shelves" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Shelf" inverseName="books" inverseEntity="Shelf"/></entity>
            """)
        let stats =
            #"<attribute name="count" optional="YES" attributeType="Integer 64"/><attribute name="sum" optional="YES" attributeType="Integer 64"/><attribute name="avg" optional="YES" attributeType="Double"/><attribute name="least" optional="YES" attributeType="String"/><attribute name="most" optional="YES" attributeType="Integer 32"/>"#
        let after = try CoreDataTesting.model(
            """
            <entity name="Shelf"><attribute name="label" optional="YES" attributeType="String"/>\(stats)</entity>
            <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/>\(stats)</entity>
            <entity name="Book"><attribute name="pages" optional="YES" attributeType="Integer 32"/><attribute name="title" optional="YES" attributeType="String"/><attribute name="authorBooks" optional="YES" attributeType="Integer 64"/></entity>
            """)
        let layout = try CoreDataLayout(model: before)
        let join = try #require(layout.joinTables.first)
        let shelfSide = try #require(join.sides.first { $0.entity == "Shelf" }),
            bookSide = try #require(join.sides.first { $0.entity == "Book" })
        let source = try CoreDataTesting.store(
            before, at: folder.path("old.sqlite"), uuid: "E0000000-0000-0000-0000-000000000061",
            rows: """
                INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, \(layout.entity(named: "Author")!.number), 1, 'Ann'), (2, \(layout.entity(named: "Author")!.number), 1, 'Bob');
                INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZPAGES, ZTITLE, ZAUTHOR) VALUES (10, \(layout.entity(named: "Book")!.number), 1, 100, 'b', 1),
                    (11, \(layout.entity(named: "Book")!.number), 1, NULL, 'a', 1), (12, \(layout.entity(named: "Book")!.number), 1, 40, 'c', 1), (13, \(layout.entity(named: "Book")!.number), 1, 7, NULL, NULL),
                    (14, \(layout.entity(named: "Book")!.number), 1, 5, 'z', 2);
                INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT, ZLABEL) VALUES (20, \(layout.entity(named: "Shelf")!.number), 1, 'top'), (21, \(layout.entity(named: "Shelf")!.number), 1, 'empty');
                INSERT INTO \(join.name) (\(shelfSide.column), \(bookSide.column)) VALUES (10, 20), (13, 20);
                """)
        let destination = try CoreDataTesting.store(after, at: folder.path("new.sqlite"), uuid: "E0000000-0000-0000-0000-000000000062")
        typealias Mapping = CoreDataMappingModelFile.EntityMapping
        typealias E = CoreDataMappingModelFile.Expression
        func operators(_ many: String) -> [(String, E?)] {
            [
                ("count", .sourceKeyPath("\(many).@count")), ("sum", .sourceKeyPath("\(many).@sum.pages")),
                ("avg", .sourceKeyPath("\(many).@avg.pages")),
                ("least", .sourceKeyPath("\(many).@min.title")), ("most", .sourceKeyPath("\(many).@max.pages")),
            ]
        }
        func mapping(_ name: String, _ entity: String, attributes: [(String, E?)], filter: String? = nil) -> Mapping {
            var mapping = Mapping(name: name, kind: "Undefined", source: entity, destination: entity, filter: filter)
            mapping.attributes = attributes.map { .init(name: $0.0, value: $0.1) }
            mapping.expressionsComplete = false
            return mapping
        }
        let file = CoreDataMappingModelFile(
            url: folder.path("V1toV2.xcmappingmodel"), source: "V1", destination: "V2",
            entityMappings: [
                mapping("AuthorToAuthor", "Author", attributes: [("name", nil)] + operators("books")),
                mapping("ShelfToShelf", "Shelf", attributes: [("label", nil)] + operators("books")),
                mapping(
                    "BookToBook", "Book",
                    attributes: [("pages", nil), ("title", nil), ("authorBooks", .sourceKeyPath("author.books.@count"))],
                    filter: "shelves.@count > 0 OR author.books.@count >= 3"),
            ])
        var bundle = CoreDataModelBundle(versions: [.init(name: "V1", model: before), .init(name: "V2", model: after)], current: "V2")
        bundle.mappingModels = [file]
        try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, options: InferenceOptions(modelBundle: bundle))
        let new = try Database(path: destination.path, mode: .source)
        // Ann: 3 books (pages 100, NULL, 40): sum 140, avg 140 / 3, least title "a", most 100.
        // Bob: one (left out of the destination by the filter; $source's books all the same).
        #expect(
            try new.rows("SELECT ZNAME, ZCOUNT, ZSUM, ZAVG, ZLEAST, ZMOST FROM ZAUTHOR ORDER BY Z_PK")
                == [
                    [.text("Ann"), .integer(3), .integer(140), .real(140.0 / 3), .text("a"), .integer(100)],
                    [.text("Bob"), .integer(1), .integer(5), .real(5), .text("z"), .integer(5)],
                ])
        // The many-to-many: top holds books 10 and 13 (title NULL left out of @min); empty holds
        // none: count 0, sum 0, avg nil, least and most nil.
        let shelves = try new.rows("SELECT ZLABEL, ZCOUNT, ZSUM, ZAVG, ZLEAST, ZMOST FROM ZSHELF ORDER BY Z_PK")
        #expect(
            shelves == [
                [.text("top"), .integer(2), .integer(107), .real(53.5), .text("b"), .integer(100)],
                [.text("empty"), .integer(0), .integer(0), .null, .null, .null],
            ], "\(shelves)")
        // Books on a shelf, or by an author of 3 or more: all but Bob's 14. 13 has no author: the
        // key path through it is nil, not a count.
        let books = try new.rows("SELECT Z_PK, ZAUTHORBOOKS FROM ZBOOK ORDER BY Z_PK")
        #expect(
            books == [[.integer(10), .integer(3)], [.integer(11), .integer(3)], [.integer(12), .integer(3)], [.integer(13), .null]],
            "\(books)")

        var other = file
        other.entityMappings[0].attributes.append(.init(name: "most", value: .sourceKeyPath("books.@distinctUnionOfObjects.pages")))
        other.entityMappings[0].attributes.removeAll { $0.name == "most" && $0.value == .sourceKeyPath("books.@max.pages") }
        bundle.mappingModels = [other]
        let refused = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(modelBundle: bundle))
        }
        #expect(
            refused?.message.contains(
                "entity mapping AuthorToAuthor (Author -> Author), most = $source.books.@distinctUnionOfObjects.pages: books.@distinctUnionOfObjects.pages: a collection operator other than @count, @sum, @avg, @min, @max after a to-many"
            ) == true,
            "\(String(describing: refused))")
    }
}
