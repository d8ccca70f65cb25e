#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The emulator's data path: libfabric's fi_pingpong (libfabric-bin) over
# emulated EFA, printed as a Markdown section on stdout (for BENCHMARKS.md;
# `make bench` calls it).
#   scripts/bench-datapath.sh [BUILD_DIR]      default: build
# Figures to watch, no targets: the device is a thread of each process and
# moves bytes through shared memory, so they depend on the CPUs free.
set -euo pipefail
build=${1:-build}
efap2p="$build/efap2p"
for f in "$efap2p" "$build/libefasim.so"; do
	if [ ! -e "$f" ]; then
		echo "bench-datapath: $f is missing; run 'make build' first" >&2
		exit 1
	fi
done
if ! command -v fi_pingpong >/dev/null; then
	echo "bench-datapath: fi_pingpong is missing; 'make deps' installs libfabric-bin" >&2
	exit 1
fi
. "$(dirname "$0")/lib.sh"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# pingpong EP SIZE ITERATIONS one|two: the client's result row
# "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec"
pingpong() {
	local ep=$1 size=$2 iters=$3 hosts=$4 p out fab
	p=$(port)
	local args="-p efa -e $ep -S $size -I $iters"
	if [ "$hosts" = one ]; then
		out=$(timeout 300 env FI_EFA_ENABLE_SHM_TRANSFER=0 "$efap2p" sim -- sh -c \
			"fi_pingpong $args -B $p >/dev/null 2>&1 & sleep 0.5; fi_pingpong $args -P $p 127.0.0.1; wait")
	else
		fab=$(efap2p_tmpdir)
		timeout 300 "$efap2p" sim --fabric "$fab" -- fi_pingpong $args -B "$p" >/dev/null 2>&1 &
		sleep 0.5
		out=$(timeout 300 "$efap2p" sim --fabric "$fab" -- fi_pingpong $args -P "$p" 127.0.0.1)
		wait
		rm -rf "$fab"
	fi
	echo "$out" | awk '$1 ~ /^[0-9]/ {row=$0} END {print row}'
}

row() { # label EP SIZE ITERATIONS HOSTS
	local r
	r=$(pingpong "$2" "$3" "$4" "$5")
	set -- "$1" $r
	echo "| $1 | $3 | **$(awk -v u="$8" 'BEGIN {printf "%.0f", 1e6 / u}') /s** | $8 us | **$7 MB/s** |"
}

cat <<MD
## EFA emulator data path (fi_pingpong)

Measured $(date -u +%Y-%m-%d) on $(nproc) CPUs, $(uname -sr), machine model \`p5.48xlarge\`,
libfabric $(dpkg-query -W -f '${Version}' libfabric1 2>/dev/null || echo '?'). \`fi_pingpong -p efa\`
server and client; "one host": both under one \`efap2p sim\` with
\`FI_EFA_ENABLE_SHM_TRANSFER=0\` (libfabric would carry same-host rdm traffic over its shm
provider instead of the device); "two hosts": two \`efap2p sim --fabric DIR\`. A round trip is
two messages; rate = 1 / (usec/xfer), as fi_pingpong counts.

| run | iterations | messages | usec/xfer | bandwidth |
|---|---|---|---|---|
MD
row "rdm (SRD), 64 B, one host" rdm 64 2000 one
row "rdm (SRD), 64 B, two hosts" rdm 64 2000 two
row "dgram (UD), 64 B, one host" dgram 64 2000 one
row "rdm (SRD), 64 KiB, one host" rdm 65536 200 one
row "rdm (SRD), 1 MiB, one host" rdm 1048576 50 one
row "rdm (SRD), 1 MiB, two hosts" rdm 1048576 50 two
cat <<MD

The device thread naps between doorbells (it cannot see a plain store to a doorbell
page), 10 us while traffic is recent; on a machine where fi_pingpong's busy-polling
threads take every CPU, the latency is the scheduler's. The start-up cost for processes
that never create a QP is in the emulator section (\`scripts/bench-emulator.sh\`): the
device thread starts with a process's first QP, so it adds nothing there.
MD
