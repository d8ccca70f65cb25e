#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-run-output.sh FILE: what `make run` printed (FILE) is what the
# README promises a newcomer: one screen (at most 40 lines, the build's
# included), libefap2p's P2P_DMA bit on none of the emulated p5.48xlarge's
# 32 NICs without it and on all 32 with it, the launcher's lines (efap2p
# env: NCCL_TOPO_FILE naming the boot-time NCCL topology with gdr on all 8
# GPUs and 32 NICs, no FI_HMEM_DISABLE_P2P), efap2p check's whole answer,
# and last its verdict: check's own first line and its exit status (0,
# good, on that healthy model). The wording is check's, so that this
# holds whatever words check chooses.
#   scripts/check-run-output.sh FILE   (ctest firstrun.make-run, CI)
set -euo pipefail
out=$1
fail() { echo "FAIL: make run: $*"; exit 1; }
n=$(wc -l < "$out")
[ "$n" -le 40 ] || fail "$n lines, more than a screen (40)"
grep -q '^ *P2P_DMA without libefap2p: 0 of 32 NICs; with LD_PRELOAD=.*: 32 of 32 NICs$' "$out" ||
	fail "no line with the P2P_DMA bit on 0 of 32 NICs without libefap2p, 32 of 32 with it"
grep -q '^ *export NCCL_TOPO_FILE=/run/efap2p/nccl-topology.xml: NCCL reads gdr="1" on 8 GPUs and 32 NICs$' "$out" ||
	fail "no NCCL_TOPO_FILE line from efap2p env with gdr on 8 GPUs and 32 NICs"
grep -q '^ *no FI_HMEM_DISABLE_P2P: ' "$out" && ! grep -q 'export FI_HMEM_DISABLE_P2P' "$out" ||
	fail "efap2p env should leave FI_HMEM_DISABLE_P2P unset on a healthy p5.48xlarge"
first=$(grep -n '^== efap2p check' "$out" | cut -d: -f1)
[ -n "$first" ] || fail "no '== efap2p check' header"
answer=$(sed -n "$((first + 1))p" "$out")
last=$(tail -1 "$out")
[ "$last" = "verdict: ${answer#efap2p check: } (efap2p check, exit 0)" ] ||
	fail "the last line is '$last', not check's verdict '$answer' with exit 0"
echo "make run: $n lines, ends with: $last"
