import Foundation
#if os(Linux)
    import CLinuxFile
#endif

/// Asks the OS, every few milliseconds, to start writing a file's dirty pages to disk (Linux's
/// `sync_file_range(SYNC_FILE_RANGE_WRITE)`, which does not wait), so that a commit, whose
/// `fsync` must wait for every page its transaction wrote, finds most of them written already. A
/// bulk load that commits once leaves that to the kernel's background writeback, which runs on
/// another core while it works; a job that commits every batch durably would otherwise wait for
/// its pages batch after batch. What a commit guarantees does not change: it still syncs.
final class Writeback: @unchecked Sendable {
    private let timer: DispatchSourceTimer
    private let stopped = DispatchSemaphore(value: 0)
    /// What the OS answered the last time (0, or -1 with `errno` set); nil before the first.
    let lastResult = Locked<Int32?>(nil)

    fileprivate init(descriptor: Int32, every interval: DispatchTimeInterval) {
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
        #if os(Linux)
            timer.setEventHandler { [lastResult] in
                let result = clinuxfile_start_writeback(descriptor)
                lastResult.withLock { $0 = result }
            }
        #endif
        timer.setCancelHandler { [stopped] in stopped.signal() }
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(5))
        timer.resume()
    }

    /// Stops asking, once a call under way has returned.
    func stop() {
        timer.cancel()
        stopped.wait()
    }
}

extension Database {
    /// Starts writing back the file's dirty pages in the background until the returned
    /// ``Writeback`` is stopped; nil where the OS has no way to (anywhere but Linux) or the file
    /// cannot be opened, and the job runs as it would without. For a connection that commits
    /// large transactions one after another.
    ///
    /// The descriptor it uses is the connection's own, opened once and closed only after the
    /// connection is (``close()``): closing any descriptor of a file drops every POSIX lock the
    /// process holds on it, SQLite's among them. A connection closed with statements still
    /// alive stays open inside SQLite until they go (`sqlite3_close_v2`): its descriptor is then
    /// left open rather than taking the locks with it. Nothing else in the process may have the
    /// file open meanwhile, which a job's destination does not.
    func startWriteback(every interval: DispatchTimeInterval = .milliseconds(20)) -> Writeback? {
        #if os(Linux)
            if writebackDescriptor == nil {
                let descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { return nil }
                writebackDescriptor = descriptor
            }
            return writebackDescriptor.map { Writeback(descriptor: $0, every: interval) }
        #else
            return nil
        #endif
    }
}
