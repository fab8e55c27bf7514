import Foundation
import MigrationJournal
import Testing

/// A seeded random mutation test of the journal reader: damaged journals are refused, or read
/// with the damaged part dropped, and nothing is ever mapped from damaged data.
///
/// The suite runs a few hundred mutations; `JOURNAL_FUZZ_ITERATIONS=N` runs N (for a long run by
/// hand: `JOURNAL_FUZZ_ITERATIONS=200000 swift test --filter JournalFuzzTests`).
@Suite("Journal reader under random damage")
struct JournalFuzzTests {
    /// The mapping an intact journal holds: entity -> source key -> destination key.
    struct Original {
        var mapping: [UInt32: [Int64: Int64]] = [:]
    }

    static func buildJournal(at directory: String) throws -> Original {
        let writer = try JournalWriter.create(directory: directory, header: testHeader(), plan: testPlan)
        defer { writer.close() }
        var original = Original()
        var random = SplitMix64(seed: 7)
        var next: [UInt32: Int64] = [0: 1, 1: 1, 2: 0]
        for batch in UInt64(1)...4 {
            for entity in UInt32(0)...2 {
                let start = Int64(batch) * 1_000 + Int64(entity) * 100_000
                let keys =
                    batch % 2 == 0
                    ? Array(start..<(start + 40))
                    : sparseKeys(40, from: start, gaps: 1...9, seed: random.next())
                let base = entity == 2 ? keys[0] : next[entity]!
                try appendBatch(
                    writer, entity: entity, batch: batch, keys: keys, destinationBase: base,
                    mapping: entity == 2 ? .preserve : .allocate)
                for (offset, key) in keys.enumerated() {
                    original.mapping[entity, default: [:]][key] = entity == 2 ? key : base + Int64(offset)
                }
                if entity != 2 { next[entity]! += Int64(keys.count) }
            }
        }
        try writer.append(.complete(atMillis: 1))
        return original
    }

    /// Opens, verifies and looks up everything in a possibly damaged journal. Returns false when a
    /// lookup returned a destination that the intact journal does not have.
    static func readEverything(_ directory: String, original: Original) -> Bool {
        _ = JournalReader.verify(directory: directory)
        guard let reader = try? JournalReader(directory: directory), let map = try? reader.idMap(cacheBudget: 4_096) else {
            return true
        }
        for (entity, pairs) in original.mapping {
            for (source, destination) in pairs {
                if let found = try? map.destination(of: source, entity: entity), found != destination { return false }
                if let back = try? map.source(ofDestination: destination, entity: entity), back != source { return false }
            }
            let sorted = pairs.keys.sorted()
            if let found = try? map.destinations(of: sorted, entity: entity) {
                for (key, value) in zip(sorted, found) where value != nil && value != pairs[key] { return false }
            }
        }
        return true
    }

    @Test("flipped bytes, cut files and garbage never map a key wrongly")
    func randomDamage() throws {
        let iterations = ProcessInfo.processInfo.environment["JOURNAL_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 300
        let pristine = try TemporaryDirectory()
        let original = try Self.buildJournal(at: pristine.path)
        let files =
            ["header", "log"]
            + (0...2).flatMap { entity in
                (1...4).map { "segments/\(entity)/" + String(repeating: "0", count: 9) + "\($0).seg" }
            }
        let contents = try files.map { try readBytes(pristine.appending($0)) }
        var random = SplitMix64(seed: 2026)
        let work = try TemporaryDirectory()
        try FileManager.default.removeItem(atPath: work.path)
        try FileManager.default.copyItem(atPath: pristine.path, toPath: work.path)
        var wrong = 0
        var refused = 0
        for _ in 0..<iterations {
            let which = Int(random.next() % UInt64(files.count))
            var bytes = contents[which]
            switch random.next() % 4 {
            case 0:  // flip one to four bits
                for _ in 0...(random.next() % 4) {
                    let position = Int(random.next() % UInt64(bytes.count))
                    bytes[position] ^= UInt8(1 << (random.next() % 8))
                }
            case 1:  // cut the file short
                bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count))))
            case 2:  // overwrite a run with random bytes
                let start = Int(random.next() % UInt64(bytes.count))
                for position in start..<min(bytes.count, start + 1 + Int(random.next() % 16)) {
                    bytes[position] = UInt8(truncatingIfNeeded: random.next())
                }
            default:  // append garbage
                bytes += (0..<(1 + random.next() % 32)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            try writeBytes(bytes, to: work.appending(files[which]))
            if (try? JournalReader(directory: work.path)) == nil { refused += 1 }
            if !Self.readEverything(work.path, original: original) { wrong += 1 }
            try writeBytes(contents[which], to: work.appending(files[which]))
        }
        #expect(wrong == 0, "\(wrong) of \(iterations) damaged journals mapped a key wrongly")
        #expect(refused > 0, "some damage must be refused outright")
        // The pristine journal still reads fully after all that.
        #expect(Self.readEverything(work.path, original: original))
        #expect(JournalReader.verify(directory: work.path).isIntact)
    }
}
