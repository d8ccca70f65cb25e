#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI, on the fresh checkout after 'make test-deps': what a newcomer's
# first 'make run' shows (a line for each build step, then one screen that
# ends with efap2p check's verdict: scripts/check-run-output.sh), the
# build's output when a step fails and with V=1, the job count given to
# cmake, where make finds Go when it is not on PATH, and make deb as quiet
# as the builds (the packages scripts/ci-packages.sh then installs).
#   scripts/ci-firstrun.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efap2p-firstrun.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

step "make run"
make run > "$tmp/run" 2>&1 || { cat "$tmp/run"; fail "make run"; }
cat "$tmp/run"
scripts/check-run-output.sh "$tmp/run" || fail "make run's output"
# before the demo: the build's steps, a line each, and what was built
first=$(grep -n '^make run:' "$tmp/run" | head -1 | cut -d: -f1)
[ -n "$first" ] && [ "$first" -le 5 ] || fail "make run: $((${first:-99} - 1)) lines before the demo; want a line for each build step"
grep -q '^building build/libefap2p.so' "$tmp/run" || fail "make run does not say what it builds"
! grep -qE 'Entering directory|Built target|^\[ *[0-9]+%\]|^(CGO_ENABLED=1 )?go build|cmake --build' "$tmp/run" ||
	fail "make run shows the build's progress"
grep -q '^built build/' "$tmp/run" || fail "make run: no one-line build summary"

step "make V=1 build"
make V=1 build > "$tmp/v1" 2>&1 || { cat "$tmp/v1"; fail "make V=1 build"; }
grep -q 'go build' "$tmp/v1" || fail "make V=1: the go build command is not shown"
jobs=$(nproc)
grep -q -- "--build build/cmake -j $jobs\$" "$tmp/v1" || fail "make V=1: no 'cmake --build ... -j $jobs' (one job per CPU)"
echo "shows the commands; cmake --build -j $jobs"

step "a build step that fails shows its output"
if make go-build GO_LDFLAGS=-no-such-flag > "$tmp/bad" 2>&1; then fail "go-build with a bad -ldflags succeeded"; fi
grep -q 'no-such-flag' "$tmp/bad" || { cat "$tmp/bad"; fail "the failing go build's own message is not shown"; }
grep -q 'go-build failed' "$tmp/bad" || { cat "$tmp/bad"; fail "no line naming the failed step"; }
make go-build > /dev/null
echo "ok"

step "Go not on PATH"
path=$(tr ':' '\n' <<< "$PATH" | while read -r d; do [ -x "$d/go" ] || echo "$d"; done | paste -sd:)
fallback=/usr/local/go
if [ -x "$fallback/bin/go" ]; then
	out=$(env PATH="$path" make -n go-build 2>&1) || fail "make -n go-build without go on PATH: $out"
	grep -q "using $fallback/bin/go" <<< "$out" || fail "make does not say it uses $fallback/bin/go: $out"
	grep -q "$fallback/bin/go build" <<< "$out" || fail "make does not build with $fallback/bin/go: $out"
	echo "falls back to $fallback/bin/go"
fi
if out=$(env PATH="$path" make go-build GO_FALLBACK="$tmp/none" 2>&1); then fail "make go-build without any Go succeeded"; fi
grep -q 'no Go toolchain.*go.dev/dl' <<< "$out" || fail "without Go: $out"
echo "without Go: $(head -1 <<< "$out")"

step "make deb"
make deb > "$tmp/deb" 2>&1 || { cat "$tmp/deb"; fail "make deb"; }
cat "$tmp/deb"
for p in libefap2p1 libefap2p-dev efap2p efap2p-sim; do
	ls build/deb/"${p}"_*.deb >/dev/null 2>&1 || fail "make deb built no $p"
done
n=$(ls build/deb/*.deb | wc -l)
# the step's line, then the packages: the builds are quiet (README)
[ "$(wc -l < "$tmp/deb")" -le $((n + 1)) ] || fail "make deb printed $(wc -l < "$tmp/deb") lines for $n packages"
grep -q '^building the Debian packages' "$tmp/deb" || fail "make deb does not say what it builds"
