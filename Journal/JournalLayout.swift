/// Where each file of a journal directory lives. See `FORMAT.md`, "Directory".
public struct JournalLayout: Sendable {
    /// The journal directory.
    public let directory: String

    /// Creates the layout of the journal at `directory`.
    public init(directory: String) {
        var path = directory
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        self.directory = path
    }

    /// `header`: format version, job identity, fingerprints.
    public var header: String { directory + "/header" }
    /// `plan.json`: the frozen plan, byte for byte as the job was started with.
    public var plan: String { directory + "/plan.json" }
    /// `log`: the append-only log of framed records.
    public var log: String { directory + "/log" }
    /// `lock`: held with `flock` by the process running the job.
    public var lock: String { directory + "/lock" }
    /// `segments/`: one folder per entity, one file per batch.
    public var segments: String { directory + "/segments" }

    /// `segments/<entity>`.
    public func segmentFolder(entity: UInt32) -> String { segments + "/\(entity)" }

    /// `segments/<entity>/<batch, ten digits>.seg`.
    public func segment(entity: UInt32, batch: UInt64) -> String {
        let digits = String(batch)
        return segmentFolder(entity: entity) + "/" + String(repeating: "0", count: max(0, 10 - digits.count)) + digits + ".seg"
    }
}
