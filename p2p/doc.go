// SPDX-License-Identifier: MIT

// Package p2p is the p2pdma distance oracle: it answers, for a pair of PCI
// functions (a provider that owns memory and a client that DMAs into it),
// the decision Linux's drivers/pci/p2pdma.c would take, and explains it.
//
// The answer comes from a PCI topology model (Topology) that is filled
// lazily from sysfs (OpenSysfs) or built in memory (NewStaticTopology, used
// by the machine models of package sim). Only the functions on the paths
// asked about are read, and of their config space only the dwords the rule
// needs: on a virtual machine each dword traps to the hypervisor.
//
// Beyond the kernel's map type and distance, a Verdict carries the path
// class as NCCL and nvidia-smi name it (PIX, PXB, PHB, NODE, SYS), the
// functions whose ACS redirect forced the host bridge, which rule decided,
// and a reason a person can act on.
package p2p
