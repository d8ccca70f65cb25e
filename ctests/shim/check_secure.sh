#!/bin/sh
# SPDX-License-Identifier: MIT
# A program granted a file capability runs in secure-execution mode
# (AT_SECURE) even where its uid equals its euid: there SYSFS_PATH,
# EFAP2P_TOPOLOGY and EFAP2P_TOPOLOGY_ROOT must not redirect what efap2p
# reads. Needs root (to set the capability and run as nobody), setcap and
# setpriv; exits 77 (skipped) without them.
#   check_secure.sh SECUREHOST
set -u
prog=$1
command -v setcap >/dev/null && command -v setpriv >/dev/null && [ "$(id -u)" = 0 ] || {
	echo "check_secure: needs root, setcap and setpriv"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
cp "$prog" "$dir/securehost" && chmod 755 "$dir/securehost"
run() {
	env SYSFS_PATH=/elsewhere EFAP2P_TOPOLOGY=/elsewhere/t.json EFAP2P_TOPOLOGY_ROOT=/elsewhere \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$dir/securehost"
}
plain=$(run) || { echo "check_secure: securehost failed"; exit 1; }
echo "without a capability:"; echo "$plain"
echo "$plain" | grep -qx "sysfs /elsewhere" || { echo "FAIL: SYSFS_PATH not honoured in a plain process"; exit 1; }
if ! setcap cap_net_bind_service+ep "$dir/securehost" 2>/dev/null; then
	echo "check_secure: this file system takes no file capabilities"; exit 77
fi
secure=$(run) || { echo "check_secure: securehost failed"; exit 1; }
echo "with cap_net_bind_service+ep:"; echo "$secure"
fail=0
echo "$secure" | grep -qx "secure true" || { echo "FAIL: not seen as secure-execution"; fail=1; }
echo "$secure" | grep -qx "sysfs /sys" || { echo "FAIL: SYSFS_PATH honoured in secure-execution mode"; fail=1; }
echo "$secure" | grep -qx "topology /run/efap2p/topology.json /etc/efap2p/topology.json" ||
	{ echo "FAIL: the topology variables honoured in secure-execution mode"; fail=1; }
exit $fail
