#!/bin/sh
# SPDX-License-Identifier: MIT
# A program granted a file capability runs in secure-execution mode
# (AT_SECURE) even where its uid equals its euid: there no environment
# variable may redirect what efap2p reads, in Go or in C --
#   securehost (package p2p, and libibverbs as package verbs loads it):
#     SYSFS_PATH, EFAP2P_TOPOLOGY, EFAP2P_TOPOLOGY_ROOT, EFAP2P_KERNEL,
#     EFAP2P_KERNEL_CONFIG;
#   efap2p check: EFAP2P_KERNEL, EFAP2P_KERNEL_CONFIG;
#   a C program loading libefap2p (securefront): its Go core's inputs,
#     EFAP2P_KERNEL_CONFIG (whose file's first line it would quote).
# Each is run without the capability first, where the variables are
# honoured (so that the test tests). Needs root (to set the capability and
# run as nobody), setcap and setpriv; exits 77 (skipped) without them.
#   check_secure.sh SECUREHOST EFAP2P LIBEFAP2P CORE SECUREFRONT
set -u
[ $# = 5 ] || { echo "usage: check_secure.sh SECUREHOST EFAP2P LIBEFAP2P CORE SECUREFRONT" >&2; exit 2; }
command -v setcap >/dev/null && command -v setpriv >/dev/null && [ "$(id -u)" = 0 ] || {
	echo "check_secure: needs root, setcap and setpriv"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
cp "$1" "$dir/securehost" && cp "$2" "$dir/efap2p" && cp -L "$3" "$dir/libefap2p.so" &&
	cp "$4" "$dir/libefap2p-core.so" && cp "$5" "$dir/securefront" && chmod 755 "$dir"/* || exit 1
# a file that is not a kernel configuration: its first line is what the
# core would quote
printf 'a secret first line\n' > "$dir/secret" && chmod 644 "$dir/secret"
nobody() {
	env SYSFS_PATH=/elsewhere EFAP2P_TOPOLOGY=/elsewhere/t.json EFAP2P_TOPOLOGY_ROOT=/elsewhere \
		EFAP2P_KERNEL=5.4.0 EFAP2P_KERNEL_CONFIG="$dir/secret" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@" 2>&1
}
run_all() {	# the three programs' outputs, one after the other
	nobody "$dir/securehost"
	# on this machine's tree (SYSFS_PATH is securehost's to test): the
	# release it takes, then what it says of EFAP2P_KERNEL_CONFIG's file
	echo "check: $(nobody env -u SYSFS_PATH -u EFAP2P_KERNEL_CONFIG "$dir/efap2p" check --json |
		grep '"kernel_source"')"
	nobody env -u SYSFS_PATH "$dir/efap2p" check | grep -i "kernel_config\|first line"
	nobody "$dir/securefront" "$dir/libefap2p.so"
}
has() { printf '%s\n' "$out" | grep -q -- "$1"; }

out=$(run_all)
echo "without a capability:"; echo "$out"
fail=0
has "^sysfs /elsewhere" || { echo "FAIL: SYSFS_PATH not honoured in a plain process"; fail=1; }
has "^kernel 5.4.0" || { echo "FAIL: EFAP2P_KERNEL not honoured in a plain process"; fail=1; }
has "^libibverbs-sysfs /elsewhere" || { echo "FAIL: libibverbs does not honour SYSFS_PATH in a plain process"; fail=1; }
has '^check: .*"environment"' || { echo "FAIL: efap2p check does not honour EFAP2P_KERNEL in a plain process"; fail=1; }
[ "$(printf '%s\n' "$out" | grep -c "a secret first line")" -ge 3 ] ||
	{ echo "FAIL: securehost, efap2p check and the core do not all read EFAP2P_KERNEL_CONFIG in a plain process"; fail=1; }
[ "$fail" = 0 ] || exit 1

for f in securehost efap2p securefront; do
	if ! setcap cap_net_raw+ep "$dir/$f" 2>/dev/null; then
		echo "check_secure: this file system takes no file capabilities"; exit 77
	fi
done
out=$(run_all)
echo "with cap_net_raw+ep:"; echo "$out"
has "^secure true" || { echo "FAIL: securehost not seen as secure-execution"; fail=1; }
has "^secure 1" || { echo "FAIL: securefront not seen as secure-execution"; fail=1; }
has "^sysfs /sys$" || { echo "FAIL: SYSFS_PATH honoured in secure-execution mode"; fail=1; }
has "^topology /run/efap2p/topology.json /etc/efap2p/topology.json$" ||
	{ echo "FAIL: the topology variables honoured in secure-execution mode"; fail=1; }
has "^kernel 5.4.0" && { echo "FAIL: EFAP2P_KERNEL honoured in secure-execution mode"; fail=1; }
has "^kernel-config none$" || { echo "FAIL: EFAP2P_KERNEL_CONFIG honoured in secure-execution mode"; fail=1; }
has "^libibverbs-sysfs /sys$" ||
	{ echo "FAIL: libibverbs, loaded by package verbs, honours SYSFS_PATH in secure-execution mode"; fail=1; }
has '^check: .*"environment"' && { echo "FAIL: efap2p check honours EFAP2P_KERNEL in secure-execution mode"; fail=1; }
has "secret first line" && { echo "FAIL: a file EFAP2P_KERNEL_CONFIG names was read in secure-execution mode"; fail=1; }
exit $fail
