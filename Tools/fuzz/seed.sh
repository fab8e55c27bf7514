#!/usr/bin/env bash
# Writes the seed corpora of the fuzz targets into DIR/<target>/ (one file per seed, named by its
# SHA-1 as libFuzzer names its own), made at run time from:
#   - the Core Data fixtures in ../shared/fixtures/coredata (never copied into the repository):
#     model caches (Z_MODELCACHE.Z_CONTENT, raw DEFLATE) of small stores, inflated for the
#     property-list, keyed-archive and model-archive targets, compiled .mom files, model
#     `contents` XML, mapping models (xcmapping.xml without the models it embeds, and the
#     compiled .cdm);
#   - the project's plans (Tests/ChunkMigrateTests/EncodedPlans, Examples);
#   - the journals of two small jobs run with the built chunkmigrate (the demo, and a Core Data
#     store migrated to its next model version), with torn and zeroed copies of their logs.
# The small seeds written by hand are in Tools/fuzz/seeds/ and are not copied: run.sh reads both.
#
#   Tools/fuzz/seed.sh [--bin DIR] [--fixtures DIR] [OUT]
#     --bin       where chunkmigrate is built (default .build/debug); without it, no journals
#     --fixtures  default ../shared/fixtures/coredata; without it, no Core Data seeds
#     OUT         default /tmp/chunkmigrate-fuzz/seeds (emptied first)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/.build/debug"
fixtures="$root/../shared/fixtures/coredata"
out=/tmp/chunkmigrate-fuzz/seeds
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin="$2"; shift 2 ;;
        --fixtures) fixtures="$2"; shift 2 ;;
        -*) echo "usage: Tools/fuzz/seed.sh [--bin DIR] [--fixtures DIR] [OUT]" >&2; exit 2 ;;
        *) out="$1"; shift ;;
    esac
done
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Journals: the demo's, and a Core Data job's (dense and LZ4 segments, a plan with coreData).
journals=()
if [ -x "$bin/chunkmigrate" ]; then
    cm="$bin/chunkmigrate"
    "$cm" demo --messages 3000 --batch-size 400 --directory "$work/demo" --quiet > /dev/null
    journals+=("$work/demo/journal")
    "$cm" generate --core-data --rows 300 "$work/coredata" > /dev/null
    "$cm" plan --source "$work/coredata/old.sqlite" --destination "$work/coredata/new.sqlite" \
        --out "$work/coredata/plan.json" 2> /dev/null
    cp "$work/coredata/new.sqlite" "$work/coredata/destination.sqlite"
    "$cm" run --source "$work/coredata/old.sqlite" --destination "$work/coredata/destination.sqlite" \
        --plan "$work/coredata/plan.json" --journal "$work/coredata/journal" --batch-size 50 --quiet > /dev/null
    journals+=("$work/coredata/journal")
else
    echo "seed: no $bin/chunkmigrate (swift build first, or --bin): no journal seeds" >&2
fi
if [ ! -d "$fixtures" ]; then
    echo "seed: no fixtures at $fixtures: no Core Data seeds" >&2
fi

python3 - "$root" "$fixtures" "$out" "${journals[@]}" <<'PY'
import glob, hashlib, os, re, sqlite3, sys, zlib

root, fixtures, out, journals = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
counts = {}

def seed(target, data):
    folder = os.path.join(out, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
    counts[target] = counts.get(target, 0) + 1

def read(path):
    with open(path, "rb") as f:
        return f.read()

# The smallest files first, at most `count` of them under `limit` bytes: small seeds keep the
# fuzzer fast, and mutations reach the rest.
def smallest(paths, count, limit):
    sized = sorted((os.path.getsize(p), p) for p in set(paths) if os.path.getsize(p) <= limit)
    return [p for _, p in sized[:count]]

if os.path.isdir(fixtures):
    caches = {}
    stores = [p for pattern in ("**/*.sqlite", "**/*.storedata", "**/*.db")
              for p in glob.glob(os.path.join(fixtures, pattern), recursive=True)]
    for path in sorted(stores):
        try:
            # immutable=1: read the file as it is, writing no -shm or -wal beside it.
            db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
            row = db.execute("SELECT Z_CONTENT FROM Z_MODELCACHE").fetchone()
            db.close()
        except sqlite3.Error:
            continue
        if row and row[0]:
            caches[bytes(row[0])] = path
    for cache in sorted(caches, key=len)[:12]:
        if len(cache) > 24 << 10:
            break
        seed("raw-deflate", cache)
        archive = zlib.decompress(cache, -15)
        for target in ("property-list", "keyed-archive", "model-archive"):
            seed(target, archive)
    for mom in smallest(glob.glob(os.path.join(fixtures, "**/*.mom"), recursive=True), 3, 64 << 10):
        for target in ("property-list", "keyed-archive", "model-archive"):
            seed(target, read(mom))
    for contents in smallest(glob.glob(os.path.join(fixtures, "**/*.xcdatamodel/contents"), recursive=True), 10, 16 << 10):
        seed("model-xml", read(contents))
    for path in glob.glob(os.path.join(fixtures, "**/*.xcdatamodel.xml"), recursive=True):
        if os.path.getsize(path) <= 16 << 10:
            seed("model-xml", read(path))
    # A mapping model's XML without the two models Xcode embeds in it (sourcemodeldata and
    # destinationmodeldata, base64 of compiled models: nine tenths of its bytes), which the reader
    # does not read: seeds of a few kilobytes, where the whole file would make every input the
    # fuzzer keeps in memory up to 100 KB long.
    embedded = re.compile(rb'<attribute name="(?:source|destination)modeldata"[^>]*>[^<]*</attribute>')
    mappings = sorted(embedded.sub(b"", read(p)) for p in glob.glob(os.path.join(fixtures, "**/*xcmapping.xml"), recursive=True))
    for mapping in sorted((m for m in mappings if len(m) <= 16 << 10), key=len)[:4]:
        seed("mapping-model", mapping)
    for cdm in glob.glob(os.path.join(fixtures, "**/*.cdm"), recursive=True):
        for target in ("mapping-model", "property-list", "keyed-archive"):
            seed(target, read(cdm))

plans = glob.glob(os.path.join(root, "Tests/ChunkMigrateTests/EncodedPlans/*.json"))
plans += glob.glob(os.path.join(root, "Examples/**/*.json"), recursive=True)
plans += [os.path.join(j, "plan.json") for j in journals]
for plan in plans:
    seed("plan-json", read(plan))

for journal in journals:
    seed("journal-header", read(os.path.join(journal, "header")))
    log = read(os.path.join(journal, "log"))
    seed("journal-log", log)
    seed("journal-log", log[:len(log) - 5])                    # a frame cut short: a torn tail
    seed("journal-log", log[:len(log) - 40] + bytes(40))       # a tail of zeros
    seed("journal-log", log[:8])                               # no record
    segments = sorted(glob.glob(os.path.join(journal, "segments/*/*.seg")))
    by_encoding = {}
    for segment in segments:
        data = read(segment)
        by_encoding.setdefault(data[6:7], []).append(data)
    for kind in by_encoding.values():
        for data in kind[:3]:
            seed("journal-segment", data)

for target in sorted(counts):
    print(f"seed: {target}: {counts[target]}", file=sys.stderr)
PY
echo "$out"
