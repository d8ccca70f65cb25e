#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Go API's benchmarks (package efadv over verbs), run inside the
# emulated p5.48xlarge and printed as a Markdown section on stdout (for
# BENCHMARKS.md; scripts/bench.sh runs it).
#   scripts/bench-goapi.sh [BUILD_DIR]      default: build
# Needs BUILD_DIR/libefasim.so (make build) and rdma-core's libibverbs and
# libefa. Timings are this machine's; they are reported, never asserted.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
if [ ! -e "$build/libefasim.so" ]; then
	echo "bench-goapi: $build/libefasim.so is missing; run 'make build' first" >&2
	exit 1
fi
lib=$(cd "$build" && pwd)/libefasim.so
. scripts/lib.sh
tmp=$(efap2p_tmpdir)
trap 'rm -rf "$tmp"' EXIT
runs=${BENCH_COUNT:-5}
machine=p5.48xlarge

# Interleaved runs (every benchmark once per run), so that a slow spell of
# the machine does not land on one row only.
for _ in $(seq "$runs"); do
	CGO_ENABLED=0 EFASIM_LIBRARY="$lib" EFAP2P_SIMTEST_MODELS="$machine" TMPDIR="$tmp" \
		go test -run '^$' -bench . -benchmem -count 1 ./efadv/ >>"$tmp/bench.txt"
done

cat <<MD
## Go API (packages verbs and efadv)

Measured $(date -u +%Y-%m-%d) on $(nproc) CPUs, $(uname -sr), inside the emulated
\`$machine\` (libibverbs, libefa and libefasim.so loaded as on a real host), built with
CGO_ENABLED=0: every C call goes through purego. Method: \`go test -bench . ./efadv/\`,
$runs interleaved runs, medians.

- \`PuregoCall\`: libc's \`getpid\` through purego (a system call included): the floor of any C call.
- \`QueryDeviceBare\`: libefa's \`efadv_query_device\` through purego and nothing else.
- \`QueryDeviceLibefa\`: the same through the package's wrapper (context check, Go attribute), without P2P.
- \`QueryDevice\`: \`efadv.QueryDevice\` warm, P2P_DMA included.
- \`QueryDeviceCold\`: the first \`QueryDevice\` of every NIC of the model with a new oracle, sysfs reads included (one op = all NICs).
- \`QueryP2P\`: \`efadv.QueryP2P\` warm (no C call).
- \`QueryP2PDmabuf\`: \`efadv.QueryP2PDmabuf\` warm: \`fstatfs\`, \`open\`/\`read\`/\`close\` of fdinfo through libc (answered by the emulator), cached verdicts.

MD
python3 scripts/benchmd.py <"$tmp/bench.txt"
python3 - "$tmp/bench.txt" <<'PY'
import re, statistics, sys
ns = {}
for line in open(sys.argv[1]):
    m = re.match(r'^Benchmark(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op', line)
    if m:
        ns.setdefault(m.group(1), []).append(float(m.group(3)))
med = {k: statistics.median(v) for k, v in ns.items()}
need = ['QueryDeviceBare', 'QueryDeviceLibefa', 'QueryDevice', 'QueryP2P']
if all(k in med for k in need):
    added = med['QueryDevice'] - med['QueryDeviceBare']
    oracle = med['QueryDevice'] - med['QueryDeviceLibefa']
    print()
    print('Target: a warm `QueryDevice` within 100 ns of the bare purego call; a warm `QueryP2P` within')
    print('the purego call plus 100 ns.')
    print()
    print('| what | median |')
    print('|---|---|')
    print('| `QueryDevice` warm minus the bare call (target <= 100 ns) | **%.0f ns** |' % added)
    print('| of which the P2P_DMA part (`QueryDevice` minus `QueryDeviceLibefa`) | %.0f ns |' % oracle)
    print('| `QueryP2P` warm, whole call (target <= %.0f ns: bare call + 100) | **%.1f ns** |' % (med['QueryDeviceBare'] + 100, med['QueryP2P']))
    print()
    print('Differences of medians of noisy figures: a few nanoseconds either way are noise.')
PY
