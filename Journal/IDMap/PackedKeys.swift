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
        count = keys.count
        let blockCount = (keys.count + Self.blockSize - 1) / Self.blockSize
        var firsts: [Int64] = []
        var blocks: [Int] = []
        firsts.reserveCapacity(blockCount)
        blocks.reserveCapacity(blockCount)
        var length = 0
        var shifts: [Int] = []
        shifts.reserveCapacity(blockCount)
        for block in 0..<blockCount {
            let start = block * Self.blockSize
            let end = min(keys.count, start + Self.blockSize)
            let span = UInt64(bitPattern: keys[end - 1]) &- UInt64(bitPattern: keys[start])
            let shift = span <= 0xFF ? 0 : span <= 0xFFFF ? 1 : span <= 0xFFFF_FFFF ? 2 : 3
            firsts.append(keys[start])
            blocks.append(length << 2 | shift)
            shifts.append(shift)
            length += (end - start) << shift
        }
        var bytes = [UInt8](repeating: 0, count: length)
        bytes.withUnsafeMutableBytes { raw in
            for block in 0..<blockCount {
                let start = block * Self.blockSize
                let end = min(keys.count, start + Self.blockSize)
                let first = UInt64(bitPattern: keys[start])
                var offset = blocks[block] >> 2
                for index in start..<end {
                    let distance = UInt64(bitPattern: keys[index]) &- first
                    switch shifts[block] {
                    case 0: raw.storeBytes(of: UInt8(truncatingIfNeeded: distance), toByteOffset: offset, as: UInt8.self)
                    case 1: raw.storeBytes(of: UInt16(truncatingIfNeeded: distance), toByteOffset: offset, as: UInt16.self)
                    case 2: raw.storeBytes(of: UInt32(truncatingIfNeeded: distance), toByteOffset: offset, as: UInt32.self)
                    default: raw.storeBytes(of: distance, toByteOffset: offset, as: UInt64.self)
                    }
                    offset += 1 << shifts[block]
                }
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
