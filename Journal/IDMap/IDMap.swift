/// Source key -> destination key (and back) for every entity of a journal, without holding the
/// map in memory.
///
/// The index holds one ``SegmentRef`` per batch (48 bytes); a lookup binary-searches the index,
/// then the one segment that can hold the key. Decoded segments stay in a cache, packed (about
/// 2 bytes a key where keys are a few apart, see `PackedKeys`), bounded by ``cacheBudget`` bytes
/// and evicted least recently used first. The budget starts small and doubles, up to
/// ``cacheLimit``, when the lookups keep decoding again segments the cache evicted shortly
/// before (a cache twice the size would still have held them), more keys than they look up: it
/// grows to what the lookup pattern needs, not to the size of the map. A pass in key order over
/// a map larger than the cache decodes each segment once, long after its eviction, and does not
/// grow it. A sorted list of keys is
/// looked up in one pass that decodes each segment it needs once.
///
/// Not `Sendable`: one job, or one inspector, owns an `IDMap`.
public final class IDMap {
    /// 2 MiB of packed keys: about a million keys a few apart.
    public static let defaultCacheBudget = 2 << 20
    /// 64 MiB: how far the budget grows by default when lookups need it.
    public static let defaultCacheLimit = 64 << 20
    /// How many segments decoded again after eviction make a window in which the budget doubles
    /// when they decoded more than ``redecodedKeysPerLookup`` keys per lookup of the window.
    static let redecodesPerWindow = 16
    static let redecodedKeysPerLookup = 8

    /// What the index keeps of one batch.
    public struct SegmentRef: Sendable, Equatable {
        /// The batch number.
        public var batch: UInt64
        /// The first source key of the segment.
        public var firstKey: Int64
        /// The last source key of the segment.
        public var lastKey: Int64
        /// How many keys the segment maps.
        public var count: Int
        /// The destination key of the first source key (allocate).
        public var destinationBase: Int64
        /// The CRC-32C the log records for the segment file.
        public var crc: UInt32
        /// How the segment maps source keys to destination keys.
        public var mapping: IDMapSegment.Mapping

        /// Whether the keys are consecutive, so the segment needs no decoding.
        public var isDense: Bool { IDMapSegment.isDense(first: firstKey, last: lastKey, count: count) }
    }

    private struct CacheKey: Equatable {
        var entity: Int
        var segment: Int
    }

    private final class Decoded {
        let keys: PackedKeys
        @exclusivity(unchecked) var lastUse: UInt64
        init(keys: PackedKeys, lastUse: UInt64) {
            self.keys = keys
            self.lastUse = lastUse
        }
        var bytes: Int { keys.byteCount }
    }

    // Lookups run once per row of a batch, on the owner's thread, and never overlap:
    // `@exclusivity(unchecked)` spares each access the runtime's exclusivity bookkeeping.
    private let layout: JournalLayout
    @exclusivity(unchecked) private var index: [[SegmentRef]]
    /// The cached segments, by entity and position in the index (`nil`: not cached), and the
    /// list of them, which eviction scans for the least recently used.
    @exclusivity(unchecked) private var cache: [[Decoded?]]
    @exclusivity(unchecked) private var cached: [CacheKey] = []
    /// When each segment was last evicted, counted in evictions (0: never), so that a segment
    /// decoded again is known to have been evicted, and how recently.
    @exclusivity(unchecked) private var evictedAt: [[UInt64]]
    @exclusivity(unchecked) private var evictions: UInt64 = 0
    /// The window of redecodes: how many, the keys they decoded, and the lookups before it.
    @exclusivity(unchecked) private var windowRedecodes = 0
    @exclusivity(unchecked) private var windowRedecodedKeys = 0
    @exclusivity(unchecked) private var windowStartLookups = 0
    @exclusivity(unchecked) private var clock: UInt64 = 0

    /// The most bytes of packed keys the cache holds now.
    @exclusivity(unchecked) public private(set) var cacheBudget: Int
    /// The most ``cacheBudget`` grows to.
    public let cacheLimit: Int
    /// The bytes of packed keys the cache holds now.
    @exclusivity(unchecked) public private(set) var cachedBytes = 0
    /// The most ``cachedBytes`` has been.
    @exclusivity(unchecked) public private(set) var peakCachedBytes = 0
    /// How many segments have been read and decoded from disk.
    @exclusivity(unchecked) public private(set) var segmentDecodes = 0
    /// How many of those decodes read a segment the cache had evicted.
    @exclusivity(unchecked) public private(set) var segmentRedecodes = 0
    /// How many source keys have been looked up in segments that are not dense.
    @exclusivity(unchecked) public private(set) var lookups = 0

    /// An empty map for a journal with `entityCount` entities, whose cache holds `cacheBudget`
    /// bytes of keys at first and grows up to `cacheLimit` (by default: not at all).
    public init(layout: JournalLayout, entityCount: Int, cacheBudget: Int = IDMap.defaultCacheBudget, cacheLimit: Int? = nil) {
        self.layout = layout
        self.index = Array(repeating: [], count: entityCount)
        self.cache = Array(repeating: [], count: entityCount)
        self.evictedAt = Array(repeating: [], count: entityCount)
        self.cacheBudget = cacheBudget
        self.cacheLimit = max(cacheBudget, cacheLimit ?? cacheBudget)
    }

    /// The index of one entity.
    public func segments(entity: UInt32) -> [SegmentRef] {
        Int(entity) < index.count ? index[Int(entity)] : []
    }

    /// Adds a committed batch to the index. Batches of an entity come in order: a batch's keys
    /// follow the previous batch's. A batch that wrote no row adds nothing.
    ///
    /// - Parameter keys: the batch's source keys when the caller has them (the engine does), so
    ///   the first lookups need not read the segment back.
    public func add(_ record: BatchRecord, keys: [Int64]? = nil) throws(JournalError) {
        let entity = Int(record.entity)
        guard entity < index.count else {
            throw JournalError(.notFound, "batch \(record.batch) names entity \(record.entity), but the plan has \(index.count)")
        }
        guard record.rowsWritten > 0 else { return }
        let ref = SegmentRef(
            batch: record.batch, firstKey: record.segmentFirstKey, lastKey: record.segmentLastKey,
            count: Int(record.rowsWritten), destinationBase: record.destinationBase,
            crc: record.segmentCRC, mapping: record.mapping)
        try Self.check(ref, entity: entity)
        if let previous = index[entity].last {
            guard ref.firstKey > previous.lastKey else {
                throw JournalError(
                    .discontinuity,
                    "entity \(entity) batch \(ref.batch) starts at source key \(ref.firstKey), not after batch \(previous.batch)'s last key \(previous.lastKey)"
                )
            }
            if ref.mapping == .allocate {
                guard ref.destinationBase > previous.destinationLast else {
                    throw JournalError(
                        .discontinuity,
                        "entity \(entity) batch \(ref.batch) allocates destination keys from \(ref.destinationBase), inside batch \(previous.batch)'s"
                    )
                }
            }
        }
        index[entity].append(ref)
        cache[entity].append(nil)
        evictedAt[entity].append(0)
        if let keys, !ref.isDense {
            store(Decoded(keys: PackedKeys(keys), lastUse: tick()), at: CacheKey(entity: entity, segment: index[entity].count - 1))
        }
    }

    /// Checks what `add` cannot know from the record alone before it trusts it: the destination
    /// run must fit in 64 bits.
    private static func check(_ ref: SegmentRef, entity: Int) throws(JournalError) {
        guard ref.count > 0, ref.firstKey <= ref.lastKey,
            UInt64(bitPattern: ref.lastKey) &- UInt64(bitPattern: ref.firstKey) >= UInt64(ref.count - 1)
        else {
            throw JournalError(
                .discontinuity,
                "entity \(entity) batch \(ref.batch) claims \(ref.count) keys from \(ref.firstKey) to \(ref.lastKey)")
        }
        if ref.mapping == .allocate {
            let (_, overflow) = ref.destinationBase.addingReportingOverflow(Int64(ref.count - 1))
            guard !overflow else {
                throw JournalError(
                    .discontinuity,
                    "entity \(entity) batch \(ref.batch) allocates \(ref.count) destination keys from \(ref.destinationBase), past the largest 64-bit key"
                )
            }
        }
    }

    /// Drops the batches of `entity` numbered above `batch` from the index and the cache; used
    /// when resume discards work that never committed.
    public func truncate(entity: UInt32, after batch: UInt64) {
        let entity = Int(entity)
        guard entity < index.count else { return }
        while let last = index[entity].last, last.batch > batch {
            let segment = index[entity].count - 1
            if let dropped = cache[entity][segment] {
                cachedBytes -= dropped.bytes
                cached.removeAll { $0 == CacheKey(entity: entity, segment: segment) }
            }
            index[entity].removeLast()
            cache[entity].removeLast()
            evictedAt[entity].removeLast()
        }
    }

    /// Drops every decoded segment from the cache, giving back its memory, when no lookup is
    /// to come for a while (a job's copy is over): a later lookup decodes its segment again. Not
    /// an eviction: the cache does not grow for what it decodes again after this.
    public func emptyCache() {
        for key in cached { cache[key.entity][key.segment] = nil }
        cached = []
        cachedBytes = 0
    }

    // MARK: Lookups

    /// The destination key of `sourceKey`, or `nil` when the entity has not migrated it.
    public func destination(of sourceKey: Int64, entity: UInt32) throws(JournalError) -> Int64? {
        guard Int(entity) < index.count else { return nil }
        // Read the index in place: one lookup per row, so no copy of the entity's array.
        let position = index[Int(entity)].withUnsafeBufferPointer { refs in
            Self.firstSegment(in: refs, lastKeyAtLeast: sourceKey)
        }
        guard position < index[Int(entity)].count, index[Int(entity)][position].firstKey <= sourceKey else { return nil }
        let ref = index[Int(entity)][position]
        if ref.isDense { return ref.destination(at: Int(sourceKey &- ref.firstKey), key: sourceKey) }
        lookups &+= 1
        guard let offset = try decoded(entity: Int(entity), segment: position).keys.position(of: sourceKey) else { return nil }
        return ref.destination(at: offset, key: sourceKey)
    }

    /// The source key that was migrated to `destinationKey`, or `nil` when none was.
    public func source(ofDestination destinationKey: Int64, entity: UInt32) throws(JournalError) -> Int64? {
        let refs = segments(entity: entity)
        guard let mapping = refs.first?.mapping else { return nil }
        if mapping == .preserve {
            return try destination(of: destinationKey, entity: entity)
        }
        // Destination runs increase with the batch number: find the last run starting at or before the key.
        var low = 0
        var high = refs.count
        while low < high {
            let middle = (low + high) / 2
            if refs[middle].destinationBase <= destinationKey { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let ref = refs[low - 1]
        // The run starts at or before the key, so the unsigned difference is the exact distance.
        let distance = UInt64(bitPattern: destinationKey) &- UInt64(bitPattern: ref.destinationBase)
        guard distance < UInt64(ref.count) else { return nil }
        let offset = Int(distance)
        if ref.isDense { return Int64(bitPattern: UInt64(bitPattern: ref.firstKey) &+ distance) }
        lookups &+= 1
        return try decoded(entity: Int(entity), segment: low - 1).keys.key(at: offset)
    }

    /// The destination keys of `sourceKeys`, which must be sorted ascending (repeats allowed), in
    /// one pass: `result[i]` is the destination of `sourceKeys[i]`, or `nil` when it was not
    /// migrated. Each segment the keys fall in is decoded at most once per call.
    ///
    /// - Throws: ``JournalError/Code/invalidArgument`` when `sourceKeys` is not sorted; the
    ///   errors of reading a segment.
    public func destinations(of sourceKeys: [Int64], entity: UInt32) throws(JournalError) -> [Int64?] {
        var result = [Int64?](repeating: nil, count: sourceKeys.count)
        try destinations(of: sourceKeys, entity: entity) { position, destination in result[position] = destination }
        return result
    }

    /// The same pass as ``destinations(of:entity:)``, calling `found` for each key that has a
    /// destination instead of building an array. Keys without one are skipped.
    public func destinations(of sourceKeys: [Int64], entity: UInt32, found: (Int, Int64) -> Void) throws(JournalError) {
        try sourceKeys.withUnsafeBufferPointer { (sourceKeys) throws(JournalError) in
            try Self.checkSorted(sourceKeys)
            try destinations(of: sourceKeys, entity: entity, found: found)
        }
    }

    private func destinations(of sourceKeys: UnsafeBufferPointer<Int64>, entity: UInt32, found: (Int, Int64) -> Void) throws(JournalError) {
        let refs = segments(entity: entity)
        var segment = 0
        var position = 0
        while position < sourceKeys.count && segment < refs.count {
            let key = sourceKeys[position]
            if key > refs[segment].lastKey {
                segment = Self.firstSegment(in: refs, lastKeyAtLeast: key, from: segment + 1)
                continue
            }
            let ref = refs[segment]
            if key < ref.firstKey {
                // Keys in the gap before this segment: skip them with one search.
                position = Self.lowerBound(of: ref.firstKey, in: sourceKeys, from: position)
                continue
            }
            // The keys from `position` up to the segment's last key.
            let end = ref.lastKey == .max ? sourceKeys.count : Self.lowerBound(of: ref.lastKey + 1, in: sourceKeys, from: position)
            if ref.isDense {
                let first = UInt64(bitPattern: ref.firstKey)
                if ref.mapping == .allocate {
                    let base = UInt64(bitPattern: ref.destinationBase)
                    for index in position..<end {
                        found(index, Int64(bitPattern: base &+ (UInt64(bitPattern: sourceKeys[index]) &- first)))
                    }
                } else {
                    for index in position..<end { found(index, sourceKeys[index]) }
                }
                position = end
                continue
            }
            lookups &+= end - position
            let keys = try decoded(entity: Int(entity), segment: segment).keys
            var cursor = 0
            for index in position..<end {
                let key = sourceKeys[index]
                cursor = keys.lowerBound(of: key, from: cursor)
                if cursor < keys.count && keys.key(at: cursor) == key { found(index, ref.destination(at: cursor, key: key)) }
            }
            position = end
        }
    }

    private static func checkSorted(_ keys: UnsafeBufferPointer<Int64>) throws(JournalError) {
        // Branch-free, so that the check costs a fraction of the lookups it guards.
        var descents = 0
        for index in keys.indices.dropFirst() { descents &+= keys[index] < keys[index - 1] ? 1 : 0 }
        guard descents != 0 else { return }
        let index = keys.indices.dropFirst().first { keys[$0] < keys[$0 - 1] }!
        throw JournalError(
            .invalidArgument,
            "source keys to look up are not sorted: position \(index) holds \(keys[index]) after \(keys[index - 1])")
    }

    // MARK: Segments and the cache

    /// Reads and checks the segment of one batch: its checksum must equal the record's, and its
    /// header must agree with the record. Never served from the cache.
    public func readSegment(entity: UInt32, ref: SegmentRef) throws(JournalError) -> IDMapSegment {
        let (header, bytes, path) = try checkedSegment(entity: entity, ref: ref)
        return IDMapSegment(header: header, keys: try header.decodeKeys(bytes, file: path))
    }

    /// The bytes of a segment and its header, checked as ``readSegment(entity:ref:)`` checks them.
    private func checkedSegment(entity: UInt32, ref: SegmentRef) throws(JournalError) -> (SegmentHeader, [UInt8], String) {
        let path = layout.segment(entity: entity, batch: ref.batch)
        guard try FileIO.exists(path) else {
            throw JournalError(.missingSegment, "the ID-map segment of entity \(entity) batch \(ref.batch) is missing", file: path)
        }
        let bytes = try FileIO.read(path)
        let header = try SegmentHeader(bytes, file: path)
        guard header.crc == ref.crc else {
            throw JournalError(
                .damagedSegment,
                "checksum \(hex32(header.crc)) differs from \(hex32(ref.crc)) recorded for entity \(entity) batch \(ref.batch)", file: path)
        }
        guard header.entity == entity, header.batch == ref.batch, header.count == ref.count,
            header.firstKey == ref.firstKey, header.lastKey == ref.lastKey,
            header.mapping == ref.mapping, header.destinationBase == ref.destinationBase
        else {
            throw JournalError(.damagedSegment, "segment disagrees with the log record of entity \(entity) batch \(ref.batch)", file: path)
        }
        return (header, bytes, path)
    }

    private func decoded(entity: Int, segment: Int) throws(JournalError) -> Decoded {
        if let hit = cache[entity][segment] {
            hit.lastUse = tick()
            return hit
        }
        let (header, bytes, path) = try checkedSegment(entity: UInt32(entity), ref: index[entity][segment])
        let keys = try header.decodePackedKeys(bytes, file: path)
        segmentDecodes += 1
        if evictedAt[entity][segment] > 0 {
            segmentRedecodes += 1
            // Evicted while fewer segments than the cache holds were evicted after it.
            if evictions - evictedAt[entity][segment] < UInt64(cached.count) {
                noteRedecode(keys: keys.count)
            }
        }
        let entry = Decoded(keys: keys, lastUse: tick())
        store(entry, at: CacheKey(entity: entity, segment: segment))
        return entry
    }

    /// Doubles the budget, within the limit, at the end of a window of recent redecodes that
    /// decoded more keys than its lookups needed: the lookups come back to what the cache evicts.
    private func noteRedecode(keys: Int) {
        windowRedecodes += 1
        windowRedecodedKeys += keys
        guard windowRedecodes >= Self.redecodesPerWindow else { return }
        if windowRedecodedKeys > Self.redecodedKeysPerLookup * (lookups &- windowStartLookups) {
            cacheBudget = min(cacheLimit, cacheBudget * 2)
        }
        windowRedecodes = 0
        windowRedecodedKeys = 0
        windowStartLookups = lookups
    }

    private func store(_ entry: Decoded, at key: CacheKey) {
        if let old = cache[key.entity][key.segment] {
            cachedBytes -= old.bytes
        } else {
            cached.append(key)
        }
        cache[key.entity][key.segment] = entry
        cachedBytes += entry.bytes
        // Evict least recently used entries, never the one just stored: a single segment larger
        // than the budget is used and then dropped on the next store.
        while cachedBytes > cacheBudget, cached.count > 1 {
            var victim: Int?
            var oldest = UInt64.max
            for (position, candidate) in cached.enumerated() where candidate != key {
                if let value = cache[candidate.entity][candidate.segment], value.lastUse < oldest {
                    oldest = value.lastUse
                    victim = position
                }
            }
            guard let victim else { break }
            let evicted = cached.remove(at: victim)
            evictions += 1
            evictedAt[evicted.entity][evicted.segment] = evictions
            if let removed = cache[evicted.entity][evicted.segment] { cachedBytes -= removed.bytes }
            cache[evicted.entity][evicted.segment] = nil
        }
        peakCachedBytes = max(peakCachedBytes, cachedBytes)
    }

    private func tick() -> UInt64 {
        clock += 1
        return clock
    }

    /// The first segment at or after `start` whose last key is at least `key`.
    private static func firstSegment<Refs: RandomAccessCollection<SegmentRef>>(
        in refs: Refs, lastKeyAtLeast key: Int64, from start: Int = 0
    ) -> Int where Refs.Index == Int {
        var low = start
        var high = refs.count
        while low < high {
            let middle = (low + high) / 2
            if refs[middle].lastKey < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The first position at or after `start` whose key is at least `key` (`keys.count` when
    /// none is), in keys sorted ascending.
    ///
    /// Tuned for the two ways a sorted batch walks a segment: the next key is usually at `start`
    /// or just after it, and otherwise keys are spread evenly enough for interpolation to land
    /// within a cache line or two of the answer. A guard probe on each side of the guess keeps
    /// the search bounded when they are not: at most four interpolation rounds, then a binary
    /// search of what is left.
    @inline(__always)
    static func lowerBound(of key: Int64, in keys: UnsafeBufferPointer<Int64>, from start: Int) -> Int {
        let count = keys.count
        if start >= count || keys[start] >= key { return start }
        if start + 1 == count || keys[start + 1] >= key { return start + 1 }
        if keys[count - 1] < key { return count }
        // keys[low] < key <= keys[high]
        var low = start + 1
        var high = count - 1
        var rounds = 0
        while high - low > 16 && rounds < 4 {
            rounds += 1
            let span = Double(UInt64(bitPattern: keys[high]) &- UInt64(bitPattern: keys[low]))
            let distance = Double(UInt64(bitPattern: key) &- UInt64(bitPattern: keys[low]))
            var guess = low + Int(distance / span * Double(high - low))
            guess = min(max(guess, low + 1), high - 1)
            if keys[guess] < key {
                low = guess
                let probe = min(guess + 8, high)
                if keys[probe] >= key { high = probe } else { low = probe }
            } else {
                high = guess
                let probe = max(guess - 8, low)
                if keys[probe] < key { low = probe } else { high = probe }
            }
        }
        // Binary search of (low, high].
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if keys[middle] < key { low = middle } else { high = middle }
        }
        return high
    }
}

extension IDMap.SegmentRef {
    /// The destination key of `key`, the `offset`-th source key of this segment.
    @inline(__always)
    func destination(at offset: Int, key: Int64) -> Int64 {
        mapping == .allocate ? destinationBase &+ Int64(offset) : key
    }

    /// The destination key of the segment's last source key.
    var destinationLast: Int64 {
        mapping == .allocate ? destinationBase &+ Int64(count - 1) : lastKey
    }
}
