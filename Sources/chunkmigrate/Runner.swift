import ArgumentParser
import ChunkMigrate
import Foundation
import Logging
import MigrationJournal

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs a job for the `run`, `resume` and `demo` commands: progress on stderr, SIGINT and
/// SIGTERM turned into a pause at the next batch boundary, a summary, and the exit code.
enum Runner {
    /// - Parameters:
    ///   - closing: whether a complete run ends with the line that says what to do with the
    ///     destination (the demo says what to try next instead).
    static func execute(
        options: JobOptions, closing: Bool = true,
        open: (MigrationOptions, Logger) throws -> MigrationJob
    ) async throws {
        var logger = Logger(label: "chunkmigrate")
        logger.logLevel = .warning
        let job: MigrationJob
        do {
            job = try open(options.migrationOptions, logger)
        } catch let error as MigrationError {
            Output.fail(error)
        }
        if let space = job.spaceEstimate, !options.quiet || options.json {
            FileHandle.standardError.write(Data("space: the job \(space)\n".utf8))
        }
        let started = ContinuousClock.now
        let before = (try? MigrationJob.status(at: job.journalURL))?.rowsRead ?? 0
        let outcome = try await run(job, options: options)
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        let status = try? MigrationJob.status(at: job.journalURL)
        let rows = (status?.rowsRead ?? before) - before
        if options.json, let status {
            print(
                try Output.json(
                    RunReport(
                        status: status,
                        run: .init(
                            sourceRows: rows, seconds: seconds, peakResidentBytes: Output.peakResidentBytes(), phases: job.lastRunPhases))))
        } else if !options.quiet, let status {
            let rate = seconds > 0 ? " (\(ProgressDisplay.count(Int64(Double(rows) / seconds))) rows/s)" : ""
            var summary =
                Output.describe(status)
                + "\n  this run: \(rows.counted("source row")) in " + String(format: "%.2f s", seconds) + rate
            if let phases = job.lastRunPhases { summary += "\n  " + Output.describe(phases) }
            FileHandle.standardError.write(Data((summary + "\n").utf8))
        }
        switch outcome {
        case .complete:
            if job.plan.coreData != nil, !options.noCheck {
                // The job checked the store as it finished it; a job completed by an earlier run, now.
                if let report = job.storeCheck {
                    try show(report, of: job.destinationURL, quiet: options.quiet || options.json)
                } else {
                    let report: CoreDataStoreCheck.Report
                    do {
                        report = try CoreDataStoreCheck.run(migrated: job.destinationURL, source: job.sourceURL, plan: job.plan)
                    } catch let error as MigrationError {
                        Output.fail(error)
                    }
                    try show(report, of: job.destinationURL, quiet: options.quiet || options.json)
                }
            }
            if closing, !options.quiet, !options.json {
                FileHandle.standardError.write(Data((completeLine(job) + "\n").utf8))
            }
            return
        case .paused(let signal):
            if let signal {
                FileHandle.standardError.write(
                    Data("chunkmigrate: stopped at a batch boundary by signal \(signal); run the same command again to continue\n".utf8))
                throw ExitCode(128 + signal)
            }
            FileHandle.standardError.write(Data("chunkmigrate: time budget used; run the same command again to continue\n".utf8))
        }
    }

    /// The last line of a complete run: where the migrated store is, and what to do with it and
    /// the journal.
    static func completeLine(_ job: MigrationJob) -> String {
        "chunkmigrate: complete: \(job.destinationURL.path) is the migrated store; put it in place of the old one, then remove the journal \(job.journalURL.path)"
    }

    /// After a Core Data migration: the invariants Core Data relies on, checked on the
    /// destination (`check-coredata`); exits 1 naming the violations.
    static func checkCoreData(_ store: URL, quiet: Bool, tables: Set<String>? = nil) throws {
        let report: CoreDataStoreCheck.Report
        do { report = try CoreDataStoreCheck.run(store: store, tables: tables) } catch let error as MigrationError { Output.fail(error) }
        try show(report, of: store, quiet: quiet)
    }

    /// A check's report on stderr; exits 1 naming the violations.
    static func show(_ report: CoreDataStoreCheck.Report, of store: URL, quiet: Bool) throws {
        // What the source already had is carried as it was, as Core Data's own migration carries it.
        if !report.carried.isEmpty {
            let lines = report.carried.prefix(20).map { "  \($0)" }.joined(separator: "\n")
            let more = report.carried.count > 20 ? "\n  (and \(report.carried.count - 20) more)" : ""
            FileHandle.standardError.write(
                Data(
                    "note: \(report.carried.count.counted("anomaly", "anomalies")) of the source carried as they were, as Core Data's migration carries them:\n\(lines)\(more)\n"
                        .utf8))
        }
        guard report.isValid else {
            let lines = report.violations.prefix(20).map { "  \($0)" }.joined(separator: "\n")
            FileHandle.standardError.write(
                Data("chunkmigrate: error: \(store.path): the migrated store breaks invariants Core Data relies on:\n\(lines)\n".utf8))
            throw ExitCode(1)
        }
        if !quiet {
            FileHandle.standardError.write(Data("  check-coredata: \(report.checked.counted("check")) passed\n".utf8))
            for unchecked in report.unchecked {
                FileHandle.standardError.write(Data("  check-coredata: not checked: \(unchecked)\n".utf8))
            }
        }
    }

    /// Runs an in-place job as ``execute(options:closing:open:)`` runs a copy (``run(_:options:)``:
    /// progress, signals, the exit code), then checks the tables it touched.
    static func runInPlace(_ job: InPlaceMigration, options: JobOptions) async throws {
        let started = ContinuousClock.now
        let outcome = try await run(job, options: options)
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        if options.json {
            print(
                try Output.json(
                    InPlaceReport(
                        store: job.storeURL.path, complete: outcome == .complete, status: job.status,
                        seconds: seconds, peakResidentBytes: Output.peakResidentBytes())))
        } else if !options.quiet {
            let left = job.status.map { ", step \($0.stepsDone + 1) of \($0.steps) next" } ?? ""
            FileHandle.standardError.write(
                Data(String(format: "in place: %@ in %.2f s%@\n", outcome == .complete ? "complete" : "paused", seconds, left).utf8))
        }
        switch outcome {
        case .paused(let signal?):
            FileHandle.standardError.write(
                Data(
                    "chunkmigrate: stopped at a batch boundary by signal \(signal); the store is part-way through: run `chunkmigrate resume \(job.storeURL.path)` to finish it\n"
                        .utf8))
            throw ExitCode(128 + signal)
        case .paused(nil):
            FileHandle.standardError.write(
                Data(
                    "chunkmigrate: time budget used; the store is part-way through: run `chunkmigrate resume \(job.storeURL.path)` to finish it\n"
                        .utf8))
        case .complete:
            if job.isCoreData, !options.noCheck {
                let report: CoreDataStoreCheck.Report
                do { report = try job.checkStore() } catch let error as MigrationError { Output.fail(error) }
                try show(report, of: job.storeURL, quiet: options.quiet || options.json)
            }
        }
    }

    /// What `run --in-place --json` prints.
    struct InPlaceReport: Encodable {
        var store: String
        var complete: Bool
        /// Where the job stands when it paused; absent once it is complete.
        var status: InPlaceMigration.Status?
        var seconds: Double
        var peakResidentBytes: Int64?
    }

    enum Outcome: Equatable {
        case complete
        case paused(signal: Int32?)
    }

    /// Runs a job of either kind with progress and signal handling; exits the process on a job
    /// error.
    static func run(_ job: some MigrationRun, options: JobOptions) async throws -> Outcome {
        let stopSignal = SignalWatch { job.pause() }
        defer { stopSignal.cancel() }
        // The stream is asked for before the run starts, so that no batch goes unreported.
        let updates = options.quiet ? nil : job.progressUpdates()
        let printer = Task {
            guard let updates else { return }
            let display = ProgressDisplay()
            for await step in updates { display.show(step) }
            display.finish()
        }
        do {
            let outcome = try await job.run(for: options.budgetDuration)
            // The stream ends with the run: the printer shows every report left, the last one
            // (100%, complete) included, and ends.
            _ = await printer.result
            if outcome == .complete { return .complete }
            return .paused(signal: stopSignal.received)
        } catch let error as MigrationError {
            printer.cancel()
            _ = await printer.result
            Output.fail(error)
        }
    }
}

/// Turns SIGINT and SIGTERM into a job's `pause()`: the signals are ignored as signals and
/// watched by dispatch sources instead, whose handler runs on a queue (not in signal context), so
/// it may record the signal and pause the job; the job stops at the next batch boundary.
///
/// "A dispatch source does not install a signal handler or otherwise alter the behavior of signal
/// delivery", hence `SIG_IGN` first. Dispatch is in the toolchain on Linux and in the OS on Apple
/// platforms, unlike `Synchronization`'s `Atomic` (macOS 15).
/// https://developer.apple.com/documentation/dispatch/dispatchsource/makesignalsource(signal:queue:)
///
/// `@unchecked`: the dispatch sources are only cancelled after `init`, which dispatch allows from
/// any thread; the signal itself is behind a lock.
final class SignalWatch: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    private let caught = Locked<Int32?>(nil)

    init(pause: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "chunkmigrate signals")
        let caught = self.caught
        sources = [SIGINT, SIGTERM].map { number in
            _ = signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                caught.withLock { $0 = $0 ?? number }
                pause()
            }
            source.activate()
            return source
        }
    }

    /// The signal received, if any.
    var received: Int32? { caught.withLock { $0 } }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
