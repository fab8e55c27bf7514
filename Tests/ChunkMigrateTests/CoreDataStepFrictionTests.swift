import Foundation
import Testing
@testable import ChunkMigrate

/// Custom steps written as the guides say, with no hand edit of the plan: a step converts a
/// same-named attribute's type, reads the source's other tables as `src.<table>`, has the other
/// side of a one-to-one it fills filled, and leaves no note that says the opposite of what it does.
@Suite("Core Data: custom steps without traps")
struct CoreDataStepFrictionTests {
    /// A bundle of versions `V1`... of the models given, in that order.
    static func bundle(_ models: [String]) throws -> CoreDataModelBundle {
        let versions = try models.enumerated().map {
            CoreDataModelBundle.Version(name: "V\($0.offset + 1)", model: try CoreDataTesting.model($0.element))
        }
        return CoreDataModelBundle(versions: versions, current: versions.last!.name)
    }

    static let post =
        #"<entity name="Post"><attribute name="content" optional="YES" attributeType="String"/><attribute name="posted" optional="YES" attributeType="String"/><relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author"/></entity>"#
    static let author = #"<entity name="Author"><attribute name="name" optional="YES" attributeType="String"/></entity>"#
    /// `posted` a Date, and the author's name kept in the post.
    static let converted = """
        <entity name="Post"><attribute name="content" optional="YES" attributeType="String"/><attribute name="posted" optional="YES" attributeType="Date"/>
            <attribute name="authorName" optional="YES" attributeType="String"/></entity>
        """
    /// A Section made from each post, the two sides of a one-to-one, the post's side required.
    static let sections = """
        <entity name="Post"><attribute name="content" optional="YES" attributeType="String"/><attribute name="posted" optional="YES" attributeType="String"/>
            <relationship name="section" maxCount="1" deletionRule="Nullify" destinationEntity="Section" inverseName="post" inverseEntity="Section"/></entity>
        <entity name="Section"><attribute name="title" optional="YES" attributeType="String"/>
            <relationship name="post" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Post" inverseName="section" inverseEntity="Post"/></entity>
        """

    /// The post as the policy writes it: the date parsed, the author's name read from the
    /// source's other table.
    static func postStep(from: String, to: String, authorTable: String = "src.ZAUTHOR") -> CoreDataStep {
        CoreDataStep(
            from: from, to: to,
            entities: [
                EntityMapping(
                    name: "Post", source: .init(table: "ZPOST", key: "Z_PK"), destination: .init(table: "ZPOST", key: "Z_PK"),
                    keys: .preserve,
                    columns: [
                        "Z_ENT": "coredata_entity_number('Post')", "Z_OPT": "Z_OPT", "ZCONTENT": "ZCONTENT",
                        "ZPOSTED": "(julianday(ZPOSTED) - 2451910.5) * 86400",
                        "ZAUTHORNAME": "(SELECT a.ZNAME FROM \(authorTable) AS a WHERE a.Z_PK = s.ZAUTHOR)",
                    ])
            ])
    }

    /// One Section per post, as the policy makes them: the new entity alone.
    static func sectionStep(from: String, to: String) -> CoreDataStep {
        CoreDataStep(
            from: from, to: to,
            entities: [
                EntityMapping(
                    name: "Section", source: .init(table: "ZPOST", key: "Z_PK"), destination: .init(table: "ZSECTION", key: "Z_PK"),
                    keys: .allocate,
                    columns: ["Z_ENT": "coredata_entity_number('Section')", "Z_OPT": "1", "ZTITLE": "substr(ZCONTENT, 1, 4) || '...'"],
                    relationships: ["ZPOST": .init(from: "Z_PK", to: "Post")])
            ])
    }

    static let rows = """
        INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 1, 1, 'Ann');
        INSERT INTO ZPOST (Z_PK, Z_ENT, Z_OPT, ZCONTENT, ZPOSTED, ZAUTHOR) VALUES (3, 2, 1, 'hello world', '2001-01-02 00:00:00', 1), (8, 2, 1, 'bye', NULL, NULL);
        """

    /// A store of the first version with `rows`, and an empty store of the last.
    static func stores(_ bundle: CoreDataModelBundle, _ folder: TemporaryFolder, _ number: Int) throws -> (source: URL, destination: URL) {
        (
            try CoreDataTesting.store(
                bundle.versions[0].model, at: folder.path("old.sqlite"), uuid: "E0000000-0000-0000-0000-0000000000\(number)1",
                rows: Self.rows),
            try CoreDataTesting.store(
                bundle.versions.last!.model, at: folder.path("new.sqlite"), uuid: "E0000000-0000-0000-0000-0000000000\(number)2")
        )
    }

    @Test(
        "a step converts a same-named attribute's type (String to Date) that inference refuses, and reads the source's other table as src.ZAUTHOR; its source attribute is not noted as left behind; alone, and as the second part of a path",
        arguments: [false, true])
    func typeConversionAndOtherTable(throughAPath: Bool) throws {
        let folder = try TemporaryFolder()
        // Through a path, the step is its second part: V1 -> V2 inferred (an attribute added).
        let between =
            Self.author
            + Self.post.replacingOccurrences(
                of: "<attribute name=\"content\"",
                with: "<attribute name=\"mood\" optional=\"YES\" attributeType=\"String\"/><attribute name=\"content\"")
        let bundle = try Self.bundle(
            throughAPath ? [Self.author + Self.post, between, Self.converted] : [Self.author + Self.post, Self.converted])
        let (source, destination) = try Self.stores(bundle, folder, 7)
        // Without the step, the type change is refused as Core Data's inference refuses it.
        let refused = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: InferenceOptions(modelBundle: bundle))
        }
        #expect(
            refused?.message.contains("attribute Post.posted changes type from String to Date") == true, "\(String(describing: refused))")

        var options = InferenceOptions(modelBundle: bundle)
        options.steps = [Self.postStep(from: bundle.versions[bundle.versions.count - 2].name, to: bundle.versions.last!.name)]
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, options: options)
        let posts = try Database(path: destination.path, mode: .source).rows(
            "SELECT Z_PK, ZCONTENT, ZPOSTED, ZAUTHORNAME FROM ZPOST ORDER BY Z_PK")
        // A date column has numeric affinity: a whole number of seconds is stored as an integer.
        #expect(
            posts == [[.integer(3), .text("hello world"), .integer(86400), .text("Ann")], [.integer(8), .text("bye"), .null, .null]],
            "\(posts)")
        #expect(!inferred.notes.contains { $0.hasPrefix("Author.name") || $0.hasPrefix("Post.posted") }, "\(inferred.notes)")
    }

    @Test(
        "a step that makes the new entity of a one-to-one alone (one Section per post): the other side, the post's required to-one, is the section made from it; no note says the step's entity is left empty or the post's side new",
        arguments: [false, true])
    func otherSideOfAOneToOne(throughAPath: Bool) throws {
        let folder = try TemporaryFolder()
        let between =
            Self.author
            + Self.post.replacingOccurrences(
                of: "<attribute name=\"content\"",
                with: "<attribute name=\"mood\" optional=\"YES\" attributeType=\"String\"/><attribute name=\"content\"")
        let bundle = try Self.bundle(
            throughAPath ? [Self.author + Self.post, between, Self.sections] : [Self.author + Self.post, Self.sections])
        let (source, destination) = try Self.stores(bundle, folder, 8)
        var options = InferenceOptions(modelBundle: bundle)
        options.steps = [Self.sectionStep(from: bundle.versions[bundle.versions.count - 2].name, to: bundle.versions.last!.name)]
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, options: options)
        // Each post's section, and each section's post: the two sides agree.
        let pairs = try Database(path: destination.path, mode: .source)
            .rows("SELECT p.Z_PK, s.ZTITLE FROM ZPOST AS p JOIN ZSECTION AS s ON s.Z_PK = p.ZSECTION AND s.ZPOST = p.Z_PK ORDER BY p.Z_PK")
        #expect(pairs == [[.integer(3), .text("hell...")], [.integer(8), .text("bye...")]], "\(pairs)")
        #expect(
            inferred.decisions.contains {
                $0.hasSuffix(
                    "Post.section: the Section that step \(bundle.versions[bundle.versions.count - 2].name) -> \(bundle.versions.last!.name) makes from the row, through its ID map (the inverse of Section.post)"
                )
            }, "\(inferred.decisions)")
        #expect(!inferred.notes.contains { $0.contains("Section") || $0.contains("ZSECTION") }, "\(inferred.notes)")
    }

    @Test(
        "a step that reads the source's other table by its bare name (which at run time is the destination's) is refused at plan, naming the expression and src.<table>"
    )
    func bareTableRefused() throws {
        let folder = try TemporaryFolder()
        // The author table kept in V2, so that the bare name reads the store being written.
        let bundle = try Self.bundle([Self.author + Self.post, Self.author + Self.converted])
        let (source, destination) = try Self.stores(bundle, folder, 9)
        var options = InferenceOptions(modelBundle: bundle)
        options.steps = [Self.postStep(from: "V1", to: "V2", authorTable: "ZAUTHOR")]
        let refused = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: options)
        }
        #expect(
            refused?.message
                == "step V1 -> V2: entities[0].columns.ZAUTHORNAME: \"(SELECT a.ZNAME FROM ZAUTHOR AS a WHERE a.Z_PK = s.ZAUTHOR)\" reads table ZAUTHOR of version V2, the store being written; a step reads the source's tables as src.ZAUTHOR (the source store is at version V1, the destination's V2)",
            "\(String(describing: refused))")
    }

    @Test(
        "a step whose rows are not made one from each row of the other side of a one-to-one it fills is refused, naming that side and what to add"
    )
    func inverseTheStepCannotTell() throws {
        let folder = try TemporaryFolder()
        let bundle = try Self.bundle([Self.author + Self.post, Self.sections])
        let (source, destination) = try Self.stores(bundle, folder, 6)
        // Sections made from authors, each pointing at one post: which post points back is not
        // the step's to say.
        let step = CoreDataStep(
            from: "V1", to: "V2",
            entities: [
                EntityMapping(
                    name: "Section", source: .init(table: "ZAUTHOR", key: "Z_PK"), destination: .init(table: "ZSECTION", key: "Z_PK"),
                    keys: .allocate,
                    columns: ["Z_ENT": "coredata_entity_number('Section')", "Z_OPT": "1", "ZTITLE": "ZNAME"],
                    relationships: ["ZPOST": .init(from: "Z_PK", to: "Post")])
            ])
        var options = InferenceOptions(modelBundle: bundle)
        options.steps = [step]
        let refused = #expect(throws: MigrationError.self) {
            try MigrationPlan.infer(source: source, destination: destination, options: options)
        }
        #expect(
            refused?.message.hasPrefix(
                "step V1 -> V2: entities[0] (Section) fills Section.post, whose inverse Post.section is a to-one of ZPOST, which the step leaves to inference and which its rows do not tell: add ZPOST to the step with ZSECTION as a relationship to Section"
            ) == true,
            "\(String(describing: refused))")
    }

    @Test(
        "a de-duplicated entity of a step whose natural key is a required attribute: its key is filled from distinct.source, one rule for plan and run (plan demanded it in columns, run refused it there)"
    )
    func deduplicatedRequiredKey() throws {
        let folder = try TemporaryFolder()
        let bundle = try Self.bundle([
            #"<entity name="Book"><attribute name="title" optional="YES" attributeType="String"/><attribute name="authorName" optional="YES" attributeType="String"/></entity>"#,
            #"<entity name="Author"><attribute name="name" attributeType="String"/><relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="author" inverseEntity="Book"/></entity><entity name="Book"><attribute name="title" optional="YES" attributeType="String"/><relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/></entity>"#,
        ])
        let source = try CoreDataTesting.store(
            bundle.versions[0].model, at: folder.path("old.sqlite"), uuid: "E0000000-0000-0000-0000-000000000101",
            rows: """
                INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZAUTHORNAME) VALUES (1, 1, 1, 'A', 'Ann'), (2, 1, 1, 'B', 'Bob'), (4, 1, 1, 'C', 'Ann');
                """)
        let destination = try CoreDataTesting.store(
            bundle.versions[1].model, at: folder.path("new.sqlite"), uuid: "E0000000-0000-0000-0000-000000000102")
        var options = InferenceOptions(modelBundle: bundle)
        options.steps = [
            CoreDataStep(
                from: "V1", to: "V2",
                entities: [
                    EntityMapping(
                        name: "Author", source: .init(table: "ZBOOK", key: "Z_PK", where: "ZAUTHORNAME IS NOT NULL"),
                        destination: .init(table: "ZAUTHOR", key: "Z_PK"),
                        keys: .allocate, columns: ["Z_ENT": "coredata_entity_number('Author')", "Z_OPT": "1"],
                        distinct: .init(source: "ZAUTHORNAME", destination: "ZNAME")),
                    EntityMapping(
                        name: "Book", source: .init(table: "ZBOOK", key: "Z_PK"), destination: .init(table: "ZBOOK", key: "Z_PK"),
                        keys: .preserve,
                        columns: ["Z_ENT": "coredata_entity_number('Book')", "Z_OPT": "Z_OPT", "ZTITLE": "ZTITLE"],
                        relationships: ["ZAUTHOR": .init(from: "ZAUTHORNAME", to: "Author")]),
                ])
        ]
        try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, options: options)
        #expect(
            try Database(path: destination.path, mode: .source).rows(
                "SELECT b.ZTITLE, a.ZNAME FROM ZBOOK AS b JOIN ZAUTHOR AS a ON a.Z_PK = b.ZAUTHOR ORDER BY b.Z_PK")
                == [[.text("A"), .text("Ann")], [.text("B"), .text("Bob")], [.text("C"), .text("Ann")]])
        #expect(try Database(path: destination.path, mode: .source).scalar("SELECT count(*) FROM ZAUTHOR") == .integer(2))
    }

    @Test(
        "a step template for a mapping model with a policy: the policy's table as the mapping model's declarative parts give it, what has no SQL and what the policy may set marked TODO as NULL, the policy named; edited where it says TODO, it runs as the step"
    )
    func stepTemplate() throws {
        let folder = try TemporaryFolder()
        let bundle = try Self.bundle([
            #"<entity name="Car"><attribute name="model" optional="YES" attributeType="String"/><attribute name="makerName" optional="YES" attributeType="String"/></entity>"#,
            #"<entity name="Car"><attribute name="model" optional="YES" attributeType="String"/><attribute name="brand" optional="YES" attributeType="String"/><attribute name="checked" optional="YES" attributeType="Boolean"/></entity>"#,
        ])
        typealias E = CoreDataMappingModelFile.Expression
        var car = CoreDataMappingModelFile.EntityMapping(
            name: "CarToCar", kind: "Custom", source: "Car", destination: "Car", policy: "CarPolicy")
        car.attributes = [
            .init(name: "model", value: .sourceKeyPath("model")),
            .init(
                name: "brand",
                value: .function(operand: .variable("entityPolicy"), selector: "brandFor:", arguments: [.sourceKeyPath("makerName")])),
        ]
        let mappingModel = CoreDataMappingModelFile(url: folder.path("V1toV2.cdm"), source: "V1", destination: "V2", entityMappings: [car])
        let template = try #require(try CoreDataStep.template(replacing: mappingModel, in: bundle))
        #expect(template.from == "V1" && template.to == "V2" && template.entities.map(\.destination.table) == ["ZCAR"])
        let columns = template.entities[0].columns
        #expect(columns["ZMODEL"] == "ZMODEL", "\(columns)")
        #expect(
            columns["ZBRAND"]?.hasPrefix(
                "NULL /* TODO CarToCar: brand = FUNCTION($entityPolicy, \"brandFor:\", $source.makerName): it calls the custom policy's brandFor:"
            ) == true, "\(columns)")
        #expect(columns["ZCHECKED"] == "NULL /* TODO CarPolicy: Car.checked */", "\(columns)")
        #expect(
            template.todo?.first?.hasPrefix("CarPolicy (CarToCar, Car -> Car) is the app's code") == true,
            "\(String(describing: template.todo))")
        // What the user writes where it says TODO; the rest as the template gives it.
        var step = template
        step.entities[0].columns["ZBRAND"] = "upper(ZMAKERNAME)"
        step.entities[0].columns["ZCHECKED"] = "0"
        let decoded = try CoreDataStep.decode(json: try JSONEncoder().encode(step), file: "V1toV2.step.json")
        let source = try CoreDataTesting.store(
            bundle.versions[0].model, at: folder.path("old.sqlite"), uuid: "E0000000-0000-0000-0000-000000000111",
            rows: "INSERT INTO ZCAR (Z_PK, Z_ENT, Z_OPT, ZMODEL, ZMAKERNAME) VALUES (1, 1, 1, 'Panda', 'Fiat')")
        let destination = try CoreDataTesting.store(
            bundle.versions[1].model, at: folder.path("new.sqlite"), uuid: "E0000000-0000-0000-0000-000000000112")
        var withModel = bundle
        withModel.mappingModels = [mappingModel]
        var options = InferenceOptions(modelBundle: withModel)
        options.steps = [decoded]
        try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, options: options)
        #expect(
            try Database(path: destination.path, mode: .source).rows("SELECT ZMODEL, ZBRAND, ZCHECKED FROM ZCAR") == [
                [.text("Panda"), .text("FIAT"), .integer(0)]
            ])
    }
}
