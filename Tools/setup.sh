#!/usr/bin/env bash
# Installs what chunkmigrate needs on a Debian machine that has Swift: the SQLite, LZ4 and zlib
# development packages (headers and pkg-config files) and the sqlite3 shell the benchmark and
# the kill-and-resume harness use, and tmux for a test. Does nothing when they are already there.
set -euo pipefail

missing=()
pkg-config --exists sqlite3 2>/dev/null || missing+=(libsqlite3-dev)
pkg-config --exists liblz4 2>/dev/null || missing+=(liblz4-dev)
pkg-config --exists zlib 2>/dev/null || missing+=(zlib1g-dev)
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
# A terminal for the test of the progress line (tmux, read back with capture-pane).
command -v tmux >/dev/null 2>&1 || missing+=(tmux)

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
