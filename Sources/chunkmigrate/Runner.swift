import ArgumentParser
import ChunkMigrate
import Dispatch
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a job for the `run`, `resume` and `demo` commands: progress on stderr, SIGINT and
/// SIGTERM turned into a pause at the next batch boundary, a summary, and the exit code.
enum Runner {
    static func execute(options: JobOptions,
                        open: (MigrationOptions, Logger) throws -> MigrationJob) async throws {
        var logger = Logger(label: "chunkmigrate")
        logger.logLevel = .warning
        let job: MigrationJob
        do {
            job = try open(options.migrationOptions, logger)
        } catch let error as MigrationError {
            Output.fail(error)
        }
        let started = ContinuousClock.now
        let before = (try? MigrationJob.status(at: job.journalURL))?.entities.reduce(0) { $0 + $1.rowsRead } ?? 0
        let outcome = try await run(job, options: options)
        let elapsed = ContinuousClock.now - started
        let status = try? MigrationJob.status(at: job.journalURL)
        let rows = (status?.entities.reduce(0) { $0 + $1.rowsRead } ?? before) - before
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if options.json, let status {
            print(try Output.json(RunReport(status: status, run: .init(
                sourceRows: rows, seconds: seconds, peakResidentBytes: Output.peakResidentBytes()))))
        } else if !options.quiet, let status {
            let rate = seconds > 0 ? " (\(ProgressDisplay.count(Int64(Double(rows) / seconds))) rows/s)" : ""
            let summary = Output.describe(status)
                + String(format: "\n  this run: %lld source rows in %.2f s", rows, seconds) + rate
            FileHandle.standardError.write(Data((summary + "\n").utf8))
        }
        switch outcome {
        case .complete: return
        case .paused(let signal):
            if let signal {
                FileHandle.standardError.write(Data("chunkmigrate: stopped at a batch boundary by signal \(signal); run the same command again to continue\n".utf8))
                throw ExitCode(128 + signal)
            }
            FileHandle.standardError.write(Data("chunkmigrate: time budget used; run the same command again to continue\n".utf8))
        }
    }

    enum Outcome {
        case complete
        case paused(signal: Int32?)
    }

    /// Runs the job with progress and signal handling; exits the process on a job error.
    static func run(_ job: MigrationJob, options: JobOptions) async throws -> Outcome {
        let stopSignal = SignalWatch(job: job)
        defer { stopSignal.cancel() }
        let printer = Task {
            guard !options.quiet else { return }
            let display = ProgressDisplay()
            for await step in job.progressUpdates() { display.show(step) }
            display.finish()
        }
        do {
            let outcome = try await job.run(for: options.budgetDuration)
            printer.cancel()
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

/// Turns SIGINT and SIGTERM into ``MigrationJob/pause()``.
final class SignalWatch: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []
    private let lock = NSLock()
    private var signal: Int32?

    init(job: MigrationJob) {
        for number in [SIGINT, SIGTERM] {
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in
                self?.lock.withLock { self?.signal = self?.signal ?? number }
            }
            source.resume()
            sources.append(source)
        }
    }

    var received: Int32? { lock.withLock { signal } }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
