#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_taskprolog.sh EFAP2P: the packaged Slurm TaskProlog
# (dist/efap2p-slurm-taskprolog.in) as slurmstepd runs it, without Slurm:
# in an emulated p5.48xlarge with its boot-time files, with the task's
# environment (SLURM_STEP_GPUS, SLURM_JOB_GPUS, EFAP2P_ENV_ARGS), standard
# input and error closed; it prints efap2p env's TaskProlog lines, and
# nothing, exit 0, when efap2p env fails. Inside slurmd: fleet.sh
# taskprolog (make fleet-test).
set -uo pipefail
efap2p=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efap2p-taskprolog.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
sed -e "s|@bindir@|$(dirname "$efap2p")|g" -e "s|@datadir@|$src/dist|g" "$src/dist/efap2p-slurm-taskprolog.in" >"$tmp/prolog"
chmod 755 "$tmp/prolog"
nics=$("$efap2p" sim --machine p5.48xlarge -- sh -c 'for d in "$SYSFS_PATH"/class/infiniband/*; do basename "$(readlink -f "$d/device")"; done' | paste -sd, -)

# prolog BLOCKED [VAR=value...]: the prolog's output in an emulated
# p5.48xlarge whose boot-time files record BLOCKED (NICs, or none) as
# firmware-blocked, its standard input and error closed as slurmstepd
# leaves them; the tree's paths read TREE.
prolog() {
	local blocked=$1
	shift
	"$efap2p" sim --machine p5.48xlarge -- sh -c '
		"$1" export --boot ${2:+--peer-blocked "$2"} >/dev/null 2>&1 || exit 99
		shift 2
		env -u SLURM_STEP_GPUS -u SLURM_JOB_GPUS -u EFAP2P_ENV_ARGS -u NCCL_TOPO_FILE -u FI_HMEM_DISABLE_P2P -u EFAP2P_ENV "$@" 0<&- 2>&-
		echo "exit $?"' sh "$efap2p" "$blocked" "$@" "$tmp/prolog" | sed "s|/[^ ]*/run/efap2p/|TREE/run/efap2p/|"
}
want() {
	local got=$1 want=$2 what=$3
	[ "$got" = "$want" ] || fail "$what: the prolog printed
$got
want
$want"
}
nccl="export NCCL_TOPO_FILE=TREE/run/efap2p/nccl-topology.xml"
refused="print efap2p: no GPUDirect RDMA for this task (efap2p check: p2p-refused:"
gdr="FI_HMEM_DISABLE_P2P=1 spares libfabric its CUDA probe; aws-ofi-nccl requires GPUDirect RDMA on p5.48xlarge and will not run there"

want "$(prolog "")" "$nccl
export EFAP2P_ENV=NCCL_TOPO_FILE
exit 0" "healthy, the node's GPUs"
want "$(prolog "$nics" SLURM_STEP_GPUS=4 SLURM_JOB_GPUS=0,1,2)" "export FI_HMEM_DISABLE_P2P=1
$nccl
export EFAP2P_ENV=FI_HMEM_DISABLE_P2P,NCCL_TOPO_FILE
$refused GPU4 0000:97:00.0: P2P DMA refused with 4 of its 4 switch-local EFA NICs: rdmap147s0 (0000:93:00.0), rdmap148s0 (0000:94:00.0), rdmap149s0 (0000:95:00.0), rdmap150s0 (0000:96:00.0)): $gdr
exit 0" "blocked, the step's GPU 4"
out=$(prolog "$nics" SLURM_JOB_GPUS=7)
[[ $out == *"$refused GPU7 0000:ca:00.0: "* ]] || fail "blocked, the job's GPU 7: $out"
out=$(prolog "$nics" SLURM_STEP_GPUS=4 "EFAP2P_ENV_ARGS=--gpus 0000:b9:00.0")
[[ $out == *"$refused GPU6 0000:b9:00.0: "* ]] || fail "EFAP2P_ENV_ARGS --gpus before SLURM_STEP_GPUS: $out"
want "$(prolog "$nics" SLURM_STEP_GPUS=)" "$nccl
export EFAP2P_ENV=NCCL_TOPO_FILE
exit 0" "a step without GPUs"
want "$(prolog "" SLURM_STEP_GPUS=4 FI_HMEM_DISABLE_P2P=1 EFAP2P_ENV=FI_HMEM_DISABLE_P2P)" "unset FI_HMEM_DISABLE_P2P
$nccl
export EFAP2P_ENV=NCCL_TOPO_FILE
exit 0" "an earlier efap2p env's FI_HMEM_DISABLE_P2P on a healthy node"
want "$(prolog "$nics" EFAP2P_ENV_ARGS=--bogus)" "exit 0" "efap2p env fails"
want "$(prolog "$nics" SLURM_STEP_GPUS=9)" "exit 0" "a GPU the node lacks"
echo "taskprolog: the lines of efap2p env --format slurm, for the step's GPUs; nothing when it fails"
