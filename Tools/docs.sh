#!/usr/bin/env bash
# Builds the ChunkMigrate DocC catalog (Sources/ChunkMigrate/ChunkMigrate.docc) with the toolchain's
# own docc, over the symbol graphs of the library's public API, and fails on any warning: an article
# or doc comment linking a symbol or an article that does not exist, say. Also fails on a relative
# link of README.md or CONTRIBUTING.md to a file that is not there.
#
#   Tools/docs.sh [--output DIR]     the archive goes to DIR (default .build/docs/ChunkMigrate.doccarchive)
#
# The symbol graphs come from `swift package dump-symbol-graph`, which reuses the debug build (after
# `swift test`, it only extracts them). Every public function's doc comment documents each of its
# parameters (docc's own check, a warning otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."

output=.build/docs/ChunkMigrate.doccarchive
while [ $# -gt 0 ]; do
    case "$1" in
        --output) output="$2"; shift 2 ;;
        *) echo "usage: Tools/docs.sh [--output DIR]" >&2; exit 2 ;;
    esac
done

# The relative links of the README and CONTRIBUTING.md, each to a file or folder of the repository.
broken=0
for page in README.md CONTRIBUTING.md; do
    while IFS= read -r target; do
        path="${target%%#*}"
        if [ -n "$path" ] && [ ! -e "$path" ]; then
            echo "$page: the link to $target names no file" >&2
            broken=1
        fi
    done < <(grep -o '](\([^)]*\))' "$page" | sed 's/^](\(.*\))$/\1/' | grep -v '^[a-z]*:' || true)
done
[ "$broken" -eq 0 ] || exit 1

# The toolchain's docc: beside swift (Linux), or through xcrun (Xcode).
docc="${DOCC:-}"
if [ -z "$docc" ]; then
    if command -v xcrun > /dev/null 2>&1; then
        docc=$(xcrun --find docc)
    else
        docc="$(dirname "$(readlink -f "$(command -v swift)")")/docc"
    fi
fi

graphs=$(mktemp -d)
trap 'rm -rf "$graphs"' EXIT
dumped=$(swift package dump-symbol-graph 2>&1) || { echo "$dumped" >&2; exit 1; }
folder=$(echo "$dumped" | sed -n 's/^Files written to //p' | tail -1)
cp "$folder"/ChunkMigrate.symbols.json "$graphs"/
cp "$folder"/ChunkMigrate@*.symbols.json "$graphs"/ 2> /dev/null || true

rm -rf "$output"
mkdir -p "$(dirname "$output")"
log="$graphs/docc.log"
status=0
"$docc" convert Sources/ChunkMigrate/ChunkMigrate.docc \
    --additional-symbol-graph-dir "$graphs" \
    --output-path "$output" \
    --fallback-display-name ChunkMigrate \
    --fallback-bundle-identifier chunkmigrate.ChunkMigrate \
    --ide-console-output \
    --warnings-as-errors > "$log" 2>&1 || status=$?
warnings=$(grep -c -E '(warning|error):' "$log" || true)
if [ "$status" -ne 0 ] || [ "$warnings" -ne 0 ]; then
    grep -E '(warning|error):' "$log" >&2 || cat "$log" >&2
    echo "docs: docc convert: $warnings warnings or errors (exit $status)" >&2
    exit 1
fi
echo "docs: $output, no warnings"
