#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI (root): the README's first command on a fresh Debian 12 host. A bare
# bookworm root (mmdebstrap --variant=apt: the essential packages and apt,
# no compiler, no package lists), with make as the README asks, gets a copy
# of the checkout and Go where the README unpacks it (/usr/local/go, this
# machine's, read-only); inside
# it, with another process holding the dpkg lock for its first seconds (a
# fresh cloud host's unattended upgrades, released once apt says it waits),
# `make deps && make run` must wait for the lock, install only what `make
# run` needs (no package of the
# tests' list: no prometheus server) and end with efap2p check's verdict
# within a screen. It prints what make deps installed, and what `make
# test-deps` would add, in packages and installed megabytes.
#   scripts/ci-fresh-host.sh [DIR]   (the root is built in DIR, a new
#                                    folder in /var/tmp by default, and
#                                    removed after: not in the tree, where
#                                    go vet ./... would walk its Go modules)
# About 5 minutes on two loaded cores (the root 40 s, the Debian packages
# and Go modules a minute, the cold build the rest): .ci/run runs it, not
# make test.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$(mktemp -d "${TMPDIR:-/var/tmp}/efap2p-fresh-host.XXXXXX")}
root=$dir/root
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
[ "$(id -u)" = 0 ] || fail "needs root (chroot, mounts)"
command -v mmdebstrap >/dev/null || fail "mmdebstrap missing (make test-deps installs it)"
# make -s print-VAR: its last line (make says first where it found Go, when
# not on PATH)
var() { (cd "$src" && make -s "print-$1" | tail -1); }
goroot=$("$(var GO)" env GOROOT) || fail "no Go toolchain here to lend the root"
mirror=${EFAP2P_DEBIAN_MIRROR:-http://deb.debian.org/debian}
rm -rf "$dir"
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT

step "a bare Debian 12 root (mmdebstrap --variant=apt --include=make bookworm)"
mmdebstrap --variant=apt --include=make --skip=cleanup/apt/lists bookworm "$root" "$mirror" > "$dir/mmdebstrap.log" 2>&1 ||
	{ cat "$dir/mmdebstrap.log"; fail "mmdebstrap"; }
# a fresh host has read no package lists yet
rm -rf "$root"/var/lib/apt/lists/*_*
dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Package}\n' | sort > "$dir/before"
echo "$(wc -l < "$dir/before") packages"
mkdir -p "$root/src" "$root/usr/local/go"
(cd "$src" && git ls-files -co --exclude-standard -z | grep -zv '^build/' |
	tar --null --ignore-failed-read -cf - -T - 2>/dev/null) | tar -C "$root/src" -xf -
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# behind a proxy that intercepts TLS, this machine trusts the proxy's CA:
# Go in the root is given this machine's bundle (SSL_CERT_FILE), which
# the root's own (ca-certificates, from make deps) lacks
mkdir -p "$root/etc/ssl"
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/this-machine-ca.crt" 2>/dev/null || true

step "make deps && make run, inside it, the dpkg lock held until apt-get waits for it"
# inside ROOT, in a mount namespace of its own: /proc, /sys, /dev, a
# tmpfs /dev/shm, Go read-only; a perl process holds dpkg's frontend lock
# (an fcntl lock, as apt takes it) until apt-get says it waits for it (10
# minutes at most)
unshare -m bash -s "$root" "$goroot" > "$dir/out" 2>&1 <<-'SH' || { cat "$dir/out"; fail "make deps && make run"; }
	set -e
	root=$1 goroot=$2
	mount --make-rprivate /
	mount -t proc proc "$root/proc"
	mount --rbind /sys "$root/sys"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs tmpfs "$root/dev/shm"
	mount --bind "$goroot" "$root/usr/local/go"
	mount -o remount,bind,ro "$root/usr/local/go"
	chroot "$root" perl -MFcntl -e 'open(my $f, ">>", "/var/lib/dpkg/lock-frontend") or die "$!";
		my $l = pack("ssx4qqix4", F_WRLCK, 0, 0, 0, 0);
		fcntl($f, F_SETLKW, $l) or die "lock: $!";
		$| = 1; print "held\n"; sleep 600' > "$root/tmp/lock" &
	holder=$!
	for i in $(seq 100); do [ "$(cat "$root/tmp/lock")" = held ] && break; sleep 0.1; done
	[ "$(cat "$root/tmp/lock")" = held ] || { echo "could not take the dpkg lock"; exit 1; }
	(
		for i in $(seq 600); do
			grep -qs 'Waiting for cache lock' "$root/src/build/apt.log" && break
			sleep 1
		done
		kill $holder
	) &
	exec chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
		${http_proxy:+http_proxy=$http_proxy} ${https_proxy:+https_proxy=$https_proxy} \
		$([ -e "$root/etc/ssl/this-machine-ca.crt" ] && echo SSL_CERT_FILE=/etc/ssl/this-machine-ca.crt) \
		sh -c 'cd /src && t0=$(date +%s) && make deps && t1=$(date +%s) && echo "==== make run" && make run; rc=$?
			echo "make deps took $((t1 - t0)) s, make run (its cold build with it) $(($(date +%s) - t1)) s" > /tmp/times; exit $rc'
SH
sed '/^==== make run$/,$d' "$dir/out"
sed '1,/^==== make run$/d' "$dir/out" > "$dir/run"
grep -q 'Waiting for cache lock' "$root/src/build/apt.log" || fail "apt-get did not wait for the dpkg lock: $(cat "$root/src/build/apt.log")"
echo "make deps waited for the dpkg lock"

step "make run"
cat "$dir/run"
"$src/scripts/check-run-output.sh" "$dir/run" || fail "make run's output"
cat "$root/tmp/times"

step "what make deps installed"
dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Package}\n' | sort > "$dir/after"
comm -13 "$dir/before" "$dir/after" > "$dir/added"
kb=$(xargs dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Installed-Size}\n' < "$dir/added" | awk '{s += $1} END {print s}')
echo "make deps: $(wc -l < "$dir/added") packages, $((kb / 1024)) MB installed"
run=" $(var RUN_PACKAGES) "
for p in $(var APT_PACKAGES); do
	[[ $run == *" $p "* ]] || ! grep -qx "$p" "$dir/added" || fail "make deps installed $p, a package only the tests need"
done
# what make test-deps adds (apt-get's simulation in the root, the sizes
# from its package lists)
chroot "$root" apt-get -s install --no-install-recommends $(var APT_PACKAGES) 2>/dev/null |
	sed -n 's/^Inst \([^ ]*\) .*/\1/p' > "$dir/more"
kb=$(chroot "$root" apt-cache show --no-all-versions $(cat "$dir/more") 2>/dev/null |
	sed -n 's/^Installed-Size: //p' | awk '{s += $1} END {print s + 0}')
echo "make test-deps: $(wc -l < "$dir/more") packages more, $((kb / 1024)) MB more"
