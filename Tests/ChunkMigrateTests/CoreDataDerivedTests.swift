import Foundation
import Testing
@testable import ChunkMigrate

/// Derived attributes: the SQL Core Data keeps them with, read from the model's derivations.
@Suite("Core Data derived attributes")
struct CoreDataDerivedTests {
    @Test("the triggers derived from the Photos model's derivedCameraCaptureDevice are the ones Apple's Photos wrote into its store",
          .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"))
    func photosTriggers() throws {
        let folder = try TemporaryFolder()
        let (layout, _, store) = try CoreDataLayoutTests.layout("PhotosLibrary/Photos.sqlite", in: folder)
        let database = try Database(path: store.path, mode: .source)
        var written: [String: String] = [:]
        for row in try database.rows("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'Z\\_DA\\_%' ESCAPE '\\'") {
            written[row[0].text!] = row[1].text!
        }
        #expect(written.count == 4)
        var derived: [CoreDataDerivation] = []
        for entity in layout.model.entities {
            for property in entity.properties where property.attribute?.derivation != nil {
                derived.append(try CoreDataDerivation(entity: entity.name, attribute: property.name, layout: layout))
            }
        }
        #expect(derived.map(\.attribute) == ["derivedCameraCaptureDevice"])
        let ours = derived.flatMap(\.triggers).map { $0.replacingOccurrences(of: "CREATE TRIGGER IF NOT EXISTS ", with: "CREATE TRIGGER ") }
        #expect(Set(ours) == Set(written.values), "\(ours.sorted()) against \(written.values.sorted())")
        #expect(derived[0].dataStatement
                == "UPDATE ZASSET SET ZDERIVEDCAMERACAPTUREDEVICE = (SELECT ZCAMERACAPTUREDEVICE FROM ZADDITIONALASSETATTRIBUTES WHERE Z_PK = ZASSET.ZADDITIONALATTRIBUTES)")
    }
}

/// Real stores with Core Data's triggers, migrated into an emptied copy of themselves.
@Suite("Core Data stores with triggers")
struct CoreDataTriggerStoreTests {
    @Test("a Photos library migrates into an emptied copy of itself unchanged: every table, the R-tree's rows, the triggers as Photos wrote them",
          .enabled(if: CoreDataModelTests.present, "shared/fixtures/coredata is absent"))
    func photosIntoItself() throws {
        let folder = try TemporaryFolder()
        let source = try CoreDataModelTests.copy("PhotosLibrary/Photos.sqlite", into: folder)
        let destination = try CoreDataTesting.emptiedCopy(of: source, named: "migrated.sqlite", in: folder)
        let triggers = try Database(path: destination.path, mode: .source).scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'")
        #expect(triggers == .integer(21))
        let inferred = try CoreDataMigrationTests.migrate(source, into: destination, folder: folder, batchSize: 7)
        let difference = CoreDataTesting.difference(try CoreDataTesting.contents(destination), try CoreDataTesting.contents(source))
        #expect(difference == nil, "\(difference ?? "")\nnotes: \(inferred.notes)")
        let rtree = try Database(path: destination.path, mode: .source).scalar("SELECT count(*) FROM Z_RT_Asset_boundedByRect")
        #expect(rtree == (try Database(path: source.path, mode: .source).scalar("SELECT count(*) FROM ZASSET")))
    }
}
