#!/usr/bin/env bash
# The Swift sources laid out by the toolchain's swift-format with the repository's .swift-format:
# four spaces, lines of up to 140 columns, and layout only (every rule that would rewrite code is
# off, so formatting never changes what the code does).
#
#   Tools/format.sh            formats every Swift file of the package in place
#   Tools/format.sh --check    changes nothing; fails naming each file the formatter would change
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.swift')
if [ "${1:-}" = "--check" ]; then
    if ! swift format lint --strict --parallel "${files[@]}"; then
        echo "format: the files above are not as swift-format lays them out; run Tools/format.sh" >&2
        exit 1
    fi
    echo "format: ${#files[@]} files as swift-format lays them out"
else
    swift format format --in-place --parallel "${files[@]}"
fi
