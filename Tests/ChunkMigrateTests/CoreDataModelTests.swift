import Foundation
import Testing
@testable import ChunkMigrate
import ChunkMigrateDemo

/// The model, read from every form it takes: a store's model cache (raw DEFLATE of a keyed
/// archive), a compiled `.mom`, and the XML Xcode saves; and the two codecs under it, the binary
/// property list with its UIDs and raw DEFLATE.
@Suite("Core Data models")
struct CoreDataModelTests {
    /// The fixture stores that carry a model cache.
    static let cachedFixtures = [
        "Accounts3.sqlite", "DataUsage.sqlite", "NoteStore.sqlite", "RMAdminStore-Local.sqlite", "knowledgec-10.13.db",
        "knowledgec-10.14.db", "netusage.sqlite", "CoreDataStack/TestModel.sqlite", "PhotosLibrary/Photos.sqlite",
        "ProgressiveMigration/CoreDataMigration_Example_1.sqlite", "ProgressiveMigration/CoreDataMigration_Example_2.sqlite",
        "ProgressiveMigration/CoreDataMigration_Example_3.sqlite", "Messenger/store2-6.wiredatabase", "Messenger/store2-7.wiredatabase",
        "Messenger/store2-29-0.wiredatabase", "Messenger/store2-30-0.wiredatabase", "Messenger/store2-95-0.wiredatabase",
        "Messenger/store2-96-0.wiredatabase", "Messenger/store2-100-0.wiredatabase", "Messenger/store2-101-0.wiredatabase",
    ]
    static let present = cachedFixtures.allSatisfy { CoreDataStoreTests.fixture($0) != nil }

    /// A fixture copied with its `-wal` and `-shm` files (Photos keeps rows in its WAL).
    static func copy(_ name: String, into folder: TemporaryFolder) throws -> URL {
        try CoreDataStoreTests.copy(name, into: folder)
    }

    @Test(
        "every fixture store's model cache decodes into a whole model naming exactly the entities of its Z_PRIMARYKEY",
        .enabled(if: present, "shared/fixtures/coredata is absent"), arguments: cachedFixtures)
    func modelCaches(_ name: String) throws {
        let folder = try TemporaryFolder()
        let store = try Self.copy(name, into: folder)
        let model = try #require(try CoreDataModel.read(store: store))
        let listed = try Database(path: store.path, mode: .source).rows("SELECT Z_NAME FROM Z_PRIMARYKEY WHERE Z_ENT < 16000")
            .compactMap { $0[0].text }
        #expect(Set(model.entities.map(\.name)) == Set(listed))
        #expect(model.entities.allSatisfy { !$0.properties.isEmpty || $0.parent != nil || model.entities.count < 3 })
        try model.validate(file: name)
    }

    @Test(
        "what the caches say, spot by spot: inheritance, required attributes and their defaults, renaming identifiers, derived attributes, uniqueness constraints, ordered and inverse-less relationships",
        .enabled(if: present, "shared/fixtures/coredata is absent"))
    func modelDetails() throws {
        let folder = try TemporaryFolder()
        func model(_ name: String) throws -> CoreDataModel {
            try #require(try CoreDataModel.read(store: try Self.copy(name, into: folder)))
        }

        let messenger = try model("Messenger/store2-101-0.wiredatabase")
        #expect(messenger.versionIdentifiers == ["2.101.0"])
        #expect(messenger.entity(named: "AssetClientMessage")?.parent == "Message")
        #expect(messenger.property("delivered", of: "TextMessage")?.declaredBy == "Message")
        let needsUpdate = try #require(messenger.entity(named: "Message")?.property(named: "needsLinkAttachmentsUpdate"))
        #expect(!needsUpdate.isOptional && needsUpdate.attribute?.type == .boolean && needsUpdate.attribute?.defaultValue == .bool(false))
        #expect(messenger.property("needsLinkAttachmentsUpdate", of: "TextMessage")?.declaredBy == "Message")
        let dataSet = try #require(messenger.entity(named: "AssetClientMessage")?.property(named: "dataSet")?.relationship)
        #expect(dataSet.isToMany && dataSet.isOrdered && dataSet.destination == "GenericMessageData" && dataSet.inverse == "asset")
        #expect(messenger.entity(named: "Message")?.property(named: "missingRecipients")?.isTransient == true)

        let post = try #require(try model("ProgressiveMigration/CoreDataMigration_Example_2.sqlite").entity(named: "Post"))
        #expect(post.property(named: "hexColor")?.renamingIdentifier == "color")
        #expect(post.property(named: "content")?.previousName == "content")

        let photos = try model("PhotosLibrary/Photos.sqlite")
        let derived = try #require(photos.entity(named: "Asset")?.property(named: "derivedCameraCaptureDevice")?.attribute)
        #expect(derived.derivation == "additionalAttributes.cameraCaptureDevice")
        #expect(
            photos.entity(named: "InternalResource")?.uniquenessConstraints == [
                ["asset", "resourceType", "version", "recipeID", "compactUTI"]
            ])
        let contributors = try #require(photos.entity(named: "Asset")?.property(named: "libraryScopeAssetContributors")?.relationship)
        #expect(contributors.isToMany && contributors.inverse == nil)
        #expect(photos.entity(named: "GenericAlbum")?.isAbstract == true)
    }

    @Test(
        "a store's model cache and the XML of the same version describe the same model",
        .enabled(
            if: present && CoreDataStoreTests.fixture("Messenger/zmessaging.xcdatamodeld") != nil, "shared/fixtures/coredata is absent"))
    func cacheAndXMLAgree() throws {
        let folder = try TemporaryFolder()
        for (store, version) in [
            ("Messenger/store2-101-0.wiredatabase", "zmessaging2.101.0"), ("Messenger/store2-6.wiredatabase", "zmessaging2.6"),
            ("ProgressiveMigration/CoreDataMigration_Example_2.sqlite", "CoreDataMigration_Example 2"),
        ] {
            let cached = try #require(try CoreDataModel.read(store: try Self.copy(store, into: folder)))
            let bundle =
                store.hasPrefix("Messenger")
                ? "Messenger/zmessaging.xcdatamodeld" : "ProgressiveMigration/CoreDataMigration_Example.xcdatamodeld"
            let xml = try CoreDataModel.read(contentsOf: try #require(CoreDataStoreTests.fixture("\(bundle)/\(version).xcdatamodel")))
            let (a, b) = (Self.normalized(cached), Self.normalized(xml))
            let onlyCached = a.filter { !b.contains($0) }, onlyXML = b.filter { !a.contains($0) }
            #expect(onlyCached.isEmpty && onlyXML.isEmpty, "\(store): cache only \(onlyCached), XML only \(onlyXML)")
            #expect(cached.versionIdentifiers == xml.versionIdentifiers)
        }
    }

    /// A model's meaning without what differs between its forms: property order, and a renaming
    /// identifier equal to the name (the archive writes one for every property).
    static func normalized(_ model: CoreDataModel) -> [String] {
        model.entities.sorted { $0.name < $1.name }.flatMap { entity in
            [
                "entity \(entity.name) parent \(entity.parent ?? "-") abstract \(entity.isAbstract) was \(entity.renamingIdentifier.map { $0 == entity.name ? "-" : $0 } ?? "-") unique \(entity.uniquenessConstraints)"
            ]
                + entity.properties.sorted { $0.name < $1.name }.map { property in
                    var line =
                        "  \(property.name) optional \(property.isOptional) transient \(property.isTransient) was \(property.previousName) hash \(property.versionHashModifier ?? "-")"
                    switch property.kind {
                    case let .attribute(attribute):
                        line +=
                            " \(attribute.type.xmlName) default \(attribute.defaultValue.map { "\($0)" } ?? "-") external \(attribute.allowsExternalStorage)"
                        line += " history \(attribute.preservesValueInHistoryOnDeletion)"
                        line += " derived \(attribute.derivation ?? "-") transformer \(attribute.valueTransformerName ?? "-")"
                    case let .relationship(relationship):
                        line +=
                            " -> \(relationship.destination) inverse \(relationship.inverse ?? "-") many \(relationship.isToMany) ordered \(relationship.isOrdered)"
                        line += " count \(relationship.minCount)...\(relationship.maxCount)"
                    }
                    return line
                }
        }
    }

    @Test(
        "a model archived, compressed as a model cache, and read back is the same model; equal models give equal bytes; a .mom file reads as the archive"
    )
    func archiveRoundTrip() throws {
        let model = try CoreDataDemoStore.destinationModel
        let archive = model.archived()
        #expect(archive == (try CoreDataDemoStore.destinationModel).archived())
        let decoded = try CoreDataModel(archive: archive, file: "archive")
        #expect(Self.normalized(decoded).filter { !Self.normalized(model).contains($0) } == [])
        #expect(Self.normalized(model).filter { !Self.normalized(decoded).contains($0) } == [])
        #expect(decoded == model)
        #expect(try CoreDataModel(archive: try RawDeflate.inflate(RawDeflate.deflate(archive)), file: "cache") == model)
        let folder = try TemporaryFolder()
        try Data(archive).write(to: folder.path("Model.mom"))
        #expect(try CoreDataModel.read(contentsOf: folder.path("Model.mom")) == model)
        // And the XML as a folder, as Xcode keeps it.
        try FileManager.default.createDirectory(at: folder.path("Model.xcdatamodel"), withIntermediateDirectories: true)
        try CoreDataDemoStore.destinationModelXML.write(to: folder.path("Model.xcdatamodel/contents"), atomically: true, encoding: .utf8)
        #expect(try CoreDataModel.read(contentsOf: folder.path("Model.xcdatamodel")) == model)
    }

    @Test(
        "every part of a model survives the archive: defaults of every kind, derivations, uniqueness constraints, renaming identifiers, version hash modifiers, external storage, history preserved on deletion, relationship counts, ordered and transient properties, abstract sub-entities; and the Messenger model's 90 versions",
        arguments: [false, true])
    func richArchiveRoundTrip(_ messenger: Bool) throws {
        var models: [CoreDataModel] = []
        if messenger {
            guard let bundle = CoreDataStoreTests.fixture("Messenger/zmessaging.xcdatamodeld") else { return }
            let versions = try FileManager.default.contentsOfDirectory(atPath: bundle.path).filter { $0.hasSuffix(".xcdatamodel") }
            #expect(versions.count == 90)
            models = try versions.map { try CoreDataModel.read(contentsOf: bundle.appendingPathComponent($0)) }
        } else {
            models = [
                try CoreDataTesting.model(
                    """
                    <entity name="Asset" elementID="Photo" versionHashModifier="v2">
                      <attribute name="taken" optional="YES" attributeType="Date" defaultDateTimeInterval="600000000.5"/>
                      <attribute name="price" attributeType="Decimal" defaultValueString="12.5"/>
                      <attribute name="pixels" optional="YES" attributeType="Integer 64" defaultValueString="-9000000000"/>
                      <attribute name="flagged" attributeType="Boolean" defaultValueString="YES"/>
                      <attribute name="id" optional="YES" attributeType="UUID" defaultValueString="0F0E0D0C-0B0A-0908-0706-050403020100" preserveAfterDeletion="YES"/>
                      <attribute name="blob" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
                      <attribute name="tagCount" optional="YES" attributeType="Integer 64" derived="YES" derivationExpression="tags.@count"/>
                      <attribute name="scratch" optional="YES" transient="YES" attributeType="Undefined"/>
                      <attribute name="title" attributeType="String" defaultValueString="it's untitled" elementID="name" versionHashModifier="x"/>
                      <attribute name="colors" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData"/>
                      <relationship name="tags" optional="YES" toMany="YES" minCount="1" maxCount="5" ordered="YES" destinationEntity="Tag" inverseName="assets"/>
                      <uniquenessConstraints><uniquenessConstraint><constraint value="title"/><constraint value="taken"/></uniquenessConstraint></uniquenessConstraints>
                    </entity>
                    <entity name="Video" parentEntity="Asset" isAbstract="YES"><attribute name="seconds" attributeType="Double" defaultValueString="0.25"/></entity>
                    <entity name="Tag"><relationship name="assets" optional="YES" toMany="YES" destinationEntity="Asset" inverseName="tags"/>
                      <relationship name="owner" optional="YES" maxCount="1" destinationEntity="Video"/></entity>
                    """, identifier: "7.1")
            ]
        }
        for model in models {
            // The same model, whatever order the archive lists entities in (by name, as Core Data's).
            let decoded = try CoreDataModel(archive: model.archived(), file: "archive")
            #expect(
                Self.normalized(decoded) == Self.normalized(model),
                "\(Self.normalized(decoded).filter { !Self.normalized(model).contains($0) })")
            #expect(decoded.versionIdentifiers == model.versionIdentifiers)
        }
        if !messenger {
            let asset = try #require(models[0].entity(named: "Asset"))
            #expect(asset.property(named: "price")?.attribute?.defaultValue == .real(12.5))
            #expect(asset.property(named: "id")?.attribute?.defaultValue == .data(Array(0...15).reversed().map(UInt8.init)))
            #expect(asset.property(named: "tagCount")?.attribute?.derivation == "tags.@count")
            #expect(asset.property(named: "id")?.attribute?.preservesValueInHistoryOnDeletion == true)
            let tags = try #require(asset.property(named: "tags")?.relationship)
            #expect(tags.isToMany && tags.minCount == 1 && tags.maxCount == 5)
            let owner = try #require(models[0].entity(named: "Tag")?.property(named: "owner")?.relationship)
            #expect(!owner.isToMany && owner.minCount == 0 && owner.maxCount == 1)
        }
    }

    @Test(
        "a model that is not whole, a file that is not a model, and a damaged model cache (one inflating past 16 MiB too) are refused naming the file"
    )
    func refusals() throws {
        let dangling = #expect(throws: MigrationError.self) {
            try CoreDataTesting.model("<entity name=\"A\"><relationship name=\"b\" maxCount=\"1\" destinationEntity=\"B\"/></entity>")
        }
        #expect(dangling?.message.contains("relationship A.b has destination B, which the model does not declare") == true)
        let unknownType = #expect(throws: MigrationError.self) {
            try CoreDataTesting.model("<entity name=\"A\"><attribute name=\"x\" attributeType=\"Quaternion\"/></entity>")
        }
        #expect(unknownType?.message.contains("attribute A.x has type \"Quaternion\"") == true)

        let folder = try TemporaryFolder()
        try Data("hello".utf8).write(to: folder.path("notes.txt"))
        let notModel = #expect(throws: MigrationError.self) { try CoreDataModel.read(contentsOf: folder.path("notes.txt")) }
        #expect(notModel?.file == folder.path("notes.txt").path)

        let store = try CoreDataTesting.store(try CoreDataDemoStore.sourceModel, at: folder.path("store.sqlite"), uuid: "U")
        #expect(try CoreDataModel.read(store: store) == (try CoreDataDemoStore.sourceModel))
        // A bomb: a little DEFLATE that inflates past any model cache (17 MiB of zeros).
        let bomb = RawDeflate.deflate([UInt8](repeating: 0, count: RawDeflate.modelCacheLimit + (1 << 20)))
        #expect(bomb.count < 100_000)
        for (content, words) in [
            ("x'00ff00ff00ff'", "does not inflate"),
            ("x'\(RawDeflate.deflate(Array("bplist00 garbage".utf8)).map { String(format: "%02x", $0) }.joined())'", "not a keyed archive"),
            ("x'\(bomb.map { String(format: "%02x", $0) }.joined())'", "expands past 16777216 bytes"),
        ] {
            try execute("UPDATE Z_MODELCACHE SET Z_CONTENT = \(content)", on: store)
            let damaged = #expect(throws: MigrationError.self) { try CoreDataModel.read(store: store) }
            #expect(damaged?.file == store.path && damaged?.message.contains(words) == true, "\(String(describing: damaged))")
        }
        try execute("UPDATE Z_MODELCACHE SET Z_CONTENT = NULL", on: store)
        #expect(try CoreDataModel.read(store: store) == nil)
    }

    @Test(
        "the binary property list codec: every type round-trips, Foundation's own output reads, and damaged input is refused without reading out of bounds"
    )
    func propertyLists() throws {
        let value = PropertyList.dictionary([
            "small": .integer(7), "medium": .integer(70_000), "large": .integer(7_000_000_000), "negative": .integer(-5),
            "real": .real(2.5), "true": .bool(true), "false": .bool(false), "date": .date(600_000_000.25),
            "data": .data(Array(0..<200).map(UInt8.init)), "ascii": .string("Z_PRIMARYKEY"), "unicode": .string("Ödön ✓ 𝄞"),
            "uid": .uid(300), "array": .array((0..<20).map { .integer(Int64($0)) }), "nested": .dictionary(["a": .array([.string("b")])]),
            "long key so that the header takes an extra length byte": .string(String(repeating: "x", count: 40)),
        ])
        let bytes = value.binary()
        #expect(try PropertyList(binary: bytes) == value)

        let foundation = try PropertyListSerialization.data(
            fromPropertyList: ["name": "Post", "count": 3, "items": [1.5, true]],
            format: .binary, options: 0)
        #expect(
            try PropertyList(binary: Array(foundation))
                == .dictionary([
                    "name": .string("Post"), "count": .integer(3),
                    "items": .array([.real(1.5), .bool(true)]),
                ]))
        // Every truncation and every single-byte change either reads or is refused; none crashes.
        for length in stride(from: 0, to: bytes.count, by: 7) { _ = try? PropertyList(binary: Array(bytes[..<length])) }
        for index in stride(from: 8, to: bytes.count, by: 3) {
            var damaged = bytes
            damaged[index] ^= 0xA5
            _ = try? PropertyList(binary: damaged)
        }
        // And the damage that would trap or run away if it were not looked for, each refused:
        // the header, one object and the offset table, then the trailer (offset size 1,
        // reference size 1, one object or more, the top object, the table's offset).
        func list(_ objects: [UInt8], offsets: [UInt8], count: UInt64? = nil, table: UInt64? = nil) -> [UInt8] {
            func word(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) } }
            let tableOffset = UInt64(8 + objects.count)
            return Array("bplist00".utf8) + objects + offsets + [0, 0, 0, 0, 0, 0, 1, 1]
                + word(count ?? UInt64(offsets.count)) + word(0) + word(table ?? tableOffset)
        }
        let damaged: [(String, [UInt8])] = [
            ("an array that contains itself", list([0xA1, 0x00], offsets: [8])),
            ("an offset table past the end of memory", list([0x08], offsets: [8], table: UInt64(Int.max))),
            ("a string of 2^62 UTF-16 units", list([0x6F, 0x13, 0x40, 0, 0, 0, 0, 0, 0, 0], offsets: [8])),
            ("a UID of 2^63", list([0x87, 0x80, 0, 0, 0, 0, 0, 0, 0], offsets: [8])),
            ("a UID of nine bytes", list([0x88] + [UInt8](repeating: 1, count: 9), offsets: [8])),
            ("a length of 2^15 bytes", list([0x4F, 0x1F, 0], offsets: [8])),
            ("an object past the end", list([0x08], offsets: [200])),
        ]
        for (what, bytes) in damaged {
            #expect(throws: PropertyList.Malformed.self, "\(what)") { try PropertyList(binary: bytes) }
        }
        // Collections nested 300 deep (two-byte references and offsets): refused, not a stack overflow.
        func two(_ value: Int) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
        var nested: [UInt8] = []
        for index in 0..<300 { nested += [0xA1] + two(index + 1) }
        nested += [0x08]
        let deep =
            Array("bplist00".utf8) + nested + (0...300).flatMap { two(8 + 3 * $0) }
            + [0, 0, 0, 0, 0, 0, 2, 2] + [0, 0, 0, 0, 0, 0] + two(301) + [UInt8](repeating: 0, count: 8)
            + [0, 0, 0, 0, 0, 0] + two(8 + nested.count)
        let deepError = #expect(throws: PropertyList.Malformed.self) { try PropertyList(binary: deep) }
        #expect(deepError?.description.contains("nest more than") == true)
        // Forty arrays, each referring twice to the next: 2^40 paths, one read each object.
        var shared: [UInt8] = []
        for index in 0..<40 { shared += [0xA2, UInt8(index + 1), UInt8(index + 1)] }
        shared += [0x08]
        // (Read path by path, this would not finish.)
        let sharedValue = try PropertyList(binary: list(shared, offsets: (0...40).map { UInt8(8 + 3 * $0) }))
        if case let .array(elements) = sharedValue {
            #expect(elements.count == 2 && elements[0] == elements[1])
        } else {
            Issue.record("not an array")
        }
    }

    @Test("raw DEFLATE: round trips at every size, reads zlib's and Apple's streams, refuses garbage, truncation and output past its limit")
    func rawDeflate() throws {
        var generator = SystemRandomNumberGenerator()
        for size in [0, 1, 100, 65_536, 300_000] {
            let input = (0..<size).map { _ in UInt8.random(in: 0...15, using: &generator) }
            let compressed = RawDeflate.deflate(input)
            #expect(try RawDeflate.inflate(compressed) == input, "\(size) bytes")
            if size > 1000 {
                #expect(compressed.count < size)
                #expect(throws: RawDeflate.Failure.self) { try RawDeflate.inflate(Array(compressed.dropLast(compressed.count / 2))) }
                #expect(throws: RawDeflate.Failure.self) { try RawDeflate.inflate(compressed, limit: size / 2) }
            }
        }
        #expect(throws: RawDeflate.Failure.self) { try RawDeflate.inflate([0xFF, 0xFF, 0xFF, 0xFF]) }
        #expect(throws: RawDeflate.Failure.self) { try RawDeflate.inflate([]) }
        // A stored block written by hand: BFINAL=1, BTYPE=00, then LEN, NLEN and the bytes.
        #expect(try RawDeflate.inflate([0x01, 0x03, 0x00, 0xFC, 0xFF] + Array("abc".utf8)) == Array("abc".utf8))
    }
}
