#!/usr/bin/env bash
# Builds the fuzz binary of the project's readers with libFuzzer and AddressSanitizer, and links
# each target's name to it (the binary runs the target it is started as; see
# Targets/ChunkMigrateTargets.swift).
#
#   Tools/fuzz/build.sh [DIR]      DIR defaults to /tmp/chunkmigrate-fuzz
#
# The sources are compiled directly, not through `swift build`, so that the fuzz entry points sit
# inside the modules and see their internal readers: first MigrationJournal (Journal/ with
# Targets/JournalTargets.swift) as a module, then ChunkMigrate (Sources/ChunkMigrate with
# Targets/ChunkMigrateTargets.swift) against it. The files that import swift-log (the engine and
# the job, which no reader needs) are left out, so nothing outside the repository is needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-/tmp/chunkmigrate-fuzz}"
mkdir -p "$out/obj"
cd "$root"

shims=(-I Sources/CSQLite -I Sources/CZlib -I Sources/CLinuxFile -I Sources/CLZ4)
flags=(-O -wmo -parse-as-library -package-name chunkmigrate -swift-version 6
       -sanitize=fuzzer,address -g)

echo "build: MigrationJournal" >&2
mapfile -t journal < <(find Journal -name '*.swift' | sort)
swiftc "${flags[@]}" -module-name MigrationJournal "${shims[@]}" \
    -emit-module -emit-module-path "$out/obj/MigrationJournal.swiftmodule" \
    -c "${journal[@]}" Tools/fuzz/Targets/JournalTargets.swift -o "$out/obj/MigrationJournal.o"

echo "build: ChunkMigrate" >&2
mapfile -t library < <(find Sources/ChunkMigrate -name '*.swift' | sort | xargs grep -L '^import Logging')
swiftc "${flags[@]}" -module-name ChunkMigrate "${shims[@]}" -I "$out/obj" \
    -c "${library[@]}" Tools/fuzz/Targets/ChunkMigrateTargets.swift -o "$out/obj/ChunkMigrate.o"

echo "build: link" >&2
# gold warns once per AddressSanitizer symbol that it cannot export: noise, left out.
swiftc -sanitize=fuzzer,address -g "$out/obj/ChunkMigrate.o" "$out/obj/MigrationJournal.o" \
    -lsqlite3 -llz4 -lz -o "$out/chunkmigrate-fuzz" 2>&1 \
    | { grep -v "Cannot export local symbol '__asan" || true; } >&2

# One name per target, each a link to the binary.
for target in $(CHUNKMIGRATE_FUZZ_TARGET=list "$out/chunkmigrate-fuzz"); do
    ln -sf chunkmigrate-fuzz "$out/$target"
done
echo "$out/chunkmigrate-fuzz"
