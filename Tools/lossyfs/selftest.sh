#!/usr/bin/env bash
# Shows that lossyfs keeps through a power cut what a disk keeps, and loses the rest: plain files,
# SQLite through python3's sqlite3 and through the sqlite3 shell, and injected write and sync
# failures. Builds lossyfs first. Each check prints "ok" or "FAIL"; the last line is
# "N passed, N failed", and the exit status is 0 only when none failed.
#
# Usage: Tools/lossyfs/selftest.sh [--reps N] [--keep]
#   --reps N   repetitions of each SQLite power-cut case (default 10)
#   --keep     keep the work directory
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

reps=10
keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) reps="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        *) echo "usage: $0 [--reps N] [--keep]" >&2; exit 2 ;;
    esac
done

bin="$(bash "$here/build.sh" | tail -n 1)"
if ! command -v sqlite3 >/dev/null 2>&1; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq sqlite3 >/dev/null
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/lossyfs-selftest.XXXXXX")"
back="$work/back"
mnt="$work/mnt"
ctl="$mnt/.lossyfs-control"
fs_pid=""
mkdir -p "$back" "$mnt"

# After a cut even stat of the mount point fails (EIO), so `mountpoint` cannot tell: unmount
# whenever our lossyfs runs.
unmount_fs() {
    if [ -n "$fs_pid" ]; then
        fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true
        wait "$fs_pid" || true
    fi
    fs_pid=""
}
finish() {
    unmount_fs
    if [ "$keep" -eq 1 ]; then echo "work directory: $work"; else rm -rf "$work"; fi
}
trap finish EXIT

mount_fs() {
    "$bin" "$back" "$mnt" -f 2>>"$work/lossyfs.log" &
    fs_pid=$!
    for _ in $(seq 100); do
        if mountpoint -q "$mnt"; then return 0; fi
        sleep 0.05
    done
    echo "lossyfs did not mount; its log:" >&2
    cat "$work/lossyfs.log" >&2
    exit 1
}

# Starts from an empty BACKING, unmounted.
fresh() {
    unmount_fs
    rm -rf "$back"
    mkdir -p "$back"
}

# Cuts the power with $1 ("cut" or "cut-random SEED"), then unmounts and mounts BACKING again.
power_cut() {
    echo "$1" > "$ctl"
    unmount_fs
    mount_fs
}

passed=0
failed=0
check() {
    local what="$1"
    shift
    if "$@"; then
        echo "  ok    $what"
        passed=$((passed + 1))
    else
        echo "  FAIL  $what"
        failed=$((failed + 1))
    fi
}

# The python side: small SQLite and file steps, each run as `sq STEP ARGS...`.
cat > "$work/sq.py" <<'PY'
import os, sqlite3, sys

def connect(path, sync):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA synchronous={sync}")
    return db

def setup(path, mode):
    """A table t with one row, in journal mode `mode`, written straight into BACKING."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA journal_mode={mode}")
    db.execute("CREATE TABLE t(x)")
    db.execute("INSERT INTO t VALUES (1)")
    db.close()

def commit_then(path, sync, control, command):
    """Commits one more row, then writes `command` to the control file with the connection open."""
    db = connect(path, sync)
    db.execute("BEGIN")
    db.execute("INSERT INTO t VALUES (2)")
    db.execute("COMMIT")
    with open(control, "w") as f:
        f.write(command)
    try:
        db.close()
    except sqlite3.Error:
        pass

def rows(path):
    """Prints the row count and the integrity check."""
    db = sqlite3.connect(path, isolation_level=None)
    ok = db.execute("PRAGMA integrity_check").fetchone()[0]
    print(db.execute("SELECT count(*) FROM t").fetchone()[0], ok)
    db.close()

def failing_commit(path, sync):
    """Commits one row and prints the SQLite error name it fails with, or 'committed'."""
    db = connect(path, sync)
    try:
        db.execute("INSERT INTO t VALUES (3)")
        print("committed")
    except sqlite3.Error as e:
        print(e.sqlite_errorname, e)

def append(path, data, sync):
    with open(path, "ab") as f:
        f.write(data.encode())
        if sync == "fsync":
            f.flush()
            os.fsync(f.fileno())

def create(path, data, dirsync):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, data.encode())
    os.fsync(fd)
    os.close(fd)
    if dirsync == "dirsync":
        d = os.open(os.path.dirname(path), os.O_RDONLY)
        os.fsync(d)
        os.close(d)

def write_errno(path):
    """Prints the errno name a one-byte append fails with, or 'written'."""
    try:
        append(path, "x", "")
        print("written")
    except OSError as e:
        print(os.strerror(e.errno), e.errno)

def sync_twice(path):
    """Appends 'A', then prints what the first and the second fsync return."""
    results = []
    with open(path, "ab") as f:
        f.write(b"A")
        f.flush()
        for _ in range(2):
            try:
                os.fsync(f.fileno())
                results.append("ok")
            except OSError as e:
                results.append(f"errno{e.errno}")
    print(" ".join(results))

def sectors(path, old, new):
    """Counts 512-byte sectors holding only `old` bytes, only `new` bytes, and anything else."""
    data = open(path, "rb").read()
    counts = [0, 0, 0]
    for i in range(0, len(data), 512):
        s = set(data[i:i + 512])
        counts[0 if s == {ord(old)} else 1 if s == {ord(new)} else 2] += 1
    print(*counts)

globals()[sys.argv[1]](*sys.argv[2:])
PY
sq() { python3 "$work/sq.py" "$@"; }

# For the sqlite3 shell's .system: writes its arguments, as one command, to the control file.
printf '#!/bin/sh\necho "$*" > "%s"\n' "$ctl" > "$work/control"
chmod +x "$work/control"

echo "lossyfs self-test ($bin, $reps repetitions, SQLite $(sqlite3 --version | cut -d' ' -f1))"

echo "0. no power cut: a clean unmount keeps everything"
fresh
mount_fs
sq append "$mnt/f" "unsynced" ""
mkdir "$mnt/d"
unmount_fs
check "unsynced data and names are in BACKING after a clean unmount" \
    [ "$(cat "$back/f")" = "unsynced" -a -d "$back/d" -a ! -e "$back/.lossyfs-trash" ]

echo "a. file data"
fresh
printf 'old' > "$back/synced"
printf 'old' > "$back/unsynced"
mount_fs
sq append "$mnt/synced" "+new" fsync
sq append "$mnt/unsynced" "+new" ""
check "reads see unsynced data before the cut" [ "$(cat "$mnt/unsynced")" = "old+new" ]
power_cut cut
check "written without fsync: back to its old content after cut" [ "$(cat "$mnt/unsynced")" = "old" ]
check "written and fsynced: kept" [ "$(cat "$mnt/synced")" = "old+new" ]

echo "b. names"
fresh
mkdir "$back/one" "$back/two"
printf 'keep me' > "$back/one/removed"
mount_fs
sq create "$mnt/one/file" "data" ""
sq create "$mnt/two/file" "data" dirsync
rm "$mnt/one/removed"
mv "$mnt/two/file" "$mnt/two/renamed"
mkdir "$mnt/newdir"
sq create "$mnt/newdir/inner" "data" dirsync
power_cut cut
check "created and fsynced, directory not fsynced: gone after cut" [ ! -e "$mnt/one/file" ]
check "created, fsynced, directory fsynced: kept" [ "$(cat "$mnt/two/file")" = "data" ]
check "renamed without a directory fsync: back under its old name" [ ! -e "$mnt/two/renamed" ]
check "unlinked without a directory fsync: back after cut" [ "$(cat "$mnt/one/removed")" = "keep me" ]
check "a synced directory inside an unsynced mkdir: gone" [ ! -e "$mnt/newdir" ]
unmount_fs

# Commits one row over the one-row table, cuts the power, and sets `found` to what is found after
# remounting: the row count and the integrity check ("2 ok" when the commit survived).
sql_cut() { # MODE SYNC CUT-COMMAND SHELL(python|cli)
    fresh
    sq setup "$back/db" "$1"
    mount_fs
    if [ "$4" = python ]; then
        sq commit_then "$mnt/db" "$2" "$ctl" "$3"
    else
        printf 'PRAGMA synchronous=%s;\nINSERT INTO t VALUES (2);\n.system %s %s\n' "$2" "$work/control" "$3" \
            | sqlite3 "$mnt/db" >/dev/null 2>&1 || true
    fi
    unmount_fs
    mount_fs
    if [ "$4" = python ]; then
        found="$(sq rows "$mnt/db")"
    else
        found="$(sqlite3 "$mnt/db" "SELECT count(*) FROM t; PRAGMA integrity_check" | paste -sd' ')"
    fi
    unmount_fs
}

# Runs sql_cut $reps times (cut-random with seeds 1..reps), counts in `kept`, `lost` and `damaged`
# how often the commit survived, was lost, or left a damaged database, and prints the counts.
sql_cut_reps() { # MODE SYNC cut|cut-random SHELL
    local command
    kept=0 lost=0 damaged=0
    for i in $(seq "$reps"); do
        command="$3"
        if [ "$3" = cut-random ]; then command="cut-random $i"; fi
        sql_cut "$1" "$2" "$command" "$4"
        case "$found" in
            "2 ok") kept=$((kept + 1)) ;;
            "1 ok") lost=$((lost + 1)) ;;
            *) damaged=$((damaged + 1)); echo "    $1 $2 $command: $found" ;;
        esac
    done
    printf '  %-42s commit survived %2d/%d, lost %2d/%d, database damaged %d\n' \
        "$1, synchronous=$2, $3:" "$kept" "$reps" "$lost" "$reps" "$damaged"
}

echo "c. SQLite WAL (python3 sqlite3)"
sql_cut_reps WAL FULL cut python
check "WAL + FULL: every committed transaction survives cut" [ "$kept" -eq "$reps" ]
sql_cut_reps WAL FULL cut-random python
check "WAL + FULL: every committed transaction survives cut-random" [ "$kept" -eq "$reps" ]
sql_cut_reps WAL OFF cut python
check "WAL + OFF: a committed transaction is lost after cut" [ "$lost" -ge 1 -a "$damaged" -eq 0 ]

echo "d. SQLite rollback journal, journal_mode=DELETE (sqlite3 shell)"
sql_cut_reps DELETE FULL cut cli
check "DELETE + FULL: the journal's unlink is not durable; the hot journal rolls the commit back" \
    [ "$lost" -eq "$reps" ]
sql_cut_reps DELETE FULL cut-random cli
check "DELETE + FULL under cut-random: the old or the new state, never a damaged database" [ "$damaged" -eq 0 ]
sql_cut_reps DELETE EXTRA cut cli
check "DELETE + EXTRA: every committed transaction survives cut" [ "$kept" -eq "$reps" ]
sql_cut_reps DELETE EXTRA cut-random cli
check "DELETE + EXTRA: every committed transaction survives cut-random" [ "$kept" -eq "$reps" ]

echo "e. failing disk"
fresh
sq setup "$back/db" DELETE
printf 'old' > "$back/f"
mount_fs
echo "fail-write 1 enospc" > "$ctl"
out="$(sq write_errno "$mnt/f")"
check "fail-write 1 enospc: the next write fails with ENOSPC ($out)" [ "$out" = "No space left on device 28" ]
echo "fail-write 1 enospc" > "$ctl"
out="$(sq failing_commit "$mnt/db" FULL)"
check "fail-write 1 enospc: python3 sqlite3 reports SQLITE_FULL ($out)" [ "${out%% *}" = SQLITE_FULL ]
echo "fail-write 1 enospc" > "$ctl"
out="$(sqlite3 "$mnt/db" "INSERT INTO t VALUES (4)" 2>&1 || true)"
check "fail-write 1 enospc: the sqlite3 shell reports it ($out)" grep -q "database or disk is full" <<<"$out"
echo "fail-sync 1 eio" > "$ctl"
out="$(sq failing_commit "$mnt/db" FULL)"
check "fail-sync 1 eio: python3 sqlite3's commit fails with an I/O error ($out)" [ "${out%% *}" = SQLITE_IOERR_FSYNC ]
echo "fail-sync 1 eio" > "$ctl"
out="$(sqlite3 "$mnt/db" "PRAGMA synchronous=FULL; INSERT INTO t VALUES (5)" 2>&1 || true)"
check "fail-sync 1 eio: the sqlite3 shell's commit fails ($out)" grep -q "disk I/O error" <<<"$out"
echo "fail-sync 1 eio" > "$ctl"
out="$(sq sync_twice "$mnt/f")"
check "fail-sync 1 eio: the fsync fails, the next one succeeds ($out)" [ "$out" = "errno5 ok" ]
check "after the failed fsync, reads still see the data" [ "$(cat "$mnt/f")" = "oldA" ]
echo "clear" > "$ctl"
power_cut cut
check "the data of the failed fsync is lost after cut, though a later fsync succeeded" [ "$(cat "$mnt/f")" = "old" ]
out="$(sq rows "$mnt/db")"
unmount_fs
check "the database after the failed commits and the cut: one row, intact ($out)" [ "$out" = "1 ok" ]

echo "f. cut-random tears unsynced writes at 512-byte sectors"
torn=0 mixed=0
for seed in $(seq "$reps"); do
    fresh
    head -c 65536 /dev/zero | tr '\0' a > "$back/f"
    mount_fs
    python3 -c "import sys; f = open(sys.argv[1], 'r+b'); f.write(b'b' * 65536); f.close()" "$mnt/f"
    power_cut "cut-random $seed"
    read -r olds news others <<<"$(sq sectors "$mnt/f" a b)"
    if [ "$others" -ne 0 ]; then mixed=$((mixed + 1)); fi
    if [ "$olds" -gt 0 ] && [ "$news" -gt 0 ]; then torn=$((torn + 1)); fi
    echo "    seed $seed: $olds sectors old, $news new"
done
unmount_fs
check "every sector is wholly old or wholly new" [ "$mixed" -eq 0 ]
check "some cuts tore a write ($torn of $reps)" [ "$torn" -ge 1 ]

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
