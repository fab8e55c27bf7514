import Foundation
import Testing

/// `chunkmigrate compare` run as a user runs it.
@Suite("chunkmigrate compare")
struct ChunkMigrateCompareTests {
    @Test(
        "compare: a store and its copy exit 0 saying how each entity is identified; a changed value exits 1 naming the entity, the row and the attribute; an --identify the model has not exits 2 naming it"
    )
    func compareAsAUserRunsIt() throws {
        try withTemporaryDirectory { directory in
            #expect(try chunkmigrate("generate", "--core-data", "--rows", "50", directory + "/pair").exitCode == 0)
            let store = directory + "/pair/old.sqlite", copy = directory + "/copy.sqlite"
            try FileManager.default.copyItem(atPath: store, toPath: copy)
            let equal = try chunkmigrate("compare", store, copy)
            #expect(equal.exitCode == 0 && equal.stdout.contains("equal: ") && equal.stdout.contains("identity: Item by "), "\(equal)")

            // Z_OPT is bookkeeping, not content; a size is. (A title identifies its item: changed,
            // the item would be another one.)
            try SQLiteShell.execute(
                copy, "UPDATE ZITEM SET Z_OPT = Z_OPT + 1; UPDATE ZITEM SET ZSIZE = 999 WHERE Z_PK = (SELECT min(Z_PK) FROM ZITEM)")
            let changed = try chunkmigrate("compare", store, copy)
            #expect(changed.exitCode == 1, "\(changed)")
            let difference = lines(changed.stdout).filter { $0.hasPrefix("difference: ") }
            #expect(
                difference.count == 1 && difference[0].contains(": size is ") && difference[0].hasSuffix(", 999 in the second"),
                "\(changed)")
            #expect(changed.stdout.contains("1 difference in "), "\(changed)")

            let unknown = try chunkmigrate("compare", "--identify", "Nope=x", store, copy)
            #expect(unknown.exitCode == 2 && unknown.stderr.contains("--identify Nope: the model has no entity Nope"), "\(unknown)")
            let malformed = try chunkmigrate("compare", "--identify", "Item", store, copy)
            #expect(malformed.exitCode == 2 && malformed.stderr.contains("--identify Item: give it as ENTITY=ATTRIBUTE"), "\(malformed)")
        }
    }
}
