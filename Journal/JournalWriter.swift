/// Writes a journal: creates its directory, appends log records, writes and removes ID-map
/// segments. Holds the journal's lock while open, so two processes never run one job.
///
/// Not `Sendable`: one job owns its writer.
package final class JournalWriter {
    /// The files of the journal.
    package let layout: JournalLayout
    /// The header the journal was created with.
    package let header: JournalHeader
    /// The log as read when the journal was opened, indexed, with the records appended through
    /// this writer since.
    package private(set) var log: JournalLog

    private let logFile: FileIO.AppendFile
    private let lock: FileIO.Lock
    private var knownSegmentFolders: Set<UInt32> = []

    private init(layout: JournalLayout, header: JournalHeader, log: JournalLog, logFile: FileIO.AppendFile, lock: FileIO.Lock) {
        self.layout = layout
        self.header = header
        self.log = log
        self.logFile = logFile
        self.lock = lock
    }

    /// The records in the log, in order, including those appended through this writer.
    package var records: [LogRecord] { log.records }
    /// Whether opening dropped a torn last record, and which.
    package var droppedTail: LogFile.Tail { log.tail }

    /// Creates a new journal at `directory`, which must not exist or be empty. The header is
    /// written last, so a directory without one is a creation that never finished.
    package static func create(directory: String, header: JournalHeader, plan: [UInt8]) throws(JournalError) -> JournalWriter {
        let layout = JournalLayout(directory: directory)
        if try FileIO.exists(layout.directory) {
            let entries = try FileIO.list(layout.directory)
            let leftovers = Set(JournalLayout.names).subtracting([JournalLayout.headerName])
            guard
                entries.isEmpty
                    || !entries.contains(JournalLayout.headerName)
                        && entries.allSatisfy({ leftovers.contains($0) || JournalLayout.isTemporary($0) })
            else {
                throw JournalError(
                    .invalidArgument, "a journal or other files are already here; resume it or choose an empty directory",
                    file: layout.directory)
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
        return JournalWriter(
            layout: layout, header: header, log: JournalLog(records: [], entityCount: header.entities.count),
            logFile: try FileIO.AppendFile(path: layout.log), lock: lock)
    }

    /// Opens an existing journal to continue it: takes the lock, reads the log, and cuts a torn
    /// last record off the file so the next record starts on a frame boundary.
    package static func open(directory: String) throws(JournalError) -> JournalWriter {
        let layout = JournalLayout(directory: directory)
        guard try FileIO.isDirectory(layout.directory) else {
            throw JournalError(.notFound, "no journal directory here", file: layout.directory)
        }
        guard let lock = try FileIO.Lock(path: layout.lock) else {
            throw JournalError(.locked, "another process is running this job; wait for it or stop it", file: layout.lock)
        }
        let reader = try JournalReader(directory: directory)
        let logFile = try FileIO.AppendFile(path: layout.log)
        if case .torn = reader.log.tail {
            try logFile.truncate(to: reader.log.validLength)
            if reader.log.validLength < LogFile.fileHeaderLength {
                // Only the file header itself was cut: write it again so the log stays readable.
                try logFile.truncate(to: 0)
                try logFile.append(LogFile.fileHeader(), sync: true)
            }
        }
        return JournalWriter(layout: layout, header: reader.header, log: reader.log, logFile: logFile, lock: lock)
    }

    /// Appends one record and, when `sync` is true, makes it durable before returning.
    package func append(_ record: LogRecord, sync: Bool = true) throws(JournalError) {
        try logFile.append(LogFile.frame(record), sync: sync)
        log.append(record)
    }

    /// Appends the first `count` bytes of a record's frame, as a kill mid-append would leave them.
    /// For tests of torn tails, and the engine's `mid-record` crash point that the kill-and-resume
    /// tests arm; never part of a job otherwise.
    package func appendTorn(_ record: LogRecord, keepingBytes count: Int) throws(JournalError) {
        try logFile.append(Array(LogFile.frame(record).prefix(count)), sync: true)
    }

    /// Writes a segment durably (temporary name, fsync, rename, directory fsync) and returns the
    /// CRC-32C of its file, which the batch record and the checkpoint carry.
    @discardableResult
    package func write(_ segment: IDMapSegment) throws(JournalError) -> UInt32 {
        let bytes = segment.encoded()
        if !knownSegmentFolders.contains(segment.entity) {
            let folder = layout.segmentFolder(entity: segment.entity)
            if try !FileIO.isDirectory(folder) {
                try FileIO.makeDirectory(folder)
                try FileIO.fsyncDirectory(layout.segments)
            }
            knownSegmentFolders.insert(segment.entity)
        }
        try FileIO.writeAtomically(bytes, to: layout.segment(entity: segment.entity, batch: segment.batch))
        return LittleEndian.trailingUInt32(of: bytes)
    }

    /// Whether the segment file of a batch exists.
    ///
    /// - Throws: ``JournalError`` when the file system cannot tell (an I/O error).
    package func hasSegment(entity: UInt32, batch: UInt64) throws(JournalError) -> Bool {
        try FileIO.exists(layout.segment(entity: entity, batch: batch))
    }

    /// The CRC of a segment file on disk, or `nil` when there is none or it is damaged.
    ///
    /// - Throws: ``JournalError`` when the file cannot be read for another reason than its
    ///   absence (an I/O error), which says nothing of what it holds.
    package func segmentCRC(entity: UInt32, batch: UInt64) throws(JournalError) -> UInt32? {
        let path = layout.segment(entity: entity, batch: batch)
        let bytes: [UInt8]
        do { bytes = try FileIO.read(path) } catch  where error.code == .notFound { return nil }
        guard (try? SegmentHeader(bytes, file: path)) != nil else { return nil }
        return LittleEndian.trailingUInt32(of: bytes)
    }

    /// Removes the segment files of `entity` numbered above `batch`: work written before a
    /// commit that never happened.
    package func removeSegments(entity: UInt32, after batch: UInt64) throws(JournalError) {
        let folder = layout.segmentFolder(entity: entity)
        guard try FileIO.isDirectory(folder) else { return }
        var removed = false
        for name in try FileIO.list(folder) {
            if JournalLayout.isTemporary(name) {
                try FileIO.remove(folder + "/" + name)
                continue
            }
            guard let number = JournalLayout.batch(ofSegmentNamed: name), number > batch else { continue }
            try FileIO.remove(folder + "/" + name)
            removed = true
        }
        if removed { try FileIO.fsyncDirectory(folder) }
    }

    /// Releases the lock and closes the log. The writer cannot be used afterwards.
    package func close() {
        logFile.close()
        lock.release()
    }
}
