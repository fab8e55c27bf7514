#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every system call the journal makes, each turning a failure into a ``JournalError`` that names
/// the call, the file and `strerror(errno)`.
package enum FileIO {
    private static func failure(_ call: String, _ path: String) -> JournalError {
        let reason = String(cString: strerror(errno))
        let code: JournalError.Code =
            switch errno {
            case ENOENT: .notFound
            case ENOSPC, EDQUOT: .diskFull
            case EIO: .deviceError
            default: .io
            }
        return JournalError(code, "\(call) failed: \(reason)", file: path)
    }

    /// Whether `path` exists. Only its absence is `false`: a `stat` that fails otherwise (an I/O
    /// error, a folder that cannot be searched) throws, so that a failing device is never taken
    /// for a missing file.
    package static func exists(_ path: String) throws(JournalError) -> Bool {
        try status(path) != nil
    }

    /// Whether `path` is a folder; `false` when it does not exist, throwing as ``exists(_:)``.
    static func isDirectory(_ path: String) throws(JournalError) -> Bool {
        guard let info = try status(path) else { return false }
        return (info.st_mode & S_IFMT) == S_IFDIR
    }

    private static func status(_ path: String) throws(JournalError) -> stat? {
        var info = stat()
        if stat(path, &info) == 0 { return info }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw failure("stat", path)
    }

    static func size(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_size)
    }

    static func makeDirectory(_ path: String) throws(JournalError) {
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw failure("mkdir", path) }
    }

    /// The whole file, read into one buffer sized by `fstat` (and grown if the file grew).
    package static func read(_ path: String) throws(JournalError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("open", path) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure("fstat", path) }
        // One byte more than the size, so that a full buffer says the file grew meanwhile.
        let capacity = max(Int(info.st_size), 0) + 1
        var failed = false
        let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            initialized = 0
            while initialized < buffer.count {
                let count = Glibc_read(fd, buffer.baseAddress! + initialized, buffer.count - initialized)
                if count < 0 {
                    if errno == EINTR { continue }
                    failed = true
                    return
                }
                if count == 0 { return }
                initialized += count
            }
        }
        if failed { throw failure("read", path) }
        guard bytes.count == capacity else { return bytes }
        return bytes + (try read(fd: fd, path: path))
    }

    /// The rest of an open file, in chunks.
    private static func read(fd: Int32, path: String) throws(JournalError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc_read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("read", path)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// Writes `bytes` to `path` by way of `path.tmp`: write, sync (``FileSync``), rename, then sync
    /// the directory so the rename itself survives power loss.
    static func writeAtomically(_ bytes: [UInt8], to path: String, syncDirectory: Bool = true) throws(JournalError) {
        let temporary = JournalLayout.temporary(path)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("open", temporary) }
        do throws(JournalError) {
            try writeAll(fd, bytes, path: temporary)
            if let call = FileSync.fullSync(fd, path: temporary) { throw failure(call, temporary) }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let error = failure("rename", path)
            unlink(temporary)
            throw error
        }
        if syncDirectory { try fsyncDirectory(parent(of: path)) }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(JournalError) {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                Glibc_write(fd, buffer.baseAddress! + written, buffer.count - written)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("write", path)
            }
            written += count
        }
    }

    static func fsyncDirectory(_ path: String) throws(JournalError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("open", path) }
        defer { close(fd) }
        if let call = FileSync.fullSync(fd, path: path) { throw failure(call, path) }
    }

    static func remove(_ path: String) throws(JournalError) {
        if unlink(path) != 0 && errno != ENOENT { throw failure("unlink", path) }
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Names of the entries of a directory, without `.` and `..`.
    static func list(_ path: String) throws(JournalError) -> [String] {
        guard let dir = opendir(path) else { throw failure("opendir", path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            // d_name is a fixed C array: 256 bytes with glibc, 1024 on Darwin.
            let name = withUnsafePointer(to: entry.pointee.d_name) { field in
                field.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: field.pointee)) {
                    String(cString: $0)
                }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// An open file descriptor for appending log frames.
    final class AppendFile {
        let path: String
        private var fd: Int32
        /// The file's length after the last append that succeeded.
        private var goodLength: off_t

        init(path: String) throws(JournalError) {
            self.path = path
            fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw FileIO.failure("open", path) }
            var info = stat()
            goodLength = fstat(fd, &info) == 0 ? info.st_size : 0
        }

        /// Appends `bytes` with one `write` call where the kernel allows, then syncs. When the
        /// write or the sync fails (a full disk, say), the file is cut back to where it was, so a
        /// partial frame never sits in front of a later record.
        func append(_ bytes: [UInt8], sync: Bool) throws(JournalError) {
            do throws(JournalError) {
                try FileIO.writeAll(fd, bytes, path: path)
                if sync, let call = FileSync.fullSync(fd, path: path, dataOnly: true) { throw FileIO.failure(call, path) }
                goodLength += off_t(bytes.count)
            } catch {
                _ = ftruncate(fd, goodLength)
                throw error
            }
        }

        func truncate(to length: Int) throws(JournalError) {
            guard ftruncate(fd, off_t(length)) == 0 else { throw FileIO.failure("ftruncate", path) }
            if let call = FileSync.fullSync(fd, path: path) { throw FileIO.failure(call, path) }
            goodLength = off_t(length)
        }

        func close() {
            if fd >= 0 { _ = Glibc_close(fd) }
            fd = -1
        }

        deinit { close() }
    }

    /// An exclusive advisory lock (`flock`) on a file, held until ``release()`` or deinit. The
    /// kernel drops it when the process dies, so a killed job never leaves a stale lock.
    package final class Lock {
        private var fd: Int32

        /// Takes the lock, or returns `nil` when another open file description holds it.
        ///
        /// A lock just released can still be held for a moment by a copy of its descriptor: a
        /// process forked by another thread keeps the copies until it execs (`O_CLOEXEC` closes
        /// them only then). So a busy lock is tried again for up to a quarter of a second before
        /// the job is reported as running elsewhere.
        package init?(path: String) throws(JournalError) {
            fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw FileIO.failure("open", path) }
            var attempts = 0
            while flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let busy = errno == EWOULDBLOCK
                attempts += 1
                if busy && attempts < 50 {
                    usleep(5_000)
                    continue
                }
                let error = FileIO.failure("flock", path)
                _ = Glibc_close(fd)
                if busy { return nil }
                throw error
            }
        }

        /// Whether some process holds the lock on `path` right now.
        static func isHeld(path: String) -> Bool {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return false }
            defer { _ = Glibc_close(fd) }
            if flock(fd, LOCK_SH | LOCK_NB) != 0 { return errno == EWOULDBLOCK }
            _ = flock(fd, LOCK_UN)
            return false
        }

        package func release() {
            if fd >= 0 { _ = Glibc_close(fd) }
            fd = -1
        }

        deinit { release() }
    }
}

// The C functions whose names the types above shadow.
@inline(__always) private func Glibc_read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}

@inline(__always) private func Glibc_write(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(fd, buffer, count)
}

@inline(__always) private func Glibc_close(_ fd: Int32) -> Int32 { close(fd) }
