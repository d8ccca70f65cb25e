#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `efap2p env` on the emulated p5.48xlarge, from the boot-time file and
# computed, beside the process start it cannot go below and `efap2p check`,
# printed as a Markdown section on stdout (for BENCHMARKS.md; `make bench`
# calls it).
#   scripts/bench-env.sh [BUILD_DIR]      default: build
# Timings are this machine's; they are reported, never asserted.
set -euo pipefail
build=${1:-build}
efap2p="$build/efap2p"
[ -x "$efap2p" ] || { echo "bench-env: $efap2p is missing; run 'make build' first" >&2; exit 1; }
machine=p5.48xlarge
runs=${BENCH_ENV_RUNS:-101}

. "$(dirname "$0")/lib.sh"
tmp=$(efap2p_tmpdir)
trap 'rm -rf "$tmp"' EXIT
# two trees of the model: one with the boot-time files (export --boot, as
# the unit writes them), one without
for t in boot computed; do "$efap2p" sim write --machine "$machine" "$tmp/$t" >/dev/null; done
"$efap2p" export --sysfs "$tmp/boot" --boot 2>/dev/null
kernel=--kernel=$(sed -n 's/^ *"kernel": *"\(.*\)",*$/\1/p' "$(dirname "$0")/../models/machines/$machine.json")

# The commands timed, each a fresh process, as slurmstepd runs a TaskProlog.
floor=("$efap2p" --version)
boot=("$efap2p" env --sysfs "$tmp/boot" "$kernel" --format slurm)
computed=("$efap2p" env --sysfs "$tmp/computed" "$kernel" --format slurm)
check=("$efap2p" check --sysfs "$tmp/boot" "$kernel" --format line)
out=$("${boot[@]}" 2>/dev/null)
grep -q '^export NCCL_TOPO_FILE=' <<<"$out" || { echo "bench-env: efap2p env names no NCCL topology from the boot-time files" >&2; exit 1; }
out=$("${computed[@]}" 2>&1)
grep -q 'computed from sysfs' <<<"$out" || { echo "bench-env: efap2p env without boot-time files does not say it computed" >&2; exit 1; }

us() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1 || true
	local t1=$EPOCHREALTIME
	echo $(( (${t1/./} - ${t0/./}) ))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { awk -v u="$1" 'BEGIN {printf "%.1f ms", u / 1000}'; }

: >"$tmp/floor"; : >"$tmp/boot.t"; : >"$tmp/computed.t"; : >"$tmp/check"
for _ in 1 2 3; do us "${boot[@]}" >/dev/null; us "${computed[@]}" >/dev/null; done
for ((i = 0; i < runs; i++)); do
	# Interleaved, so that drift in the machine's load hits all alike.
	us "${floor[@]}" >>"$tmp/floor"
	us "${boot[@]}" >>"$tmp/boot.t"
	us "${computed[@]}" >>"$tmp/computed.t"
	us "${check[@]}" >>"$tmp/check"
done
mf=$(median <"$tmp/floor") mb=$(median <"$tmp/boot.t") mc=$(median <"$tmp/computed.t") mk=$(median <"$tmp/check")
# In process, without the process start (a fresh oracle each iteration),
# median of 5.
inproc() {
	TMPDIR="$tmp" go test -run '^$' -bench "$1" -benchmem -count 5 ./jobenv/ |
		awk -v b="$1" '$1 ~ "^"b {print $3, $5, $7}' | sort -n | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}'
}
read -r ib_ns ib_b ib_allocs <<<"$(cd "$(dirname "$0")/.." && inproc BenchmarkEnvP5BootFile)"
read -r ic_ns ic_b ic_allocs <<<"$(cd "$(dirname "$0")/.." && inproc BenchmarkEnvP5Computed)"

cat <<MD
## The launcher's environment (efap2p env)

Measured $(date -u +%Y-%m-%d) on $(nproc) CPUs, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg),
machine model \`$machine\` written to $(df --output=fstype "$tmp" | tail -1). Wall time of one fresh
process, median of $runs interleaved runs each (bash \`\$EPOCHREALTIME\` around the command,
output to /dev/null), as a Slurm TaskProlog runs it for every task: the node check of the task's
pairs (256 GPU-EFA NIC pairs here), the NCCL topology's header, the lines.

| command | median |
|---|---|
| \`efap2p --version\` (the process start: the floor) | $(ms "$mf") |
| \`efap2p env --format slurm\`, from the boot-time file (\`export --boot\`) | **$(ms "$mb")** |
| \`efap2p env --format slurm\`, computed from sysfs (no boot-time file) | $(ms "$mc") |
| \`efap2p check --format line\` on the same tree | $(ms "$mk") |
| in process, from the boot-time file (\`go test -bench BenchmarkEnvP5BootFile ./jobenv/\`, median of 5) | $(awk -v n="$ib_ns" 'BEGIN {printf "%.1f ms", n / 1e6}'), $ib_b B, $ib_allocs allocs |
| in process, computed (\`BenchmarkEnvP5Computed\`) | $(awk -v n="$ic_ns" 'BEGIN {printf "%.1f ms", n / 1e6}'), $ic_b B, $ic_allocs allocs |

The work is the node check's (\`efap2p check\` reads the PCI functions' attributes to find the
accelerators and NICs whichever source answers). On the emulated tree, whose config space reads
cost nothing, the boot-time file saves little time; on a real VM each config dword costs ~18 us,
and without root the computed answer is uncertain, which never sets \`FI_HMEM_DISABLE_P2P\`. The
probe it spares libfabric costs seconds (a CUDA context, an allocation, a dma-buf export, a
registration).
MD
