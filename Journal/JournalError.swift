/// An error reading or writing a journal, with the file and record it concerns.
///
/// ```swift
/// do {
///     _ = try JournalReader(directory: journalPath)
/// } catch where error.code == .newerFormat {
///     print(error.message)   // "journal format version 9 is newer than this reader ..."
/// } catch {
///     print("cannot read the journal: \(error)")
/// }
/// ```
public struct JournalError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure this is; stable across releases, for scripts and tests.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as a stable string.
        public var rawValue: String
        /// Creates a code from its string.
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A system call failed (open, write, fsync, rename, ...); `message` carries `strerror`.
        public static let io = Code(rawValue: "io")
        /// A write failed because the file system is full (or the user's quota is).
        public static let diskFull = Code(rawValue: "disk-full")
        /// The device failed a read, write or sync (`EIO`): what was written since the file's last
        /// good sync may be lost.
        public static let deviceError = Code(rawValue: "device-error")
        /// The directory or file is not a chunkmigrate journal.
        public static let notAJournal = Code(rawValue: "not-a-journal")
        /// The journal was written by a newer format version than this reader knows.
        public static let newerFormat = Code(rawValue: "newer-format")
        /// The header failed its checksum or could not be parsed.
        public static let damagedHeader = Code(rawValue: "damaged-header")
        /// A log record failed its checksum or could not be parsed.
        public static let damagedRecord = Code(rawValue: "damaged-record")
        /// An ID-map segment failed its checksum, could not be decoded, or disagrees with its record.
        public static let damagedSegment = Code(rawValue: "damaged-segment")
        /// A segment named by the log is missing.
        public static let missingSegment = Code(rawValue: "missing-segment")
        /// Records are out of order: a batch number skipped or repeated, or key ranges overlap.
        public static let discontinuity = Code(rawValue: "discontinuity")
        /// Another process holds the journal's lock.
        public static let locked = Code(rawValue: "locked")
        /// A request names something the journal does not have (an unknown entity, say).
        public static let notFound = Code(rawValue: "not-found")
        /// The caller passed something the journal cannot store (unsorted keys, say).
        public static let invalidArgument = Code(rawValue: "invalid-argument")
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence saying what is wrong, in the user's words.
    public var message: String
    /// The file concerned, when there is one.
    public var file: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, file: String? = nil) {
        self.code = code
        self.message = message
        self.file = file
    }

    public var description: String {
        if let file { return "\(file): \(message)" }
        return message
    }
}
