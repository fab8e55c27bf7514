@testable import MigrationJournal
import Testing

@Suite("Packed keys")
struct PackedKeysTests {
    /// `count` strictly increasing keys from `first`, with gaps drawn from `gaps`.
    static func keys(_ count: Int, from first: Int64, gaps: ClosedRange<UInt64>, seed: UInt64) -> [Int64] {
        var generator = SplitMix64(seed: seed)
        var keys: [Int64] = [first]
        while keys.count < count {
            let gap = gaps.lowerBound + generator.next() % (gaps.upperBound - gaps.lowerBound + 1)
            let (next, overflow) = keys[keys.count - 1].addingReportingOverflow(Int64(gap))
            if overflow { break }
            keys.append(next)
        }
        return keys
    }

    /// The first position whose key is at least `key`, the slow way.
    static func naiveLowerBound(_ key: Int64, in keys: [Int64], from start: Int) -> Int {
        var position = start
        while position < keys.count && keys[position] < key { position += 1 }
        return position
    }

    @Test(
        "every key, every absent neighbour and every lower bound agree with a plain array",
        arguments: [
            (1 as UInt64)...1, 1...3, 1...500, 100...70_000, 1...(1 << 40), (1 << 60)...(1 << 61),
        ])
    func agreesWithArray(gaps: ClosedRange<UInt64>) {
        for (count, first) in [(1, Int64(7)), (127, -5), (128, 0), (129, Int64.min), (1_000, -1_000_000), (5_000, 42)] {
            let keys = Self.keys(count, from: first, gaps: gaps, seed: UInt64(count) &+ gaps.upperBound)
            let packed = PackedKeys(keys)
            #expect(packed.count == keys.count)
            var wrong = 0
            for (position, key) in keys.enumerated() {
                if packed.key(at: position) != key { wrong += 1 }
                if packed.position(of: key) != position { wrong += 1 }
                // The key just before, when absent, is not found.
                if key != .min && (position == 0 || keys[position - 1] != key - 1), packed.position(of: key - 1) != nil { wrong += 1 }
                let start = position / 2
                if packed.lowerBound(of: key, from: start) != Self.naiveLowerBound(key, in: keys, from: start) { wrong += 1 }
            }
            #expect(wrong == 0, "\(count) keys from \(first), gaps \(gaps)")
            #expect(packed.lowerBound(of: .max, from: 0) == (keys.last == .max ? keys.count - 1 : keys.count))
            #expect(packed.lowerBound(of: .min, from: 0) == 0)
        }
    }

    @Test("keys a few apart take about 2 bytes each, not 8")
    func size() {
        let keys = Self.keys(250_000, from: 1_000, gaps: 1...5, seed: 3)
        let packed = PackedKeys(keys)
        #expect(packed.byteCount < keys.count * 2 + keys.count / 128 * 16 + 100)
        let wide = PackedKeys(Self.keys(1_000, from: 0, gaps: (1 << 40)...(1 << 41), seed: 4))
        #expect(wide.byteCount >= 1_000 * 8, "spans past 32 bits take 8 bytes a key")
    }
}
