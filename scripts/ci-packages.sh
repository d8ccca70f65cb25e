#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI, after 'make deb': lintian on the packages (no error), install them
# with dpkg -i, use the installed efap2p as a new user would (its version,
# the emulator, the man page, the unit, a C program built with the
# installed pkg-config, valgrind with the installed suppressions), then
# remove them and check that nothing is left.
#   scripts/ci-packages.sh [DEB_DIR]     (default build/deb; needs root or sudo)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
debs=$(cd "${1:-$src/build/deb}" && pwd)
version=$(cat "$src/VERSION")
sudo=$([ "$(id -u)" = 0 ] || echo sudo)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efap2p-ci.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
pkgs="libefap2p1 libefap2p-dev efap2p efap2p-sim"

step "lintian"
lintian --pedantic "$debs"/efap2p_"$version"_*.changes > "$tmp/lintian" 2>&1 || true
cat "$tmp/lintian"
! grep -q '^E:' "$tmp/lintian" || fail "lintian reports errors"

step "dpkg -i"
$sudo dpkg -i $(for p in $pkgs; do ls "$debs/${p}_${version}_"*.deb; done)
for p in $pkgs; do dpkg -L "$p"; done | sort -u > "$tmp/files"
ldconfig -p | grep -q 'libefap2p.so.1 ' || fail "libefap2p.so.1 is not in the loader's cache (ldconfig trigger)"

cd "$tmp"   # nothing of the source tree from here on
step "efap2p --version"
efap2p --version
[ "$(efap2p --version | head -1)" = "efap2p $version" ] || fail "efap2p --version"

step "efap2p sim -- ibv_devinfo"
efap2p sim -- ibv_devinfo > devinfo
grep -c 'hca_id:' devinfo
grep -q 'hca_id:.*rdmap79s0' devinfo || fail "ibv_devinfo inside efap2p sim: no rdmap79s0"

step "man efap2p"
if command -v man >/dev/null && [ -e /usr/share/man/man1/efap2p.1.gz ]; then
	man efap2p 2>/dev/null | grep -q 'BOOT-TIME TOPOLOGY FILE' || fail "man efap2p"
	echo "man efap2p: ok"
else
	echo "man or the installed page is not there (dpkg path-exclude?): skipped"
fi

step "the unit"
unit=/lib/systemd/system/efap2p-topology.service
[ -e "$unit" ] || unit=/usr/lib/systemd/system/efap2p-topology.service
if [ -d /run/systemd/system ]; then
	systemctl cat efap2p-topology.service
	state=$(systemctl is-enabled efap2p-topology.service || true)
elif command -v systemctl >/dev/null; then
	echo "systemd is not running: systemctl is-enabled, systemd-analyze verify"
	state=$(systemctl is-enabled efap2p-topology.service 2>/dev/null || true)
	out=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify: $out"
else
	echo "no systemd on this machine: the unit file and its enablement links"
	[ -f "$unit" ] || fail "$unit not installed"
	state=disabled
	ls /etc/systemd/system/*/efap2p-topology.service >/dev/null 2>&1 && state=enabled
fi
[ "$state" = disabled ] || fail "efap2p-topology.service is '$state', want disabled until the operator enables it"
echo "efap2p-topology.service: $state"

step "a C program built with the installed pkg-config"
cat > p2p.c <<'PROG'
#include <stdio.h>
#include <infiniband/efadv_p2p.h>

int main(void)
{
	struct ibv_device **list;
	int i, n = 0, yes = 0;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);
		struct efadv_device_attr a = { 0 };

		if (ctx && !efadv_query_device(ctx, &a, sizeof(a)) &&
		    (a.device_caps & EFADV_DEVICE_ATTR_CAPS_P2P_DMA))
			yes++;
		if (ctx)
			ibv_close_device(ctx);
	}
	if (list)
		ibv_free_device_list(list);
	printf("%d of %d EFA devices with P2P_DMA\n", yes, n);
	return !(n > 0 && yes == n);
}
PROG
# shellcheck disable=SC2046
cc -Wall -Werror -o p2p p2p.c $(pkg-config --cflags --libs efap2p)
efap2p sim -- ./p2p || fail "the program linked with the installed library"

step "valgrind with the installed suppressions"
if command -v valgrind >/dev/null; then
	efap2p sim -- valgrind -q --error-exitcode=9 --suppressions=/usr/share/efap2p/libefap2p.supp ./p2p ||
		fail "valgrind with /usr/share/efap2p/libefap2p.supp"
fi

step "apt-get remove"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q $pkgs >/dev/null
left=$(while read -r f; do { [ -e "$f" ] || [ -L "$f" ]; } && [ ! -d "$f" ] && echo "$f"; done < "$tmp/files" || true)
[ -z "$left" ] || fail "apt-get remove left: $left"
[ ! -e /run/efap2p ] || fail "apt-get remove left /run/efap2p"
! ldconfig -p | grep -q 'libefap2p.so.1 ' || fail "libefap2p.so.1 still in the loader's cache"
$sudo dpkg --purge $pkgs >/dev/null 2>&1
! dpkg -l $pkgs 2>/dev/null | grep -q '^[ir][ic]' || fail "packages still known to dpkg after purge"
echo "packages: installed, used, removed; nothing left"
