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
(cd "$build/cmake" && ctest --output-on-failure) > "$build/debian13/ctest.log" 2>&1 || status=1
grep -E '^[0-9]+% tests passed|^The following tests|^\s+[0-9]+ - ' "$build/debian13/ctest.log" | tee -a "$log"
[ $status = 0 ] || { grep -B2 -A40 '\*\*\*Failed\|\*\*\*Timeout\|\*\*\*Exception' "$build/debian13/ctest.log" | tail -400; }
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
