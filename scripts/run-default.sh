#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make run: the main job on the embedded default machine (an emulated
# p5.48xlarge): write its sysfs tree, show the GPU/NIC matrix and explain
# one GPU-NIC pair.
set -euo pipefail
build=${1:-build}
. "$(dirname "$0")/lib.sh"
tree=$(efap2p_tmpdir)
trap 'rm -rf "$tree"' EXIT
"$build/efap2p" sim write --machine p5.48xlarge "$tree"
echo
echo "== efap2p topo (GPUs and NICs of the emulated p5.48xlarge)"
"$build/efap2p" topo --sysfs "$tree"
echo
echo "== efap2p explain 0000:53:00.0 0000:4f:00.0 (GPU0's memory, an EFA NIC on its switch)"
"$build/efap2p" explain --sysfs "$tree" 0000:53:00.0 0000:4f:00.0
echo
echo "== efap2p explain 0000:53:00.0 0000:c6:00.0 (GPU0's memory, an EFA NIC on the other socket)"
"$build/efap2p" explain --sysfs "$tree" 0000:53:00.0 0000:c6:00.0
echo
echo "== an unmodified rdma-core program (ctests/shim/p2p_caps.c, linked with libibverbs and libefa only)"
echo "== inside the emulated p5.48xlarge, without libefap2p:"
caps="$build/bin/p2p_caps"
plain=$("$build/efap2p" sim --machine p5.48xlarge -- "$caps")
echo "$plain" | head -2
echo "   ... ($(echo "$plain" | grep -c 'P2P_DMA yes') of $(echo "$plain" | grep -c 'P2P_DMA') EFA devices with P2P_DMA)"
echo
echo "== the same binary with libefap2p.so preloaded:"
echo "==   LD_PRELOAD=$build/libefap2p.so efap2p sim --machine p5.48xlarge -- p2p_caps --peer rdmap79s0=0000:53:00.0"
# efap2p sim appends the emulator's library to LD_PRELOAD: preloading ours
# when starting it keeps both (efap2p loads it too, and never calls it)
out=$(LD_PRELOAD="$(cd "$build" && pwd)/libefap2p.so" \
	"$build/efap2p" sim --machine p5.48xlarge -- "$caps" --peer rdmap79s0=0000:53:00.0)
echo "$out" | head -2
echo "   ... ($(echo "$out" | grep -c 'P2P_DMA yes') of $(echo "$out" | grep -c 'P2P_DMA') EFA devices with P2P_DMA)"
echo "$out" | sed -n '/->/,$p' | fold -s -w 100
