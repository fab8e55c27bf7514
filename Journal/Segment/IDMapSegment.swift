/// The ID map of one batch: its sorted source keys, mapped to a contiguous run of destination keys.
///
/// With ``Mapping-swift.enum/allocate`` the `i`-th source key maps to `destinationBase + i`; with
/// ``Mapping-swift.enum/preserve`` every key maps to itself. The keys are stored as the first key
/// plus LEB128 varints of `delta - 1`, LZ4-compressed when that is smaller; a dense run
/// (`count == last - first + 1`) has no payload at all. See `FORMAT.md`, "ID-map segments".
///
/// ```swift
/// let segment = try IDMapSegment(entity: 1, batch: 7, mapping: .allocate,
///                                destinationBase: 501, sourceKeys: [10, 11, 15])
/// let bytes = segment.encoded()            // the same bytes every time
/// let again = try IDMapSegment.decode(bytes, file: "7.seg")
/// ```
public struct IDMapSegment: Sendable, Equatable {
    /// How source keys become destination keys.
    public enum Mapping: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
        /// `sourceKeys[i] -> destinationBase + i`.
        case allocate = 0
        /// `sourceKeys[i] -> sourceKeys[i]`.
        case preserve = 1

        /// `allocate` or `preserve`, as a plan spells it.
        public var description: String { self == .allocate ? "allocate" : "preserve" }

        /// The mapping a plan spells `name` (its ``description``); `nil` for any other name.
        public init?(name: String) {
            guard let mapping = Self.allCases.first(where: { $0.description == name }) else { return nil }
            self = mapping
        }
    }

    /// How the key payload is stored.
    public enum Encoding: UInt8, Sendable {
        /// Consecutive keys: no payload.
        case dense = 0
        /// Varint deltas, uncompressed (LZ4 would not make them smaller).
        case varint = 1
        /// Varint deltas compressed as one LZ4 block.
        case varintLZ4 = 2
    }

    /// The segment format version this code writes and the newest it reads.
    public static let formatVersion: UInt16 = 1
    /// `"CMSG"`.
    static let magic: [UInt8] = Array("CMSG".utf8)
    /// Bytes before the payload.
    static let headerLength = 56
    /// The most keys one segment maps: a batch's rows, 32 MiB of keys once decoded. A reader
    /// refuses a larger count, which a dense segment would otherwise decode from a few bytes.
    public static let maximumKeyCount = 1 << 22

    /// The entity's index in the plan.
    public var entity: UInt32
    /// The batch number, from 1 within the entity.
    public var batch: UInt64
    /// How source keys map to destination keys.
    public var mapping: Mapping
    /// The destination key of the first source key (ignored by `preserve`, stored as the first key).
    public var destinationBase: Int64
    /// The source keys, strictly increasing, at least one.
    public private(set) var sourceKeys: [Int64]

    /// Creates a segment; throws when `sourceKeys` is empty or not strictly increasing.
    public init(entity: UInt32, batch: UInt64, mapping: Mapping, destinationBase: Int64, sourceKeys: [Int64]) throws(JournalError) {
        guard !sourceKeys.isEmpty else {
            throw JournalError(.invalidArgument, "an ID-map segment needs at least one source key")
        }
        guard sourceKeys.count <= Self.maximumKeyCount else {
            throw JournalError(
                .invalidArgument,
                "entity \(entity) batch \(batch) has \(sourceKeys.count) source keys; a segment maps at most \(Self.maximumKeyCount)")
        }
        for index in sourceKeys.indices.dropFirst() where sourceKeys[index] <= sourceKeys[index - 1] {
            throw JournalError(
                .invalidArgument,
                "source keys of entity \(entity) batch \(batch) are not strictly increasing at position \(index): \(sourceKeys[index - 1]) then \(sourceKeys[index])"
            )
        }
        if mapping == .allocate {
            let (_, overflow) = destinationBase.addingReportingOverflow(Int64(sourceKeys.count - 1))
            guard !overflow else {
                throw JournalError(.invalidArgument, "destination keys from \(destinationBase) overflow a 64-bit key")
            }
        }
        self.entity = entity
        self.batch = batch
        self.mapping = mapping
        self.destinationBase = mapping == .preserve ? sourceKeys[0] : destinationBase
        self.sourceKeys = sourceKeys
    }

    /// Whether `count == last - first + 1`, computed without overflow for any 64-bit keys.
    static func isDense(first: Int64, last: Int64, count: Int) -> Bool {
        UInt64(bitPattern: last) &- UInt64(bitPattern: first) == UInt64(count - 1)
    }

    /// The encoded segment, with its trailing CRC-32C. Deterministic: equal segments give equal bytes.
    public func encoded() -> [UInt8] {
        let first = sourceKeys[0]
        let last = sourceKeys[sourceKeys.count - 1]
        var encoding = Encoding.dense
        var raw: [UInt8] = []
        var payload: [UInt8] = []
        if !Self.isDense(first: first, last: last, count: sourceKeys.count) {
            raw.reserveCapacity(sourceKeys.count * 2)
            var previous = UInt64(bitPattern: first)
            for key in sourceKeys.dropFirst() {
                let current = UInt64(bitPattern: key)
                Varint.append(current &- previous &- 1, to: &raw)
                previous = current
            }
            if let compressed = LZ4Block.compress(raw), compressed.count < raw.count {
                encoding = .varintLZ4
                payload = compressed
            } else {
                encoding = .varint
                payload = raw
            }
        }
        var writer = ByteWriter(capacity: Self.headerLength + payload.count + 4)
        writer.raw(Self.magic)
        writer.u16(Self.formatVersion)
        writer.u8(encoding.rawValue)
        writer.u8(mapping.rawValue)
        writer.u32(entity)
        writer.u64(batch)
        writer.u32(UInt32(sourceKeys.count))
        writer.i64(first)
        writer.i64(last)
        writer.i64(destinationBase)
        writer.u32(UInt32(raw.count))
        writer.u32(UInt32(payload.count))
        writer.raw(payload)
        writer.u32(CRC32C.checksum(writer.bytes))
        return writer.bytes
    }

    /// Decodes and checks a segment: magic, version, checksum, and that the keys agree with the
    /// header's count, first and last key. `file` names the segment in errors.
    public static func decode(_ bytes: [UInt8], file: String) throws(JournalError) -> IDMapSegment {
        let header = try SegmentHeader(bytes, file: file)
        let keys = try header.decodeKeys(bytes, file: file)
        return IDMapSegment(header: header, keys: keys)
    }

    /// A segment from a header already checked and the keys it decoded.
    init(header: SegmentHeader, keys: [Int64]) {
        entity = header.entity
        batch = header.batch
        mapping = header.mapping
        destinationBase = header.destinationBase
        sourceKeys = keys
    }
}

/// The fixed part of an encoded segment, checked against its CRC.
struct SegmentHeader {
    var encoding: IDMapSegment.Encoding
    var mapping: IDMapSegment.Mapping
    var entity: UInt32
    var batch: UInt64
    var count: Int
    var firstKey: Int64
    var lastKey: Int64
    var destinationBase: Int64
    var rawLength: Int
    var payloadLength: Int
    var crc: UInt32

    init(_ bytes: [UInt8], file: String) throws(JournalError) {
        func damaged(_ why: String) -> JournalError { JournalError(.damagedSegment, why, file: file) }
        guard bytes.count >= 8, Array(bytes[0..<4]) == IDMapSegment.magic else {
            throw damaged("not an ID-map segment (bad magic)")
        }
        var reader = ByteReader(bytes, from: 4)
        do {
            let version = try reader.u16()
            guard version <= IDMapSegment.formatVersion else {
                throw JournalError(
                    .newerFormat,
                    "segment format version \(version) is newer than this reader (it reads up to \(IDMapSegment.formatVersion)); use a newer chunkmigrate",
                    file: file)
            }
            guard bytes.count >= IDMapSegment.headerLength + 4 else { throw damaged("truncated: \(bytes.count) bytes") }
            let stored = LittleEndian.trailingUInt32(of: bytes)
            let computed = CRC32C.checksum(bytes[0..<(bytes.count - 4)])
            guard stored == computed else {
                throw damaged("checksum mismatch: stored \(hex32(stored)), computed \(hex32(computed))")
            }
            crc = stored
            guard let encoding = IDMapSegment.Encoding(rawValue: try reader.u8()) else { throw damaged("unknown key encoding") }
            guard let mapping = IDMapSegment.Mapping(rawValue: try reader.u8()) else { throw damaged("unknown mapping") }
            self.encoding = encoding
            self.mapping = mapping
            entity = try reader.u32()
            batch = try reader.u64()
            count = Int(try reader.u32())
            firstKey = try reader.i64()
            lastKey = try reader.i64()
            destinationBase = try reader.i64()
            rawLength = Int(try reader.u32())
            payloadLength = Int(try reader.u32())
        } catch let error as JournalError {
            throw error
        } catch {
            throw damaged("truncated header")
        }
        guard count > 0, lastKey >= firstKey else { throw damaged("empty or inverted key range") }
        guard count <= IDMapSegment.maximumKeyCount else {
            throw damaged("\(count) keys, more than a segment maps (\(IDMapSegment.maximumKeyCount))")
        }
        guard IDMapSegment.headerLength + payloadLength + 4 == bytes.count else {
            throw damaged("payload length \(payloadLength) disagrees with the file size \(bytes.count)")
        }
        let dense = IDMapSegment.isDense(first: firstKey, last: lastKey, count: count)
        guard (encoding == .dense) == dense else { throw damaged("encoding disagrees with the key range") }
        switch encoding {
        case .dense:
            guard rawLength == 0, payloadLength == 0 else { throw damaged("a dense segment has a payload") }
        case .varint:
            guard rawLength == payloadLength else {
                throw damaged("raw length \(rawLength) disagrees with the payload length \(payloadLength)")
            }
        case .varintLZ4:
            // An LZ4 block expands at most about 255 times.
            guard payloadLength > 0, rawLength > 0, rawLength <= 255 * payloadLength else {
                throw damaged("an LZ4 payload of \(payloadLength) bytes cannot expand to \(rawLength)")
            }
        }
        // Every key after the first takes at least one byte of raw varints, at most ten.
        guard encoding == .dense || (rawLength >= count - 1 && rawLength <= 10 * (count - 1)) else {
            throw damaged("raw length \(rawLength) cannot hold \(count - 1) varints")
        }
    }

    /// The source keys, checked against the header.
    func decodeKeys(_ bytes: [UInt8], file: String) throws(JournalError) -> [Int64] {
        func damaged(_ why: String) -> JournalError { JournalError(.damagedSegment, why, file: file) }
        if encoding == .dense {
            let first = UInt64(bitPattern: firstKey)
            return Array(unsafeUninitializedCapacity: count) { keys, initialized in
                for offset in 0..<count { keys[offset] = Int64(bitPattern: first &+ UInt64(offset)) }
                initialized = count
            }
        }
        let payloadStart = IDMapSegment.headerLength
        let decoded: [Int64]?
        if encoding == .varintLZ4 {
            guard let raw = LZ4Block.decompress(bytes[payloadStart..<(payloadStart + payloadLength)], rawLength: rawLength) else {
                throw damaged("LZ4 block does not expand to \(rawLength) bytes")
            }
            decoded = raw.withUnsafeBufferPointer { Self.keys(fromVarints: $0, first: firstKey, last: lastKey, count: count) }
        } else {
            decoded = bytes.withUnsafeBufferPointer { buffer in
                Self.keys(
                    fromVarints: UnsafeBufferPointer(rebasing: buffer[payloadStart..<(payloadStart + rawLength)]),
                    first: firstKey, last: lastKey, count: count)
            }
        }
        guard let decoded else {
            throw damaged("keys do not decode to the \(count) keys from \(firstKey) to \(lastKey) the header promises")
        }
        return decoded
    }

    /// `first`, then one key per varint of `delta - 1`; `nil` unless that makes exactly `count`
    /// strictly increasing keys ending at `last`.
    static func keys(fromVarints raw: UnsafeBufferPointer<UInt8>, first: Int64, last: Int64, count: Int) -> [Int64]? {
        var valid = false
        let keys = [Int64](unsafeUninitializedCapacity: count) { keys, initialized in
            initialized = 0
            valid = forEachKey(fromVarints: raw, first: first, last: last, count: count) { key in
                keys[initialized] = key
                initialized += 1
            }
        }
        return valid ? keys : nil
    }

    /// Hands `body` `first`, then one key per varint of `delta - 1`, at most `count` keys, each
    /// greater than the one before; whether that made exactly `count` keys ending at `last`.
    @inline(__always)
    static func forEachKey(
        fromVarints raw: UnsafeBufferPointer<UInt8>, first: Int64, last: Int64, count: Int,
        _ body: (Int64) -> Void
    ) -> Bool {
        body(first)
        var produced = 1
        var previous = UInt64(bitPattern: first)
        var offset = 0
        while offset < raw.count {
            guard produced < count else { return false }
            var gap = UInt64(raw[offset])
            if gap < 0x80 {
                offset += 1
            } else {
                guard let long = Varint.decode(raw, at: &offset) else { return false }
                gap = long
            }
            // Unsigned wrapping arithmetic; the key must still be greater as a signed value,
            // which also rejects a gap of 2^64 - 1 (a step of 2^64 wraps to the same key).
            let next = previous &+ gap &+ 1
            guard Int64(bitPattern: next) > Int64(bitPattern: previous) else { return false }
            body(Int64(bitPattern: next))
            produced += 1
            previous = next
        }
        return produced == count && Int64(bitPattern: previous) == last
    }

    /// The source keys, checked against the header, packed as the ID map's cache keeps them,
    /// without an array of them in between.
    func decodePackedKeys(_ bytes: [UInt8], file: String) throws(JournalError) -> PackedKeys {
        if encoding == .dense {
            let first = UInt64(bitPattern: firstKey)
            return PackedKeys(count: count) { body in
                for offset in 0..<count { body(Int64(bitPattern: first &+ UInt64(offset))) }
            }
        }
        let payloadStart = IDMapSegment.headerLength
        let (first, last, total) = (firstKey, lastKey, count)
        func packed(_ raw: UnsafeBufferPointer<UInt8>) -> PackedKeys? {
            guard Self.forEachKey(fromVarints: raw, first: first, last: last, count: total, { _ in }) else { return nil }
            return PackedKeys(count: total) { body in
                _ = Self.forEachKey(fromVarints: raw, first: first, last: last, count: total, body)
            }
        }
        let decoded: PackedKeys?
        if encoding == .varintLZ4 {
            guard let raw = LZ4Block.decompress(bytes[payloadStart..<(payloadStart + payloadLength)], rawLength: rawLength) else {
                throw JournalError(.damagedSegment, "LZ4 block does not expand to \(rawLength) bytes", file: file)
            }
            decoded = raw.withUnsafeBufferPointer { packed($0) }
        } else {
            decoded = bytes.withUnsafeBufferPointer { buffer in
                packed(UnsafeBufferPointer(rebasing: buffer[payloadStart..<(payloadStart + rawLength)]))
            }
        }
        guard let decoded else {
            throw JournalError(
                .damagedSegment,
                "keys do not decode to the \(count) keys from \(firstKey) to \(lastKey) the header promises", file: file)
        }
        return decoded
    }
}

/// `value` as eight lowercase hexadecimal digits, as checksums are printed.
func hex32(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 8 - digits.count)) + digits
}
