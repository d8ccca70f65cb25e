#!/bin/sh
# SPDX-License-Identifier: MIT
# The first P2P_DMA answers from the boot-time file's index, traced (the
# window bench_shim cold marks): the library changes no signal mask (the
# lock that publishes a new device names its holder, so that no signal
# needs blocking around it), and no file but the index and the boot ID is
# opened.
#   check_boot_syscalls.sh EFAP2P LIBEFAP2P BENCH_SHIM
set -u
efap2p=$1 lib=$2 bench=$3
command -v strace >/dev/null || { echo "check_boot_syscalls: no strace"; exit 77; }
trace=$(mktemp)
trap 'rm -f "$trace"' EXIT
out=$(LD_PRELOAD="$lib" "$efap2p" sim -- sh -c \
	'"$1" export --boot 2>/dev/null && exec strace -f -qq -o "$3" "$2" cold' sh "$efap2p" "$bench" "$trace") || {
	echo "check_boot_syscalls: the run failed: $out"; exit 1; }
devices=$(printf '%s\n' "$out" | tr ' ' '\n' | sed -n 's/^devices=//p')
window=$(awk '/marker-cold-begin/ {on = 1; next} /marker-cold-end/ {on = 0} on' "$trace")
masks=$(printf '%s\n' "$window" | grep -c 'rt_sigprocmask(')
opens=$(printf '%s\n' "$window" | grep 'openat(' | grep -v -e 'topology.json.idx"' -e 'random/boot_id"')
fail=0
if [ -z "$devices" ] || [ "$devices" -lt 1 ]; then
	echo "check_boot_syscalls: no devices answered: $out"; fail=1
elif [ "$masks" -gt 0 ]; then
	echo "check_boot_syscalls: $masks rt_sigprocmask calls for $devices devices, want none"; fail=1
fi
if [ -n "$opens" ]; then
	printf 'check_boot_syscalls: files opened besides the index and the boot ID:\n%s\n' "$opens"; fail=1
fi
[ "$fail" = 0 ] && echo "check_boot_syscalls: $devices devices, $masks signal-mask calls"
exit "$fail"
