#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A program preloaded with libefap2p, under valgrind --error-exitcode, with
# the library's suppressions (dist/libefap2p.supp, installed as
# share/efap2p/libefap2p.supp), inside the emulated p5.48xlarge:
#   - it asks every EFA device for P2P_DMA, which loads the Go core, and
#     valgrind exits 0;
#   - without the suppressions the same run fails (the core was loaded and
#     the entries are needed);
#   - with them, an error of the program's own is still reported (they name
#     Go runtime frames only), and so are the Go threads' possible leaks
#     when the suppressions are left out;
#   - with a topology file the core reads (the JSON: its index removed, or
#     the file edited by hand after export wrote it, which makes the index
#     stale), valgrind exits 0 with the suppressions too.
#   check_valgrind.sh VALGRIND EFAP2P LIBEFAP2P SUPP TEST_VALGRIND
set -euo pipefail
valgrind=$1 efap2p=$2 lib=$3 supp=$4 prog=$5
log=$(mktemp "${TMPDIR:-/tmp}/efap2p-valgrind.XXXXXX")
trap 'rm -f "$log"' EXIT
# vg [ARGS...]: the program under valgrind; with $setup set, that shell
# command runs first inside the emulated host (its topology file)
setup=""
vg() {
	env -u EFAP2P_MODE -u EFAP2P_TOPOLOGY -u EFAP2P_CORE LD_PRELOAD="$lib" \
		"$efap2p" sim --machine p5.48xlarge -- sh -c "$setup"'
		exec "$@"' sh "$valgrind" --error-exitcode=99 \
		--leak-check=full --show-leak-kinds=definite,indirect,possible \
		--errors-for-leak-kinds=definite,indirect "$@" >"$log" 2>&1
}
fail() { echo "FAIL: $*"; cat "$log"; exit 1; }

vg --suppressions="$supp" "$prog" || fail "with the suppressions: exit $?"
grep -q 'test_valgrind: 32 devices with P2P_DMA' "$log" || fail "the core did not answer"
grep -q '_cgo_try_pthread_create' "$log" && fail "a Go thread's leak report is not suppressed"
suppressed=$(sed -n 's/.*ERROR SUMMARY: 0 errors from 0 contexts (suppressed: \([0-9]*\) from.*/\1/p' "$log")
[ "${suppressed:-0}" -gt 0 ] || fail "no error suppressed: was the Go core loaded?"

rc=0
vg "$prog" || rc=$?
[ "$rc" = 99 ] || fail "without the suppressions: exit $rc, want 99 (errors in the Go runtime)"
grep -q 'runtime\.' "$log" || fail "without the suppressions: no Go runtime frame named (is the core stripped?)"
grep -q '_cgo_try_pthread_create' "$log" || fail "without the suppressions: no Go thread leak shown"

rc=0
vg --suppressions="$supp" "$prog" bug || rc=$?
[ "$rc" = 99 ] || fail "the program's own error: exit $rc, want 99"
grep -q 'by 0x[0-9A-F]*: main (test_valgrind.c' "$log" || grep -q 'at 0x[0-9A-F]*: main (test_valgrind.c' "$log" ||
	fail "the program's own error is not reported in main"

# the core reads the JSON file: no index, or one made stale by an edit
boot='"$EFAP2P_TOPOLOGY_ROOT"/run/efap2p/topology.json'
export_boot="env -u LD_PRELOAD $efap2p export --boot 2>/dev/null"
for c in "no index:rm $boot.idx" "hand-edited:sed -i 's/\": /\":  /' $boot"; do
	setup="$export_boot && ${c#*:} &&"
	vg --suppressions="$supp" "$prog" || fail "with a topology file, ${c%%:*}: exit $?"
	grep -q 'test_valgrind: 32 devices with P2P_DMA' "$log" || fail "with a topology file, ${c%%:*}: no answers"
done
echo "valgrind: 0 errors with the suppressions ($suppressed suppressed), with the topology file's JSON read by the core too; the Go core's reported without, the program's own reported with"
