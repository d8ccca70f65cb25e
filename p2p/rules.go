// SPDX-License-Identifier: MIT

package p2p

import "fmt"

// Kernel history of drivers/pci/p2pdma.c and of the exporters' rules, as far
// as it changes a pairwise decision. Every change carries the release that
// introduced it and its provenance (the commit, and where it was read).
// Whitelist entries are in whitelist.go.

// Releases where the rules changed. A change merged for a release (its
// merge window) is in that release's first candidate and later, so it
// counts from rc1 (mergedFor); a change merged later in the cycle names
// its rc (61ceaf236115 came with 6.19-rc8).
var (
	// rel54 (whitelist.go) is the oldest release modelled: map types
	// (NOT_SUPPORTED, BUS_ADDR, THRU_HOST_BRIDGE), the host-bridge
	// whitelist with REQ_SAME_HOST_BRIDGE (494d63b0d5d0), ACS redirect
	// routed through the host bridge and checked against the whitelist;
	// the host bridge is the root bus's first device only when it is
	// devfn 00.0 (read in a v5.4 tree).
	// release59: cpu_supports_p2pdma (AMD family 0x17 or later allows
	// every path through the host bridge) replaces the AMD whitelist
	// entries. Commit dea286bb71ba ("PCI/P2PDMA: Allow P2PDMA on AMD Zen
	// and newer CPUs"), applied for v5.9 (linux-pci, 2020-07-30).
	release59 = mergedFor(5, 9)
	// release519: the first device of a root bus stands for the host
	// bridge when it is devfn 00.0 or a PCIe Root Port at any devfn.
	// Commit 1af7c26c59eb ("PCI/P2PDMA: Whitelist Intel Skylake-E Root
	// Ports at any devfn"), applied to pci/p2pdma for v5.19 (linux-pci,
	// 2022-04-11).
	release519 = mergedFor(5, 19)
	// release615: amdgpu keeps a buffer pinned by a P2P-capable importer
	// (EFA pins its dma-buf MRs) in VRAM; before, every pinned buffer was
	// moved to GTT (system memory). Commit f5e7fabd1f5c ("drm/amdgpu:
	// allow pinning DMA-bufs into VRAM if all importers can do P2P"),
	// merged for v6.15 (amd-gfx, 2025-03/04; AUTOSEL'd to 6.12-6.14
	// stable, acceptance not known).
	release615 = mergedFor(6, 15)
	// release619: P2PDMA providers (pcim_p2pdma_provider) let exporters
	// such as vfio-pci hand out BAR memory as dma-bufs; the distance rule
	// itself is unchanged (PCI tree, drivers/pci/p2pdma.c, 2026). vfio-pci
	// exports them (5d74781ebc86, "vfio/pci: Add dma-buf export support
	// for MMIO regions", merged for 6.19). xe keeps a buffer pinned by
	// P2P importers in VRAM (df636bf28366, "drm/xe/dma-buf: Allow pinning
	// of p2p dma-buf", drm-xe-next for 6.19); before, its pin moves every
	// buffer to system memory (TT).
	release619 = mergedFor(6, 19)
	// release619rc8: vfio-pci refuses an importer that pins (61ceaf236115,
	// "vfio: Prevent from pinned DMABUF importers to attach to VFIO
	// DMABUF", a fix merged in 6.19-rc8); in 6.19-rc1 to rc7 the EFA's pin
	// of a vfio-pci dma-buf succeeds.
	release619rc8 = Release{Major: 6, Minor: 19, RC: 8}
	// release70: vfio-pci lets pinned importers attach when they can
	// revoke their mappings (0b45a66ffb1e, "vfio: Permit VFIO to work
	// with pinned importers", with 588650a367b0 "dma-buf: Add
	// dma_buf_attach_revocable()"); an RDMA NIC's pinned umem
	// (ib_umem_dmabuf_get_pinned) cannot, so it stays refused.
	release70 = mergedFor(7, 0)
)

// kernelRules are the p2pdma rules of one kernel release.
type kernelRules struct {
	// Release is the release the rules are those of.
	Release Release
	// CPURule: cpu_supports_p2pdma exists (5.9).
	CPURule bool
	// RootPortAnyDevfn: a Root Port first on its root bus stands for the
	// host bridge wherever it sits (5.19); before, only devfn 00.0 does.
	RootPortAnyDevfn bool
	// Whitelist is the host-bridge whitelist of the release, in order.
	Whitelist []WhitelistEntry
	// HMAT: the ACPI HMAT P2P series (p2p-hmat): a through-host-bridge
	// path the CPU rule and the whitelist refuse is allowed when the HMAT
	// describes a reachable ordered path between the host bridges, and ACS
	// Egress Control is decided per PCIe r7.0 table 6-11.
	HMAT bool
	// AMDGPUPinnedVRAM: amdgpu keeps a pinned buffer in VRAM for a
	// P2P-capable importer (6.15).
	AMDGPUPinnedVRAM bool
	// XePinnedVRAM: xe does the same (6.19); VFIODmabuf: vfio-pci exports
	// BAR memory as dma-bufs (6.19); VFIONoPinned: it refuses importers
	// that pin (6.19-rc8); VFIORevocable: it takes pinned importers that
	// can revoke (7.0).
	XePinnedVRAM, VFIODmabuf, VFIONoPinned, VFIORevocable bool
	// Unmodelled is set for a release older than the oldest modelled one
	// (5.4): the verdict takes 5.4's rules and says it is uncertain.
	Unmodelled bool
}

// rulesFor returns the rules of release r. The zero Release means the
// newest rules known.
func rulesFor(r Release) *kernelRules {
	if r.IsZero() {
		r = releaseLatest
	}
	ru := &kernelRules{
		Release:          r,
		CPURule:          r.AtLeast(release59),
		RootPortAnyDevfn: r.AtLeast(release519),
		AMDGPUPinnedVRAM: r.AtLeast(release615),
		XePinnedVRAM:     r.AtLeast(release619),
		VFIODmabuf:       r.AtLeast(release619),
		VFIONoPinned:     r.AtLeast(release619rc8),
		VFIORevocable:    r.AtLeast(release70),
		HMAT:             r.HMAT(),
		Unmodelled:       !r.AtLeast(rel54),
	}
	for _, e := range pciP2PDMAWhitelist {
		if e.In(r) {
			ru.Whitelist = append(ru.Whitelist, e)
		}
	}
	return ru
}

// mergedFor is the first release candidate of major.minor: where a change
// merged for that release (in its merge window) first appears.
func mergedFor(major, minor int) Release { return Release{Major: major, Minor: minor, RC: 1} }

// describe names the rules for an explanation: "Linux 6.1.0-28-amd64's
// rules".
func (ru *kernelRules) describe() string {
	switch {
	case ru.Release.HMAT():
		return "the newest kernel rules plus the ACPI HMAT P2P series (p2p-hmat)"
	case ru.Release.IsLatest():
		return "the newest kernel rules known (latest)"
	}
	return fmt.Sprintf("Linux %s's rules", ru.Release)
}
