#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed layouts, without packages:
#   - make install PREFIX=DIR (the live system: ldconfig runs) and
#     cmake --install --prefix DIR install the same files, the same
#     contents but for the prefix they name;
#   - the installed unit passes systemd-analyze verify (where there is
#     one), the installed tool says the VERSION file's version;
#   - make uninstall leaves no file behind;
#   - make install DESTDIR=... PREFIX=/usr (no ldconfig) puts the library
#     in the multiarch libdir, where it finds its Go core, the installed
#     'efap2p sim' finds the emulator's library, and the installed efap2p.pc
#     puts -lefap2p before -lefa;
#   - the installed unit's command, run in the emulated p5.48xlarge (the
#     reboot the unit would see), writes the boot-time file, from which an
#     unmodified program with the installed library preloaded and no
#     EFAP2P_* variable set answers without loading the Go core.
#   check_install.sh SOURCE_DIR BUILD_DIR CMAKE_BUILD_DIR P2P_CAPS TEST_HOST
set -euo pipefail
src=$1 build=$2 cmakebuild=$3 caps=$4 host=$5
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efap2p-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
version=$(cat "$src/VERSION")
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || "${CC:-cc}" -print-multiarch)

# ldconfig stands in for the real one: it says it ran.
printf '#!/bin/sh\necho ran >> "%s"\n' "$tmp/ldconfig.log" > "$tmp/ldconfig"
chmod +x "$tmp/ldconfig"
ldconfig_runs() { [ -e "$tmp/ldconfig.log" ] && wc -l < "$tmp/ldconfig.log" || echo 0; }

make -s -C "$src" install BUILD="$build" PREFIX="$tmp/make" LDCONFIG="$tmp/ldconfig" >/dev/null
[ "$(ldconfig_runs)" = 1 ] || fail "make install without DESTDIR ran ldconfig $(ldconfig_runs) times, want 1"
LDCONFIG="$tmp/ldconfig" cmake --install "$cmakebuild" --prefix "$tmp/cmake" >/dev/null
[ "$(ldconfig_runs)" = 2 ] || fail "cmake --install without DESTDIR did not run ldconfig"

# The same files, links and modes.
list() { (cd "$1" && find . -mindepth 1 \( -type f -o -type l \) -printf '%p %y %m %l\n' | sort); }
list "$tmp/make" > "$tmp/make.list"
list "$tmp/cmake" > "$tmp/cmake.list"
diff -u "$tmp/make.list" "$tmp/cmake.list" || fail "make install and cmake --install differ (- make, + cmake)"
# The same contents, once each file's own prefix is named PREFIX.
while read -r f type _; do
	[ "$type" = f ] || continue
	cmp -s "$tmp/make/$f" "$tmp/cmake/$f" && continue
	cmp -s <(sed "s|$tmp/make|PREFIX|g" "$tmp/make/$f") <(sed "s|$tmp/cmake|PREFIX|g" "$tmp/cmake/$f") ||
		fail "$f differs between make install and cmake --install"
done < "$tmp/make.list"
for f in bin/efap2p lib/libefap2p.so lib/libefap2p.so.1 "lib/libefap2p.so.$version" \
	lib/efap2p/libefap2p-core.so lib/efap2p/libefasim.so include/infiniband/efadv_p2p.h \
	lib/pkgconfig/efap2p.pc share/man/man1/efap2p.1 share/man/man3/efadv_p2p_query_peer.3 \
	share/man/man3/efadv_p2p_query_dmabuf.3 share/man/man3/efadv_query_device_p2p.3 \
	share/efap2p/libefap2p.supp share/efap2p/slurm-healthcheck share/efap2p/slurm-taskprolog share/efap2p/efap2p.rules.yml \
	share/efap2p/efap2p-check.daemonset.yaml share/efap2p/check-report.schema.json include/efasim.h \
	share/doc/efap2p/operators.md share/doc/efap2p/kernel-releases.md share/doc/efap2p/topology-file.md \
	share/doc/efap2p/machine-models.md share/doc/efap2p/emulator.md share/doc/efap2p/library.md share/doc/efap2p/README.md share/doc/efap2p/consumers.md \
	lib/systemd/system/efap2p-topology.service \
	lib/udev/rules.d/70-efap2p-topology.rules; do
	[ -e "$tmp/make/$f" ] || fail "$f not installed"
done
files=$(wc -l < "$tmp/make.list")

unit="$tmp/make/lib/systemd/system/efap2p-topology.service"
grep -q "^$tmp/make/bin/efap2p check --format line" <(sed 's/^msg=\$(//' "$tmp/make/share/efap2p/slurm-healthcheck") ||
	fail "the Slurm health check does not run the installed tool"
[ -x "$tmp/make/share/efap2p/slurm-healthcheck" ] || fail "the Slurm health check is not executable"
grep -q "$tmp/make/bin/efap2p env --format slurm" "$tmp/make/share/efap2p/slurm-taskprolog" ||
	fail "the Slurm TaskProlog does not run the installed tool"
[ -x "$tmp/make/share/efap2p/slurm-taskprolog" ] || fail "the Slurm TaskProlog is not executable"
grep -qx "ExecStart=$tmp/make/bin/efap2p export --boot" "$unit" ||
	fail "the unit does not run the installed tool: $(grep ExecStart "$unit")"
grep -q 'RUN+="/bin/systemctl --no-block try-restart efap2p-topology.service"' \
	"$tmp/make/lib/udev/rules.d/70-efap2p-topology.rules" || fail "the udev rule does not restart the unit"
verified="no systemd-analyze"
if command -v systemd-analyze >/dev/null; then
	out=$(MANPATH="$tmp/make/share/man" systemd-analyze verify "$unit" 2>&1) ||
		fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify says: $out"
	verified="systemd-analyze verify clean"
fi
[ "$("$tmp/make/bin/efap2p" --version | head -1)" = "efap2p $version" ] ||
	fail "installed efap2p --version: $("$tmp/make/bin/efap2p" --version)"

make -s -C "$src" uninstall BUILD="$build" PREFIX="$tmp/make" LDCONFIG="$tmp/ldconfig" >/dev/null
left=$(cd "$tmp/make" && find . \( -type f -o -type l \))
[ -z "$left" ] || fail "make uninstall left: $left"

# A staged install for /usr, as a package build does it.
dest="$tmp/dest"
make -s -C "$src" install BUILD="$build" DESTDIR="$dest" PREFIX=/usr LDCONFIG="$tmp/ldconfig" >/dev/null
[ "$(ldconfig_runs)" = 3 ] || fail "make uninstall without DESTDIR did not run ldconfig"
libdir="usr/lib/$multiarch"
for f in "$libdir/libefap2p.so" "$libdir/libefap2p.so.1" "$libdir/libefap2p.so.$version" \
	"$libdir/efap2p/libefap2p-core.so" "$libdir/efap2p/libefasim.so" "$libdir/pkgconfig/efap2p.pc" usr/bin/efap2p; do
	[ -e "$dest/$f" ] || fail "PREFIX=/usr: $f not installed (LIBDIR is the multiarch one)"
done
make -s -C "$src" install BUILD="$build" DESTDIR="$dest" PREFIX=/usr LDCONFIG="$tmp/ldconfig" >/dev/null
[ "$(ldconfig_runs)" = 3 ] || fail "make install with DESTDIR ran ldconfig"
pc() { PKG_CONFIG_PATH="$dest/$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" pkg-config "$@" efap2p; }
libs=$(pc --libs)
case "$libs" in
*-lefap2p*-lefa*) ;;
*) fail "pkg-config --libs efap2p: $libs" ;;
esac
[ "$(pc --modversion)" = "$version" ] || fail "pkg-config --modversion efap2p: $(pc --modversion), want $version"
out=$(env -u EFAP2P_CORE -u EFASIM_LIBRARY LD_PRELOAD="$dest/$libdir/libefap2p.so.1" "$dest/usr/bin/efap2p" sim -- "$caps")
yes=$(grep -c 'P2P_DMA yes' <<<"$out" || true)
[ "$yes" = 32 ] || { echo "FAIL: $yes of 32 devices with P2P_DMA from the installed library"; echo "$out"; exit 1; }
# The unit's command at boot, then a program: answers from the file.
installed_unit=$(find "$dest" -name efap2p-topology.service | head -1)
[ -n "$installed_unit" ] || fail "PREFIX=/usr: the unit is not installed"
exec_start=$(sed -n "s|^ExecStart=/usr/|$dest/usr/|p" "$installed_unit")
[ -n "$exec_start" ] || fail "no ExecStart in the installed unit"
out=$(env -u EFAP2P_CORE -u EFASIM_LIBRARY -u EFAP2P_TOPOLOGY "$dest/usr/bin/efap2p" sim -- sh -ec \
	"$exec_start 2>/dev/null; LD_PRELOAD=$dest/$libdir/libefap2p.so.1:\$LD_PRELOAD $host list")
grep -qx "core 0 threads 1" <<<"$out" && [ "$(grep -c '^rdmap.* 1$' <<<"$out")" = 32 ] ||
	{ echo "FAIL: after the unit's command, want 32 devices with P2P_DMA, no Go core, one thread"; echo "$out"; exit 1; }
echo "installed layout: make install and cmake --install: the same $files files; $verified;" \
	"make uninstall: nothing left; PREFIX=/usr in $libdir, pkg-config '$libs'; 32 of 32 devices with P2P_DMA;" \
	"after the unit's command: 32 of 32 answered from the boot-time file, no Go core"
