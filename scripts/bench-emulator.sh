#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The EFA host emulator's benchmarks, printed as a Markdown section on
# stdout (for BENCHMARKS.md; `make bench` can call it).
#   scripts/bench-emulator.sh [BUILD_DIR]      default: build
# Needs BUILD_DIR/efap2p, BUILD_DIR/libefasim.so and BUILD_DIR/bench/bench_ctx
# (make build). Timings are this machine's; they are reported, never asserted.
set -euo pipefail
build=${1:-build}
efap2p="$build/efap2p"
bench="$build/bench/bench_ctx"
for f in "$efap2p" "$bench" "$build/libefasim.so"; do
	if [ ! -e "$f" ]; then
		echo "bench-emulator: $f is missing; run 'make build' first" >&2
		exit 1
	fi
done
machine=p5.48xlarge
iterations=2000
runs=7
spawns=300

. "$(dirname "$0")/lib.sh"

ctx=$("$efap2p" sim --machine "$machine" -- "$bench" "$iterations" "$runs")
start=$("$efap2p" sim --machine "$machine" -- "$bench" --startup "$spawns" /bin/true)

cat <<MD
## EFA host emulator (libefasim)

Measured $(date -u +%Y-%m-%d) on $(nproc) CPUs, $(uname -sr), machine model \`$machine\`.

| what | result |
|---|---|
| context open + \`efadv_query_device\` + close, through libibverbs/libefa and the emulator (\`bench_ctx\`, median of $runs runs of $iterations) | **$(field median_per_s "$ctx") /s** ($(field median_us "$ctx") us each; runs from $(field min_per_s "$ctx") to $(field max_per_s "$ctx") /s) |
| start-up added to a process that never touches RDMA (\`/bin/true\` spawned $spawns times with and without the library preloaded, medians) | **$(field added_us "$start") us** ($(field with_us "$start") us vs $(field without_us "$start") us) |

The first figure bounds how fast a test can open emulated devices. The second
is what \`efap2p sim\` costs every process it starts that never uses RDMA: the
library is loaded and relocated, and its constructor looks up the libc functions it
interposes; it starts no thread and reads its configuration only when an RDMA path is
first touched.
MD
