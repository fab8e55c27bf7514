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
                let kilobytes = Int64(line.split(separator: " ").dropFirst().first ?? "")
            {
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
        let parts = [
            ("copy", phases.copy), ("fix-up", phases.fixup), ("indexes", phases.indexes), ("finishing", phases.finishing),
            ("completion", phases.completion), ("check", phases.check),
        ]
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

/// On a terminal, one progress line updated in place, cut to the terminal's width as it is at
/// each update (a line that wrapped would leave half-lines behind as it is redrawn); otherwise a
/// plain line every few seconds and at each new phase.
final class ProgressDisplay {
    private let isTerminal = isatty(2) == 1
    private var lastLine = ContinuousClock.now - .seconds(10)
    private var lastLabel = ""
    private var drewBar = false

    func show(_ step: MigrationProgress) {
        let now = ContinuousClock.now
        let label = Self.label(step)
        let percent = "\(Int(step.fraction * 100))%"
        let eta = step.estimatedRemaining.map { " ETA " + Self.clock($0) } ?? ""
        var rows = ""
        if step.phase == .copy {
            rows = " \(Self.count(step.rowsDone))/\(Self.count(step.rowsTotal)) rows, \(Self.count(Int64(step.rowsPerSecond))) rows/s"
        } else if case .inPlace = step.phase, step.rowsTotal > 0 {
            // An in-place step counts its table's rows by rowid.
            rows = " rowid \(Self.count(step.rowsDone))/\(Self.count(step.rowsTotal))"
        }
        if isTerminal {
            guard now - lastLine >= .milliseconds(100) || label != lastLabel || step.phase == .complete else { return }
            let columns = Self.terminalColumns()
            let width = columns >= 100 ? 30 : 10
            let filled = min(width, Int(step.fraction * Double(width)))
            let bar = "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            // One column short of the width: a character in the last column wraps on some terminals.
            let line = Self.cut(bar + percent + " " + label + rows + eta, to: columns - 1)
            FileHandle.standardError.write(Data(("\r" + line + "\u{1B}[K").utf8))
            drewBar = true
        } else {
            guard now - lastLine >= .seconds(2) || label != lastLabel || step.phase == .complete else { return }
            let text = "\(label):\(rows.isEmpty ? "" : rows + ",") batch \(step.batch), job \(percent)\(eta)\n"
            FileHandle.standardError.write(Data(text.utf8))
        }
        lastLine = now
        lastLabel = label
    }

    func finish() {
        if drewBar { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    /// What the job is on, by the name of its own table or index: `copy Item (ZITEM)`,
    /// `fixup Item.ZPARENT`, `index ZITEM_Z_ENT_INDEX on ZITEM`, `derive Tag.itemCount`,
    /// `triggers`, `check`.
    static func label(_ step: MigrationProgress) -> String {
        switch step.phase {
        case .copy: "copy \(step.entity)" + (step.table.map { " (\($0))" } ?? "")
        case let .fixup(column): "fixup \(step.entity).\(column)"
        case let .index(name): "index \(name)" + (step.table.map { " on \($0)" } ?? "")
        // A step's label names its table (`update ZITEM`, `derive Folder.itemCount`): the table
        // is added only where it does not.
        case let .inPlace(label): "in place: \(label)" + (step.table.map { label.contains($0) ? "" : " (\($0))" } ?? "")
        case .finishing, .check, .complete: step.phase.description
        }
    }

    /// The terminal's width in columns (80 where it cannot be read), read again at each call so
    /// that a resize takes effect at the next update.
    static func terminalColumns() -> Int {
        var size = winsize()
        #if canImport(Darwin)
            let result = ioctl(2, TIOCGWINSZ, &size)
        #else
            let result = ioctl(2, UInt(TIOCGWINSZ), &size)
        #endif
        guard result == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// `text` cut to `columns` characters.
    static func cut(_ text: String, to columns: Int) -> String {
        text.count <= columns ? text : String(text.prefix(max(0, columns)))
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
        return seconds >= 3600
            ? String(format: "%d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60)
            : String(format: "%d:%02d", seconds / 60, seconds % 60)
    }
}
