#!/usr/bin/env bash
# make run: the main job on the embedded default machine (an emulated
# p5.48xlarge): write its sysfs tree, show the GPU/NIC matrix and explain
# one GPU-NIC pair.
set -euo pipefail
build=${1:-build}
. "$(dirname "$0")/tmpdir.sh"
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
