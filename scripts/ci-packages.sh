#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI, after 'make deb': lintian on the packages (no error), install them
# with dpkg -i, use the installed efap2p as a new user would (its version,
# the emulator, the man page, the unit, and every command the installed
# README and man pages show: a C program built with the installed
# pkg-config, the library preloaded by name, valgrind with the installed
# suppressions, the tool's examples), then remove them and check that
# nothing is left but the operator's /etc/efap2p.
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
lintian --pedantic --show-overrides "$debs"/efap2p_"$version"_*.changes > "$tmp/lintian" 2>&1 || true
cat "$tmp/lintian"
! grep -q '^E:' "$tmp/lintian" || fail "lintian reports errors"
# an override's justification is the comment right above it, not the SPDX line
! grep -q '^N: .*SPDX-License-Identifier' "$tmp/lintian" || fail "lintian reads an SPDX comment as an override's justification"
# Debian wants a Maintainer who reads mail: no placeholder or no-reply domain
maint=$(dpkg-deb -f "$(ls "$debs"/efap2p_"$version"_*.deb)" Maintainer)
case ${maint#*@} in
*example.* | *invalid* | *localhost* | *noreply* | *no-reply* | *.local\>) fail "Maintainer: $maint is a placeholder address" ;;
esac
echo "Maintainer: $maint"

step "dpkg -i"
# a check that fails leaves no package behind
trap 'rc=$?; [ $rc = 0 ] || $sudo dpkg --purge $pkgs >/dev/null 2>&1; rm -rf "$tmp"; exit $rc' EXIT
$sudo dpkg -i $(for p in $pkgs; do ls "$debs/${p}_${version}_"*.deb; done)
for p in $pkgs; do dpkg -L "$p"; done | sort -u > "$tmp/files"
ldconfig -p | grep -q 'libefap2p.so.1 ' || fail "libefap2p.so.1 is not in the loader's cache (ldconfig trigger)"

cd "$tmp"   # nothing of the source tree from here on
step "efap2p --version"
efap2p --version
[ "$(efap2p --version | head -1)" = "efap2p $version" ] || fail "efap2p --version"
# the man page says it names the commit: the packages are built from a copy without .git
efap2p --version | grep -q ', commit [0-9a-f]\{12\}' || fail "efap2p --version names no commit"

step "the files the help and the man pages name are installed"
for form in "" topo explain export check sim "sim write" "sim list" version; do
	# shellcheck disable=SC2086
	efap2p $form --help
done | grep -o '/usr/[A-Za-z0-9_./-]*[A-Za-z0-9_/-]' | sort -u > "$tmp/named"
for page in $(grep -E '^/usr/share/man/man[0-9]/.*\.gz$' "$tmp/files"); do
	zcat "$page" | grep -o '/usr/share/[A-Za-z0-9_./-]*[A-Za-z0-9_/-]' || true
done | sort -u >> "$tmp/named"
grep -q doc/efap2p/operators.md "$tmp/named" || fail "the help names no installed operators.md"
while read -r f; do
	[ -e "$f" ] || fail "named by the help or a man page, not installed: $f"
done < <(sort -u "$tmp/named")
echo "$(sort -u "$tmp/named" | wc -l) files named, all installed"

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

# The commands the installed README and man pages show, each run here as
# a new user would type it (in the emulated host where it needs EFA
# devices): doc_commands lists them, doc runs one with its stand-in, and a
# command they show that no doc line below runs fails the check.
doc_commands() {
	local re='^(sudo )?(LD_PRELOAD=[^ ]+ [^ ]|(efap2p|systemctl|valgrind|cc|pkg-config|man|fi_info|ibv_devinfo|ibv_devices)( |$))'
	local page
	for page in $(grep -E '^/usr/share/man/man[0-9]/.*\.gz$' "$tmp/files"); do
		# the lines of .nf blocks, troff's \e as the backslash it prints
		zcat "$page" | awk '/^\.nf/{on=1;next} /^\.fi/{on=0} on' | sed -e 's/\\e/\\/g'
	done | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*#.*$//' | grep -E "$re" || true
	# the README's indented command blocks
	zcat -f /usr/share/doc/efap2p/README.md | awk '/^```/{fence=!fence;next} !fence && /^    [^ ]/' |
		sed -e 's/^    //' -e 's/[[:space:]]*#.*$//' | grep -E "$re" || true
}
declare -A ran
# doc SHOWN [COMMAND...]: run COMMAND (SHOWN itself when none is given) and
# count SHOWN as run; a failure, or ld.so's warning that it cannot preload
# a library, fails the check.
doc() {
	local shown=$1
	shift
	[ $# -gt 0 ] || set -- sh -c "$shown"
	echo "\$ $shown"
	"$@" > "$tmp/doc.out" 2>&1 || { cat "$tmp/doc.out"; fail "the documented '$shown' failed"; }
	! grep -q 'cannot be preloaded' "$tmp/doc.out" || { cat "$tmp/doc.out"; fail "'$shown': ld.so cannot preload the library"; }
	ran["$shown"]=1
}
has() { grep -q -- "$1" "$tmp/doc.out" || { cat "$tmp/doc.out"; fail "$2"; }; }

step "a C program built with the installed pkg-config"
cat > prog.c <<'PROG'
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
# shellcheck disable=SC2016
doc 'cc prog.c $(pkg-config --cflags --libs efap2p)' \
	sh -c 'cc -Wall -Werror -o p2p prog.c $(pkg-config --cflags --libs efap2p)'
efap2p sim -- ./p2p || fail "the program linked with the installed library"
# the same program, unmodified: linked with libibverbs and libefa only
cc -Wall -Werror -o your-program prog.c -libverbs -lefa
doc 'LD_PRELOAD=libefap2p.so.1 ./your-program' env LD_PRELOAD=libefap2p.so.1 efap2p sim -- ./your-program

step "valgrind with the installed suppressions"
if command -v valgrind >/dev/null; then
	doc 'valgrind --suppressions=/usr/share/efap2p/libefap2p.supp PROGRAM' \
		efap2p sim -- valgrind -q --error-exitcode=9 --suppressions=/usr/share/efap2p/libefap2p.supp ./p2p
fi

step "the tool's commands (in the emulated p5.48xlarge)"
doc 'efap2p check' efap2p sim -- efap2p check
has 'GPUDirect RDMA works' "efap2p check in the emulated p5.48xlarge"
doc 'efap2p check --format line' efap2p sim -- efap2p check --format line
has '^OK' "efap2p check --format line in the emulated p5.48xlarge"
doc 'efap2p check --format prometheus -o /var/lib/node_exporter/textfile_collector/efap2p.prom' \
	efap2p sim -- efap2p check --format prometheus -o "$tmp/efap2p.prom"
grep -q '^efap2p_' "$tmp/efap2p.prom" || fail "check --format prometheus -o: no efap2p_ metric in $tmp/efap2p.prom"
doc 'efap2p check --format prometheus -o /var/lib/prometheus/node-exporter/efap2p.prom' \
	efap2p sim -- efap2p check --format prometheus -o "$tmp/node-exporter.prom"
grep -q '^efap2p_' "$tmp/node-exporter.prom" || fail "check --format prometheus -o: no efap2p_ metric in $tmp/node-exporter.prom"
doc 'efap2p topo' efap2p sim -- efap2p topo
has 'NIC31' "efap2p topo in the emulated p5.48xlarge"
doc 'efap2p explain GPU0 NIC0' efap2p sim -- efap2p explain GPU0 NIC0
doc 'efap2p explain 0000:53:00.0 rdmap79s0' efap2p sim -- efap2p explain 0000:53:00.0 rdmap79s0
doc 'efap2p explain --kernel 6.1.0-28-amd64 53:00.0 4f:00.0' efap2p sim -- efap2p explain --kernel 6.1.0-28-amd64 53:00.0 4f:00.0
has 'BUS_ADDR' "efap2p explain --kernel 6.1.0-28-amd64 53:00.0 4f:00.0"
doc 'efap2p explain --all --json' efap2p sim -- efap2p explain --all --json
has '"provider":"0000:53:00.0"' "efap2p explain --all --json in the emulated p5.48xlarge"
doc 'efap2p env' efap2p sim -- sh -c 'efap2p export --boot >/dev/null 2>&1 && efap2p env'
has '^export NCCL_TOPO_FILE=.*/run/efap2p/nccl-topology.xml$' "efap2p env after export --boot in the emulated p5.48xlarge"
doc 'efap2p env --format slurm --gpus 4' efap2p sim -- sh -c 'efap2p export --boot >/dev/null 2>&1 && efap2p env --format slurm --gpus 4'
has '^export EFAP2P_ENV=NCCL_TOPO_FILE$' "efap2p env --format slurm in the emulated p5.48xlarge"
[ -x /usr/share/efap2p/slurm-taskprolog ] || fail "the Slurm TaskProlog is not installed"
doc 'efap2p sim --machine intel-acs-switch -- ibv_devinfo'
has 'rdmap5s0' "ibv_devinfo in the emulated intel-acs-switch"
# fi_info prints the same with and without the library (the manuals say
# so): what shows is EFAP2P_LOG=info's line for each device libfabric asks
doc 'LD_PRELOAD=libefap2p.so.1 EFAP2P_LOG=info efap2p sim -- fi_info -p efa'
has 'provider: efa' "fi_info -p efa with the library preloaded"
has '^efap2p: info: rdmap79s0 .*P2P_DMA: true P2P' "EFAP2P_LOG=info fi_info -p efa: no line with the library's answer"
doc 'LD_PRELOAD=libefap2p.so.1 EFAP2P_LOG=info fi_info -p efa' env LD_PRELOAD=libefap2p.so.1 EFAP2P_LOG=info efap2p sim -- fi_info -p efa
has '^efap2p: info: rdmap79s0 .*P2P_DMA: true P2P' "EFAP2P_LOG=info fi_info -p efa: no line with the library's answer"
# the manual: env LD_PRELOAD=... inside efap2p sim keeps the emulator
doc 'efap2p sim -- env LD_PRELOAD=libefap2p.so.1 fi_info -p efa'
has 'provider: efa' "efap2p sim -- env LD_PRELOAD=libefap2p.so.1 fi_info -p efa: no EFA device"

step "the unit, as the manual turns it on"
if ! command -v systemctl >/dev/null; then
	echo "no systemctl on this machine: 'systemctl enable --now' and 'systemctl status' not run"
	ran['systemctl enable --now efap2p-topology.service']=skipped
	ran['systemctl status efap2p-topology.service']=skipped
elif [ -d /run/systemd/system ]; then
	doc 'systemctl enable --now efap2p-topology.service'
	doc 'systemctl status efap2p-topology.service'
	systemctl disable --now efap2p-topology.service
else
	# without a running systemd: the enablement, and what --now starts
	doc 'systemctl enable --now efap2p-topology.service' sh -ec \
		'systemctl enable efap2p-topology.service; efap2p sim -- sh -c "$(sed -n "s/^ExecStart=//p" '"$unit"')"'
	doc 'systemctl status efap2p-topology.service' systemctl is-enabled efap2p-topology.service
	systemctl disable efap2p-topology.service
fi

step "the operator's topology file (purge keeps it)"
[ ! -e /etc/efap2p/topology.json ] || fail "/etc/efap2p/topology.json is there before the check writes it"
doc 'efap2p export --peer-blocked 0000:05:00.0 -o /etc/efap2p/topology.json' \
	$sudo efap2p sim --machine intel-acs-switch -- efap2p export --peer-blocked 0000:05:00.0 -o /etc/efap2p/topology.json
[ -f /etc/efap2p/topology.json ] || fail "no /etc/efap2p/topology.json"

doc_commands | sort -u > "$tmp/shown"
missing=$(while read -r shown; do [ -n "${ran[$shown]:-}" ] || echo "  $shown"; done < "$tmp/shown")
[ -z "$missing" ] || fail "shown in the README or a man page, not run by this check:
$missing"
echo "$(wc -l < "$tmp/shown") documented commands run"

step "apt-get remove"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q $pkgs >/dev/null
left=$(while read -r f; do { [ -e "$f" ] || [ -L "$f" ]; } && [ ! -d "$f" ] && echo "$f"; done < "$tmp/files" || true)
[ -z "$left" ] || fail "apt-get remove left: $left"
[ ! -e /run/efap2p ] || fail "apt-get remove left /run/efap2p"
! ldconfig -p | grep -q 'libefap2p.so.1 ' || fail "libefap2p.so.1 still in the loader's cache"
$sudo dpkg --purge $pkgs >/dev/null 2>&1
! dpkg -l $pkgs 2>/dev/null | grep -q '^[ir][ic]' || fail "packages still known to dpkg after purge"
# the operator's file is theirs, not the package's (README, Installing)
[ -f /etc/efap2p/topology.json ] || fail "purge removed the operator's /etc/efap2p/topology.json"
$sudo rm -f /etc/efap2p/topology.json /etc/efap2p/topology.json.idx
$sudo rmdir /etc/efap2p 2>/dev/null || true
echo "packages: installed, used, removed; nothing left"
