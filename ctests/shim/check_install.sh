#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make install into a scratch DESTDIR, then use the installed layout: the
# installed library finds its Go core in $libdir/efap2p/, the installed
# 'efap2p sim' finds the emulator's library there too, and the installed
# efap2p.pc puts -lefap2p before -lefa.
#   check_install.sh SOURCE_DIR BUILD_DIR P2P_CAPS
set -euo pipefail
src=$1 build=$2 caps=$3
dest=$(mktemp -d "${TMPDIR:-/tmp}/efap2p-install.XXXXXX")
trap 'rm -rf "$dest"' EXIT
make -s -C "$src" install BUILD="$build" DESTDIR="$dest" PREFIX=/usr >/dev/null
for f in usr/lib/libefap2p.so usr/lib/libefap2p.so.1 usr/lib/libefap2p.so.1.0.0 \
	usr/lib/efap2p/libefap2p-core.so usr/lib/efap2p/libefasim.so usr/bin/efap2p \
	usr/include/infiniband/efadv_p2p.h usr/lib/pkgconfig/efap2p.pc \
	usr/share/man/man1/efap2p.1 usr/share/man/man3/efadv_p2p_query_peer.3 \
	usr/share/man/man3/efadv_p2p_query_dmabuf.3 usr/share/man/man3/efadv_query_device_p2p.3; do
	[ -e "$dest/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
libs=$(PKG_CONFIG_PATH="$dest/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" pkg-config --libs efap2p)
case "$libs" in
*-lefap2p*-lefa*) ;;
*) echo "FAIL: pkg-config --libs efap2p: $libs"; exit 1 ;;
esac
out=$(env -u EFAP2P_CORE LD_PRELOAD="$dest/usr/lib/libefap2p.so.1" "$dest/usr/bin/efap2p" sim -- "$caps")
yes=$(grep -c 'P2P_DMA yes' <<<"$out" || true)
[ "$yes" = 32 ] || { echo "FAIL: $yes of 32 devices with P2P_DMA from the installed library"; echo "$out"; exit 1; }
echo "installed layout: pkg-config '$libs'; 32 of 32 devices with P2P_DMA"
