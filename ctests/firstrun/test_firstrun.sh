#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_firstrun.sh SOURCE_DIR BUILD_DIR CASE: a newcomer's first run.
#   make-run  make run's script (scripts/run-default.sh, as make run runs
#             it) fits a screen and ends with efap2p check's verdict
#             (scripts/check-run-output.sh)
#   preload-env    efap2p sim -- env LD_PRELOAD=libefap2p.so PROG keeps the
#                  emulator: PROG sees every EFA device, with P2P_DMA; env -i
#                  is refused in one line, exit 2, and PROG does not run
#   preload-shows  what the manuals say a user sees of the preloaded
#                  library: fi_info and ibv_devinfo -v print the same with
#                  and without it; EFAP2P_LOG=info prints its answer for
#                  each device libfabric asks about
#   docs           the documents show no command through sudo (root-only
#                  images have none: they say "as root"), and every
#                  Markdown table row sits in its table
set -uo pipefail
src=$1 build=$2 case=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efap2p-firstrun.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
efap2p=$build/efap2p lib=$build/libefap2p.so caps=$build/bin/p2p_caps

case $case in
make-run)
	rc=0
	"$src/scripts/run-default.sh" "$build" > "$tmp/out" 2>&1 || rc=$?
	[ $rc = 0 ] || { cat "$tmp/out"; fail "make run's script exited $rc"; }
	cat "$tmp/out"
	"$src/scripts/check-run-output.sh" "$tmp/out" || exit 1
	;;
preload-env)
	out=$("$efap2p" sim -- env LD_PRELOAD="$lib" "$caps") || fail "env LD_PRELOAD=libefap2p.so p2p_caps inside: exit $?: $out"
	n=$(grep -c 'P2P_DMA yes' <<< "$out") || true
	[ "$n" = 32 ] || fail "efap2p sim -- env LD_PRELOAD=libefap2p.so p2p_caps: P2P_DMA on $n NICs, want 32: $out"
	echo "efap2p sim -- env LD_PRELOAD=libefap2p.so p2p_caps: P2P_DMA on $n of 32 NICs"
	rc=0
	"$efap2p" sim -- env -i "$caps" > "$tmp/out" 2> "$tmp/err" || rc=$?
	[ $rc = 2 ] || fail "efap2p sim -- env -i p2p_caps: exit $rc, want 2 (refused)"
	[ ! -s "$tmp/out" ] || fail "refused, yet p2p_caps ran: $(cat "$tmp/out")"
	[ "$(wc -l < "$tmp/err")" = 1 ] && grep -q 'env -i would drop the emulated host' "$tmp/err" ||
		fail "efap2p sim -- env -i: not one line saying why: $(cat "$tmp/err")"
	echo "efap2p sim -- env -i p2p_caps: $(cat "$tmp/err")"
	;;
preload-shows)
	command -v fi_info >/dev/null && command -v ibv_devinfo >/dev/null || skip "fi_info or ibv_devinfo missing (make test-deps)"
	for prog in "fi_info -p efa" "ibv_devinfo -v"; do
		# shellcheck disable=SC2086
		"$efap2p" sim -- $prog > "$tmp/without" 2>&1 || fail "$prog without the library"
		# shellcheck disable=SC2086
		LD_PRELOAD=$lib "$efap2p" sim -- $prog > "$tmp/with" 2>&1 || fail "$prog with the library"
		cmp -s "$tmp/without" "$tmp/with" || fail "$prog prints something else with libefap2p (the manuals say it does not): $(diff "$tmp/without" "$tmp/with" | head)"
		echo "$prog: the same $(wc -l < "$tmp/with") lines with and without libefap2p"
	done
	LD_PRELOAD=$lib EFAP2P_LOG=info "$efap2p" sim -- fi_info -p efa > "$tmp/out" 2> "$tmp/err" || fail "EFAP2P_LOG=info fi_info"
	n=$(grep -c '^efap2p: info: rdmap[0-9]*s0 (0000:[0-9a-f:.]*): P2P_DMA: true P2P into accelerator' "$tmp/err") || true
	[ "$n" = 32 ] || fail "EFAP2P_LOG=info fi_info -p efa: $n lines with a device's P2P_DMA answer, want 32: $(head -3 "$tmp/err")"
	echo "EFAP2P_LOG=info fi_info -p efa: $n lines like: $(head -1 "$tmp/err")"
	;;
docs)
	python3 - "$src" <<-'PY' || exit 1
	import os, re, subprocess, sys
	src = sys.argv[1]
	docs = []
	for d, dirs, files in os.walk(src):
	    dirs[:] = [x for x in dirs if x not in ("build", ".git")]
	    docs += [os.path.join(d, f) for f in files if f.endswith(".md") or re.fullmatch(r".*\.[1-8]", f)]
	bad = []
	for p in sorted(docs):
	    lines = open(p, encoding="utf-8").read().split("\n")
	    rel = os.path.relpath(p, src)
	    fence, prev_row = False, False
	    for i, l in enumerate(lines):
	        if l.startswith("```"):
	            fence = not fence
	            continue
	        # a command shown through sudo: a code line, an inline code
	        # span, a man page's line
	        code = fence or l.startswith("    ") or not p.endswith(".md")
	        if (code and re.search(r"(^\s*(\$ )?|&&\s*|\|\s*|;\s*)sudo ", l)) or re.search(r"`sudo ", l):
	            bad.append(f"{rel}:{i + 1}: a command through sudo (say 'as root'): {l.strip()}")
	        # a table row outside a table renders as text
	        row = p.endswith(".md") and not fence and l.startswith("|")
	        if row and not prev_row and not (i + 1 < len(lines) and re.match(r"\|\s*:?-+", lines[i + 1])):
	            bad.append(f"{rel}:{i + 1}: a table row outside its table: {l[:60]}")
	        prev_row = row
	print("\n".join(bad) or f"{len(docs)} documents: no sudo, every table row in its table")
	sys.exit(1 if bad else 0)
	PY
	;;
*) fail "unknown case $case" ;;
esac
echo "firstrun.$case: ok"
