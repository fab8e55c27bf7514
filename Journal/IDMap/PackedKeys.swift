/// The sorted source keys of one segment as the ID map keeps them in memory.
///
/// Keys come in blocks of ``blockSize``: each block stores its first key, and every key of the
/// block as its distance from that first key, in the narrowest of 1, 2, 4 or 8 bytes that holds
/// the block's span. Keys a few apart (the usual gaps of deleted rows) take 2 bytes instead of 8,
/// so a cache of a given size holds four times the keys; a lookup finds its block by the first
/// keys, then searches that block alone.
struct PackedKeys {
    /// Keys per block.
    static let blockSize = 128

    /// How many keys.
    let count: Int
    /// The first key of each block.
    private let firsts: [Int64]
    /// Where each block's distances start in `bytes`, shifted left by 2, with log2 of their width
    /// in the low bits.
    private let blocks: [Int]
    private let bytes: [UInt8]

    /// Packs `keys`, which must be strictly increasing.
    init(_ keys: UnsafeBufferPointer<Int64>) {
        self.init(count: keys.count) { body in
            for key in keys { body(key) }
        }
    }

    /// Packs the `count` keys `forEachKey` hands to its argument, strictly increasing, in order.
    /// It is called twice, once to size the blocks and once to fill them, so that no array of
    /// the keys themselves is ever made: a segment of 500,000 keys would take 4 MB for it.
    init(count: Int, keys forEachKey: (_ body: (Int64) -> Void) -> Void) {
        self.count = count
        let blockCount = (count + Self.blockSize - 1) / Self.blockSize
        var firsts: [Int64] = []
        var blocks: [Int] = []
        firsts.reserveCapacity(blockCount)
        blocks.reserveCapacity(blockCount)
        var length = 0
        var index = 0
        var first: Int64 = 0
        forEachKey { key in
            let position = index % Self.blockSize
            if position == 0 {
                first = key
                firsts.append(key)
            }
            index += 1
            if position == Self.blockSize - 1 || index == count {
                let span = UInt64(bitPattern: key) &- UInt64(bitPattern: first)
                let shift = span <= 0xFF ? 0 : span <= 0xFFFF ? 1 : span <= 0xFFFF_FFFF ? 2 : 3
                blocks.append(length << 2 | shift)
                length += (position + 1) << shift
            }
        }
        var bytes = [UInt8](repeating: 0, count: length)
        bytes.withUnsafeMutableBytes { raw in
            var index = 0
            var first: UInt64 = 0
            var shift = 0
            var offset = 0
            forEachKey { key in
                if index % Self.blockSize == 0 {
                    let block = index / Self.blockSize
                    first = UInt64(bitPattern: firsts[block])
                    shift = blocks[block] & 3
                    offset = blocks[block] >> 2
                }
                let distance = UInt64(bitPattern: key) &- first
                switch shift {
                case 0: raw.storeBytes(of: UInt8(truncatingIfNeeded: distance), toByteOffset: offset, as: UInt8.self)
                case 1: raw.storeBytes(of: UInt16(truncatingIfNeeded: distance), toByteOffset: offset, as: UInt16.self)
                case 2: raw.storeBytes(of: UInt32(truncatingIfNeeded: distance), toByteOffset: offset, as: UInt32.self)
                default: raw.storeBytes(of: distance, toByteOffset: offset, as: UInt64.self)
                }
                offset += 1 << shift
                index += 1
            }
        }
        self.firsts = firsts
        self.blocks = blocks
        self.bytes = bytes
    }

    init(_ keys: [Int64]) {
        self = keys.withUnsafeBufferPointer { PackedKeys($0) }
    }

    /// The bytes the packed keys take in memory.
    var byteCount: Int { bytes.count + firsts.count * 16 + 64 }

    /// The key at `position`.
    @inline(__always)
    func key(at position: Int) -> Int64 {
        let block = position / Self.blockSize
        return Int64(bitPattern: UInt64(bitPattern: firsts[block]) &+ distance(block: block, index: position % Self.blockSize))
    }

    /// The `index`-th distance of `block`.
    @inline(__always)
    private func distance(block: Int, index: Int) -> UInt64 {
        let shift = blocks[block] & 3
        let offset = (blocks[block] >> 2) + index << shift
        return bytes.withUnsafeBytes { raw in
            switch shift {
            case 0: UInt64(raw.load(fromByteOffset: offset, as: UInt8.self))
            case 1: UInt64(raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            case 2: UInt64(raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            default: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            }
        }
    }

    /// The position of `key`, or `nil` when it is not one of the keys.
    @inline(__always)
    func position(of key: Int64) -> Int? {
        let position = lowerBound(of: key, from: 0)
        return position < count && self.key(at: position) == key ? position : nil
    }

    /// The first position at or after `start` whose key is at least `key` (`count` when none is).
    func lowerBound(of key: Int64, from start: Int) -> Int {
        if start >= count || self.key(at: start) >= key { return start }
        // The last block at or after `start`'s whose first key is at most `key`.
        var low = start / Self.blockSize
        var high = firsts.count
        while high - low > 1 {
            let middle = (low + high) / 2
            if firsts[middle] <= key { low = middle } else { high = middle }
        }
        let block = low
        let blockStart = block * Self.blockSize
        let blockEnd = min(count, blockStart + Self.blockSize)
        // Distances from the block's first key: key - first is exact, as key >= first.
        let target = UInt64(bitPattern: key) &- UInt64(bitPattern: firsts[block])
        var lower = max(start, blockStart) - blockStart
        var upper = blockEnd - blockStart
        while lower < upper {
            let middle = (lower + upper) / 2
            if distance(block: block, index: middle) < target { lower = middle + 1 } else { upper = middle }
        }
        return blockStart + lower
    }
}
