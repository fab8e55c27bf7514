#!/usr/bin/env bash
# Runs the fuzz targets one after another, each for N seconds or a fixed number of inputs, and
# prints one line per target: executions, time, coverage (libFuzzer's cov and ft), peak RSS, and
# what it found.
#
#   Tools/fuzz/run.sh [--seconds N | --ci] [--target NAME]... [--keep-going] [--dir DIR]
#     --seconds     per target (default 30): for runs by hand
#     --ci          per target the number of inputs Tools/fuzz/ci-runs gives, from libFuzzer's
#                   seed 1: the same inputs on a fast machine and a slow one, so that the verdict
#                   does not depend on the machine's speed (CI)
#     --target      one target (repeatable; default every target the binary has)
#     --keep-going  run in libFuzzer's fork mode, which goes on past a crash, timeout or OOM and
#                   keeps each one's input (for long runs by hand)
#     --dir         where build.sh put the binary (default /tmp/chunkmigrate-fuzz); seeds, the
#                   growing corpora, findings and logs go under it too
#
# Each target reads its corpus DIR/corpus/<target> (where new inputs go, kept between runs), the
# seeds seed.sh makes (DIR/seeds/<target>, made on the first run) and Tools/fuzz/seeds/<target>.
# A crash, timeout or OOM is written to DIR/findings/<target>/; replay one with
# `DIR/<target> FILE`, minimize it with `DIR/<target> -minimize_crash=1 -runs=10000 FILE`.
# Exits 1 when a target found something. Leaks are not looked for unless ASAN_OPTIONS says
# detect_leaks=1: LeakSanitizer's check doubles the time of some targets.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir=/tmp/chunkmigrate-fuzz
seconds=30
ci=0
keep_going=0
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --ci) ci=1; shift ;;
        --target) targets+=("$2"); shift 2 ;;
        --keep-going) keep_going=1; shift ;;
        --dir) dir="$2"; shift 2 ;;
        *) echo "usage: Tools/fuzz/run.sh [--seconds N | --ci] [--target NAME]... [--keep-going] [--dir DIR]" >&2; exit 2 ;;
    esac
done
binary="$dir/chunkmigrate-fuzz"
if [ ! -x "$binary" ]; then
    echo "run: no $binary; build it with Tools/fuzz/build.sh $dir" >&2
    exit 2
fi
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(CHUNKMIGRATE_FUZZ_TARGET=list "$binary")
fi
[ -d "$dir/seeds" ] || "$here/seed.sh" "$dir/seeds" > /dev/null

# A small quarantine, so that the RSS libFuzzer limits is the readers' own memory rather than
# freed blocks ASan holds back (256 MB by default, the whole -rss_limit_mb).
export ASAN_OPTIONS="${ASAN_OPTIONS:-quarantine_size_mb=16:malloc_context_size=20:detect_leaks=0}"
# libFuzzer's own handler reports a Swift trap (SIGILL) with its stack; Swift's backtracer would
# get in first and confuse AddressSanitizer.
export SWIFT_BACKTRACE=enable=no

dictionary() {
    case "$1" in
        property-list|keyed-archive|model-archive) echo "$here/dicts/keyed-archive.dict" ;;
        model-xml|mapping-model) echo "$here/dicts/xml.dict" ;;
        plan-json|step-json) echo "$here/dicts/json.dict" ;;
    esac
}

# The number of inputs of a target in CI: its line in ci-runs (`target runs`).
ci_runs() {
    local runs
    runs=$(awk -v target="$1" '$1 == target { print $2 }' "$here/ci-runs")
    if [ -z "$runs" ]; then
        echo "run: Tools/fuzz/ci-runs has no line for target $1" >&2
        exit 2
    fi
    echo "$runs"
}

found=0
printf '%-16s %10s %6s %7s %7s %8s  %s\n' target executions time cov ft peak-rss found
for target in "${targets[@]}"; do
    corpus="$dir/corpus/$target"
    findings="$dir/findings/$target"
    log="$dir/logs/$target.log"
    mkdir -p "$corpus" "$findings" "$dir/logs" "$dir/seeds/$target"
    options=(-rss_limit_mb=256 -malloc_limit_mb=128 -timeout=10
             -use_value_profile=1 -print_final_stats=1 -artifact_prefix="$findings/")
    if [ "$ci" -eq 1 ]; then
        options+=(-seed=1 -runs="$(ci_runs "$target")")
    else
        options+=(-max_total_time="$seconds")
    fi
    dict=$(dictionary "$target")
    [ -n "$dict" ] && options+=(-dict="$dict")
    [ "$keep_going" -eq 1 ] && options+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    seeds=("$dir/seeds/$target")
    [ -d "$here/seeds/$target" ] && seeds+=("$here/seeds/$target")
    before=$(find "$findings" -type f | wc -l)
    set +e
    # GNU time's peak RSS covers fork mode's workers too, which libFuzzer's stats do not.
    timer=()
    [ -x /usr/bin/time ] && timer=(/usr/bin/time -f 'peak-rss-kb: %M')
    started=$(date +%s)
    (cd "$dir" && "${timer[@]}" "./$target" "${options[@]}" "$corpus" "${seeds[@]}") > "$log" 2>&1
    set -e
    took=$(( $(date +%s) - started ))
    # The last status line (`#N ... cov: X ft: Y ... rss: ZMb`, or in fork mode `#N: cov: X ft: Y`)
    # and the final stats.
    status=$(grep -E '^#[0-9]+:?[[:space:]].*cov: ' "$log" | tail -1 || true)
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
    [ -n "$executions" ] || executions=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<< "$status")
    cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<< "$status")
    ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<< "$status")
    rss=$(sed -n 's/^peak-rss-kb: *//p' "$log" | tail -1 || true)
    if [ -n "$rss" ]; then rss=$((rss / 1024)); else
        rss=$(grep -oE 'rss: [0-9]+Mb' "$log" | sed 's/rss: //; s/Mb//' | sort -n | tail -1 || true)
    fi
    new=$(( $(find "$findings" -type f | wc -l) - before ))
    result="nothing"
    if [ "$new" -gt 0 ] || grep -qE '^==[0-9]+==ERROR|^SUMMARY: libFuzzer|Fatal error' "$log"; then
        found=1
        kind=$(grep -m1 -oE 'ERROR: (AddressSanitizer|libFuzzer): [a-z-]+|Fatal error: .{0,60}' "$log" || true)
        # Fork mode counts them in its status line instead.
        [ -n "$kind" ] || kind=$(grep -oE 'oom/timeout/crash: [0-9/]+' <<< "$status" || echo "see $log")
        result="$new new in $findings ($kind)"
    fi
    printf '%-16s %10s %5ss %7s %7s %6sMB  %s\n' "$target" "${executions:-?}" "$took" "${cov:-?}" "${ft:-?}" "${rss:-?}" "$result"
done
echo "logs: $dir/logs" >&2
exit "$found"
