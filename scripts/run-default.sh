#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make run: the main job on the embedded default machine, on one screen.
# Every step runs inside the emulated host (efap2p sim --machine
# p5.48xlarge -- ...), so that what it shows (sysfs, the kernel and its
# configuration, the EFA devices libefa opens) is the model's, not this
# machine's: an unmodified rdma-core program's P2P_DMA bit without and
# with libefap2p, the lines a job's launcher exports (efap2p env), then
# efap2p check's whole answer for the node. It ends
# with check's verdict and exits with check's status (0 good, 1 degraded,
# 3 could not tell). scripts/check-run-output.sh holds it to that.
#   scripts/run-default.sh [BUILD_DIR]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
machine=p5.48xlarge
efap2p=$build/efap2p
rel=${1:-build}
inside() { "$efap2p" sim --machine "$machine" -- "$@"; }
# caps OUTPUT: "N of M EFA devices with P2P_DMA" from p2p_caps' lines
caps() { echo "$(grep -c 'P2P_DMA yes' <<< "$1") of $(grep -c 'P2P_DMA' <<< "$1") NICs"; }

echo "make run: efap2p inside an emulated $machine (efap2p sim: the model's PCI tree, kernel and EFA devices)"
echo "== libefap2p: an unmodified rdma-core program (p2p_caps) asks efadv_query_device for each EFA NIC"
plain=$(inside "$build/bin/p2p_caps")
# efap2p sim appends the emulator's library to LD_PRELOAD: preloading ours
# when starting it keeps both (efap2p loads it too, and never calls it)
with=$(LD_PRELOAD=$build/libefap2p.so inside "$build/bin/p2p_caps" --peer rdmap79s0=0000:53:00.0)
echo "   P2P_DMA without libefap2p: $(caps "$plain"); with LD_PRELOAD=$rel/libefap2p.so: $(caps "$with")"
echo "   its pairwise query: $(sed -n 's/^rdmap79s0 -> \(.*\) (.*/rdmap79s0 -> GPU0 \1/p' <<< "$with")"

# What the consumers see: the lines a job's launcher exports here (efap2p
# env, from the files efap2p-topology.service writes at boot), shown with
# the emulated host's folder named as such.
echo "== what the GPU stacks get: efap2p env, the launcher's lines (after export --boot, as the unit runs it)"
# shellcheck disable=SC2016 # expanded by the emulated host's shell
env_out=$(inside sh -c '"$1" export --boot >/dev/null 2>&1 && "$1" env && echo "gdr: $(grep -c "<net .*gdr=\"1\"" "$EFAP2P_TOPOLOGY_ROOT/run/efap2p/nccl-topology.xml") $(grep -c "<gpu .*gdr=\"1\"" "$EFAP2P_TOPOLOGY_ROOT/run/efap2p/nccl-topology.xml")"' sh "$efap2p")
topo=$(sed -n 's/^export NCCL_TOPO_FILE=.*\/run\/efap2p\//NCCL_TOPO_FILE=\/run\/efap2p\//p' <<< "$env_out")
read -r _ nets gpus <<< "$(grep '^gdr: ' <<< "$env_out")"
echo "   export $topo: NCCL reads gdr=\"1\" on $gpus GPUs and $nets NICs"
if grep -q '^export FI_HMEM_DISABLE_P2P=1' <<< "$env_out"; then
	echo "   export FI_HMEM_DISABLE_P2P=1: no pair has P2P, libfabric 2.x skips its CUDA probe"
else
	echo "   no FI_HMEM_DISABLE_P2P: every pair works; libfabric patched with contrib/libfabric skips its probe"
fi
echo "== efap2p check: will GPUDirect RDMA work on this node?"
status=0
out=$(inside "$efap2p" check) || status=$?
echo "$out"
echo
echo "make run showed libefap2p's bit, the launcher's lines and efap2p check's answer (more: efap2p topo, efap2p explain GPU0 NIC0)"
verdict=$(head -1 <<< "$out")
echo "verdict: ${verdict#efap2p check: } (efap2p check, exit $status)"
exit $status
