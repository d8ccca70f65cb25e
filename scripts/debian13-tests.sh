#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What make test-debian13 runs inside the Debian 13 root (scripts/debian13.sh
# mounts the checkout there): the build made on the host, unchanged, against
# that root's rdma-core and libfabric. ctest runs every suite (the emulator's,
# the library's, the operator's check, the program checks that
# `make test-programs` runs); the Go tests of the packages that meet
# rdma-core run with the host's toolchain: those that load libibverbs and
# libefa (purego), compile against their headers (cgo) or run their
# programs in the emulator. The other packages are pure Go: their results
# do not depend on the stack, and make test runs them.
#   scripts/debian13-tests.sh BUILD
set -uo pipefail
build=$1
GO_PACKAGES="./abi/... ./verbs/ ./efadv/ ./internal/dl/ ./sim/ ./nodecheck/ ./cmd/efap2p/"
log=$build/debian13/tests.log
: > "$log"
python3 ctests/stack.py | tee -a "$log"
status=0
start=$SECONDS
# contrib.*: the patches' form and the scripts' lint, the same on any stack
(cd "$build/cmake" && ctest --output-on-failure -E '^contrib\.') > "$build/debian13/ctest.log" 2>&1 || status=1
grep -E '^[0-9]+% tests passed|^The following tests|^\s+[0-9]+ - ' "$build/debian13/ctest.log" | tee -a "$log"
[ $status = 0 ] || { grep -B2 -A40 '\*\*\*Failed\|\*\*\*Timeout\|\*\*\*Exception' "$build/debian13/ctest.log" | tail -400; }
# The efadv calls rdma-core 52 added (efadv_create_qp_ex's unsolicited-write
# flag, efadv_query_mr) exist only in that release's headers, so the tests
# that make them skip those checks when built on Debian 12. Built again here
# against this root's own headers, they run on the host's emulator as the
# ctests of the same names do.
native=$build/debian13/native
mkdir -p "$native"
if grep -q efadv_query_mr /usr/include/infiniband/efadv.h; then
	for t in test_write_imm test_kernel_abi; do
		gcc -Wall -Wextra -Werror -O2 -DHAVE_EFADV_QP_FLAGS -DHAVE_EFADV_QUERY_MR \
			-o "$native/$t" "ctests/emulator/$t.c" -libverbs -lefa -ldl >> "$log" 2>&1 ||
			{ echo "$t: does not build against this root's rdma-core headers" | tee -a "$log"; status=1; }
	done
	abi=ctests/emulator/abi.json
	native_test() {
		local name=$1
		shift
		if timeout 120 "$@" > "$native/$name.log" 2>&1; then
			echo "native: $name passed" | tee -a "$log"
		else
			echo "native: $name FAILED" | tee -a "$log"
			tail -20 "$native/$name.log"
			status=1
		fi
	}
	native_test emulator.write_imm "$build/efap2p" sim --model "$abi" -- "$native/test_write_imm" rdmap0s6
	native_test emulator.kernel_abi.p5 "$build/efap2p" sim --machine p5.48xlarge -- "$native/test_kernel_abi" 6.13 rdmap79s0=rwu rdmap201s0=rwu
	for rel in 6.8.0 6.10.0 6.13.0; do
		sed "s/\"kernel\": \"[^\"]*\"/\"kernel\": \"$rel\"/" "$abi" > "$native/abi-$rel.json"
		native_test "emulator.kernel_abi.$rel" "$build/efap2p" sim --model "$native/abi-$rel.json" -- \
			"$native/test_kernel_abi" "$rel" rdmap0s6=rwu rdmap0s7=r
	done
fi
ctest_s=$((SECONDS - start))
gostart=$SECONDS
if command -v go >/dev/null; then
	TMPDIR=/dev/shm go test -count=1 -v $GO_PACKAGES > "$build/debian13/go.log" 2>&1 || { status=1; grep -E -B5 -A30 '^(--- FAIL|FAIL|panic)' "$build/debian13/go.log" | tail -300; }
	pass=$(grep -cE '^\s*--- PASS' "$build/debian13/go.log")
	skip=$(grep -cE '^\s*--- SKIP' "$build/debian13/go.log")
	fails=$(grep -cE '^\s*--- FAIL' "$build/debian13/go.log")
	echo "go test $GO_PACKAGES: $pass passed, $skip skipped, $fails failed" | tee -a "$log"
else
	echo "go test: no Go toolchain to run the Go tests with" | tee -a "$log"
	status=1
fi
echo "debian13: ctest ${ctest_s} s, go test $((SECONDS - gostart)) s; $([ $status = 0 ] && echo passed || echo FAILED)" | tee -a "$log"
exit $status
