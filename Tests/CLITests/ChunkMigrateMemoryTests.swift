import Foundation
import Testing

/// Peak memory is set by configuration (batch size, ID-map cache, SQLite cache), not by the
/// number of rows. No timing is asserted here; `Tools/bench` measures speed.
@Suite("chunkmigrate memory")
struct ChunkMigrateMemoryTests {
    struct Report: Decodable {
        struct Run: Decodable {
            var sourceRows: Int64
            var peakResidentBytes: Int64
        }
        var state: String
        var run: Run
    }

    /// Migrates a demo store of `messages` messages (sparse keys, a filter, `skip` and `null`,
    /// a self-reference with forward references for the fix-up pass, a join table) and returns
    /// the process's peak resident memory.
    func peak(messages: Int, in directory: String, options: [String]) throws -> Report {
        let demo = try DemoWorkspace.generate(in: directory + "/\(messages)", messages: messages)
        let result = try chunkmigrate(
            [
                "run", "--source", demo.source, "--destination", demo.destination("job"), "--schema", demo.schema,
                "--plan", demo.plan, "--journal", demo.journal("job"), "--json", "--quiet",
            ] + options)
        #expect(result.exitCode == 0, "\(result)")
        return try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
    }

    @Test("four times the rows, the same peak memory")
    func flatMemory() throws {
        try withTemporaryDirectory { directory in
            // 150,000 messages already fill the 1 MiB ID-map cache; 600,000 would hold 4.8 MB
            // of keys if anything kept one word per row.
            let options = ["--batch-size", "2000", "--id-map-cache-mib", "1", "--sqlite-cache-mib", "2"]
            let small = try peak(messages: 150_000, in: directory, options: options)
            let large = try peak(messages: 600_000, in: directory, options: options)
            #expect(small.state == "complete" && large.state == "complete")
            #expect(large.run.sourceRows > 3 * small.run.sourceRows)
            #expect(large.run.peakResidentBytes < 64 << 20, "peak \(large.run.peakResidentBytes) bytes")
            #expect(
                large.run.peakResidentBytes - small.run.peakResidentBytes < 2 << 20,
                "peak grew from \(small.run.peakResidentBytes) to \(large.run.peakResidentBytes) bytes")
        }
    }

    @Test("at the default settings, eight times the rows cost less than 10% more memory")
    func flatMemoryByDefault() throws {
        try withTemporaryDirectory { directory in
            // The default ID-map cache holds 2 MiB of packed keys (about a million keys), and the
            // batch size adapts up to 500,000 rows: 800,000 messages fill both, 100,000 neither.
            let small = try peak(messages: 100_000, in: directory, options: [])
            let large = try peak(messages: 800_000, in: directory, options: [])
            #expect(small.state == "complete" && large.state == "complete")
            #expect(large.run.sourceRows > 7 * small.run.sourceRows)
            #expect(large.run.peakResidentBytes < 64 << 20, "peak \(large.run.peakResidentBytes) bytes")
            #expect(
                Double(large.run.peakResidentBytes) < 1.1 * Double(small.run.peakResidentBytes),
                "peak grew from \(small.run.peakResidentBytes) to \(large.run.peakResidentBytes) bytes")
        }
    }
}
