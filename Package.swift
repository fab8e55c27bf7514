// swift-tools-version:6.0
import PackageDescription

// Platforms: iOS 16 and macOS 13, where `ContinuousClock` and `Duration` (the job's time budget)
// begin (https://developer.apple.com/documentation/swift/continuousclock). Nothing newer is used:
// `Synchronization`'s `Mutex` and `Atomic` (macOS 15, iOS 18) are avoided on purpose.
//
// The C libraries per platform:
// - SQLite: the system's everywhere, through a module map that links "sqlite3" (as GRDB's
//   GRDBSQLite target does): libsqlite3-dev on Linux, the SDK's libsqlite3 on Apple platforms. No
//   pkg-config, so that a Mac's Homebrew flags never leak into an iOS build.
// - zlib (raw DEFLATE, for Core Data's model cache): zlib on Linux (CZlib); on Apple platforms the
//   Compression framework's COMPRESSION_ZLIB (Sources/ChunkMigrate/CoreData/Model/RawDeflate.swift).
// - LZ4: liblz4 on Linux (CLZ4); on Apple platforms the Compression framework's
//   COMPRESSION_LZ4_RAW, the bare LZ4 block format (Journal/Codec/LZ4Block.swift), so CLZ4 is a
//   dependency on Linux only.
//   https://developer.apple.com/documentation/compression/compression_lz4_raw
//   https://developer.apple.com/documentation/packagedescription/targetdependencycondition

let package = Package(
    name: "chunkmigrate",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "ChunkMigrate", targets: ["ChunkMigrate"]),
        .library(name: "MigrationJournal", targets: ["MigrationJournal"]),
        .executable(name: "chunkmigrate", targets: ["ChunkMigrateCLI"]),
        .executable(name: "chunkjournal", targets: ["ChunkJournalCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // C shims: the only places that see the C libraries' headers.
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Linux only: Apple platforms use the Compression framework instead.
        .systemLibrary(
            name: "CLZ4",
            path: "Sources/CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"])]
        ),

        // Linux only: Apple platforms use the Compression framework's COMPRESSION_ZLIB instead.
        .systemLibrary(
            name: "CZlib",
            path: "Sources/CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),

        // Linux only: sync_file_range(2), which Glibc's module leaves out (Database+Writeback.swift).
        .systemLibrary(
            name: "CLinuxFile",
            path: "Sources/CLinuxFile"
        ),

        // The journal: on-disk format, ID-map codec, reader and writer.
        .target(
            name: "MigrationJournal",
            dependencies: [.target(name: "CLZ4", condition: .when(platforms: [.linux]))],
            path: "Journal",
            exclude: ["FORMAT.md"]
        ),

        // The library: plan, job, engine, validation, the SQLite wrapper.
        .target(
            name: "ChunkMigrate",
            dependencies: [
                "CSQLite",
                .target(name: "CZlib", condition: .when(platforms: [.linux])),
                .target(name: "CLinuxFile", condition: .when(platforms: [.linux])),
                "MigrationJournal",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/ChunkMigrate"
        ),

        // The demo stores (`chunkmigrate demo`, `generate`, the benches and the tests): generated
        // stores with their plans, kept out of the library an app links.
        .target(
            name: "ChunkMigrateDemo",
            dependencies: ["ChunkMigrate"],
            path: "Sources/ChunkMigrateDemo"
        ),

        // Thin executables.
        .executableTarget(
            name: "ChunkMigrateCLI",
            dependencies: [
                "ChunkMigrate",
                "ChunkMigrateDemo",
                "MigrationJournal",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/chunkmigrate"
        ),
        .executableTarget(
            name: "ChunkJournalCLI",
            dependencies: [
                "MigrationJournal",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/chunkjournal"
        ),
        // Measures the ID map: bytes per key and lookup throughput.
        .executableTarget(
            name: "idmap-bench",
            dependencies: ["MigrationJournal"],
            path: "Tools/idmap-bench"
        ),

        // The library path of Tools/bench: a migration with a Swift function in a column expression.
        .executableTarget(
            name: "bench-api",
            dependencies: ["ChunkMigrate", .product(name: "Logging", package: "swift-log")],
            path: "Tools/bench-api"
        ),

        .testTarget(
            name: "MigrationJournalTests",
            dependencies: ["MigrationJournal"],
            path: "Tests/MigrationJournalTests"
        ),
        .testTarget(
            name: "ChunkMigrateTests",
            dependencies: ["ChunkMigrate", "ChunkMigrateDemo", "MigrationJournal", "CSQLite"],
            path: "Tests/ChunkMigrateTests",
            exclude: ["EncodedPlans", "FuzzFindings"]
        ),
        .testTarget(
            name: "CLITests",
            dependencies: ["ChunkMigrateCLI", "ChunkJournalCLI", "MigrationJournal", "ChunkMigrate", "ChunkMigrateDemo"],
            path: "Tests/CLITests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
