#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What people look at a machine with shows the emulated host inside
# 'efap2p sim', not this one: lspci (the list, -tv, -vv), lstopo (CPUs,
# NUMA nodes, the PCI tree under them), and the CPU and NUMA data of the
# tree that NCCL-style readers and 'efap2p topo' read. The expected
# figures are the p5.48xlarge model's: 124 PCI functions, 32 EFA NICs, 2
# sockets of 48 cores with 2 threads each, numbered as Linux does on x86
# (node 0: CPUs 0-47 and their siblings 96-143), 1024 GiB a node, GPU0
# (53:00.0) on node 0 and GPU4 (97:00.0) on node 1.
#   test_viewers.sh EFAP2P lspci|lstopo|affinity
set -euo pipefail
efap2p=$1
fail() { echo "FAIL: $*"; exit 1; }
insim() { "$efap2p" sim --machine p5.48xlarge -- "$@"; }

case $2 in
lspci)
	command -v lspci >/dev/null || { echo "no lspci ('make test-deps' installs pciutils)"; exit 77; }
	n=$(insim lspci | wc -l)
	[ "$n" = 124 ] || fail "lspci inside efap2p sim lists $n functions; the model has 124"
	tree=$(insim lspci -tv)
	grep -q '\[0000:44\]' <<< "$tree" || fail "lspci -tv: no root bus 0000:44: $tree"
	efa=$(grep -c 'Elastic Fabric Adapter' <<< "$tree")
	[ "$efa" = 32 ] || fail "lspci -tv shows $efa EFA NICs, want 32"
	insim lspci -vv > /dev/null 2>"${TMPDIR:-/tmp}/viewers.$$" || { cat "${TMPDIR:-/tmp}/viewers.$$"; fail "lspci -vv"; }
	rm -f "${TMPDIR:-/tmp}/viewers.$$"
	insim lspci -vv -s 97:00.0 2>/dev/null | grep -q 'NUMA node: 1' || fail "lspci -vv -s 97:00.0: not on NUMA node 1"
	echo "lspci: 124 functions, 32 EFA NICs, -vv reads every one"
	;;
lstopo)
	command -v lstopo >/dev/null || { echo "no lstopo ('make test-deps' installs hwloc)"; exit 77; }
	out=$(insim lstopo --of console 2>&1)
	! grep -q 'invalid information' <<< "$out" || fail "hwloc found the emulated host inconsistent: $out"
	[ "$(grep -c 'Package L#' <<< "$out")" = 2 ] || fail "lstopo: not 2 packages: $out"
	[ "$(grep -c 'NUMANode L#[01] (P#[01] 1024GB)' <<< "$out")" = 2 ] || fail "lstopo: not 2 NUMA nodes of 1024GB: $out"
	[ "$(grep -c 'PU L#' <<< "$out")" = 192 ] || fail "lstopo: not 192 PUs"
	grep -q 'PU L#1 (P#96)' <<< "$out" || fail "lstopo: CPU 96 is not CPU 0's sibling"
	# GPU4 below the second package, GPU0 below the first
	first=$(grep -n 'Package L#1' <<< "$out" | cut -d: -f1)
	g0=$(grep -n 'PCI 53:00.0' <<< "$out" | cut -d: -f1)
	g4=$(grep -n 'PCI 97:00.0' <<< "$out" | cut -d: -f1)
	[ -n "$g0" ] && [ -n "$g4" ] && [ "$g0" -lt "$first" ] && [ "$g4" -gt "$first" ] ||
		fail "lstopo: GPU0 (line ${g0:-none}) and GPU4 (line ${g4:-none}) around package 1 (line $first)"
	[ "$(grep -c 'OpenFabrics "rdmap' <<< "$out")" = 32 ] || fail "lstopo: not 32 OpenFabrics devices"
	echo "lstopo: 2 packages, 2 NUMA nodes, 192 PUs, the GPUs and EFA NICs where the model puts them"
	;;
affinity)
	topo=$(insim "$efap2p" topo)
	# tab-separated as nvidia-smi topo -m: CPU Affinity, NUMA Affinity, an
	# empty field, GPU NUMA ID
	grep -qP '^GPU0\t.*\t0-47,96-143\t0\t\tN/A$' <<< "$topo" || fail "efap2p topo: GPU0's CPU affinity: $topo"
	grep -qP '^GPU4\t.*\t48-95,144-191\t1\t\tN/A$' <<< "$topo" || fail "efap2p topo: GPU4's CPU affinity: $topo"
	xml=$(insim "$efap2p" export --format nccl)
	grep -q 'numaid="0" affinity="00000000,0000ffff,ffffffff,00000000,0000ffff,ffffffff"' <<< "$xml" ||
		fail "the NCCL topology's node 0 has no affinity: $(grep '<cpu' <<< "$xml")"
	echo "CPU affinity: node 0 0-47,96-143, node 1 48-95,144-191, in topo and the NCCL topology"
	;;
*) echo "usage: $0 EFAP2P lspci|lstopo|affinity" >&2; exit 2 ;;
esac
