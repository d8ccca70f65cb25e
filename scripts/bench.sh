#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench: run every benchmark and print BENCHMARKS.md on stdout.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
. scripts/lib.sh
export TMPDIR=$(efap2p_tmpdir)
trap 'rm -rf "$TMPDIR"' EXIT
count=${BENCH_COUNT:-5}

cat <<HDR
# Benchmarks

Written by \`make bench\` on $(date -u +%Y-%m-%d). Figures are medians of $count runs; compare
rows of one run only. The machine is shared with other engineers' builds and tests, busy while
this ran (load average $(cut -d' ' -f1-3 /proc/loadavg) at the start): wall times stretch by
milliseconds from run to run, so each figure that has a floor is measured beside it in the same
run, and the ratio is what holds.

## Machine
- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores available)
- Memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)
- Kernel: $(uname -r); $(go version | cut -d' ' -f3-4)
- Temporary trees on: $(df --output=fstype "$TMPDIR" | tail -1)

## The oracle (package p2p)
Method: \`go test -bench . -count $count ./p2p/\`. The emulated trees are written by package models to a
temporary directory; "cold" runs build a fresh oracle each iteration, so every sysfs read
(readlink, attribute files, config-space preads) is included. \`dwords/op\` counts config-space
dwords read.

Targets: warm lookup <= 50 ns and 0 allocs; first P2P answer for all 32 EFA NICs of
p5.48xlarge <= 2 ms with <= 8 config dwords per function on the paths (NoReasons: the oracle
the library's core makes below the info log level); full verdict matrix of a 4096-function
machine <= 1 s and <= 256 MiB; a 4,000-pair topology file read and checked in not much more
than a plain JSON decode of it (PlainJSON4000, the floor: generic values, no checks).

HDR
go test -run '^$' -bench . -benchmem -count "$count" ./p2p/ | python3 scripts/benchmd.py
for part in scripts/bench-*.sh; do
	[ -x "$part" ] || continue
	echo
	"$part" "$build"
done
