import Foundation
import MigrationJournal
import Testing
@testable import ChunkMigrate

/// Core Data's entity version hashes (``CoreDataVersionHashes``) with Core Data as the oracle:
/// every fixture store records in its metadata the hashes of the model that wrote it, so the
/// hashes computed from its model cache, or from the XML of the version that wrote it, must equal
/// them entity by entity.
@Suite("Core Data's entity version hashes")
struct CoreDataVersionHashTests {
    /// Every store under the fixtures, as paths inside the fixtures folder, found by walking it.
    static let stores: [String] = {
        let root = CoreDataStoreTests.fixtures
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        let prefix = root.standardizedFileURL.path + "/"
        var found: [String] = []
        for case let url as URL in walker where ["sqlite", "db", "storedata", "wiredatabase"].contains(url.pathExtension) {
            found.append(String(url.standardizedFileURL.path.dropFirst(prefix.count)))
        }
        return found.sorted()
    }()
    static let present = stores.count > 100

    @Test(
        "from a store's model cache, the hashes its metadata records, entity by entity, and the digest and checksum where Core Data wrote them",
        .enabled(if: present, "shared/fixtures/coredata is absent"), arguments: stores)
    func modelCache(_ name: String) throws {
        let folder = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy(name, into: folder)
        let database = try Database(path: store.path, mode: .source)
        // A store without metadata or without a model cache has nothing to compare.
        guard let plist = try CoreDataMetadata.read(database, file: name).plist, let recorded = CoreDataVersionHashes(metadata: plist),
            let model = try CoreDataModel.read(database, schema: "main", file: name)
        else { return }
        let computed = CoreDataVersionHashes(model: model)
        #expect(computed.names == recorded.names)
        let wrong = recorded.names.filter { computed.entities[$0] != recorded.entities[$0] }
        #expect(
            wrong.isEmpty, "\(name): \(wrong.count) of \(recorded.entities.count) entities hash otherwise: \(wrong.joined(separator: ", "))"
        )
        if let digest = plist["NSStoreModelVersionHashesDigest"] as? String {
            #expect(recorded.digest == digest && computed.digest == digest)
        }
        if let checksum = plist["NSStoreModelVersionChecksumKey"] as? String {
            #expect(recorded.checksum == checksum && computed.checksum == checksum)
        }
    }

    /// The model bundles (as XML) and the stores their apps wrote, by folder.
    static let bundles: [(bundle: String, stores: String)] = [
        ("Messenger/zmessaging.xcdatamodeld", "Messenger/"),
        ("ProgressiveMigration/CoreDataMigration_Example.xcdatamodeld", "ProgressiveMigration/"),
        ("SplitName/MWKCoreDataTests.xcdatamodeld", "SplitName/"),
        ("apps/apptentive-ios/ATDataModel.xcdatamodeld", "apps/apptentive-ios/"),
        ("apps/coredataplus-samplemodel3/SampleModel3.xcdatamodeld", "apps/coredataplus-samplemodel3/"),
        ("apps/ddg-browserserviceskit-bookmarks/BookmarksModel.xcdatamodeld", "apps/ddg-browserserviceskit-bookmarks/"),
        ("apps/ddg-browserserviceskit-syncmetadata/SyncMetadata.xcdatamodeld", "apps/ddg-browserserviceskit-syncmetadata/"),
        ("apps/loopkit/Model.xcdatamodeld", "apps/loopkit/"),
    ]
    static var bundledStores: [String] { stores.filter { store in bundles.contains { store.hasPrefix($0.stores) } } }

    /// The one store no version of its bundle wrote: Messenger's 2.65.0 store comes from a model
    /// between 2.65.0 and 2.69.0 (Message has 2.69.0's linkAttachments and
    /// needsLinkAttachmentsUpdate, AssetClientMessage lacks isDownloading, User and Member are
    /// 2.65.0's). Its own model cache hashes as its metadata records (``modelCache(_:)``).
    static let writtenByAnotherModel = ["Messenger/store2-65-0.wiredatabase"]

    /// Each bundle's versions with their hashes, computed once.
    static let versionHashes: [String: [(name: String, identifiers: [String], hashes: CoreDataVersionHashes)]] = {
        var result: [String: [(name: String, identifiers: [String], hashes: CoreDataVersionHashes)]] = [:]
        for (path, _) in bundles {
            guard let url = CoreDataStoreTests.fixture(path), let bundle = try? CoreDataModelBundle.read(contentsOf: url) else { continue }
            result[path] = bundle.versions.map { ($0.name, $0.model.versionIdentifiers, CoreDataVersionHashes(model: $0.model)) }
        }
        return result
    }()

    @Test(
        "from the XML of every version of the app's model, the versions whose hashes equal a store's: one version, or versions that hash alike, with the store's version identifier among them",
        .enabled(if: present, "shared/fixtures/coredata is absent"), arguments: bundledStores)
    func modelBundle(_ name: String) throws {
        let bundle = try #require(Self.bundles.first { name.hasPrefix($0.stores) }).bundle
        let versions = try #require(Self.versionHashes[bundle], "\(bundle) does not read")
        let folder = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy(name, into: folder)
        let plist = try #require(try CoreDataMetadata.read(Database(path: store.path, mode: .source), file: name).plist)
        let recorded = try #require(CoreDataVersionHashes(metadata: plist))
        let matches = versions.filter { $0.hashes == recorded }
        if Self.writtenByAnotherModel.contains(name) {
            #expect(matches.isEmpty)
            return
        }
        let nearest = versions.map { version in
            (version.name, recorded.names.filter { version.hashes.entities[$0] != recorded.entities[$0] })
        }
        .min { $0.1.count < $1.1.count }
        #expect(
            !matches.isEmpty,
            "\(name): no version of \(bundle) hashes as the store; nearest \(nearest?.0 ?? "-"), differing in \(nearest?.1 ?? [])")
        if let identifiers = plist["NSStoreModelVersionIdentifiers"] as? [String], identifiers != [""],
            versions.filter({ $0.identifiers == identifiers }).count == 1
        {
            #expect(matches.contains { $0.identifiers == identifiers }, "\(name): \(identifiers) is not among \(matches.map(\.name))")
        }
    }

    @Test(
        "a store of three models merged at run time: each entity hashes as in the version of its own bundle, so only the AppRatingPrompt version that wrote it matches",
        .enabled(
            if: CoreDataStoreTests.fixture("apps/ddg-ios-appratingprompt/AppRatingPrompt_v1/Database.sqlite") != nil,
            "shared/fixtures/coredata is absent"))
    func mergedModels() throws {
        let folder = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy("apps/ddg-ios-appratingprompt/AppRatingPrompt_v1/Database.sqlite", into: folder)
        let plist = try #require(try CoreDataMetadata.read(Database(path: store.path, mode: .source), file: store.path).plist)
        let recorded = try #require(CoreDataVersionHashes(metadata: plist))
        var others: [CoreDataModel.Entity] = []
        for path in ["merged-models/RemoteMessaging.xcdatamodeld", "merged-models/HTTPSUpgrade.xcdatamodeld"] {
            let bundle = try CoreDataModelBundle.read(
                contentsOf: try #require(CoreDataStoreTests.fixture("apps/ddg-ios-appratingprompt/" + path)))
            others += try #require(bundle.version(named: bundle.current)).model.entities
        }
        let appRating = try CoreDataModelBundle.read(
            contentsOf: try #require(CoreDataStoreTests.fixture("apps/ddg-ios-appratingprompt/AppRatingPrompt.xcdatamodeld")))
        let matching = appRating.versions.filter {
            CoreDataVersionHashes(model: CoreDataModel(entities: $0.model.entities + others)) == recorded
        }
        #expect(matching.map(\.name) == ["AppRatingPrompt"])
    }

    @Test(
        "empty-store's metadata holds Core Data's hashes and digest: an empty store of a store's model cache records the hashes that store records",
        .enabled(if: present, "shared/fixtures/coredata is absent"),
        arguments: CoreDataLayoutTests.allStores.filter { !CoreDataLayoutTests.withoutModelCache.contains($0) })
    func emptyStore(_ name: String) throws {
        let folder = try TemporaryFolder()
        let store = try CoreDataStoreTests.copy(name, into: folder)
        let model = try CoreDataModel.read(contentsOf: store)
        let empty = folder.path("empty.sqlite")
        try CoreDataEmptyStore.create(at: empty, model: model)
        let plist = { (url: URL) in try #require(try CoreDataMetadata.read(Database(path: url.path, mode: .source), file: url.path).plist) }
        let (original, written) = (try plist(store), try plist(empty))
        #expect(CoreDataVersionHashes(metadata: written) == CoreDataVersionHashes(metadata: original))
        #expect(written["NSStoreModelVersionHashesDigest"] as? String == CoreDataVersionHashes(metadata: original)?.digest)
        #expect(written["NSStoreModelVersionIdentifiers"] as? [String] == original["NSStoreModelVersionIdentifiers"] as? [String])
        #expect((written["NSStoreModelVersionHashesVersion"] as? NSNumber)?.intValue == 3)
    }

    @Test("a store without a model cache given as a model: an error naming the store")
    func storeWithoutCache() throws {
        let folder = try TemporaryFolder()
        let store = folder.path("plain.sqlite")
        try Database(path: store.path, mode: .readWriteCreate).execute(
            "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)")
        #expect {
            try CoreDataModel.read(contentsOf: store)
        } throws: { error in
            (error as? MigrationError)?.message.contains("no model cache") == true && (error as? MigrationError)?.file == store.path
        }
    }

    @Test(
        "a model written by hand hashes as Core Data hashed it in a store of macOS 15.7 (CSUTaxonomy.sqlite): names, optional flags, attribute types, a uniqueness constraint"
    )
    func handWrittenModel() throws {
        let model = try CoreDataTesting.model(
            """
            <entity name="CSUSearchableKnowledgeDBObject">
              <attribute name="category" optional="YES" attributeType="String"/>
              <attribute name="confidenceValue" optional="YES" attributeType="Double" defaultValueString="0.0"/>
              <attribute name="dbUniqueId" attributeType="Integer 64" defaultValueString="0"/>
              <attribute name="idType" optional="YES" attributeType="Integer 16" defaultValueString="0"/>
              <attribute name="latitude" optional="YES" attributeType="Double" defaultValueString="0.0"/>
              <attribute name="localizedLabel" optional="YES" attributeType="String"/>
              <attribute name="localizedLabelDictionary" optional="YES" attributeType="String"/>
              <attribute name="localizedSynonyms" optional="YES" attributeType="String"/>
              <attribute name="localizedSynonymsDictionary" optional="YES" attributeType="String"/>
              <attribute name="longitude" optional="YES" attributeType="Double" defaultValueString="0.0"/>
              <attribute name="qid" optional="YES" attributeType="Integer 64" defaultValueString="0"/>
              <attribute name="sensitiveLocation" optional="YES" attributeType="Boolean"/>
              <attribute name="version" optional="YES" attributeType="Integer 32" defaultValueString="0"/>
              <attribute name="vertical" optional="YES" attributeType="String"/>
              <uniquenessConstraints><uniquenessConstraint><constraint value="dbUniqueId"/></uniquenessConstraint></uniquenessConstraints>
            </entity>
            """)
        let hashes = CoreDataVersionHashes(model: model)
        #expect(
            hashes.entities["CSUSearchableKnowledgeDBObject"].map { Data($0).base64EncodedString() }
                == "rKlQlS6kVtKSHPVQvll0I1SOmskl7i4in5hJnMx2aac=")
        #expect(hashes.digest.hasPrefix("ynzUJ3ot"))
    }

    @Test("SHA-256 and SHA-512 as FIPS 180-4's examples give them: empty, one block, two blocks")
    func digests() {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(VersionHashDigest.sha256([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex(VersionHashDigest.sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            hex(VersionHashDigest.sha256(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            hex(VersionHashDigest.sha256([UInt8](repeating: 0x61, count: 1000))) == JournalSHA256.hex([UInt8](repeating: 0x61, count: 1000))
        )
        func sha512(_ text: String) -> String { hex(VersionHashDigest.sha512(Array(text.utf8))) }
        #expect(
            sha512("")
                == "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
        )
        #expect(
            sha512("abc")
                == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        )
        #expect(
            sha512("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")
                == "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909"
        )
    }

    @Test("a derivation as Core Data prints it, from the text of the XML")
    func derivationFormat() {
        #expect(CoreDataVersionHashes.predicateFormat(" canonical:( name ) ") == "canonical:(name)")
        #expect(CoreDataVersionHashes.predicateFormat("items.@count") == "items.@count")
        #expect(CoreDataVersionHashes.predicateFormat("now()") == "now()")
        #expect(CoreDataVersionHashes.predicateFormat("f:(a,b)") == "f:(a, b)")
        #expect(CoreDataVersionHashes.predicateFormat("lowercase:(\"A B\")") == "lowercase:(\"A B\")")
    }
}
