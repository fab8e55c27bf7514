// idmap-bench: measures the journal's ID map — bytes per key on disk and lookup throughput.
//
//     swift run -c release --scratch-path .build-journal idmap-bench [--keys N] [--keep]
//
// For each key shape (dense, random gaps of 1...5, random 64-bit keys) it writes one entity's
// segments with `JournalWriter` in batches of 10_000 keys into a temporary journal, then measures
// lookups through `IDMap`: one sorted batch of every key, sorted batches of 10_000 random keys,
// and single random lookups, each with the segment cache cold (a new `IDMap`) and warm (the same
// `IDMap` again). It prints a table, then the same numbers as one JSON line.

import Foundation
import MigrationJournal

// MARK: Options

var keyCount = 10_000_000
var keepJournals = false
do {
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        switch argument {
        case "--keys":
            guard let value = arguments.popFirst().flatMap({ Int($0.replacingOccurrences(of: "_", with: "")) }), value >= 10_000 else {
                fatalError("--keys needs a number of at least 10000")
            }
            keyCount = value
        case "--keep":
            keepJournals = true
        default:
            fatalError("usage: idmap-bench [--keys N] [--keep]")
        }
    }
}

let batchSize = 10_000
/// Big enough to hold every decoded segment of 10 million keys, so that "warm" means warm.
let cacheBudget = max(IDMap.defaultCacheBudget, keyCount * 8 * 5 / 4 + (keyCount / batchSize + 1) * 64)
let randomBatchCount = 200
let singleLookupCount = 1_000_000

// MARK: Keys

/// SplitMix64: the same keys on every run and every machine.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum Shape: String, CaseIterable {
    case dense
    case gaps3 = "gaps-1...5"
    case random64 = "random-64-bit"

    func keys(count: Int, generator: inout SplitMix64) -> [Int64] {
        var keys = [Int64]()
        keys.reserveCapacity(count)
        switch self {
        case .dense:
            for index in 0..<count { keys.append(1 + Int64(index)) }
        case .gaps3:
            var key: Int64 = 1
            for _ in 0..<count {
                keys.append(key)
                key += Int64.random(in: 1...5, using: &generator)
            }
        case .random64:
            while keys.count < count {
                for _ in keys.count..<count { keys.append(Int64(bitPattern: generator.next())) }
                keys.sort()
                var unique = 0
                for index in keys.indices where index == 0 || keys[index] != keys[unique - 1] {
                    keys[unique] = keys[index]
                    unique += 1
                }
                keys.removeSubrange(unique...)
            }
        }
        return keys
    }
}

/// The bytes of the keys as one stream of LEB128 varints: the first key zigzag-encoded, then
/// `delta - 1` for each next key. What the keys cost with no segments, headers or compression.
func varintOnlyBytes(_ keys: [Int64]) -> Int {
    func length(_ value: UInt64) -> Int { max(1, (64 - value.leadingZeroBitCount + 6) / 7) }
    let first = keys[0]
    var total = length(UInt64(bitPattern: (first << 1) ^ (first >> 63)))
    for index in keys.indices.dropFirst() {
        total += length(UInt64(bitPattern: keys[index]) &- UInt64(bitPattern: keys[index - 1]) &- 1)
    }
    return total
}

// MARK: Timing

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

func time(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    return seconds(clock.now - start)
}

// MARK: One shape

struct Lookup: Codable {
    var name: String
    var keys: Int
    var coldKeysPerSecond: Double
    var warmKeysPerSecond: Double
    var coldSegmentDecodes: Int
}

struct ShapeResult: Codable {
    var shape: String
    var keys: Int
    var segments: Int
    var segmentBytes: Int
    var bytesPerKey: Double
    var varintOnlyBytesPerKey: Double
    var encodings: [String: Int]
    var writeSeconds: Double
    var lookups: [Lookup]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("idmap-bench: \(message)\n".utf8))
    exit(1)
}

func run(_ shape: Shape, root: String, keyCount: Int, cacheBudget: Int, keepJournals: Bool) throws -> ShapeResult {
    var generator = SplitMix64(state: 0x5EED_0000 + UInt64(Shape.allCases.firstIndex(of: shape)!))
    let keys = shape.keys(count: keyCount, generator: &generator)
    let directory = root + "/" + shape.rawValue + ".journal"
    let plan = Array("{\"bench\":\"\(shape.rawValue)\"}".utf8)
    let header = JournalHeader(
        jobID: "idmap-bench-\(shape.rawValue)", createdAt: "1970-01-01T00:00:00Z", writer: "idmap-bench",
        planFingerprint: JournalSHA256.hex(plan), sourceFingerprint: "", destinationFingerprint: "",
        sourcePath: "", destinationPath: "",
        entities: [.init(name: "rows", sourceTable: "rows", destinationTable: "rows", keys: .allocate)])

    // Write: one segment and one batch record per 10_000 keys, as the engine does.
    var encodings: [String: Int] = [:]
    var segmentBytes = 0
    var batches = 0
    let writeSeconds = try time {
        let writer = try JournalWriter.create(directory: directory, header: header, plan: plan)
        defer { writer.close() }
        var start = 0
        while start < keys.count {
            let end = min(start + batchSize, keys.count)
            let batchKeys = Array(keys[start..<end])
            batches += 1
            let segment = try IDMapSegment(
                entity: 0, batch: UInt64(batches), mapping: .allocate,
                destinationBase: 1 + Int64(start), sourceKeys: batchKeys)
            let crc = try writer.write(segment)
            let path = writer.layout.segment(entity: 0, batch: UInt64(batches))
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            segmentBytes += bytes.count
            encodings[["dense", "varint", "varint+lz4"][Int(bytes[6])], default: 0] += 1
            try writer.append(
                .batch(
                    BatchRecord(
                        entity: 0, batch: UInt64(batches), firstSourceKey: batchKeys[0], lastSourceKey: batchKeys[batchKeys.count - 1],
                        rowsRead: UInt32(batchKeys.count), rowsWritten: UInt32(batchKeys.count), rowsSkipped: 0,
                        mapping: .allocate, destinationBase: 1 + Int64(start),
                        segmentFirstKey: batchKeys[0], segmentLastKey: batchKeys[batchKeys.count - 1], segmentCRC: crc)),
                sync: false)
            start = end
        }
    }

    let journal = try JournalReader(directory: directory)
    guard JournalReader.verify(directory: directory).isIntact else { fail("\(shape.rawValue): the journal does not verify") }

    // The destination of keys[i] is 1 + i: every measured pass checks what it found.
    var lookups: [Lookup] = []

    // (a) One sorted batch of every key.
    do {
        let map = try journal.idMap(cacheBudget: cacheBudget)
        func pass() throws -> Double {
            var checksum = 0
            var hits = 0
            let elapsed = try time {
                try map.destinations(of: keys, entity: 0) { position, destination in
                    checksum &+= Int(destination) &- position
                    hits += 1
                }
            }
            guard hits == keys.count, checksum == keys.count else { fail("\(shape.rawValue): sorted batch found wrong destinations") }
            return Double(keys.count) / elapsed
        }
        let cold = try pass()
        let decodes = map.segmentDecodes
        let warm = try pass()
        lookups.append(
            Lookup(
                name: "sorted batch, all keys", keys: keys.count,
                coldKeysPerSecond: cold, warmKeysPerSecond: warm, coldSegmentDecodes: decodes))
    }

    // (b) Sorted batches of 10_000 random keys.
    do {
        var sampler = SplitMix64(state: 0xB0B)
        let samples: [(positions: [Int], keys: [Int64])] = (0..<randomBatchCount).map { _ in
            let positions = (0..<batchSize).map { _ in Int(sampler.next() % UInt64(keys.count)) }.sorted()
            return (positions, positions.map { keys[$0] })
        }
        let map = try journal.idMap(cacheBudget: cacheBudget)
        func pass() throws -> Double {
            var wrong = 0
            let elapsed = try time {
                for sample in samples {
                    try map.destinations(of: sample.keys, entity: 0) { position, destination in
                        if destination != 1 + Int64(sample.positions[position]) { wrong += 1 }
                    }
                }
            }
            guard wrong == 0 else { fail("\(shape.rawValue): random batches found wrong destinations") }
            return Double(randomBatchCount * batchSize) / elapsed
        }
        let cold = try pass()
        let decodes = map.segmentDecodes
        let warm = try pass()
        lookups.append(
            Lookup(
                name: "sorted batches of 10k random keys", keys: randomBatchCount * batchSize,
                coldKeysPerSecond: cold, warmKeysPerSecond: warm, coldSegmentDecodes: decodes))
    }

    // (c) Single random lookups.
    do {
        var sampler = SplitMix64(state: 0xC0C)
        let positions = (0..<singleLookupCount).map { _ in Int(sampler.next() % UInt64(keys.count)) }
        let lookupKeys = positions.map { keys[$0] }
        let map = try journal.idMap(cacheBudget: cacheBudget)
        func pass() throws -> Double {
            var wrong = 0
            let elapsed = try time {
                for (key, position) in zip(lookupKeys, positions) where try map.destination(of: key, entity: 0) != 1 + Int64(position) {
                    wrong += 1
                }
            }
            guard wrong == 0 else { fail("\(shape.rawValue): single lookups found wrong destinations") }
            return Double(positions.count) / elapsed
        }
        let cold = try pass()
        let decodes = map.segmentDecodes
        let warm = try pass()
        lookups.append(
            Lookup(
                name: "single random lookups", keys: positions.count,
                coldKeysPerSecond: cold, warmKeysPerSecond: warm, coldSegmentDecodes: decodes))
    }

    if !keepJournals { try? FileManager.default.removeItem(atPath: directory) }
    return ShapeResult(
        shape: shape.rawValue, keys: keys.count, segments: batches, segmentBytes: segmentBytes,
        bytesPerKey: Double(segmentBytes) / Double(keys.count),
        varintOnlyBytesPerKey: Double(varintOnlyBytes(keys)) / Double(keys.count),
        encodings: encodings, writeSeconds: writeSeconds, lookups: lookups)
}

// MARK: Main

let root = NSTemporaryDirectory() + "idmap-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
defer { if !keepJournals { try? FileManager.default.removeItem(atPath: root) } }

var results: [ShapeResult] = []
for shape in Shape.allCases {
    do {
        results.append(try run(shape, root: root, keyCount: keyCount, cacheBudget: cacheBudget, keepJournals: keepJournals))
    } catch {
        fail("\(shape.rawValue): \(error)")
    }
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}
func padLeft(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
}
func millions(_ rate: Double) -> String { String(format: "%.1f M/s", rate / 1e6) }

print("idmap-bench: \(keyCount) keys per shape, batches of \(batchSize), cache budget \(cacheBudget >> 20) MiB")
print("")
print(
    pad("shape", 15) + padLeft("segments", 9) + padLeft("bytes/key", 11) + padLeft("varint-only", 13)
        + padLeft("write s", 9) + "  encodings")
for result in results {
    let encodings = result.encodings.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    print(
        pad(result.shape, 15) + padLeft("\(result.segments)", 9)
            + padLeft(String(format: "%.4f", result.bytesPerKey), 11)
            + padLeft(String(format: "%.4f", result.varintOnlyBytesPerKey), 13)
            + padLeft(String(format: "%.1f", result.writeSeconds), 9) + "  " + encodings)
}
print("")
print(
    pad("shape", 15) + pad("lookup", 36) + padLeft("keys", 10) + padLeft("cold", 12) + padLeft("warm", 12)
        + padLeft("cold decodes", 14))
for result in results {
    for lookup in result.lookups {
        print(
            pad(result.shape, 15) + pad(lookup.name, 36) + padLeft("\(lookup.keys)", 10)
                + padLeft(millions(lookup.coldKeysPerSecond), 12) + padLeft(millions(lookup.warmKeysPerSecond), 12)
                + padLeft("\(lookup.coldSegmentDecodes)", 14))
    }
}
print("")

struct Report: Codable {
    var benchmark = "idmap-bench"
    var keysPerShape: Int
    var batchSize: Int
    var cacheBudget: Int
    var shapes: [ShapeResult]
}
let encoder = JSONEncoder()
encoder.outputFormatting = [.sortedKeys]
let json = try encoder.encode(Report(keysPerShape: keyCount, batchSize: batchSize, cacheBudget: cacheBudget, shapes: results))
print(String(decoding: json, as: UTF8.self))
