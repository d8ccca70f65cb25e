// SPDX-License-Identifier: MIT

package p2p

// How NCCL sees the PCI tree and names paths. NCCL (src/graph/xml.cc,
// topo.cc, paths.cc) builds its topology from sysfs in its own way, and an
// NCCL topology XML (NCCL_TOPO_FILE) that should make NCCL decide like the
// oracle has to be shaped the same way. The rules below are this project's
// reading of NCCL's behaviour, written from its documentation and source:
//
//   - NCCL climbs from a device's sysfs directory two directories at a time:
//     the parent of a PCI device is the function two levels up (its
//     grandparent), and a climb that reaches the root bus directory
//     (pciDDDD:BB) on either step ends at the CPU of the device's NUMA
//     node. Below a root port, a switch is then one node (its upstream
//     port) holding the devices below its downstream ports directly; the
//     root port and the downstream ports are never nodes. NCCLParent
//     follows this rule.
//   - NCCL's path types between a GPU and a NIC: PIX when both hang from
//     one such node (one switch), PXB when the path crosses two or more of
//     them without the CPU, PHB when it goes through the CPU node of one
//     NUMA node, SYS when it crosses from one NUMA node's CPU to another's.
//     NCCL has no NODE: devices under different host bridges of one NUMA
//     node hang from the same CPU node, so NCCL sees PHB (see NCCLPath).

// NCCLParent returns the function NCCL takes as the parent of f when it
// reads sysfs: f's grandparent in the sysfs directory tree, or nil when
// the climb reaches the root bus (NCCL then attaches f to the CPU of its
// NUMA node). For an SR-IOV virtual function the sysfs directory sits
// beside its physical function's, so its chain is the physical function's
// (Function.Upstream already follows that layout).
func NCCLParent(f *Function) *Function {
	if f == nil || f.Upstream == nil {
		return nil
	}
	return f.Upstream.Upstream
}

// NCCLPath returns the name NCCL gives a path of class p: the same name for
// LOC, PIX, PXB, PHB and SYS, and PHB for NODE, which NCCL does not have
// (it sees one CPU node per NUMA node, whatever the number of host bridges
// under it). It returns "" for PathUnknown.
func NCCLPath(p PathClass) string {
	switch p {
	case PathLOC, PathPIX, PathPXB, PathPHB, PathSYS:
		return p.String()
	case PathNODE:
		return PathPHB.String()
	}
	return ""
}
