#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The emulator's data path beside libfabric's tcp and shm providers, as a
# Markdown section on stdout (for BENCHMARKS.md; `make bench` calls it).
#   scripts/bench-datapath.sh [BUILD_DIR]      default: build
# BENCH_COUNT runs of each row (default 5); EFASIM_BASELINE_LIBRARY adds the
# rows of another libefasim.so. As root, the same rows on Debian 13 too
# (libfabric 2.1), in make test-debian13's root (scripts/debian13.sh builds
# it when it is not there yet). See scripts/bench-datapath.py.
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
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" = 0 ] && command -v mmdebstrap >/dev/null && "$here/debian13.sh" "$build" root >&2; then
	export BENCH_DEBIAN13="$here/debian13.sh"
else
	unset BENCH_DEBIAN13
fi
exec python3 "$here/bench-datapath.py" "$build"
