// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "chunkmigrate",
    platforms: [.macOS(.v14)],
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
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .systemLibrary(
            name: "CLZ4",
            path: "Sources/CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),

        // The journal: on-disk format, ID-map codec, reader and writer.
        .target(
            name: "MigrationJournal",
            dependencies: ["CLZ4"],
            path: "Journal",
            exclude: ["FORMAT.md"]
        ),

        // The library: plan, job, engine, validation, the SQLite wrapper.
        .target(
            name: "ChunkMigrate",
            dependencies: [
                "CSQLite",
                "MigrationJournal",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/ChunkMigrate"
        ),

        // Thin executables.
        .executableTarget(
            name: "ChunkMigrateCLI",
            dependencies: [
                "ChunkMigrate",
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
            dependencies: ["ChunkMigrate", "MigrationJournal", "CSQLite"],
            path: "Tests/ChunkMigrateTests"
        ),
        .testTarget(
            name: "CLITests",
            dependencies: ["ChunkMigrateCLI", "ChunkJournalCLI", "MigrationJournal"],
            path: "Tests/CLITests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
