#!/usr/bin/env bash
# Builds lossyfs into Tools/lossyfs/.build/lossyfs, installing libfuse3 and fusermount3 first when
# they are missing (Debian). Prints the path of the binary.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

if ! pkg-config --exists fuse3 2>/dev/null || ! command -v fusermount3 >/dev/null 2>&1; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "lossyfs: installing fuse3 libfuse3-dev pkg-config" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq fuse3 libfuse3-dev pkg-config >/dev/null
fi

mkdir -p "$here/.build"
# Paths are built with snprintf into PATH_MAX buffers; one that would not fit is one the kernel
# refuses anyway, hence -Wno-format-truncation.
# shellcheck disable=SC2046  # pkg-config prints several flags
cc -std=c11 -O2 -Wall -Wextra -Wno-format-truncation -o "$here/.build/lossyfs" "$here/lossyfs.c" $(pkg-config --cflags --libs fuse3)
echo "$here/.build/lossyfs"
