#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check.sh LIBFABRIC_SRC: apply efap2p's libfabric patch to a copy of a
# libfabric source tree, build it and the same tree without the patch with
# only the EFA provider, run libfabric's EFA unit tests of both inside an
# emulated p5.48xlarge (efap2p sim) without and with libefap2p.so preloaded,
# and run fi_info and fi_pingpong of the patched build there, showing its
# info line about the CUDA P2P decision. Prints the essential lines; the
# logs stay in the work directory.
#
# Without LIBFABRIC_SRC (CI has no libfabric source) it says so in one line
# and exits 77, the automake code for a skipped test.
#
# Exit status: 0 the patch checks out, 1 it does not, 2 bad usage or a
# missing prerequisite, 77 skipped (no source given).
#
# Environment:
#   EFAP2P_BUILD  efap2p's build directory (efap2p, libefap2p.so); default:
#                 build/ of the checkout holding this script
#   CHECK_WORKDIR where the copies, builds and logs go; default: a new
#                 directory under $TMPDIR (kept, its path printed)
#   CHECK_CUDA    standin (default): build libfabric's CUDA support against
#                 the CUDA stand-in beside this script, so that the CUDA
#                 decision is compiled and reached in fi_info; none: a build
#                 without CUDA (the decision runs in the unit tests only)
#   JOBS          make -j (default: the number of CPUs)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

usage() {
	echo "usage: check.sh LIBFABRIC_SRC (a libfabric source tree: main, or v2.1.x)" >&2
}

if [ $# -eq 0 ] || [ -z "${1:-}" ]; then
	echo "check.sh: no libfabric source given (LIBFABRIC_SRC): skipped, nothing checked"
	exit 77
fi
if [ $# -ne 1 ]; then
	usage
	exit 2
fi
case $1 in
-h | --help)
	usage
	exit 0
	;;
esac

src=$(cd "$1" 2>/dev/null && pwd) || {
	echo "check.sh: $1: no such directory" >&2
	exit 2
}
if [ ! -f "$src/configure.ac" ] || [ ! -d "$src/prov/efa/src" ]; then
	echo "check.sh: $src is not a libfabric source tree (no configure.ac or prov/efa/src)" >&2
	exit 2
fi

build=${EFAP2P_BUILD:-$repo/build}
efap2p=$build/efap2p
lib=$build/libefap2p.so
for f in "$efap2p" "$lib"; do
	[ -e "$f" ] || {
		echo "check.sh: $f missing: run make build in the efap2p checkout (or set EFAP2P_BUILD)" >&2
		exit 2
	}
done
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
missing=
for tool in autoreconf automake libtoolize make cc git; do
	command -v "$tool" >/dev/null || missing="$missing $tool"
done
[ -f /usr/include/cmocka.h ] || missing="$missing cmocka.h"
if [ -n "$missing" ]; then
	echo "check.sh: missing:$missing (apt-get install autoconf automake libtool make gcc git libcmocka-dev)" >&2
	exit 2
fi

cuda=${CHECK_CUDA:-standin}
case $cuda in
standin | none) ;;
*)
	echo "check.sh: CHECK_CUDA=$cuda: want standin or none" >&2
	exit 2
	;;
esac
jobs=${JOBS:-$(nproc)}
work=${CHECK_WORKDIR:-$(mktemp -d "${TMPDIR:-/tmp}/efap2p-lfcheck.XXXXXX")}
mkdir -p "$work" || exit 2
work=$(cd "$work" && pwd)

version=$(sed -n 's/^AC_INIT(\[libfabric\], \[\([^]]*\)\].*/\1/p' "$src/configure.ac")
commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo "not a git tree")
dirty=$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null | head -1)
echo "== libfabric $version ($commit${dirty:+, with local changes}) from $src"
echo "== work directory: $work"

fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

# copy DIR: the source tree, without .git and without an in-tree build.
copy() {
	rm -rf "$1"
	mkdir -p "$1"
	tar -C "$src" --exclude=./.git -cf - . | tar -C "$1" -xf - || return 1
	if [ -f "$1/config.status" ]; then
		(cd "$1" && make distclean >/dev/null 2>&1)
	fi
	return 0
}

# gitapply DIR ARGS...: git apply in DIR, a copy outside any repository
# (the ceiling keeps git from finding one above it).
gitapply() {
	local dir=$1
	shift
	(cd "$dir" && GIT_CEILING_DIRECTORIES=$(dirname "$dir") git apply "$@")
}

# The series: the one made for this version first, then the other.
case $version in
2.1.*) order="v2.1.0 main" ;;
*) order="main v2.1.0" ;;
esac
copy "$work/patched" || {
	echo "check.sh: cannot copy $src" >&2
	exit 2
}
series=''
reverse=''
for s in $order; do
	if gitapply "$work/patched" --check "$here/patches/$s"/*.patch 2>/dev/null; then
		series=$s
		break
	fi
	if gitapply "$work/patched" --check -R "$here/patches/$s"/*.patch 2>/dev/null; then
		series=$s reverse=1
		break
	fi
done
if [ -z "$series" ]; then
	echo "FAIL: neither patch series (patches/main, patches/v2.1.0) applies to $src"
	for s in $order; do
		gitapply "$work/patched" --check "$here/patches/$s"/*.patch 2>&1 | sed "s|^|  $s: |" | head -5
	done
	exit 1
fi
copy "$work/unpatched" || exit 2
if [ -n "$reverse" ]; then
	echo "== the tree already has patches/$series: checking it as is, and without it"
	gitapply "$work/unpatched" -R "$here/patches/$series"/*.patch || exit 1
else
	echo "== patches/$series applies:"
	gitapply "$work/patched" "$here/patches/$series"/*.patch || exit 1
fi
for p in "$here/patches/$series"/*.patch; do
	subject=$(awk '/^Subject: /{s = $0; while ((getline l) > 0 && l ~ /^ /) s = s l; print s; exit}' "$p")
	echo "   $(basename "$p"): ${subject#Subject: \[PATCH*\] }"
done

# rdma-core before 45 (Debian 12) lacks the RDMA write cap that the unit
# tests name: give it its rdma-core value, at configure time so that
# libfabric and its tests agree.
cppflags=
if ! grep -q EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE /usr/include/infiniband/efadv.h 2>/dev/null; then
	cppflags=-DEFADV_DEVICE_ATTR_CAPS_RDMA_WRITE=8
fi
conf=(--enable-only --enable-efa=yes --enable-shm=yes --enable-efa-unit-test=/usr)
if [ "$cuda" = standin ]; then
	conf+=(--with-cuda="$here/cuda-standin" --enable-cuda-dlopen)
	mkdir -p "$work/standin"
	cc -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
		-I"$here/cuda-standin/include" -o "$work/standin/libcuda.so.1" \
		"$here/cuda-standin/standin.c" -lpthread || {
		echo "check.sh: the CUDA stand-in does not build" >&2
		exit 2
	}
	ln -sf libcuda.so.1 "$work/standin/libcudart.so"
fi
echo "== configure ${conf[*]}${cppflags:+ CPPFLAGS=$cppflags}"

# build NAME [programs]: autotools in the copy NAME and an out-of-tree build
# beside it, build-NAME; with "programs", a second build of the same copy,
# build-NAME-programs, configured without the unit tests.
build_tree() {
	local name=$1 kind=${2:-} t0=$SECONDS
	local dir=$work/build-$name${kind:+-$kind} args=("${conf[@]}")
	[ -z "$kind" ] || args=("${progconf[@]}")
	(
		cd "$work/$name" && { [ -n "$kind" ] || ./autogen.sh; } &&
			mkdir -p "$dir" && cd "$dir" &&
			"$work/$name/configure" "${args[@]}" ${cppflags:+CPPFLAGS=$cppflags} &&
			make -j"$jobs" cmocka_rpath=
	) >"$dir.log" 2>&1
	local rc=$?
	if [ $rc -ne 0 ]; then
		echo "   $name${kind:+ ($kind)}: build failed after $((SECONDS - t0)) s; the end of $dir.log:"
		tail -15 "$dir.log" | sed 's/^/     /'
		return 1
	fi
	echo "   $name${kind:+ ($kind)}: built in $((SECONDS - t0)) s ($(grep -c 'warning:' "$dir.log") compiler warnings)"
	return 0
}

# Since libfabric 2.3 (741ca496e, "prov/efa: Bypass rdma-core in data
# path"), --enable-efa-unit-test links stubs of the data-path operations
# into libfabric itself: posting a send or a receive does nothing and
# returns 0, so a program of that build waits for ever for its first
# completion, on any device. The programs (fi_info, fi_pingpong) then run
# from a build of the same copy without the unit tests.
progconf=()
for c in "${conf[@]}"; do
	[[ $c == --enable-efa-unit-test=* ]] || progconf+=("$c")
done
stubbed=
grep -q 'efa_unit_test_data_path_ops' "$src/prov/efa/Makefile.include" && stubbed=yes

# programs NAME: sets progdir to the build whose util/ programs to run for
# the copy NAME (building it the first time where the unit-test build is
# stubbed).
programs() {
	progdir=$work/build-$1
	[ -n "$stubbed" ] || return 0
	progdir=$work/build-$1-programs
	[ -x "$progdir/util/fi_info" ] || build_tree "$1" programs
}

echo "== building (autogen, configure, make -j$jobs; logs: $work/build-*.log)"
build_tree unpatched || exit 1
build_tree patched || exit 1
[ -z "$stubbed" ] ||
	echo "   (this tree's unit-test build stubs the data path: the programs run from a second build, without --enable-efa-unit-test)"
programs patched || exit 1
progs=$progdir
if [ "$cuda" = standin ]; then
	grep -q '^#define HAVE_CUDA 1' "$work/build-patched/config.h" || bad "the stand-in did not give HAVE_CUDA 1"
fi
warnings=$(grep -E '^[^ ]*(efa_hmem|efa_device|hmem_cuda|efa_unit_test_hmem|efa_unit_test_mocks)\.c:[0-9]+:[0-9]+: warning' "$work/build-patched.log" | sort -u)
[ -z "$warnings" ] || bad "warnings in the files the patch touches:"$'\n'"$warnings"

# sim ARGS...: inside the emulated p5.48xlarge.
sim() { "$efap2p" sim --machine p5.48xlarge -- "$@"; }

# unit NAME MODE: libfabric's EFA unit tests of build NAME; MODE plain or
# preload. Leaves the log in $work/unit-NAME-MODE.log.
unit() {
	local name=$1 mode=$2 log=$work/unit-$1-$2.log
	if [ "$mode" = preload ]; then
		LD_PRELOAD=$lib sim env CMOCKA_MESSAGE_OUTPUT=stdout \
			"$work/build-$name/prov/efa/test/efa_unit_test" >"$log" 2>&1
	else
		sim env CMOCKA_MESSAGE_OUTPUT=stdout \
			"$work/build-$name/prov/efa/test/efa_unit_test" >"$log" 2>&1
	fi
	local run ok failed skipped
	run=$(grep -c '^\[ RUN      \]' "$log")
	ok=$(grep -c '^\[       OK \]' "$log")
	skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s), listed below:/\1/p' "$log")
	failed=$(grep -E '^\[  (FAILED|ERROR) *\] test_' "$log" | sed 's/.*\] //' | sort -u | wc -l)
	printf '   %-10s %-26s %4s run: %4s passed, %3s skipped, %3s failed\n' "$name" \
		"$([ "$mode" = preload ] && echo "with libefap2p preloaded" || echo "without libefap2p")" \
		"$run" "$ok" "${skipped:-0}" "$failed"
}
failures() { grep -E '^\[  FAILED  \] test_' "$1" | sed 's/.*\] //' | sort -u; }

echo "== libfabric's EFA unit tests (prov/efa/test/efa_unit_test) inside efap2p sim --machine p5.48xlarge"
for name in unpatched patched; do
	for mode in plain preload; do
		unit "$name" "$mode"
	done
done
ours=$(grep -ho 'test_efa_hmem_info_p2p_query_[a-z_]*' "$work/patched/prov/efa/test/efa_unit_tests.c" | sort -u)
echo "== the patch's tests ($(echo "$ours" | wc -l)):"
for mode in plain preload; do
	log=$work/unit-patched-$mode.log
	line=
	for t in $ours; do
		if grep -qx "\[       OK \] $t" "$log"; then
			line="$line ${t#test_efa_hmem_info_p2p_query_}:ok"
		elif grep -qx "\[  SKIPPED \] $t" "$log"; then
			line="$line ${t#test_efa_hmem_info_p2p_query_}:skipped"
		else
			line="$line ${t#test_efa_hmem_info_p2p_query_}:FAILED"
			bad "$t ($mode): $(grep -A3 "RUN      \] $t\$" "$log" | grep -E 'ERROR|LINE' | head -2 | tr '\n' ' ')"
		fi
	done
	echo "   $([ "$mode" = preload ] && echo "preloaded:" || echo "plain:    ")$line"
done
grep -qx '\[       OK \] test_efa_hmem_info_p2p_query_real' "$work/unit-patched-preload.log" ||
	bad "the test against the real libefap2p did not pass"
for mode in plain preload; do
	new=$(comm -13 <(failures "$work/unit-unpatched-$mode.log") <(failures "$work/unit-patched-$mode.log"))
	both=$(comm -12 <(failures "$work/unit-unpatched-$mode.log") <(failures "$work/unit-patched-$mode.log"))
	[ -z "$new" ] || bad "failing with the patch only ($mode):"$'\n'"$new"
	if [ -n "$both" ]; then
		echo "   failing with and without the patch ($mode), not the patch's: $(echo "$both" | tr '\n' ' ')"
	fi
done

echo "== fi_info -p efa of the patched build inside efap2p sim --machine p5.48xlarge"
fienv=(FI_LOG_LEVEL=info)
if [ "$cuda" = standin ]; then
	fienv+=(LD_LIBRARY_PATH="$work/standin")
fi
decision='FI_HMEM_CUDA P2P( between| with|:)'
LD_PRELOAD=$lib sim env "${fienv[@]}" "$progs/util/fi_info" -p efa >"$work/fi_info-preload.log" 2>&1
fi_rc=$?
[ $fi_rc -eq 0 ] || bad "fi_info -p efa exited $fi_rc"
echo "   providers listed: $(grep -c '^provider: efa' "$work/fi_info-preload.log") (efa)"
if [ "$cuda" = standin ]; then
	line=$(grep -E "$decision" "$work/fi_info-preload.log" | head -1)
	echo "   with libefap2p preloaded:"
	echo "     ${line#*<info> }" | cut -c1-400
	[[ $line == *"decided by efap2p"* ]] || bad "no decision by efap2p in fi_info's log"
	sim env "${fienv[@]}" "$progs/util/fi_info" -p efa >"$work/fi_info-plain.log" 2>&1
	echo "   without it (the probe runs; the stand-in has no GPU memory):"
	grep -E "$decision|Failed to (create CUDA context|allocate CUDA buffer)" "$work/fi_info-plain.log" |
		sed 's/.*<[a-z]*> /     /' | head -3
	grep -q 'probing' "$work/fi_info-plain.log" || bad "without libefap2p, no line saying the probe runs"
	grep -q 'decided by efap2p' "$work/fi_info-plain.log" && bad "without libefap2p, a decision by efap2p"
	# A NIC whose firmware blocks peer access, recorded by the operator.
	nic0=$(grep -m1 -o 'between [a-z0-9]* and' "$work/fi_info-preload.log" | cut -d' ' -f2)
	# shellcheck disable=SC2016 # expanded inside the emulated host
	nicpci=$(sim sh -c 'basename "$(readlink -f "$SYSFS_PATH/class/infiniband/$1/device")"' sh "$nic0")
	topo=$work/topology/topology.json
	mkdir -p "$work/topology" && chmod 755 "$work/topology"
	sim "$efap2p" export --peer-blocked "$nicpci" -o "$topo" >"$work/export.log" 2>&1 ||
		bad "efap2p export --peer-blocked $nicpci failed: $(cat "$work/export.log")"
	LD_PRELOAD=$lib sim env "${fienv[@]}" EFAP2P_TOPOLOGY="$topo" \
		"$progs/util/fi_info" -p efa >"$work/fi_info-blocked.log" 2>&1
	line=$(grep -E "$decision" "$work/fi_info-blocked.log" | head -1)
	echo "   with libefap2p and a topology file marking $nic0 ($nicpci) as blocking peer access:"
	echo "     ${line#*<info> }" | cut -c1-300
	[[ $line == *"not supported, decided by efap2p (source: a topology file)"* ]] || bad "no 'not supported' decision from the topology file"
else
	echo "   (CHECK_CUDA=none: FI_HMEM_CUDA is not initialized, so fi_info reaches no CUDA decision)"
fi

# pingpong DIR NAME: fi_pingpong -p efa -e rdm of the build in DIR, server
# and client in one emulated host (shm off, so that the EFA device carries
# the data), libefap2p preloaded. Leaves $work/pingpong-NAME-{server,client}.log.
pingpong() {
	local port=$((20000 + RANDOM % 30000))
	# shellcheck disable=SC2016 # expanded inside the emulated host
	LD_PRELOAD=$lib timeout 120 "$efap2p" sim --machine p5.48xlarge -- \
		env FI_EFA_ENABLE_SHM_TRANSFER=0 sh -c '
		"$1" -p efa -e rdm -I 100 -S 4096 -c -B "$3" >"$2-server.log" 2>&1 &
		pid=$!
		sleep 3
		"$1" -p efa -e rdm -I 100 -S 4096 -c -P "$3" 127.0.0.1 >"$2-client.log" 2>&1
		rc=$?
		wait $pid || rc=1
		exit $rc' sh "$1/util/fi_pingpong" "$work/pingpong-$2" "$port" >/dev/null 2>&1
}
echo "== fi_pingpong -p efa -e rdm -S 4096 of the patched build, two processes of one emulated host, libefap2p preloaded"
if pingpong "$progs" patched; then
	sed -n '1,2p' "$work/pingpong-patched-client.log" | sed 's/^/   /'
else
	pp_rc=$?
	echo "   exited $pp_rc ($([ $pp_rc = 124 ] && echo "hung: killed after 120 s" || echo failed)); the unpatched build:"
	if ! programs unpatched; then
		bad "fi_pingpong fails with the patch; the unpatched build to compare does not build"
	elif pingpong "$progdir" unpatched; then
		bad "fi_pingpong fails with the patch only (logs: $work/pingpong-*.log)"
	else
		echo "   exited $? too: not the patch's (logs: $work/pingpong-*.log)"
	fi
fi

if [ $fail -ne 0 ]; then
	echo "check.sh: FAIL: libfabric $version ($commit) with patches/$series; logs in $work"
	exit 1
fi
echo "check.sh: PASS: libfabric $version ($commit) with patches/$series; logs in $work"
exit 0
