import Foundation
import Testing

/// `chunkmigrate run`'s progress line as a person sees it: in a real terminal (tmux), read back
/// with `capture-pane` while the job runs.
@Suite("chunkmigrate's progress line in a terminal")
struct ProgressLineTests {
    static let tmux = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/opt/homebrew/bin/tmux"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// The lines of the pane, as the terminal shows them (a line that wrapped is two).
    static func screen(_ socket: String) throws -> [String] {
        let capture = try runExecutable(URL(fileURLWithPath: tmux!), ["-S", socket, "capture-pane", "-p", "-t", "job"])
        return capture.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            .filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    }

    @Test(
        "at 80 and 200 columns: throughout the run, at most one progress line on screen, never wrapped, updated in place; at the end exactly one, at 100% and complete; the phases named by their own table or index",
        .enabled(if: tmux != nil, "tmux is not installed (Tools/setup.sh installs it)"), arguments: [80, 200])
    func oneLineInPlace(columns: Int) throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            #expect(try chunkmigrate("generate", "--core-data", "--rows", "20000", store).exitCode == 0)
            #expect(
                try chunkmigrate(
                    "plan", "--source", store + "/old.sqlite", "--destination", store + "/new.sqlite",
                    "--out", directory + "/plan.json"
                ).exitCode == 0)
            let binary = BuiltProduct.directory.appendingPathComponent("chunkmigrate").path
            let command = [
                binary, "run", "--source", store + "/old.sqlite", "--destination", store + "/new.sqlite", "--plan",
                directory + "/plan.json",
                "--journal", directory + "/journal", "--batch-size", "100",
            ].map { "'\($0)'" }.joined(separator: " ")
            let socket = directory + "/tmux"
            // The server tmux starts outlives the command that starts it: it must not keep the
            // descriptors the test's process watches that command's end by, so they are closed first.
            let started = try runExecutable(
                URL(fileURLWithPath: "/bin/bash"),
                [
                    "-c", #"for n in $(ls /dev/fd); do [ "$n" -gt 2 ] && eval "exec $n>&-"; done; exec "$0" "$@""#,
                    Self.tmux!, "-S", socket, "new-session", "-d", "-s", "job", "-x", String(columns), "-y", "40",
                    "sh -c \"\(command) > /dev/null; echo exit=$?; sleep 600\"",
                ], environment: ["TERM": "xterm"])
            #expect(started.exitCode == 0, "\(started)")
            defer { _ = try? runExecutable(URL(fileURLWithPath: Self.tmux!), ["-S", socket, "kill-server"]) }
            func isProgress(_ line: String) -> Bool { line.hasPrefix("[") && line.contains("%") }
            var seen: [String] = []
            var final: [String] = []
            let deadline = ContinuousClock.now + .seconds(300)
            while ContinuousClock.now < deadline {
                let lines = try Self.screen(socket)
                // One progress line at most, one column short of the width: a line that reached
                // the last column would wrap, and each redraw would leave its first half behind.
                let progress = lines.filter(isProgress)
                #expect(progress.count <= 1, "\(lines)")
                #expect(progress.allSatisfy { $0.count < columns }, "\(progress)")
                seen += progress
                if lines.contains(where: { $0.hasPrefix("exit=") }) {
                    final = lines
                    break
                }
                usleep(20_000)
            }
            #expect(final.contains("exit=0"), "\(final)")
            let progress = final.filter(isProgress)
            #expect(progress.count == 1, "\(final)")
            #expect(progress.first?.contains("100% complete") == true, "\(final)")
            // Each index build names the table the index is on in the migrated store.
            let indexes = seen.compactMap { line in line.firstMatch(of: #/ index (\w+) on (\w+)/#) }
            #expect(!indexes.isEmpty || seen.isEmpty, "\(seen)")
            for match in indexes {
                let table = try SQLiteShell.query(
                    store + "/new.sqlite", "SELECT tbl_name FROM sqlite_schema WHERE type = 'index' AND name = '\(match.1)'"
                )
                .map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "'")) }
                #expect(table == [String(match.2)], "index \(match.1) reported on \(match.2), and it is on \(table)")
            }
        }
    }
}
