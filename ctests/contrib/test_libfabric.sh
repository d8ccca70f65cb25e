#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_libfabric.sh CONTRIB EFAP2P CASE: contrib/libfabric without libfabric's
# source, as CI runs it.
set -uo pipefail
contrib=$1 efap2p=$2 case=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efap2p-contrib.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

case $case in
nosource)
	# CI has no libfabric source: one line, the skip code, nothing built.
	out=$("$contrib/check.sh" 2>&1)
	rc=$?
	[ $rc = 77 ] || fail "check.sh without a source exited $rc, want 77: $out"
	[ "$out" = "check.sh: no libfabric source given (LIBFABRIC_SRC): skipped, nothing checked" ] ||
		fail "not the one line: $out"
	# A directory that is not libfabric: a clear error, exit 2.
	out=$("$contrib/check.sh" "$tmp" 2>&1)
	rc=$?
	[ $rc = 2 ] || fail "check.sh on a non-libfabric directory exited $rc, want 2: $out"
	[[ $out == *"is not a libfabric source tree"* ]] || fail "no clear error: $out"
	out=$("$contrib/check.sh" "$tmp/none" 2>&1)
	rc=$?
	[ $rc = 2 ] || fail "check.sh on a missing directory exited $rc, want 2: $out"
	[[ $out == *"no such directory"* ]] || fail "no clear error: $out"
	;;
shellcheck)
	command -v shellcheck >/dev/null || {
		echo "shellcheck not installed"
		exit 77
	}
	shellcheck "$contrib/check.sh" "$0" || fail "shellcheck"
	;;
patches)
	# numstat PATCH: what git reads in it, outside any repository (inside
	# one, git apply ignores the paths outside the current directory).
	numstat() { (cd "$tmp" && GIT_CEILING_DIRECTORIES=$(dirname "$tmp") git apply --numstat "$1"); }
	# Each series is git format-patch output that libfabric's maintainers
	# take: a subject with the area's prefix, a Signed-off-by of the author,
	# the base commit named, and diffs git can read.
	for series in main v2.1.0; do
		dir=$contrib/patches/$series
		set -- "$dir"/*.patch
		[ -f "$1" ] || fail "no patches in $dir"
		[ $# = 2 ] || fail "$dir: $# patches, want 2"
		for p in "$@"; do
			name=$(basename "$p")
			head -1 "$p" | grep -Eq '^From [0-9a-f]{40} Mon Sep 17 00:00:00 2001$' || fail "$name: not git format-patch output"
			subject=$(sed -n 's/^Subject: \[PATCH [0-9]\/[0-9]\] //p' "$p")
			[ -n "$subject" ] || fail "$name: no numbered Subject"
			author=$(sed -n '/^From: /{N;s/^From: //;s/\n//;p;q}' "$p")
			grep -qxF "Signed-off-by: $author" "$p" || fail "$name: no Signed-off-by of its author ($author)"
			grep -q '^Signed-off-by: .*/work/\|@example.com' "$p" && fail "$name: a made-up address"
			numstat "$p" >"$tmp/numstat" 2>&1 || fail "$name: git cannot read it: $(cat "$tmp/numstat")"
		done
		efa=$2
		grep -q '^Subject: \[PATCH 2/2\] prov/efa: ' "$efa" || fail "$series: the EFA patch's subject lacks prov/efa:"
		for f in prov/efa/src/efa_hmem.c prov/efa/src/efa_device.c prov/efa/test/efa_unit_test_hmem.c prov/efa/Makefile.include; do
			grep -q "	$f\$" <(numstat "$efa") || fail "$series: the EFA patch does not change $f"
		done
		grep -q '^base-commit: [0-9a-f]\{40\}$' "$1" || fail "$series: the base commit is not named"
		grep -q 'dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer")' "$efa" || fail "$series: no run-time lookup"
		grep -q 'efadv_p2p.h\|-lefap2p' "$efa" && fail "$series: a build or link dependency on efap2p"
	done
	base=$(sed -n 's/^base-commit: //p' "$contrib/patches/v2.1.0/"0001-*.patch)
	[ "$base" = cf173800a23505a0c6ec9ad42b935bde60a57da2 ] || fail "the v2.1.0 series is not based on v2.1.0 ($base)"
	;;
standin)
	# The CUDA stand-in: built with our warnings as errors, it finds the
	# emulated host's 8 GPUs in PCI order and refuses a context.
	cc -std=gnu11 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
		-I"$contrib/cuda-standin/include" -o "$tmp/libcuda.so.1" \
		"$contrib/cuda-standin/standin.c" -lpthread || fail "the stand-in does not build"
	"$efap2p" sim write --machine p5.48xlarge "$tmp/tree" >/dev/null || fail "sim write"
	out=$(SYSFS_PATH=$tmp/tree python3 - "$tmp/libcuda.so.1" <<'PY'
import ctypes, sys
cu = ctypes.CDLL(sys.argv[1])
n = ctypes.c_int()
print("count", cu.cudaGetDeviceCount(ctypes.byref(n)), n.value)
for ordinal in (0, 7):
    dev, v = ctypes.c_int(), ctypes.c_int()
    cu.cuDeviceGet(ctypes.byref(dev), ordinal)
    addr = []
    for attr in (50, 33, 34):  # PCI domain, bus, device
        cu.cuDeviceGetAttribute(ctypes.byref(v), attr, dev)
        addr.append(v.value)
    print("gpu%d %04x:%02x:%02x.0" % (ordinal, *addr))
print("ctx", cu.cuCtxCreate_v2(ctypes.byref(ctypes.c_void_p()), 0, 0))
print("bad", cu.cuDeviceGet(ctypes.byref(ctypes.c_int()), 8))
PY
)
	want="count 0 8
gpu0 0000:53:00.0
gpu7 0000:ca:00.0
ctx 801
bad 101"
	[ "$out" = "$want" ] || fail "the stand-in answered: $out"
	;;
*)
	echo "unknown case $case"
	exit 2
	;;
esac
