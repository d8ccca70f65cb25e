#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_check.sh EFAP2P CASE: one operator's use of `efap2p check`.
set -uo pipefail
efap2p=$1 case=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efap2p-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# run EXPECTED_STATUS CMD...: runs CMD, keeps its stdout in $out.
run() {
	local want=$1
	shift
	out=$("$@" 2>"$tmp/stderr")
	local got=$?
	[ "$got" = "$want" ] || fail "$* exited $got, want $want: $out $(cat "$tmp/stderr")"
}

case $case in
healthy)
	# Inside the emulated p5.48xlarge (DMI and modules from its model).
	run 0 "$efap2p" sim --machine p5.48xlarge -- "$efap2p" check
	grep -q '^8 GPUs, each with true P2P to its 4 switch-local EFA NICs (p5.48xlarge)$' <<<"$out" || fail "no answer line: $out"
	[ "$(grep -c '^GPU[0-7] .* P2P with 4/4 switch-local NICs' <<<"$out")" = 8 ] || fail "not 8 GPU lines: $out"
	[ "$(wc -l <<<"$out")" -le 24 ] || fail "more than one screen: $out"
	grep -q '^No findings\.$' <<<"$out" || fail "findings: $out"
	;;
npd)
	# A node-problem-detector plugin run without root: one line. On
	# p5.48xlarge the hidden ACS state decides nothing (exit 0); below
	# intel-acs-switch's Broadwell switch with Linux 6.15 it does (exit 2).
	"$efap2p" sim write --unprivileged --machine p5.48xlarge "$tmp/tree" >/dev/null || fail "sim write"
	run 0 "$efap2p" check --format line --sysfs "$tmp/tree"
	[ "$(wc -l <<<"$out")" = 1 ] && [ "${#out}" -le 120 ] || fail "not one short line: $out"
	[[ $out == "OK: 8 GPUs, each with true P2P to its 4 switch-local EFA NICs (p5.48xlarge)" ]] || fail "line: $out"
	"$efap2p" sim write --unprivileged --machine intel-acs-switch "$tmp/acs" >/dev/null || fail "sim write"
	run 2 "$efap2p" check --format line --sysfs "$tmp/acs" --kernel 6.15.0
	[[ $out == "UNKNOWN uncertain-verdicts: "* ]] || fail "line: $out"
	# A CPU node: not applicable, OK.
	run 0 "$efap2p" sim --machine cpu-node -- "$efap2p" check --format line
	[[ $out == "OK: not applicable: no EFA device and no accelerator" ]] || fail "cpu-node: $out"
	;;
expect)
	"$efap2p" sim write --machine p4d.24xlarge "$tmp/tree" >/dev/null || fail "sim write"
	run 1 "$efap2p" check --sysfs "$tmp/tree" --expect p5.48xlarge
	grep -q 'expected 32 EFA devices for p5.48xlarge at its addresses, found 0 there (and 4 at other addresses): ' <<<"$out" || fail "no layout finding: $out"
	;;
prometheus)
	command -v promtool >/dev/null || { echo "promtool not installed"; exit 77; }
	"$efap2p" sim write --machine p5.48xlarge "$tmp/tree" >/dev/null || fail "sim write"
	run 0 "$efap2p" check --sysfs "$tmp/tree" --format prometheus -o "$tmp/efap2p.prom"
	promtool check metrics <"$tmp/efap2p.prom" || fail "promtool check metrics"
	# what an operator alerts on: every pair is OK, so no pair series
	! grep -q '^efap2p_check_pair_' "$tmp/efap2p.prom" || fail "pair series of OK pairs"
	grep -qx 'efap2p_check_pairs_p2p 256' "$tmp/efap2p.prom" || fail "not 256 P2P pairs counted"
	run 0 "$efap2p" check --sysfs "$tmp/tree" --format prometheus --all-pairs -o "$tmp/all.prom"
	promtool check metrics <"$tmp/all.prom" || fail "promtool check metrics (--all-pairs)"
	[ "$(grep -c '^efap2p_check_pair_p2p{.*} 1$' "$tmp/all.prom")" = 256 ] || fail "--all-pairs: not 256 P2P pairs"
	;;
*)
	fail "unknown case $case"
	;;
esac
echo "check.$case: ok"
