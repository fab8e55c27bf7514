import Foundation
import Testing
@testable import ChunkMigrate

/// Every property mapping of every mapping model of the fixtures, in both forms, carried into the
/// plan or refused by name: never dropped.
@Suite("Core Data: every property mapping of the app's mapping models accounted for")
struct CoreDataMappingModelAccountTests {
    /// The mapping models of the fixtures: `.xcmappingmodel` folders, loose `xcmapping.xml` files
    /// and compiled `.cdm` files.
    static let mappingModels: [String] = {
        guard let walker = FileManager.default.enumerator(atPath: CoreDataStoreTests.fixtures.path) else { return [] }
        return (walker.allObjects as? [String] ?? []).filter {
            $0.hasSuffix(".xcmappingmodel") || $0.hasSuffix(".xcmapping.xml") || $0.hasSuffix(".cdm")
        }.sorted()
    }()

    /// The model bundle a mapping model's versions are in: an `.xcdatamodeld` (or loose
    /// `.xcdatamodel.xml` files) in its folder or a folder above it, within the fixtures, that
    /// has both versions; else the two models
    /// Xcode embeds in the mapping model's XML (its own, or the one beside a `.cdm`), named as it
    /// names them.
    static func bundle(for path: String, file: CoreDataMappingModelFile) throws -> CoreDataModelBundle? {
        var folder = (CoreDataStoreTests.fixtures.appendingPathComponent(path)).deletingLastPathComponent()
        while folder.path.hasPrefix(CoreDataStoreTests.fixtures.path), folder.path != CoreDataStoreTests.fixtures.path {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            var bundles = try names.sorted().filter { $0.hasSuffix(".xcdatamodeld") }.map {
                try CoreDataModelBundle.read(contentsOf: folder.appendingPathComponent($0))
            }
            // Versions kept as loose model XML (`Model2.xcdatamodel.xml`).
            let loose = try names.sorted().filter { $0.hasSuffix(".xcdatamodel.xml") }.map { name in
                CoreDataModelBundle.Version(
                    name: String(name.dropLast(".xcdatamodel.xml".count)),
                    model: try CoreDataModel(xml: try Data(contentsOf: folder.appendingPathComponent(name)), file: name))
            }
            if let last = loose.last { bundles.append(CoreDataModelBundle(versions: loose, current: last.name)) }
            for bundle in bundles {
                if let matched = file.matched(in: bundle), bundle.version(named: matched.source) != nil,
                    bundle.version(named: matched.destination) != nil
                {
                    return bundle
                }
            }
            folder = folder.deletingLastPathComponent()
        }
        // The models embedded in the XML.
        let url = CoreDataStoreTests.fixtures.appendingPathComponent(path)
        let xml: URL
        if path.hasSuffix(".cdm") {
            let sibling = url.deletingPathExtension().appendingPathExtension("xcmappingmodel").appendingPathComponent("xcmapping.xml")
            guard FileManager.default.fileExists(atPath: sibling.path) else { return nil }
            xml = sibling
        } else {
            xml = path.hasSuffix(".xcmappingmodel") ? url.appendingPathComponent("xcmapping.xml") : url
        }
        var reader = try XMLReader(try Data(contentsOf: xml))
        var embedded: [String: String] = [:], current: String?, text = ""
        while let event = try reader.next() {
            switch event {
            case let .start("attribute", attributes): current = attributes["name"]; text = ""
            case let .text(string): text += string
            case .end("attribute"):
                if let name = current, name.hasSuffix("modeldata") || name.hasSuffix("modelpath") { embedded[name] = text }
                current = nil
            default: break
            }
        }
        func version(_ side: String) throws -> CoreDataModelBundle.Version? {
            guard let base64 = embedded["\(side)modeldata"], let bytes = Data(base64Encoded: base64, options: .ignoreUnknownCharacters),
                let path = embedded["\(side)modelpath"]
            else { return nil }
            let name = ((path.trimmingCharacters(in: .whitespacesAndNewlines) as NSString).lastPathComponent as NSString)
                .deletingPathExtension
            // Older Xcode embeds its own editing archive (XDDevModel), not a compiled model.
            guard let model = try? CoreDataModel(archive: Array(bytes), file: "\(xml.path) (\(side)modeldata)") else { return nil }
            return .init(name: name, model: model)
        }
        guard let source = try version("source"), let destination = try version("destination") else { return nil }
        return CoreDataModelBundle(versions: [source, destination], current: destination.name)
    }

    @Test(
        "every property mapping of every fixture mapping model, both forms, that gives a value is in the plan (read as it is, translated, computed, not stored, replaced by a step) or refused naming its entity mapping and property; a custom policy is refused by name",
        .enabled(if: CoreDataStoreTests.fixture("SOURCES.md") != nil, "shared/fixtures/coredata is absent"))
    func everyPropertyMappingAccounted() throws {
        #expect(Self.mappingModels.count >= 12, "\(Self.mappingModels)")
        var carried = 0, refused = 0, models = 0
        var withoutModels: [String] = []
        for path in Self.mappingModels {
            let read = try CoreDataMappingModelFile.read(contentsOf: CoreDataStoreTests.fixtures.appendingPathComponent(path))
            let found = try Self.bundle(for: path, file: read)
            guard var bundle = found, let file = read.matched(in: bundle) else {
                withoutModels.append(path)
                continue
            }
            models += 1
            bundle.mappingModels = [file]
            let folder = try TemporaryFolder()
            let source = folder.path("source.sqlite"), destination = folder.path("destination.sqlite")
            try CoreDataEmptyStore.create(at: source, model: try #require(bundle.version(named: file.source)).model)
            try CoreDataEmptyStore.create(at: destination, model: try #require(bundle.version(named: file.destination)).model)
            // The mapping model's declarative parts, policies or not, as one part of a path: what
            // the plan carries of each property mapping, or what it refuses.
            var options = InferenceOptions(modelBundle: bundle, sourceVersion: file.source, destinationVersion: file.destination)
            options.mappingModel = file
            options.isPart = true
            var accounts: [PropertyMappingAccount] = []
            var refusal = ""
            var plan: MigrationPlan?
            do {
                let inferred = try MigrationPlan.infer(source: source, destination: destination, options: options)
                accounts = inferred.propertyMappings
                plan = inferred.plan
            } catch let error as MigrationError {
                refusal = error.message
                accounts = (error.cause as? MappingModelRefusal)?.accounted ?? []
                #expect(error.message.contains(file.url.lastPathComponent), "\(path): \(error)")
            }
            let destinationLayout = try CoreDataLayout(model: try #require(bundle.version(named: file.destination)).model)
            for mapping in file.generatingExpressions(
                source: try #require(bundle.version(named: file.source)).model,
                destination: try #require(bundle.version(named: file.destination)).model
            ).entityMappings
            where mapping.source != nil && mapping.destination != nil && mapping.kind != "Remove" {
                for property in mapping.attributes + mapping.relationships {
                    guard let value = property.value, value != .constant(.null) else { continue }
                    if let account = accounts.first(where: { $0.entityMapping == mapping.name && $0.property == property.name }) {
                        carried += 1
                        // What is read or translated has a value in the plan: its column's expression
                        // (an attribute's or a to-one's key; a to-many's pairs live elsewhere).
                        if let plan, [.readAsIs, .translated].contains(account.outcome), let entity = mapping.destination,
                            destinationLayout.model.property(property.name, of: entity)?.property.relationship?.isToMany != true,
                            let table = destinationLayout.table(of: entity),
                            let column = destinationLayout.column(of: property.name, entity: entity)
                        {
                            let expression = plan.entities.first { $0.destination.table == table.name }?.columns[column.name]
                            #expect(
                                expression != nil && expression != "NULL",
                                "\(path): \(mapping.name).\(property.name) = \(value) carried as \(account.outcome), but \(table.name).\(column.name) is \(expression ?? "not in the plan")"
                            )
                        }
                    } else if refusal.contains("entity mapping \(mapping.name) (") && refusal.contains(", \(property.name) = ") {
                        refused += 1
                    } else if let names = refusal.range(of: "entity mappings "),
                        refusal[names.upperBound...].contains("\(mapping.name) (\(mapping.source!) -> \(mapping.destination!))")
                    {
                        // Refused with its whole entity mapping, named.
                        refused += 1
                    } else {
                        Issue.record(
                            "\(path): \(mapping.name).\(property.name) = \(value) is neither in the plan nor refused\(refusal.isEmpty ? "" : " (refused: \(refusal))")"
                        )
                    }
                }
            }
            // As a path runs it: a mapping model with custom policies waits for a step, named.
            if !file.policies.isEmpty {
                let error = #expect(throws: MigrationError.self) {
                    try MigrationPlan.infer(
                        source: source, destination: destination,
                        options: InferenceOptions(modelBundle: bundle, sourceVersion: file.source, destinationVersion: file.destination))
                }
                #expect(file.policies.allSatisfy { error?.message.contains($0) == true }, "\(path): \(String(describing: error))")
            }
        }
        print(
            "mapping models: \(models); property mappings carried: \(carried), refused by name: \(refused); without their models: \(withoutModels)"
        )
        // CompiledMappingModel keeps the mapping model alone: its XML embeds Xcode's editing
        // archives of the models, not compiled models (CoreDataMappingModelTests reads it).
        #expect(withoutModels.allSatisfy { $0.hasPrefix("CompiledMappingModel/") }, "\(withoutModels)")
        #expect(models + withoutModels.count == Self.mappingModels.count && carried > 100)
    }
}
