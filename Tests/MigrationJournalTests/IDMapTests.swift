import MigrationJournal
import Testing

/// The batches of one entity and the map they make, computed the slow way.
struct ExpectedEntity {
    var entity: UInt32
    var mapping: IDMapSegment.Mapping
    var batches: [(keys: [Int64], base: Int64)]

    var forward: [Int64: Int64] {
        var map: [Int64: Int64] = [:]
        for batch in batches {
            for (offset, key) in batch.keys.enumerated() {
                map[key] = mapping == .preserve ? key : batch.base + Int64(offset)
            }
        }
        return map
    }

    /// Keys around every edge: each segment's first and last keys and their neighbours, keys in
    /// the gaps, below the first and above the last, the extremes of 64 bits, and every key of
    /// small segments with the holes between them.
    var probes: [Int64] {
        var probes: Set<Int64> = [Int64.min, Int64.min + 1, -1, 0, 1, Int64.max - 1, Int64.max]
        func near(_ key: Int64) {
            for delta: Int64 in -3...3 {
                let (value, overflow) = key.addingReportingOverflow(delta)
                if !overflow { probes.insert(value) }
            }
        }
        for (index, batch) in batches.enumerated() {
            near(batch.keys[0])
            near(batch.keys[batch.keys.count - 1])
            if batch.keys.count <= 2_000 {
                let low = batch.keys[0], high = batch.keys[batch.keys.count - 1]
                if high.subtractingReportingOverflow(low).partialValue < 4_000, high >= low {
                    for key in low...high { probes.insert(key) }
                }
            }
            for key in batch.keys.prefix(5) + batch.keys.suffix(5) { near(key) }
            if index + 1 < batches.count {
                let gapLow = batch.keys[batch.keys.count - 1], gapHigh = batches[index + 1].keys[0]
                let middle = gapLow / 2 + gapHigh / 2
                near(middle)
            }
        }
        return probes.sorted()
    }
}

@Suite("ID map lookups")
struct IDMapTests {
    /// A journal of `batches` batches of entity 1, `perBatch` keys each, 1 to 5 apart within a
    /// batch and 7 between batches, the i-th key mapped to i + 1: its folder (removed when it
    /// goes), the journal's path and every key in order.
    static func sparseJournal(batches: Int, perBatch: Int) throws -> (directory: TemporaryDirectory, path: String, keys: [Int64]) {
        let directory = try TemporaryDirectory()
        let path = directory.appending("job.journal")
        let writer = try JournalWriter.create(directory: path, header: testHeader(), plan: testPlan)
        var allKeys: [Int64] = []
        allKeys.reserveCapacity(batches * perBatch)
        var next: Int64 = 1
        for batch in 1...batches {
            let keys = sparseKeys(perBatch, from: next, gaps: 1...5, seed: UInt64(batch))
            try appendBatch(writer, entity: 1, batch: UInt64(batch), keys: keys, destinationBase: Int64(allKeys.count) + 1)
            allKeys += keys
            next = keys[keys.count - 1] + 7
        }
        writer.close()
        return (directory, path, allKeys)
    }

    static let entities: [ExpectedEntity] = [
        // Dense runs, with gaps between them and a single-key batch; destination runs with gaps too.
        ExpectedEntity(
            entity: 0, mapping: .allocate,
            batches: [
                (Array(-50...(-1)), 1), (Array(0...149), 51), (Array(200...299), 250), ([300], 350),
                (Array(1_000...1_999), 351),
            ]),
        // Sparse keys, crossing zero, a single key, then wide gaps.
        ExpectedEntity(
            entity: 1, mapping: .allocate,
            batches: [
                (sparseKeys(400, from: -1_000, gaps: 1...4, seed: 11), 1_000),
                (sparseKeys(300, from: 500, gaps: 1...3, seed: 12), 1_400),
                ([5_000], 1_800),
                (sparseKeys(500, from: 5_002, gaps: 1...6, seed: 13), 1_801),
                (sparseKeys(200, from: 100_000, gaps: 1...1_000_000, seed: 14), 5_000),
            ]),
        // Preserved keys: sparse and dense batches.
        ExpectedEntity(
            entity: 2, mapping: .preserve,
            batches: [
                (sparseKeys(300, from: -700, gaps: 1...5, seed: 21), 0),
                (Array(2_000...2_299), 0),
                (sparseKeys(300, from: 2_301, gaps: 2...3, seed: 22), 0),
            ]),
    ]

    func makeJournal(_ directory: TemporaryDirectory, entities: [ExpectedEntity] = IDMapTests.entities) throws -> String {
        let path = directory.appending("job.journal")
        let writer = try JournalWriter.create(directory: path, header: testHeader(), plan: testPlan)
        defer { writer.close() }
        for expected in entities {
            for (number, batch) in expected.batches.enumerated() {
                try appendBatch(
                    writer, entity: expected.entity, batch: UInt64(number + 1), keys: batch.keys,
                    destinationBase: batch.base, mapping: expected.mapping)
            }
        }
        return path
    }

    /// Checks every kind of lookup of `expected` against the map.
    func check(_ map: IDMap, _ expected: ExpectedEntity, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let forward = expected.forward
        let probes = expected.probes
        var found = 0
        for key in probes {
            let destination = try map.destination(of: key, entity: expected.entity)
            #expect(destination == forward[key], "entity \(expected.entity) key \(key)", sourceLocation: sourceLocation)
            if destination != nil { found += 1 }
        }
        #expect(found > 0 && found < probes.count, sourceLocation: sourceLocation)
        let batched = try map.destinations(of: probes, entity: expected.entity)
        #expect(batched == probes.map { forward[$0] }, sourceLocation: sourceLocation)

        // Destination -> source, at the edges of every destination run.
        var backward: [Int64: Int64] = [:]
        for (source, destination) in forward { backward[destination] = source }
        var destinations: Set<Int64> = [Int64.min, -1, 0, Int64.max]
        for batch in expected.batches {
            let first = forward[batch.keys[0]]!, last = forward[batch.keys[batch.keys.count - 1]]!
            for delta: Int64 in -2...2 {
                destinations.insert(first &+ delta)
                destinations.insert(last &+ delta)
            }
            for key in batch.keys.prefix(3) + batch.keys.suffix(3) { destinations.insert(forward[key]!) }
        }
        for destination in destinations {
            #expect(
                try map.source(ofDestination: destination, entity: expected.entity) == backward[destination],
                "entity \(expected.entity) destination \(destination)", sourceLocation: sourceLocation)
        }
    }

    @Test("destination(of:), source(ofDestination:) and destinations(of:) at segment edges")
    func edges() throws {
        let directory = try TemporaryDirectory()
        let path = try makeJournal(directory)
        let journal = try JournalReader(directory: path)
        for budget in [IDMap.defaultCacheBudget, 1] {
            let map = try journal.idMap(cacheBudget: budget)
            for expected in Self.entities { try check(map, expected) }
            #expect(map.peakCachedBytes <= max(budget, 500 * 8 + 4 * 16 + 64))
        }
        let map = try journal.idMap()
        #expect(map.segments(entity: 0).allSatisfy { $0.isDense })
        #expect(map.segments(entity: 1).map(\.isDense) == [false, false, true, false, false])
        #expect(try map.destination(of: 1, entity: 9) == nil, "an unknown entity has no keys")
        #expect(try map.destinations(of: [1, 2], entity: 9) == [nil, nil])
    }

    @Test("Batched lookups equal single lookups on random sorted inputs with repeats")
    func batchedEqualsSingle() throws {
        let directory = try TemporaryDirectory()
        let path = try makeJournal(directory)
        let map = try JournalReader(directory: path).idMap()
        var generator = SplitMix64(seed: 99)
        for expected in Self.entities {
            let forward = expected.forward
            let low = expected.batches[0].keys[0] - 100
            let high = expected.batches.last!.keys.last! + 100
            let members = forward.keys.sorted()
            for round in 0..<20 {
                let count = [1, 2, 10, 100, 1_000][round % 5]
                var keys = (0..<count).map { index in
                    index % 2 == 0
                        ? members[Int(generator.next() % UInt64(members.count))]
                        : Int64.random(in: low...high, using: &generator)
                }
                keys.sort()
                let single = try keys.map { try map.destination(of: $0, entity: expected.entity) }
                #expect(try map.destinations(of: keys, entity: expected.entity) == single)
                #expect(single == keys.map { forward[$0] })
                var viaCallback = [Int64?](repeating: nil, count: keys.count)
                var calls = 0
                try map.destinations(of: keys, entity: expected.entity) { position, destination in
                    viaCallback[position] = destination
                    calls += 1
                }
                #expect(viaCallback == single)
                #expect(calls == single.compactMap { $0 }.count)
            }
        }
    }

    @Test("Unsorted keys are refused by a batched lookup")
    func unsortedBatch() throws {
        let directory = try TemporaryDirectory()
        let map = try JournalReader(directory: try makeJournal(directory)).idMap()
        let error = journalError { try map.destinations(of: [1, 5, 3], entity: 1) }
        #expect(error?.code == .invalidArgument)
        #expect(try map.destinations(of: [], entity: 1) == [])
        // Repeated keys each get their destination: 7 is the 58th key of entity 0 (from -50), destination 58.
        #expect(try map.destinations(of: [7, 7, 7], entity: 0) == [58, 58, 58])
    }

    @Test("Keys at both ends of 64 bits, with destination keys at both ends too")
    func extremes() throws {
        let entity = ExpectedEntity(
            entity: 1, mapping: .allocate,
            batches: [
                ([Int64.min, Int64.min + 1, Int64.min + 5], Int64.min),
                (Array((Int64.min + 10)...(Int64.min + 20)), -5),
                ([-3, -1, 0, 1, 3], 10),
                (Array((Int64.max - 20)...(Int64.max - 10)), 20),
                ([Int64.max - 5, Int64.max - 1, Int64.max], Int64.max - 2),
            ])
        let preserved = ExpectedEntity(
            entity: 2, mapping: .preserve,
            batches: [
                ([Int64.min, Int64.min + 3], 0),
                (Array((Int64.max - 3)...Int64.max), 0),
            ])
        let directory = try TemporaryDirectory()
        let path = try makeJournal(directory, entities: [entity, preserved])
        let map = try JournalReader(directory: path).idMap()
        try check(map, entity)
        try check(map, preserved)
        #expect(try map.destination(of: Int64.max, entity: 1) == Int64.max)
        #expect(try map.source(ofDestination: Int64.max, entity: 1) == Int64.max)
        #expect(try map.source(ofDestination: Int64.min, entity: 1) == Int64.min)
        #expect(try map.destinations(of: [Int64.min, Int64.max], entity: 2) == [Int64.min, Int64.max])
    }

    @Test("Skewed segments, where interpolation guesses badly, still find every key")
    func skewedSegments() throws {
        // Clusters far apart inside one segment, and geometric gaps.
        let clustered =
            Array(stride(from: Int64(1), through: 7_999, by: 2)) + [1_000_000_000_000, 1_000_000_000_001]
            + Array(stride(from: Int64(1) << 61, to: (Int64(1) << 61) + 3_000, by: 3)) + [Int64.max - 1]
        var geometric: [Int64] = [Int64.min + 1]
        while geometric.count < 62 { geometric.append(geometric[geometric.count - 1] + (Int64(1) << Int64(geometric.count))) }
        let entity = ExpectedEntity(entity: 1, mapping: .allocate, batches: [(geometric, 1), (clustered, 100)])
        let directory = try TemporaryDirectory()
        let map = try JournalReader(directory: try makeJournal(directory, entities: [entity])).idMap()
        try check(map, entity)
        var probes: [Int64] = []
        for key in geometric + clustered {
            for delta: Int64 in -1...1 where !(key == Int64.max && delta == 1) { probes.append(key + delta) }
        }
        probes.sort()
        let forward = entity.forward
        #expect(try map.destinations(of: probes, entity: 1) == probes.map { forward[$0] })
        for key in probes { #expect(try map.destination(of: key, entity: 1) == forward[key], "key \(key)") }
    }

    @Test("Keys handed to add() serve lookups without reading the segment, and truncate() forgets batches")
    func addAndTruncate() throws {
        let directory = try TemporaryDirectory()
        let path = try makeJournal(directory, entities: [])
        let writer = try JournalWriter.open(directory: path)
        let map = IDMap(layout: writer.layout, entityCount: 3, cacheBudget: 1 << 20)
        var records: [BatchRecord] = []
        for batch in 1...3 {
            let keys = sparseKeys(100, from: Int64(batch) * 1_000, gaps: 1...3, seed: UInt64(batch))
            let record = try appendBatch(writer, entity: 1, batch: UInt64(batch), keys: keys, destinationBase: Int64(batch) * 100)
            try map.add(record, keys: keys)
            records.append(record)
        }
        writer.close()
        #expect(try map.destination(of: records[2].segmentFirstKey, entity: 1) == 300)
        #expect(map.segmentDecodes == 0)
        map.truncate(entity: 1, after: 2)
        #expect(map.segments(entity: 1).count == 2)
        #expect(try map.destination(of: records[2].segmentFirstKey, entity: 1) == nil)
        #expect(try map.destination(of: records[1].segmentLastKey, entity: 1) == 299)
        // A batch that does not follow the previous one is refused.
        #expect(journalError { try map.add(records[0]) }?.code == .discontinuity)
        #expect(journalError { try map.add(records[0], keys: nil) }?.code == .discontinuity)
        var unknown = records[2]
        unknown.entity = 7
        #expect(journalError { try map.add(unknown) }?.code == .notFound)
    }

    @Test("The cache stays within its budget over 200 segments, and a sorted batch decodes each segment once")
    func cacheBudget() throws {
        let segmentCount = 200
        let perSegment = 5_000
        let (directory, path, allKeys) = try Self.sparseJournal(batches: segmentCount, perBatch: perSegment)
        defer { withExtendedLifetime(directory) {} }

        // Keys 1 to 5 apart pack into 2 bytes each, plus 16 bytes for each block of 128.
        let entryBound = perSegment * 2 + (perSegment / 128 + 1) * 16 + 64
        let budget = 256 << 10
        let map = try JournalReader(directory: path).idMap(cacheBudget: budget)
        #expect(map.cacheBudget == budget)

        // One sorted batch of every key: each segment decoded exactly once.
        var wrong = 0
        var hits = 0
        try map.destinations(of: allKeys, entity: 1) { position, destination in
            if destination != Int64(position) + 1 { wrong += 1 }
            hits += 1
        }
        #expect(wrong == 0)
        #expect(hits == allKeys.count)
        #expect(map.segmentDecodes == segmentCount)
        #expect(map.peakCachedBytes <= budget)
        #expect(map.cachedBytes <= budget)

        // Sorted batches of random keys (gaps of 0 to 20 positions: repeats, and every segment
        // touched), then the same batches shifted by one so that most keys miss.
        var generator = SplitMix64(seed: 5)
        var lookups = allKeys.count
        for _ in 0..<8 {
            var positions: [Int] = []
            var position = Int(generator.next() % 20)
            while position < allKeys.count {
                positions.append(position)
                position += Int(generator.next() % 21)
            }
            let keys = positions.map { allKeys[$0] }
            var wrong = 0
            try map.destinations(of: keys, entity: 1) { index, destination in
                if destination != Int64(positions[index]) + 1 { wrong += 1 }
            }
            #expect(wrong == 0)
            let shifted = keys.map { $0 + 1 }
            let missed = try map.destinations(of: shifted, entity: 1)
            for (index, destination) in missed.enumerated() {
                let next = positions[index] + 1
                let expected: Int64? = next < allKeys.count && allKeys[next] == shifted[index] ? Int64(next) + 1 : nil
                if destination != expected { wrong += 1 }
            }
            #expect(wrong == 0)
            #expect(missed.contains(nil) && missed.contains { $0 != nil })
            lookups += 2 * keys.count
        }
        // Single random lookups.
        for _ in 0..<2_000 {
            let position = Int(generator.next() % UInt64(allKeys.count))
            #expect(try map.destination(of: allKeys[position], entity: 1) == Int64(position) + 1)
            lookups += 1
        }
        #expect(lookups > 2_500_000, "a few million lookups")
        #expect(map.peakCachedBytes <= budget)
        #expect(map.peakCachedBytes >= budget - entryBound, "the cache is used up to its budget")

        // A budget smaller than one segment holds that one segment alone.
        let tiny = try JournalReader(directory: path).idMap(cacheBudget: 1_000)
        let firstThree = try tiny.destinations(of: Array(allKeys.prefix(3 * perSegment)), entity: 1)
        #expect(firstThree.allSatisfy { $0 != nil })
        #expect(tiny.segmentDecodes == 3)
        #expect(tiny.peakCachedBytes <= entryBound)
        #expect(tiny.cachedBytes <= entryBound)
    }

    @Test(
        "An emptied cache holds nothing, and lookups after it decode their segments again and find the same keys, without growing the cache"
    )
    func emptyCache() throws {
        let (directory, path, allKeys) = try Self.sparseJournal(batches: 20, perBatch: 1_000)
        defer { withExtendedLifetime(directory) {} }
        let map = try JournalReader(directory: path).idMap(cacheBudget: 1 << 20, cacheLimit: 4 << 20)
        let before = try map.destinations(of: allKeys, entity: 1)
        #expect(map.segmentDecodes == 20)
        #expect(map.cachedBytes > 0)

        map.emptyCache()
        #expect(map.cachedBytes == 0)
        let after = try map.destinations(of: allKeys, entity: 1)
        #expect(after == before)
        #expect(after.enumerated().allSatisfy { $0.element == Int64($0.offset) + 1 })
        #expect(map.segmentDecodes == 40, "every segment decoded again")
        #expect(map.cachedBytes > 0)
        #expect(map.cacheBudget == 1 << 20, "decoding again after emptying is not an eviction")
    }

    @Test("The cache grows when lookups keep reading segments it evicted, up to its limit, and not for one pass in order")
    func cacheGrowth() throws {
        let (directory, path, allKeys) = try Self.sparseJournal(batches: 100, perBatch: 2_000)
        defer { withExtendedLifetime(directory) {} }
        let reader = try JournalReader(directory: path)
        let budget = 16 << 10
        let limit = 128 << 10

        // One pass in key order reads each segment once: nothing to grow for.
        let ordered = try reader.idMap(cacheBudget: budget, cacheLimit: limit)
        for (position, key) in allKeys.enumerated() where position % 50 == 0 {
            #expect(try ordered.destination(of: key, entity: 1) == Int64(position) + 1)
        }
        #expect(ordered.segmentDecodes == 100 && ordered.segmentRedecodes == 0)
        #expect(ordered.cacheBudget == budget && ordered.peakCachedBytes <= budget)
        // A second pass (a fix-up pass after the copy) decodes every segment again, each long
        // after its eviction, for a few lookups each: still nothing a larger cache would save.
        for (position, key) in allKeys.enumerated() where position % 500 == 0 {
            #expect(try ordered.destination(of: key, entity: 1) == Int64(position) + 1)
        }
        #expect(ordered.segmentRedecodes == 100)
        #expect(ordered.cacheBudget == budget)

        // Random lookups over every segment: evicted segments are read again, so the budget
        // doubles up to the limit and no further.
        let random = try reader.idMap(cacheBudget: budget, cacheLimit: limit)
        var generator = SplitMix64(seed: 9)
        var wrong = 0
        for _ in 0..<20_000 {
            let position = Int(generator.next() % UInt64(allKeys.count))
            if try random.destination(of: allKeys[position], entity: 1) != Int64(position) + 1 { wrong += 1 }
        }
        #expect(wrong == 0)
        #expect(random.segmentRedecodes > 0)
        #expect(random.cacheBudget == limit)
        #expect(random.peakCachedBytes <= limit && random.peakCachedBytes > budget)

        // A fixed cache (no limit given) never grows.
        let fixed = try reader.idMap(cacheBudget: budget)
        for _ in 0..<5_000 {
            let position = Int(generator.next() % UInt64(allKeys.count))
            _ = try fixed.destination(of: allKeys[position], entity: 1)
        }
        #expect(fixed.segmentRedecodes > 100 && fixed.cacheBudget == budget && fixed.peakCachedBytes <= budget)
    }
}
