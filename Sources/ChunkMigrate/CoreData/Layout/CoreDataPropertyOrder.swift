import Foundation

/// The order in which Core Data meets an entity's properties when it pairs each relationship
/// with its inverse, which decides the names of many-to-many join tables and of their key
/// columns.
///
/// Core Data's SQL model (`NSSQLEntity._generateInverseRelationshipsAndMore`) walks an entity's
/// property mapping (property names, the internal `_pk`, `_ent`, `_opt`, and `_` + the column of
/// each foreign key) in the bucket order of a hash table made for the walk, a copy of the
/// CFDictionary of Mac OS X 10.4 (`PF_Tiger_CFDictionary`): a prime number of buckets chosen from
/// the entry count (a capacity of 4, 8, 17, 29, 47, 76, 123, 199, 322, ... entries has 5, 11, 23,
/// 41, 67, 113, 199, 317, 521, ... buckets), each key in bucket `hash % buckets` or the next free
/// one after it, past the end to the start (linear probing), and CFString's hash of then
/// (`_PF_TigerHashCFString`, 32-bit): all UTF-16 units of a key shorter than 24, the first 8 and
/// the last 16 of a longer one, then `h + (h << length)`.
///
/// The keys go into it in the bucket order of the entity's other table (``Table``), a copy of
/// 10.5's CFDictionary (`_PF_Leopard_CFDictionary`) that `_generateProperties` fills: which of
/// two keys in one probe run comes first depends on it.
///
/// So the order follows from the names and their number alone, and changes when an entity gains
/// properties: in Photos' `Asset` (317 buckets from macOS 10.15 to 26),
/// `memoriesBeingRepresentativeAssets` hashes to bucket 10 and `suggestionsBeingRepresentativeAssets`
/// to 12, and from macOS 15 on the keys put in before the first fill its run past 12, so it comes
/// second; a messenger's `UserClient` (67 buckets) gained `needsSessionMigration` in the bucket of
/// `trustedByClients` (61), which then spilled over the end to bucket 0, before `trustedClients` (48).
struct CoreDataPropertyOrder {
    /// `__CFDictionaryCapacities` of CF-368.
    static let capacities: [UInt32] = [
        4, 8, 17, 29, 47, 76, 123, 199, 322, 521, 843, 1364, 2207, 3571, 5778, 9349, 15127, 24476, 39603, 64079,
        103682, 167761, 271443, 439204, 710647, 1149851, 1860498, 3010349, 4870847, 7881196, 12752043, 20633239,
        33385282, 54018521, 87403803, 141422324, 228826127, 370248451, 599074578, 969323029, 1568397607, 2537720636,
    ]
    /// `__CFDictionaryBuckets` of CF-368 (primes), one per capacity.
    static let buckets: [UInt32] = [
        5, 11, 23, 41, 67, 113, 199, 317, 521, 839, 1361, 2207, 3571, 5779, 9349, 15121, 24473, 39607, 64081,
        103681, 167759, 271429, 439199, 710641, 1149857, 1860503, 3010349, 4870843, 7881193, 12752029, 20633237,
        33385273, 54018521, 87403763, 141422317, 228826121, 370248451, 599074561, 969323023, 1568397599,
        2537720629, 4106118251,
    ]

    /// The number of buckets of a table made for `count` entries.
    static func bucketCount(for count: Int) -> Int {
        let index = capacities.firstIndex { Int($0) >= count } ?? capacities.count - 1
        return Int(buckets[index])
    }

    /// The hash of `key` (`_PF_TigerHashCFString`).
    static func hash(_ key: String) -> UInt32 {
        let units = Array(key.utf16).map(UInt32.init)
        let length = units.count
        var result = UInt32(truncatingIfNeeded: length)
        func four(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32) {
            result = result &* 67503105 &+ a &* 16974593 &+ b &* 66049 &+ c &* 257 &+ d
        }
        if length > 23 {
            for start in [0, 4, length - 16, length - 12, length - 8, length - 4] {
                four(units[start], units[start + 1], units[start + 2], units[start + 3])
            }
        } else {
            var index = 0
            while index + 4 <= length {
                four(units[index], units[index + 1], units[index + 2], units[index + 3])
                index += 4
            }
            while index < length {
                result = result &* 257 &+ units[index]
                index += 1
            }
        }
        return result &+ (result << UInt32(length % 32))
    }

    /// `keys` in the bucket order of a table of `count` entries (at least `keys.count`) into
    /// which they were inserted in the order given.
    static func order(_ keys: [String], count: Int) -> [String] {
        let size = bucketCount(for: max(count, keys.count))
        var slots = [String?](repeating: nil, count: size)
        for key in keys {
            var slot = Int(hash(key) % UInt32(size))
            while slots[slot] != nil { slot = (slot + 1) % size }
            slots[slot] = key
        }
        return slots.compactMap { $0 }
    }

    /// The hash table Core Data fills first, and whose bucket order is the insertion order of the
    /// one above: a copy of the CFDictionary of Mac OS X 10.5 (`_PF_Leopard_CFDictionary`), with
    /// a power-of-two number of buckets that grows as keys are added, CFString's hash of the key
    /// mixed by Bob Jenkins' 96-bit mix, and linear probing.
    struct Table {
        private(set) var slots: [String?] = []
        private var count = 0
        private var capacity = 3

        /// The keys in bucket order.
        var keys: [String] { slots.compactMap { $0 } }

        /// Adds `key` (a key already there keeps its bucket).
        mutating func insert(_ key: String) {
            if count == capacity || slots.isEmpty {
                capacity = 3 << flsl(count / 3)
                let old = keys
                slots = [String?](repeating: nil, count: 4 << flsl((capacity - 1) / 3))
                for key in old { place(key) }
            }
            if place(key) { count += 1 }
        }

        /// Puts `key` in its bucket or the next free one; false when it is there already.
        @discardableResult
        private mutating func place(_ key: String) -> Bool {
            var slot = Int(Table.mix(Table.hash(key)) & UInt32(slots.count - 1))
            while let occupant = slots[slot] {
                if occupant == key { return false }
                slot = (slot + 1) % slots.count
            }
            slots[slot] = key
            return true
        }

        /// Index of the most significant bit set, from 1 (`flsl`).
        private func flsl(_ value: Int) -> Int { value == 0 ? 0 : Int.bitWidth - value.leadingZeroBitCount }

        /// CFString's hash of Mac OS X 10.5 (`_PF_Leopard_CFStringHashNSString`): every UTF-16 unit
        /// of a key of up to 96, else the first, middle and last 32.
        static func hash(_ key: String) -> UInt32 {
            let all = Array(key.utf16).map(UInt32.init)
            let length = all.count
            let units = length > 96 ? Array(all[0..<32] + all[(length / 2 - 16)..<(length / 2 + 16)] + all[(length - 32)...]) : all
            var result = UInt32(truncatingIfNeeded: length)
            var index = 0
            while index + 4 <= units.count {
                result =
                    result &* 67503105 &+ units[index] &* 16974593 &+ units[index + 1] &* 66049 &+ units[index + 2] &* 257
                    &+ units[index + 3]
                index += 4
            }
            while index < units.count {
                result = result &* 257 &+ units[index]
                index += 1
            }
            return result &+ (result << UInt32(length % 32))
        }

        /// The mix applied to the hash before taking its low bits (`_PF_Leopard_CFDictionaryFindBuckets2`).
        static func mix(_ hash: UInt32) -> UInt32 {
            let a = (1264676453 &- hash) ^ ((hash &- 1) << 8)
            let b = (2 &- hash &- a) ^ (a >> 13)
            let c = (hash &- 1 &- a &- b) ^ (b >> 12)
            let d = (a &- b &- c) ^ (c << 16)
            let e = (b &- c &- d) ^ (d >> 5)
            let f = (c &- d &- e) ^ (e >> 3)
            let g = (d &- e &- f) ^ (f << 10)
            return (e &- f &- g) ^ (g >> 15)
        }
    }
}
