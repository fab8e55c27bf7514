import Foundation
import Testing

/// What one run of a built executable printed and how it exited.
struct CommandResult: Sendable, CustomStringConvertible {
    var stdout: String
    var stderr: String
    /// The exit code; when ``killedBySignal`` is true, the number of the signal instead.
    var exitCode: Int32
    /// Whether a signal ended the process (then it has no exit code of its own).
    var killedBySignal = false

    /// The signal that ended the process, if one did.
    var signal: Int32? { killedBySignal ? exitCode : nil }

    var description: String {
        (killedBySignal ? "killed by signal \(exitCode)" : "exit \(exitCode)") + "\n--- stdout\n\(stdout)--- stderr\n\(stderr)"
    }
}

/// Runs the package's built executables, as a user would from a shell.
///
/// ```swift
/// let result = try BuiltProduct.run("chunkjournal", ["info", directory])
/// #expect(result.exitCode == 0)
/// ```
enum BuiltProduct {
    /// The directory that holds the built products: the one of the running test bundle.
    static var directory: URL {
        #if os(macOS)
            if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
                return bundle.bundleURL.deletingLastPathComponent()
            }
        #endif
        if let executable = Bundle.main.executableURL {
            return executable.resolvingSymlinksInPath().deletingLastPathComponent()
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// Runs the product `name` with `arguments`, no standard input, and waits for it to exit.
    ///
    /// - Parameters:
    ///   - environment: variables set for the child on top of this process's environment.
    ///   - workingDirectory: the child's working directory; this process's when `nil`.
    static func run(
        _ name: String, _ arguments: [String], environment: [String: String] = [:],
        workingDirectory: String? = nil
    ) throws -> CommandResult {
        let executable = directory.appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw CLITestError("no built product '\(name)' in \(directory.path); build the package first")
        }
        return try runExecutable(executable, arguments, environment: environment, workingDirectory: workingDirectory)
    }
}

/// Runs the executable at `executable` with `arguments`, no standard input, the variables of
/// `environment` set on top of this process's environment, in `workingDirectory` when one is given,
/// and waits for it to exit.
func runExecutable(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:],
    workingDirectory: String? = nil
) throws -> CommandResult {
    // Output goes to files, not pipes, so a large output cannot fill a pipe and block the child.
    return try withTemporaryDirectory { outputs in
        let stdoutURL = URL(fileURLWithPath: outputs + "/stdout")
        let stderrURL = URL(fileURLWithPath: outputs + "/stderr")
        try Data().write(to: stdoutURL)
        try Data().write(to: stderrURL)
        let stdout = try FileHandle(forWritingTo: stdoutURL)
        let stderr = try FileHandle(forWritingTo: stderrURL)

        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory, isDirectory: true) }
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        process.waitUntilExit()
        try stdout.close()
        try stderr.close()
        return CommandResult(
            stdout: String(decoding: try Data(contentsOf: stdoutURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: stderrURL), as: UTF8.self),
            exitCode: process.terminationStatus,
            killedBySignal: process.terminationReason == .uncaughtSignal)
    }
}

/// Runs `body` with the path of a fresh directory under the system's temporary folder, and
/// removes the directory afterwards.
func withTemporaryDirectory<Value>(_ body: (String) throws -> Value) throws -> Value {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("chunkmigrate-cli-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url.path)
}

/// A test setup that could not be done.
struct CLITestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
