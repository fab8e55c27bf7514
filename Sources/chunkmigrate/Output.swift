import ArgumentParser
import ChunkMigrate
import Foundation
import MigrationJournal

/// Text and JSON output, and the exit codes of errors.
enum Output {
    static func json<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try JSONEncoder.sortedAndIndented().encode(value), as: UTF8.self)
    }

    static func describe(_ status: JobStatus) -> String {
        var lines = ["job \(status.jobID): \(status.state)"]
        for entity in status.entities {
            var line = "  \(entity.name): \(entity.rowsWritten.counted("row")) written"
            if entity.rowsSkipped > 0 { line += ", \(entity.rowsSkipped) skipped," }
            line += " in \(entity.batches.counted("batch", "batches"))"
            line += entity.complete ? ", complete" : (entity.cursor.map { ", next after source key \($0)" } ?? ", not started")
            lines.append(line)
        }
        if let failure = status.lastFailure { lines.append("  last error: \(failure)") }
        return lines.joined(separator: "\n")
    }

    /// The most memory this process has had resident since it started. On Linux this is
    /// `VmHWM` from `/proc/self/status`: `getrusage`'s maximum survives `exec`, so it would count
    /// the parent a process was forked from.
    static func peakResidentBytes() -> Int64 {
        #if os(Linux)
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
           let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
           let kilobytes = Int64(line.split(separator: " ").dropFirst().first ?? "") {
            return kilobytes * 1024
        }
        return 0
        #else
        var usage = rusage()
        guard getrusage(RUSAGE_SELF, &usage) == 0 else { return 0 }
        return Int64(usage.ru_maxrss)  // bytes on Darwin
        #endif
    }

    /// A run's phases in one line: `phases: copy 1.71 s, indexes 1.20 s, finishing 0.15 s, check 0.02 s (its part over the rows
    /// 0.52 s alongside the indexes, and 0.43 s during the copy)`.
    static func describe(_ phases: RunPhases) -> String {
        let parts = [("copy", phases.copy), ("fix-up", phases.fixup), ("indexes", phases.indexes), ("finishing", phases.finishing),
                     ("completion", phases.completion), ("check", phases.check)]
            .filter { $0.1 >= 0.005 }.map { String(format: "%@ %.2f s", $0.0, $0.1) }
        let beside = [(phases.checkAlongside, "alongside the indexes"), (phases.checkDuringCopy, "during the copy")]
            .filter { $0.0 > 0 }.map { String(format: "%.2f s %@", $0.0, $0.1) }
        let alongside = beside.isEmpty ? "" : " (its part over the rows " + beside.joined(separator: ", and ") + ")"
        return "phases: " + (parts.isEmpty ? "none" : parts.joined(separator: ", ")) + alongside
    }

    /// The exit code of a job error; see the root command's help.
    static func exitCode(for error: MigrationError) -> Int32 {
        switch error.code {
        case .batch, .missingMapping: 1
        case .invalidPlan: 2
        case .diskFull, .deviceError: 4
        case .busy: 5
        default: 3
        }
    }

    /// Prints `chunkmigrate: error: ...` on stderr and exits with the error's code.
    static func fail(_ error: MigrationError) -> Never {
        FileHandle.standardError.write(Data("chunkmigrate: error: \(error)\n".utf8))
        exit(exitCode(for: error))
    }
}

/// A progress bar on a terminal, a plain line every few seconds otherwise.
final class ProgressDisplay {
    private let isTerminal = isatty(2) == 1
    private var lastLine = ContinuousClock.now - .seconds(10)
    private var lastEntity = ""
    private var drewBar = false

    func show(_ step: MigrationProgress) {
        let now = ContinuousClock.now
        let fraction = step.jobRowsTotal > 0 ? min(1, Double(step.jobRowsDone) / Double(step.jobRowsTotal)) : 0
        let rate = Self.count(Int64(step.rowsPerSecond))
        let eta = step.estimatedRemaining.map { " ETA " + Self.clock($0) } ?? ""
        if isTerminal {
            guard now - lastLine >= .milliseconds(100) || step.entity != lastEntity else { return }
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            let text = "\r[\(bar)] \(Int(fraction * 100))% \(step.entity) \(step.phase) \(Self.count(step.rowsDone))/\(Self.count(step.rowsTotal)) rows, \(rate) rows/s\(eta)\u{1B}[K"
            FileHandle.standardError.write(Data(text.utf8))
            drewBar = true
        } else {
            guard now - lastLine >= .seconds(2) || step.entity != lastEntity else { return }
            let text = "\(step.entity) \(step.phase): \(step.rowsDone)/\(step.rowsTotal) rows, batch \(step.batch), job \(Int(fraction * 100))%, \(rate) rows/s\(eta)\n"
            FileHandle.standardError.write(Data(text.utf8))
        }
        lastLine = now
        lastEntity = step.entity
    }

    func finish() {
        if drewBar { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    static func count(_ value: Int64) -> String {
        switch value {
        case 10_000_000...: String(format: "%.1fM", Double(value) / 1e6)
        case 10_000...: String(format: "%.0fk", Double(value) / 1e3)
        default: String(value)
        }
    }

    static func clock(_ duration: Duration) -> String {
        let seconds = Int(duration.components.seconds)
        return seconds >= 3600 ? String(format: "%d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60)
            : String(format: "%d:%02d", seconds / 60, seconds % 60)
    }
}
