/// Writes a journal: creates its directory, appends log records, writes and removes ID-map
/// segments. Holds the journal's lock while open, so two processes never run one job.
///
/// Not `Sendable`: one job owns its writer.
public final class JournalWriter {
    /// The files of the journal.
    public let layout: JournalLayout
    /// The header the journal was created with.
    public let header: JournalHeader
    /// The records in the log, in order, including those appended through this writer.
    public private(set) var records: [LogRecord]
    /// Whether opening dropped a torn last record, and which.
    public let droppedTail: LogFile.Tail

    private let log: FileIO.AppendFile
    private let lock: FileIO.Lock
    private var knownSegmentFolders: Set<UInt32> = []

    private init(layout: JournalLayout, header: JournalHeader, records: [LogRecord], tail: LogFile.Tail,
                 log: FileIO.AppendFile, lock: FileIO.Lock) {
        self.layout = layout
        self.header = header
        self.records = records
        self.droppedTail = tail
        self.log = log
        self.lock = lock
    }

    /// Creates a new journal at `directory`, which must not exist or be empty. The header is
    /// written last, so a directory without one is a creation that never finished.
    public static func create(directory: String, header: JournalHeader, plan: [UInt8]) throws(JournalError) -> JournalWriter {
        let layout = JournalLayout(directory: directory)
        if FileIO.exists(layout.directory) {
            let entries = try FileIO.list(layout.directory)
            let leftovers: Set<String> = ["plan.json", "log", "lock", "segments"]
            guard entries.isEmpty || !entries.contains("header") && entries.allSatisfy({ leftovers.contains($0) || $0.hasSuffix(".tmp") }) else {
                throw JournalError(.invalidArgument, "a journal or other files are already here; resume it or choose an empty directory", file: layout.directory)
            }
        } else {
            try FileIO.makeDirectory(layout.directory)
            try FileIO.fsyncDirectory(FileIO.parent(of: layout.directory))
        }
        guard let lock = try FileIO.Lock(path: layout.lock) else {
            throw JournalError(.locked, "another process is creating or running this journal", file: layout.lock)
        }
        try FileIO.makeDirectory(layout.segments)
        try FileIO.writeAtomically(plan, to: layout.plan, syncDirectory: false)
        try FileIO.writeAtomically(LogFile.fileHeader(), to: layout.log, syncDirectory: false)
        let headerBytes: [UInt8]
        do { headerBytes = try header.encoded() } catch {
            throw JournalError(.invalidArgument, "the header cannot be encoded: \(error)")
        }
        try FileIO.writeAtomically(headerBytes, to: layout.header)
        let log = try FileIO.AppendFile(path: layout.log)
        return JournalWriter(layout: layout, header: header, records: [], tail: .clean, log: log, lock: lock)
    }

    /// Opens an existing journal to continue it: takes the lock, reads the log, and cuts a torn
    /// last record off the file so the next record starts on a frame boundary.
    public static func open(directory: String) throws(JournalError) -> JournalWriter {
        let layout = JournalLayout(directory: directory)
        guard FileIO.isDirectory(layout.directory) else {
            throw JournalError(.notFound, "no journal directory here", file: layout.directory)
        }
        guard let lock = try FileIO.Lock(path: layout.lock) else {
            throw JournalError(.locked, "another process is running this job; wait for it or stop it", file: layout.lock)
        }
        let reader = try JournalReader(directory: directory)
        let log = try FileIO.AppendFile(path: layout.log)
        if case .torn = reader.log.tail {
            try log.truncate(to: reader.log.validLength)
            if reader.log.validLength < LogFile.fileHeaderLength {
                // Only the file header itself was cut: write it again so the log stays readable.
                try log.truncate(to: 0)
                try log.append(LogFile.fileHeader(), sync: true)
            }
        }
        return JournalWriter(layout: layout, header: reader.header, records: reader.records,
                             tail: reader.log.tail, log: log, lock: lock)
    }

    /// Appends one record and, when `sync` is true, makes it durable before returning.
    public func append(_ record: LogRecord, sync: Bool = true) throws(JournalError) {
        try log.append(LogFile.frame(record), sync: sync)
        records.append(record)
    }

    /// Appends the first `count` bytes of a record's frame, as a kill mid-append would leave them.
    /// For tests of torn tails; never called by the engine.
    public func appendTorn(_ record: LogRecord, keepingBytes count: Int) throws(JournalError) {
        try log.append(Array(LogFile.frame(record).prefix(count)), sync: true)
    }

    /// Writes a segment durably (temporary name, fsync, rename, directory fsync) and returns the
    /// CRC-32C of its file, which the batch record and the checkpoint carry.
    @discardableResult
    public func write(_ segment: IDMapSegment) throws(JournalError) -> UInt32 {
        let bytes = segment.encoded()
        if !knownSegmentFolders.contains(segment.entity) {
            let folder = layout.segmentFolder(entity: segment.entity)
            if !FileIO.isDirectory(folder) {
                try FileIO.makeDirectory(folder)
                try FileIO.fsyncDirectory(layout.segments)
            }
            knownSegmentFolders.insert(segment.entity)
        }
        try FileIO.writeAtomically(bytes, to: layout.segment(entity: segment.entity, batch: segment.batch))
        return Self.crc(ofEncoded: bytes)
    }

    /// Reads back the segment of one batch, checked.
    public func readSegment(entity: UInt32, batch: UInt64) throws(JournalError) -> IDMapSegment {
        let path = layout.segment(entity: entity, batch: batch)
        return try IDMapSegment.decode(try FileIO.read(path), file: path)
    }

    /// Whether the segment file of a batch exists.
    public func hasSegment(entity: UInt32, batch: UInt64) -> Bool {
        FileIO.exists(layout.segment(entity: entity, batch: batch))
    }

    /// The CRC of a segment file on disk, or `nil` when there is none or it is damaged.
    public func segmentCRC(entity: UInt32, batch: UInt64) -> UInt32? {
        let path = layout.segment(entity: entity, batch: batch)
        guard let bytes = try? FileIO.read(path), (try? SegmentHeader(bytes, file: path)) != nil else { return nil }
        return Self.crc(ofEncoded: bytes)
    }

    /// Removes the segment files of `entity` numbered above `batch`: work written before a
    /// commit that never happened.
    public func removeSegments(entity: UInt32, after batch: UInt64) throws(JournalError) {
        let folder = layout.segmentFolder(entity: entity)
        guard FileIO.isDirectory(folder) else { return }
        var removed = false
        for name in try FileIO.list(folder) {
            if name.hasSuffix(".tmp") {
                try FileIO.remove(folder + "/" + name)
                continue
            }
            guard name.hasSuffix(".seg"), let number = UInt64(name.dropLast(4)), number > batch else { continue }
            try FileIO.remove(folder + "/" + name)
            removed = true
        }
        if removed { try FileIO.fsyncDirectory(folder) }
    }

    /// Releases the lock and closes the log. The writer cannot be used afterwards.
    public func close() {
        log.close()
        lock.release()
    }

    static func crc(ofEncoded bytes: [UInt8]) -> UInt32 {
        let count = bytes.count
        return UInt32(bytes[count - 4]) | UInt32(bytes[count - 3]) << 8
            | UInt32(bytes[count - 2]) << 16 | UInt32(bytes[count - 1]) << 24
    }
}
