#!/usr/bin/env bash
# Build one chapter of the book on one CPU core that a busy loop shares, and time it.
#
#     bash benchmarks/bench_busy_build.sh 03-bert          # from the repository root, after `make data`
#
# The chapter's pages (and the intro, the book's root) are built with the book's own configuration
# (the same per-cell limit as `make book`) into a scratch folder, with a fresh execution cache, every
# process pinned to core 0 beside `while :; do :; done` on the same core. It fails if any page fails to
# execute; it prints the wall time. This is a student's laptop with a browser and a video call open.
set -euo pipefail
chapter=${1:?usage: bench_busy_build.sh CHAPTER (for example 03-bert)}
cd "$(dirname "$0")/.."
out=$(mktemp -d /tmp/attnbook-busy-XXXX)
{
    echo "format: jb-book"
    echo "root: intro"
    echo "chapters:"
    echo "  - file: chapters/$chapter/index"
    echo "    sections:"
    for page in chapters/"$chapter"/[0-9]*.md; do
        echo "      - file: ${page%.md}"
    done
} > "$out/_toc.yml"
taskset -c 0 sh -c 'while :; do :; done' &
busy=$!
trap 'kill $busy' EXIT
start=$SECONDS
taskset -c 0 .venv/bin/jupyter-book build . --toc "$out/_toc.yml" --path-output "$out" --keep-going \
    > "$out/build.log" 2>&1 || true
seconds=$((SECONDS - start))
if grep -q "Executing notebook failed\|execution failed" "$out/build.log"; then
    grep -B2 -A8 "Executing notebook failed\|execution failed" "$out/build.log" | head -40
    echo "FAILED: chapter $chapter on one busy core, $seconds s (log: $out/build.log)"
    exit 1
fi
echo "chapter $chapter on one core shared with a busy loop: built in $seconds s (log: $out/build.log)"
