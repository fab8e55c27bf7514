// Fuzz targets of ChunkMigrate's readers, compiled into the ChunkMigrate module itself (see
// Tools/fuzz/build.sh) so that its internal readers are callable, and the libFuzzer entry points
// of the one fuzz binary. The binary runs the target named by CHUNKMIGRATE_FUZZ_TARGET, or else
// the one named like the file it was started as (build.sh links each target's name to it), so
// `/tmp/chunkmigrate-fuzz/raw-deflate crash-...` replays a crash of raw-deflate;
// CHUNKMIGRATE_FUZZ_TARGET=list prints the targets' names.
//
// A target must return whatever the bytes: a thrown error is a correct answer; a crash, a hang or
// an allocation past libFuzzer's -malloc_limit_mb is a bug in the reader.

import Foundation
import MigrationJournal

#if canImport(Glibc)
    import Glibc
#endif

/// ChunkMigrate's fuzz targets by name.
enum FuzzTargets {
    static let all: [String: @Sendable ([UInt8]) -> Void] = [
        "raw-deflate": rawDeflate,
        "property-list": propertyList,
        "keyed-archive": keyedArchive,
        "model-archive": modelArchive,
        "model-xml": modelXML,
        "mapping-model": mappingModel,
        "plan-json": planJSON,
        "step-json": stepJSON,
    ].merging(JournalFuzzTargets.all) { own, _ in own }

    /// A model cache's compression, at the limit a store's model cache is read with.
    static func rawDeflate(_ bytes: [UInt8]) {
        _ = try? RawDeflate.inflate(bytes)
    }

    /// A binary property list, the container of every keyed archive.
    static func propertyList(_ bytes: [UInt8]) {
        _ = try? PropertyList(binary: bytes)
    }

    /// The archive, then every lookup the model and mapping-model readers make through it, on
    /// every object: references out of range, `$null`, classes that are not dictionaries.
    static func keyedArchive(_ bytes: [UInt8]) {
        guard let plist = try? PropertyList(binary: bytes), let archive = try? KeyedArchive(plist) else { return }
        var values = Array(archive.top.values)
        values += archive.objects.indices.map { PropertyList.uid($0) }
        for value in values {
            _ = archive.className(value)
            _ = archive.string(value)
            _ = archive.strings(value)
            _ = archive.dictionary(value)
            _ = archive.collectionValues(value)
            _ = archive.bool(value)
        }
    }

    /// A compiled model (`.mom`, an inflated model cache), then what a store's model feeds: its
    /// version hashes and its SQL layout.
    static func modelArchive(_ bytes: [UInt8]) {
        guard let model = try? CoreDataModel(archive: bytes, file: "model") else { return }
        use(model)
    }

    /// A model's `contents` XML, then its version hashes and SQL layout.
    static func modelXML(_ bytes: [UInt8]) {
        guard let model = try? CoreDataModel(xml: Data(bytes), file: "contents") else { return }
        use(model)
    }

    private static func use(_ model: CoreDataModel) {
        _ = CoreDataVersionHashes(model: model)
        _ = try? CoreDataLayout(model: model)
    }

    /// A mapping model from a file, as `chunkmigrate plan --mapping` reads one: a compiled
    /// `.cdm` when the bytes start with `bplist`, an `xcmapping.xml` otherwise.
    static func mappingModel(_ bytes: [UInt8]) {
        let url = scratch.appendingPathComponent("xcmapping.xml")
        guard FileManager.default.createFile(atPath: url.path, contents: Data(bytes)) else {
            fatalError("cannot write \(url.path)")
        }
        _ = try? CoreDataMappingModelFile.read(contentsOf: url)
    }

    /// A plan as `chunkmigrate run --plan` reads one: decoded, validated, and frozen as JSON the
    /// way a journal keeps it, which must decode to the same plan.
    static func planJSON(_ bytes: [UInt8]) {
        guard let plan = try? MigrationPlan.decode(json: Data(bytes), file: "plan.json") else { return }
        guard (try? plan.validate()) != nil else { return }
        guard let frozen = try? plan.encodedJSON() else { fatalError("a decoded plan does not encode") }
        let again: MigrationPlan
        do { again = try MigrationPlan.decode(json: frozen, file: "frozen") } catch {
            fatalError("a plan's frozen JSON does not decode: \(error)")
        }
        precondition(again == plan, "a plan's frozen JSON decodes to another plan")
    }

    /// A custom step as `chunkmigrate plan --step` reads one.
    static func stepJSON(_ bytes: [UInt8]) {
        _ = try? CoreDataStep.decode(json: Data(bytes), file: "step.json")
    }

    /// A folder of this process for the targets that read a file.
    static let scratch: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("chunkmigrate-fuzz-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: FuzzTargets.scratch) }
        return url
    }()

    /// The target this process runs, chosen in `LLVMFuzzerInitialize`.
    nonisolated(unsafe) static var selected: @Sendable ([UInt8]) -> Void = { _ in }
}

/// libFuzzer's set-up call: picks the target this process runs, by CHUNKMIGRATE_FUZZ_TARGET or
/// by the name the binary was started as.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>
) -> CInt {
    let invoked = argv.pointee[0].map { String(cString: $0) } ?? ""
    let name =
        ProcessInfo.processInfo.environment["CHUNKMIGRATE_FUZZ_TARGET"]
        ?? URL(fileURLWithPath: invoked).lastPathComponent
    if name == "list" {
        print(FuzzTargets.all.keys.sorted().joined(separator: "\n"))
        exit(0)
    }
    guard let target = FuzzTargets.all[name] else {
        let names = FuzzTargets.all.keys.sorted().joined(separator: ", ")
        let message = "chunkmigrate-fuzz: no target \"\(name)\"; set CHUNKMIGRATE_FUZZ_TARGET to one of: \(names)\n"
        FileHandle.standardError.write(Data(message.utf8))
        exit(2)
    }
    FuzzTargets.selected = target
    return 0
}

/// libFuzzer's call for each input: runs the selected target on a copy of the bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzTargets.selected(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
