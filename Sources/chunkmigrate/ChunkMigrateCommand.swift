import ArgumentParser
import ChunkMigrate
import Foundation
#if canImport(Glibc)
    import Glibc
#endif

@main
struct ChunkMigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chunkmigrate",
        abstract: "Migrate a large SQLite store to a new schema in small, checkpointed, resumable batches.",
        discussion: """
            A job is recorded in a journal directory. Kill it at any moment and run the same command \
            again (or `chunkmigrate resume DIR`): it continues where it stopped.

            Exit codes:
              0    the job is complete, or its --budget ran out (run again to continue)
              1    a batch failed (validation, a constraint, a missing mapping); it was rolled back
              2    usage error or invalid plan
              3    a store or the journal cannot be used (missing, not SQLite, damaged, not this job's)
              4    the disk is full or an I/O error occurred
              5    another process is running this job
              130  stopped by SIGINT, 143 by SIGTERM, at a batch boundary; run again to continue
            """,
        version: ChunkMigrateVersion.string,
        subcommands: [
            PlanCommand.self, RunCommand.self, ResumeCommand.self, StatusCommand.self, CheckCoreDataCommand.self, CompareCommand.self,
            EmptyStoreCommand.self,
            DemoCommand.self, GenerateCommand.self,
            CheckDemoCommand.self,
        ]
    )

    /// Parses the arguments and runs the subcommand. A usage error (a missing or malformed
    /// argument, an unknown subcommand) exits with 2, as the exit codes above say, instead of
    /// ArgumentParser's 64; everything else goes the parser's way.
    static func main() async {
        #if canImport(Glibc)
            // glibc raises its mmap threshold each time a large block is freed, after which blocks
            // of a batch's size (its keys, its segment) come from the heap and their pages stay with
            // the process when freed. A fixed threshold gives them back: peak memory stays where the
            // caches put it instead of growing with the batch sizes a long job went through.
            // One arena for every thread: the threads beside the job (the check, the sorter's
            // helper, the writeback) would each take one of their own, whose freed pages stay
            // with it (0.7-0.9 MB of peak at 1M and 10M items, Tools/BENCHMARKS.md).
            // (`mallopt` is declared in malloc.h, which the Glibc module leaves out; -3 is
            // M_MMAP_THRESHOLD, -8 M_ARENA_MAX.)
            if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") {
                typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
                let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
                _ = mallopt(-3, 128 << 10)
                _ = mallopt(-8, 1)
            }
        #endif
        do {
            var command = try await asyncParseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            if !(error is ExitCode) && exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}
