#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `efap2p check` on the emulated p5.48xlarge, side by side with
# `lspci -tv` reading the same tree, printed as a Markdown section on
# stdout (for BENCHMARKS.md; `make bench` calls it).
#   scripts/bench-check.sh [BUILD_DIR]      default: build
# Needs BUILD_DIR/efap2p (make build) and lspci (pciutils, make test-deps).
# Timings are this machine's; they are reported, never asserted.
set -euo pipefail
build=${1:-build}
efap2p="$build/efap2p"
[ -x "$efap2p" ] || { echo "bench-check: $efap2p is missing; run 'make build' first" >&2; exit 1; }
command -v lspci >/dev/null || { echo "bench-check: lspci is missing (pciutils: make test-deps)" >&2; exit 1; }
machine=p5.48xlarge
runs=${BENCH_CHECK_RUNS:-101}

. "$(dirname "$0")/lib.sh"
tmp=$(efap2p_tmpdir)
trap 'rm -rf "$tmp"' EXIT
tree="$tmp/tree"
"$efap2p" sim write --machine "$machine" "$tree" >/dev/null

# The commands timed: every run is a fresh process reading the tree cold
# (no cache survives a process), the way a health check runs.
check=("$efap2p" check --sysfs "$tree")
prom=("$efap2p" check --sysfs "$tree" --format prometheus)
line=("$efap2p" check --sysfs "$tree" --format line)
lspci=(lspci -tv -A linux-sysfs -O "sysfs.path=$tree/bus/pci")
"${check[@]}" >/dev/null || { echo "bench-check: efap2p check did not exit 0 on $machine" >&2; exit 1; }
[ "$("${lspci[@]}" | grep -c 'Elastic Fabric Adapter')" = 32 ] || { echo "bench-check: lspci does not see the 32 EFA devices" >&2; exit 1; }

# us CMD...: the wall time of one run in microseconds.
us() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1 || true
	local t1=$EPOCHREALTIME
	echo $(( (${t1/./} - ${t0/./}) ))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

: >"$tmp/check" ; : >"$tmp/prom" ; : >"$tmp/line" ; : >"$tmp/lspci"
for _ in 1 2 3; do us "${check[@]}" >/dev/null; us "${lspci[@]}" >/dev/null; done
for ((i = 0; i < runs; i++)); do
	# Interleaved, so that drift in the machine's load hits all alike.
	us "${check[@]}" >>"$tmp/check"
	us "${lspci[@]}" >>"$tmp/lspci"
	us "${prom[@]}" >>"$tmp/prom"
	us "${line[@]}" >>"$tmp/line"
done
mc=$(median <"$tmp/check") ml=$(median <"$tmp/lspci") mp=$(median <"$tmp/prom") mn=$(median <"$tmp/line")
ratio=$(awk -v a="$mc" -v b="$ml" 'BEGIN {printf "%.2f", a / b}')
verdict="within the target"
awk -v r="$ratio" 'BEGIN {exit !(r > 2)}' && verdict="**over the target**"
pairs=$("$efap2p" check --sysfs "$tree" --json | grep -c '"nic": "0000' || true)
# In process, without the process start: the Go benchmark (a fresh oracle
# each iteration, so every sysfs read is included), median of 5.
inproc=$(TMPDIR="$tmp" go test -run '^$' -bench BenchmarkCheckP5Cold -benchmem -count 5 ./nodecheck/ |
	awk '/^BenchmarkCheckP5Cold/ {print $3, $5, $7}' | sort -n | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
read -r in_ns in_b in_allocs <<<"$inproc"

cat <<MD
## The node check (efap2p check)

Measured $(date -u +%Y-%m-%d) on $(nproc) CPUs, $(uname -sr), machine model \`$machine\` written
to $(df --output=fstype "$tmp" | tail -1); $(lspci --version). Wall time of one fresh process,
median of $runs interleaved runs each (bash \`\$EPOCHREALTIME\` around the command, output to
/dev/null): \`efap2p check\` reads the whole tree once ($pairs accelerator x EFA NIC verdicts,
DMI, modules, driver attributes) and compares it with the model; \`lspci -tv\` reads every
function's config header and names it.

| command | median |
|---|---|
| \`efap2p check --sysfs TREE\` (text) | **$((mc / 1000)).$(printf %03d $((mc % 1000))) ms** |
| \`efap2p check --sysfs TREE --format prometheus\` | $((mp / 1000)).$(printf %03d $((mp % 1000))) ms |
| \`efap2p check --sysfs TREE --format line\` | $((mn / 1000)).$(printf %03d $((mn % 1000))) ms |
| \`lspci -tv -A linux-sysfs -O sysfs.path=TREE/bus/pci\` | $((ml / 1000)).$(printf %03d $((ml % 1000))) ms |
| in process, \`nodecheck.Run\` + text (\`go test -bench BenchmarkCheckP5Cold ./nodecheck/\`, median of 5) | $(awk -v n="$in_ns" 'BEGIN {printf "%.3f", n / 1e6}') ms, $in_b B, $in_allocs allocs |

\`efap2p check\` takes **${ratio}x** the time of \`lspci -tv\` on the same tree: $verdict
(no slower than twice \`lspci -tv\`).
MD
