#!/bin/sh
# SPDX-License-Identifier: MIT
# A preloaded program in a pids cgroup with no room for another thread:
# the library keeps its Go core out (starting the Go runtime would abort
# the process) and the program runs to its end. Needs a writable pids
# cgroup (v2 with the pids controller, or v1's); exits 77 (skipped) without.
#   check_pids.sh EFAP2P LIBEFAP2P TEST_HOST
set -u
efap2p=$1 lib=$2 host=$3
if [ -w /sys/fs/cgroup/pids ]; then
	base=/sys/fs/cgroup/pids                     # v1
elif [ -w /sys/fs/cgroup/cgroup.subtree_control ] && grep -qw pids /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	base=/sys/fs/cgroup                          # v2
	echo +pids > "$base/cgroup.subtree_control" 2>/dev/null
else
	echo "check_pids: no writable pids cgroup"; exit 77
fi
cg=$(mktemp -d "$base/efap2p-test.XXXXXX" 2>/dev/null) || { echo "check_pids: cannot make a cgroup"; exit 77; }
[ -e "$cg/pids.max" ] || { rmdir "$cg"; echo "check_pids: no pids controller in $cg"; exit 77; }
trap 'rmdir "$cg" 2>/dev/null' EXIT
out=$(env -u EFAP2P_TOPOLOGY LD_PRELOAD="$lib" "$efap2p" sim -- sh -c \
	'echo 1 > "$1/pids.max" && echo $$ > "$1/cgroup.procs" && exec "$2" list' sh "$cg" "$host" 2>&1)
rc=$?
echo "$out" | grep -v '^rdmap'
[ "$rc" = 0 ] || { echo "FAIL: exit $rc in a pids cgroup of 1"; exit 1; }
echo "$out" | grep -qx "core 0 threads 1" || { echo "FAIL: the Go core was loaded"; exit 1; }
echo "$out" | grep -q "no room for the Go runtime's threads" || { echo "FAIL: the reason was not said"; exit 1; }
