import Foundation
import Testing
@testable import ChunkMigrate

/// The inputs fuzzing found (`Tools/fuzz`) that crashed a reader, hung it or made it allocate
/// without bound, each now refused or read in bounded time and memory.
@Suite("Readers of bytes from outside: what fuzzing found")
struct FuzzFindingsTests {
    static func finding(_ name: String) throws -> Data {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("FuzzFindings/" + name)
        return try Data(contentsOf: url)
    }

    @Test(
        "model XML and a mapping model's XML that Foundation's parser stops the process on (a name that is not UTF-8, a processing instruction without data) are refused naming the file",
        arguments: [
            "name-not-utf8.xml", "processing-instruction-without-data.xml", "pi-named-like-the-declaration.xml", "pi-in-utf16.xml",
            "pi-in-utf7.xml",
        ])
    func xmlParserStoppers(_ name: String) throws {
        let data = try Self.finding(name)
        let model = #expect(throws: MigrationError.self) { try CoreDataModel(xml: data, file: name) }
        #expect(
            model?.file == name && model?.message.contains("not a Core Data model's contents XML") == true, "\(String(describing: model))")
        let folder = try TemporaryFolder()
        let url = folder.path("xcmapping.xml")
        try data.write(to: url)
        let mapping = #expect(throws: MigrationError.self) { try CoreDataMappingModelFile.read(contentsOf: url) }
        #expect(mapping?.file == url.path, "\(String(describing: mapping))")
        // An XML declaration is no processing instruction of that kind, UTF-8 declared or not.
        for declaration in [#"<?xml version="1.0"?>"#, #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#] {
            #expect(
                try CoreDataModel(xml: Data((declaration + #"<model><entity name="A"/></model>"#).utf8), file: "m").entities.map(\.name)
                    == ["A"])
        }
    }

    @Test(
        "a default value of 20,000 digits then 20,000 signs is read once: the number at its start, as NSString reads it (it read every prefix again, quadratic)"
    )
    func longDefaultValue() throws {
        let model = try CoreDataModel(xml: try Self.finding("default-value-quadratic.xml"), file: "m")
        #expect(model.entity(named: "E")?.property(named: "a")?.attribute?.defaultValue == .real(.infinity))
        for (text, value) in [("1.5e3x", 1500.0), ("-2.", -2), (".25", 0.25), ("7e", 7), ("7e+", 7), ("--5", 0), ("abc", 0)] {
            let xml =
                #"<model><entity name="E"><attribute name="a" attributeType="Double" defaultValueString="\#(text)"/></entity></model>"#
            let read = try CoreDataModel(xml: Data(xml.utf8), file: "m")
            #expect(read.entity(named: "E")?.property(named: "a")?.attribute?.defaultValue == .real(value), "\(text)")
        }
    }

    @Test("a model archive whose derivation expression lists itself twice (2^32 readings under the depth bound) is refused")
    func derivationFanOut() throws {
        let bytes = Array(try Self.finding("derivation-arguments-share-itself.bplist"))
        let error = #expect(throws: (any Error).self) { try CoreDataModel(archive: bytes, file: "cache") }
        #expect("\(String(describing: error))".contains("derivation expression has more than 1000 parts"), "\(String(describing: error))")
    }

    @Test("a compiled mapping model whose expression is its own operand is refused naming the file and the entity mapping")
    func mappingModelCycle() throws {
        let folder = try TemporaryFolder()
        let url = folder.path("Cycle.cdm")
        try Self.finding("expression-operand-cycle.cdm").write(to: url)
        let error = #expect(throws: MigrationError.self) { try CoreDataMappingModelFile.read(contentsOf: url) }
        #expect(error?.file == url.path && error?.message.contains("refer to themselves") == true, "\(String(describing: error))")
    }

    @Test("a property list of 4,096 references to one 4,096-byte object reads that object once, every element sharing it")
    func sharedOffsets() throws {
        let value = try PropertyList(binary: Array(try Self.finding("shared-offsets-4096.bplist")))
        guard case let .array(elements) = value, case let .data(first)? = elements.first else {
            Issue.record("not an array of data: \(value)")
            return
        }
        #expect(elements.count == 4096 && first.count == 4096)
        // One storage for all: the elements' bytes are at one address.
        let addresses = Set(
            elements.prefix(64).compactMap { element -> UInt? in
                guard case let .data(bytes) = element else { return nil }
                return bytes.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
            })
        #expect(addresses.count == 1, "\(addresses.count) copies")
    }

    @Test(
        "a plan whose relationships chain 10,000 entities is ordered on a thread with a 512 KiB stack, targets first (one call frame per entity overflowed a worker thread's stack from 6,000)"
    )
    func relationshipChain() throws {
        let count = 10_000
        let entities = (0..<count).map { index -> [String: Any] in
            var entity: [String: Any] = ["name": "E\(index)", "source": ["table": "s"], "destination": ["table": "d\(index)"]]
            if index + 1 < count { entity["relationships"] = ["r": ["from": "r", "to": "E\(index + 1)"]] }
            return entity
        }
        let plan = try MigrationPlan.decode(json: try JSONSerialization.data(withJSONObject: ["entities": entities]))
        let result = OrderResult()
        let thread = Thread {
            result.order = (try? plan.validate()).map { plan.executionOrder().entities }
            result.done.signal()
        }
        thread.stackSize = 512 << 10
        thread.start()
        result.done.wait()
        #expect(result.order == Array((0..<count).reversed()))
    }

    final class OrderResult: @unchecked Sendable {
        var order: [Int]?
        let done = DispatchSemaphore(value: 0)
    }
}
