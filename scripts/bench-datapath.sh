#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The emulator's data path beside libfabric's tcp and shm providers, as a
# Markdown section on stdout (for BENCHMARKS.md; `make bench` calls it).
#   scripts/bench-datapath.sh [BUILD_DIR]      default: build
# BENCH_COUNT runs of each row (default 5); EFASIM_BASELINE_LIBRARY adds the
# rows of another libefasim.so. See scripts/bench-datapath.py.
set -euo pipefail
build=${1:-build}
for f in "$build/efap2p" "$build/libefasim.so"; do
	if [ ! -e "$f" ]; then
		echo "bench-datapath: $f is missing; run 'make build' first" >&2
		exit 1
	fi
done
if ! command -v fi_pingpong >/dev/null; then
	echo "bench-datapath: fi_pingpong is missing; 'make test-deps' installs libfabric-bin" >&2
	exit 1
fi
exec python3 "$(dirname "$0")/bench-datapath.py" "$build"
