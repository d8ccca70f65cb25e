// SPDX-License-Identifier: MIT

// Package p2p is the p2pdma distance oracle: it answers, for a pair of PCI
// functions (a provider that owns memory, such as a GPU, and a client that
// DMAs into it, such as an EFA NIC), the decision Linux's
// drivers/pci/p2pdma.c would take, what the driver exporting the memory
// then does, and why.
//
// # Asking
//
// OpenSysfs reads a sysfs tree (SysfsRoot: /sys, or $SYSFS_PATH as
// libibverbs takes it), NewTopology builds the PCI model on it lazily, and
// NewOracle answers over it with the defaults of the library and the tool
// (the machine's topology file, the kernel release $EFAP2P_KERNEL names):
//
//	src, err := p2p.OpenSysfs(p2p.SysfsRoot())
//	...
//	o := p2p.NewOracle(p2p.NewTopology(src))
//	v, err := o.Verdict(gpu, nic) // provider, client
//	if v.P2P() { ... }
//
// Defaults turns each default off (Defaults{NoBootFile: true}.Options);
// NewOracleWith takes only what its Options say.
//
// Only the functions on the paths asked about are read, and of their
// config space only the dwords the rule needs: on a virtual machine each
// dword traps to the hypervisor. Oracle.ReachesAccelerator is the
// question behind EFA's P2P_DMA capability bit (true P2P into at least one
// accelerator), Oracle.Dmabuf the one behind ibv_reg_dmabuf_mr (the
// candidate devices of a dma-buf's exporter).
//
// # Verdicts
//
// A Verdict carries the kernel's map type and distance (MapType,
// Distance), the path class as NCCL and nvidia-smi name it (PathClass:
// PIX, PXB, PHB, NODE, SYS), the Rule that decided, the functions whose
// ACS redirect forced the host bridge, the exporter's Policy and the
// dma-buf path's Outcome (p2p, bounced through system memory, or
// refused), the peer-memory path of the out-of-tree EFA driver (PeerMem),
// and the pair's answer over both (Effective, and Via: the registration
// paths that give true P2P; P2P when one does), the kernel
// Release whose rules decided, where the verdict came from (VerdictSource:
// an operator's or the boot-time TopologyFile, the ACPI HMAT, or
// computed), and a reason a person can act on. What cannot be read (config
// space without root) is not guessed: the verdict is not Exact, takes the
// kernel-safe branch for its map type, and names what it could not read;
// it is Certain still when the outcome is the same under every value that
// could have (an exporter that does not ask the kernel, a CPU rule that
// allows the detour anyway).
//
// An Oracle caches every verdict for the life of the process, as the
// kernel caches its own, and is safe for concurrent use. The *Verdict it
// returns is shared with that cache: do not change it; Verdict.Clone gives
// a copy that is the caller's (package efadv hands out such copies).
//
// # Sources
//
// A Source fills a Topology: Sysfs, or a machine model held in memory
// (package models). The kernel release to decide by is Options.Kernel
// (ParseRelease: "6.1.0-28-amd64", "latest", "p2p-hmat"); the zero value
// means the running kernel's, ReleaseFromEnv the one $EFAP2P_KERNEL names.
// HostBridgeWhitelist shows the kernel's host-bridge whitelist of a
// release.
//
// # Dependencies
//
// The package imports nothing of this repository except single-job
// helper packages under internal/ that import nothing of ours in turn:
// pcicfg (config space walks), acpitab (the HMAT and SRAT parsers),
// dmabuf (dma-buf exporters), jsonline (JSON error lines), pcilink (PCIe
// link figures), pciclass (accelerator classes and IDs) and secenv
// (secure execution). They are shared with the other packages of the
// repository (the machine models, the command line, the node check) and are not
// part of the API.
package p2p
