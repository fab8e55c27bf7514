/// Where each file of a journal directory lives, and what its files are called: the one place
/// that spells a journal's file names. See `FORMAT.md`, "Directory".
public struct JournalLayout: Sendable {
    /// The name of the header file.
    public static let headerName = "header"
    /// The name of the frozen plan.
    public static let planName = "plan.json"
    /// The name of the log.
    public static let logName = "log"
    /// The name of the lock file.
    public static let lockName = "lock"
    /// The name of the folder of ID-map segments.
    public static let segmentsName = "segments"
    /// The name of the folder the job's store check keeps its files in while it runs.
    public static let checkName = "check"
    /// Every name a journal directory holds, the header first.
    public static let names = [headerName, planName, logName, lockName, segmentsName, checkName]

    /// What a file's name ends with while it is being replaced (`log.tmp`): see
    /// `FileIO.writeAtomically`. Readers ignore such files.
    static let temporarySuffix = ".tmp"
    /// What a segment file's name ends with.
    static let segmentSuffix = ".seg"

    /// The journal directory.
    public let directory: String

    /// Creates the layout of the journal at `directory`.
    public init(directory: String) {
        var path = directory
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        self.directory = path
    }

    /// `header`: format version, job identity, fingerprints.
    public var header: String { directory + "/" + Self.headerName }
    /// `plan.json`: the frozen plan, byte for byte as the job was started with.
    public var plan: String { directory + "/" + Self.planName }
    /// `log`: the append-only log of framed records.
    public var log: String { directory + "/" + Self.logName }
    /// `lock`: held with `flock` by the process running the job.
    public var lock: String { directory + "/" + Self.lockName }
    /// `check/`: the files of the job's store check while it runs (derived values it computed);
    /// not part of the journal, which a reader reads without it.
    public var check: String { directory + "/" + Self.checkName }
    /// `segments/`: one folder per entity, one file per batch.
    public var segments: String { directory + "/" + Self.segmentsName }

    /// `segments/<entity>`.
    public func segmentFolder(entity: UInt32) -> String { segments + "/\(entity)" }

    /// `segments/<entity>/<batch, ten digits>.seg`.
    public func segment(entity: UInt32, batch: UInt64) -> String {
        let digits = String(batch)
        return segmentFolder(entity: entity) + "/" + String(repeating: "0", count: max(0, 10 - digits.count)) + digits
            + Self.segmentSuffix
    }

    /// Whether a file name is that of a file being replaced (`0000000007.seg.tmp`).
    static func isTemporary(_ name: String) -> Bool { name.hasSuffix(temporarySuffix) }

    /// The batch number of a segment file's name (`0000000007.seg` is batch 7); `nil` for any
    /// other name.
    static func batch(ofSegmentNamed name: String) -> UInt64? {
        guard name.hasSuffix(segmentSuffix) else { return nil }
        return UInt64(name.dropLast(segmentSuffix.count))
    }

    /// Where `path` is written before it is renamed into place.
    static func temporary(_ path: String) -> String { path + temporarySuffix }
}
