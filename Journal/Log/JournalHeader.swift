import Foundation

/// The header of a journal: who wrote it, for which job, plan, source and destination.
///
/// Stored as `"CMJOURNL" | u32 version | u32 length | JSON | u32 crc32c`; see `FORMAT.md`, "Header".
public struct JournalHeader: Codable, Sendable, Equatable {
    /// The journal format version this code writes and the newest it reads.
    public static let formatVersion: UInt32 = 1
    static let magic: [UInt8] = Array("CMJOURNL".utf8)

    /// An entity of the plan as the journal describes it, so that a journal can be read without
    /// the code that wrote its plan.
    public struct Entity: Codable, Sendable, Equatable {
        /// The entity's name in the plan.
        public var name: String
        /// The source table and the destination table.
        public var sourceTable: String
        /// The destination table.
        public var destinationTable: String
        /// How keys map: allocate or preserve.
        public var keys: IDMapSegment.Mapping
        /// The destination columns filled from relationships, as `column -> target entity`.
        public var relationships: [String: String]

        /// Creates an entity description.
        public init(
            name: String, sourceTable: String, destinationTable: String,
            keys: IDMapSegment.Mapping, relationships: [String: String] = [:]
        ) {
            self.name = name
            self.sourceTable = sourceTable
            self.destinationTable = destinationTable
            self.keys = keys
            self.relationships = relationships
        }
    }

    /// The format version the header was read with (not part of the JSON body).
    public var formatVersion: UInt32 = JournalHeader.formatVersion
    /// A unique identifier of the job, also written into the destination.
    public var jobID: String
    /// When the job was started, ISO 8601.
    public var createdAt: String
    /// What wrote the journal (`chunkmigrate 0.1.0`).
    public var writer: String
    /// SHA-256 of the frozen plan file (`plan.json`).
    public var planFingerprint: String
    /// A fingerprint of the source store: see the engine's documentation for what it covers.
    public var sourceFingerprint: String
    /// A fingerprint of the destination store.
    public var destinationFingerprint: String
    /// The paths the job was started with.
    public var sourcePath: String
    /// The destination store the job was started with.
    public var destinationPath: String
    /// The plan's entities, in plan order (their indexes are the entity numbers of records and segments).
    public var entities: [Entity]

    enum CodingKeys: String, CodingKey {
        case jobID, createdAt, writer, planFingerprint, sourceFingerprint, destinationFingerprint,
            sourcePath, destinationPath, entities
    }

    /// Creates a header.
    public init(
        jobID: String, createdAt: String, writer: String, planFingerprint: String,
        sourceFingerprint: String, destinationFingerprint: String, sourcePath: String,
        destinationPath: String, entities: [Entity]
    ) {
        self.jobID = jobID
        self.createdAt = createdAt
        self.writer = writer
        self.planFingerprint = planFingerprint
        self.sourceFingerprint = sourceFingerprint
        self.destinationFingerprint = destinationFingerprint
        self.sourcePath = sourcePath
        self.destinationPath = destinationPath
        self.entities = entities
    }

    /// The header file's bytes.
    package func encoded() throws -> [UInt8] {
        let body = Array(try JSONEncoder.sortedAndIndented().encode(self))
        var writer = ByteWriter(capacity: body.count + 20)
        writer.raw(Self.magic)
        writer.u32(Self.formatVersion)
        writer.u32(UInt32(body.count))
        writer.raw(body)
        writer.u32(CRC32C.checksum(writer.bytes))
        return writer.bytes
    }

    /// Reads a header file: the magic, then the version (a newer one is refused before anything
    /// else is read), then the checksum and the JSON body.
    package static func decode(_ bytes: [UInt8], file: String) throws(JournalError) -> JournalHeader {
        guard bytes.count >= 8, Array(bytes[0..<8]) == magic else {
            throw JournalError(.notAJournal, "not a chunkmigrate journal header (bad magic)", file: file)
        }
        guard bytes.count >= 12 else {
            throw JournalError(.damagedHeader, "header cut short at \(bytes.count) bytes", file: file)
        }
        var reader = ByteReader(bytes, from: 8)
        let version = try! reader.u32()
        guard version <= formatVersion else {
            throw JournalError(
                .newerFormat,
                "journal format version \(version) is newer than this reader (it reads up to \(formatVersion)); use a newer chunkmigrate",
                file: file)
        }
        guard version >= 1, bytes.count >= 16 else {
            throw JournalError(.damagedHeader, "header cut short or version 0", file: file)
        }
        let length = Int(try! reader.u32())
        guard bytes.count == 16 + length + 4 else {
            throw JournalError(.damagedHeader, "header length \(length) disagrees with the file size \(bytes.count)", file: file)
        }
        let stored = LittleEndian.trailingUInt32(of: bytes)
        let computed = CRC32C.checksum(bytes[0..<(bytes.count - 4)])
        guard stored == computed else {
            throw JournalError(
                .damagedHeader,
                "header checksum mismatch (stored \(hex32(stored)), computed \(hex32(computed)))", file: file)
        }
        do {
            var header = try JSONDecoder().decode(JournalHeader.self, from: Data(bytes[16..<(16 + length)]))
            header.formatVersion = version
            return header
        } catch {
            throw JournalError(.damagedHeader, "header body is not the expected JSON: \(error)", file: file)
        }
    }
}
