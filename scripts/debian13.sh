#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The same build, run on Debian 13 (rdma-core 56.1, libfabric 2.1.0, glibc
# 2.41): a Debian 13 root made with mmdebstrap from Debian's archive, kept
# under BUILD/debian13/ and made again only when its package list changes,
# with the checkout mounted at its own path (the sources read-only, BUILD
# writable), the host's Go toolchain and module cache read-only.
#
#   scripts/debian13.sh BUILD test     ctest (the emulator's and the library's
#                                      suites and the program checks) and the
#                                      Go tests, inside the root
#   scripts/debian13.sh BUILD root     make the root if needed; print its path
#   scripts/debian13.sh BUILD run CMD  CMD (a shell command line) inside it
#
# As root (the mounts and pivot_root); make test-debian13 runs it with sudo.
# The mounts live in a mount namespace of their own (unshare -m): they are
# gone when the command ends, whatever way it ends. MIRROR (Debian's archive
# by default) and DEBIAN13_SUITE (trixie) choose where the root comes from.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '/^#   /p' "$0" >&2; exit 2; }
build=$(realpath -m "$1")
what=$2
shift 2
tree=$(pwd -P)
suite=${DEBIAN13_SUITE:-trixie}
mirror=${MIRROR:-http://deb.debian.org/debian}
# What the tests need: rdma-core (headers, providers, utilities, pyverbs),
# libfabric, the programs the emulator's checks run (perftest, qperf, Open
# MPI), the tools the suites call (valgrind, strace, lspci, lstopo, promtool,
# udevadm, systemd-analyze, man), a C compiler for cgo and the ASan runtime.
packages="libibverbs-dev ibverbs-providers ibverbs-utils python3-pyverbs
libfabric-bin libfabric-dev perftest qperf openmpi-bin libopenmpi-dev
gcc g++ make cmake pkg-config valgrind strace pciutils hwloc python3 python3-yaml
prometheus udev systemd man-db libcap2-bin time util-linux"
packages=$(echo $packages | tr ' ' '\n' | sort -u | tr '\n' ' ')

fail() { echo "debian13: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (mounts, pivot_root): sudo $0 ..."

key=$(printf '%s\n' "$suite" "$mirror" $packages | sha256sum | cut -c1-12)
base="$build/debian13"
root="$base/root-$key"

make_root() {
	[ -f "$root/.complete" ] && return
	command -v mmdebstrap >/dev/null || fail "mmdebstrap is not installed (apt-get install mmdebstrap)"
	mkdir -p "$base"
	# a module of its own, so that the project's `go ... ./...` never walks
	# into the roots
	[ -f "$base/go.mod" ] || printf 'module debian13roots\n' > "$base/go.mod"
	# roots of other package lists are stale
	for old in "$base"/root-*; do
		[ -e "$old" ] && [ "$old" != "$root" ] && rm -rf --one-file-system "$old"
	done
	rm -rf --one-file-system "$root" "$root.tmp"
	local start=$SECONDS
	echo "debian13: building a $suite root with mmdebstrap (once; kept in $root)"
	# in a mount namespace of its own, so that the mounts it makes inside
	# the root never outlive it; no documentation or translations (the
	# tests read none; man finds efap2p's pages through MANPATH), and no
	# man-db index to rebuild
	unshare -m --propagation private -- mmdebstrap --quiet --mode=root --variant=apt --include="$(echo $packages | tr ' ' ,)" \
		--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--essential-hook='echo man-db man-db/auto-update boolean false | chroot "$1" debconf-set-selections' \
		"$suite" "$root.tmp" "$mirror" > "$base/mmdebstrap.log" 2>&1 ||
		{ tail -30 "$base/mmdebstrap.log"; fail "mmdebstrap failed (its log: $base/mmdebstrap.log)"; }
	# apt's package lists and downloaded archives are not needed to run
	rm -rf "$root.tmp"/var/lib/apt/lists/* "$root.tmp"/var/cache/apt/*.bin
	printf '%s\n' $packages > "$root.tmp/.complete"
	mv "$root.tmp" "$root"
	echo "debian13: root built in $((SECONDS - start)) s ($(du -sh --one-file-system "$root" | cut -f1))"
}

# enter ROOT TREE BUILD GOROOT GOMODCACHE GOCACHE CMD: the mounts, then CMD
# in the root; run by in_root in a mount namespace of its own.
enter() {
	set -euo pipefail
	local root=$1 tree=$2 build=$3 goroot=$4 gomodcache=$5 gocache=$6 cmd=$7
	# the root a mount point of its own: unshare and pivot_root work inside
	mount --bind "$root" "$root"
	mount --rbind /proc "$root/proc"
	mount --rbind /sys "$root/sys"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
	mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
	ro() { mkdir -p "$root$2"; mount --bind "$1" "$root$2"; mount -o remount,bind,ro "$root$2"; }
	ro "$tree" "$tree"
	mkdir -p "$root$build"
	mount --bind "$build" "$root$build"
	local path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	local goenv=()
	if [ -n "$goroot" ]; then
		ro "$goroot" "$goroot"
		[ -d "$gomodcache" ] && ro "$gomodcache" "$gomodcache"
		path=$path:$goroot/bin
		goenv=(GOROOT="$goroot" GOMODCACHE="$gomodcache" GOCACHE="$gocache" GOFLAGS=-mod=readonly
			GOPROXY=off GOTOOLCHAIN=local)
	fi
	# the root becomes the namespace's own (pivot_root, not chroot: the
	# kernel lets no chrooted process make a user namespace, which tests do)
	mkdir -p "$root/.oldroot"
	cd "$root"
	pivot_root . .oldroot
	umount -l /.oldroot
	cd /
	exec env -i PATH="$path" HOME=/root LANG=C.UTF-8 TERM=dumb TMPDIR=/dev/shm \
		"${goenv[@]}" bash -c 'cd "$0" && eval "$1"' "$tree" "$cmd"
}

# in_root CMD: CMD (a shell command line) inside the root, in the checkout,
# with this script's standard input.
in_root() {
	local goroot="" gomodcache=""
	if command -v "${GO:-go}" >/dev/null; then
		goroot=$("${GO:-go}" env GOROOT)
		gomodcache=$("${GO:-go}" env GOMODCACHE)
	fi
	mkdir -p "$base/gocache"
	unshare -m --propagation private -- bash -c "$(declare -f enter); enter \"\$@\"" bash \
		"$root" "$tree" "$build" "$goroot" "$gomodcache" "$base/gocache" "$1"
}

case $what in
root)
	make_root
	echo "$root"
	;;
run)
	[ $# -ge 1 ] || fail "run: no command"
	make_root
	in_root "$*"
	;;
test)
	make_root
	[ -x "$build/efap2p" ] && [ -f "$build/cmake/CTestTestfile.cmake" ] || fail "no build in $build: run make build first"
	in_root "bash scripts/debian13-tests.sh '$build'"
	;;
*)
	fail "unknown command $what (test, root, run)"
	;;
esac
