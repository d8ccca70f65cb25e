// SPDX-License-Identifier: MIT

package p2p

import (
	"slices"

	"github.com/efap2p/efap2p/internal/pcicfg"
)

// PCI vendor IDs of the host bridges the kernel trusts.
const (
	vendorIntel   = 0x8086
	vendorGoogle  = 0x1ae0
	vendorNVIDIA  = 0x10de
	vendorZhaoxin = 0x1d17
	vendorAMD     = 0x1022
	vendorAlibaba = 0x1ded
)

// AnyDevice matches every device ID of a vendor in a WhitelistEntry.
const AnyDevice = -1

// WhitelistEntry is one host bridge the kernel lets P2P DMA through, with
// the kernel releases that have it.
type WhitelistEntry struct {
	Vendor uint16
	Device int // AnyDevice for every device of Vendor
	// SameHostBridge: only when both functions sit under this one host
	// bridge (REQ_SAME_HOST_BRIDGE).
	SameHostBridge bool
	Note           string
	// Since is the first mainline release with the entry; a release with
	// Next set means the entry is only in the PCI tree or linux-next (it
	// is in "latest", and in kernels built from those trees).
	Since Release
	// Until, when set, is the first release without the entry.
	Until Release
	// Backports lists stable releases that received the entry before
	// Since (each counts from its own patch level within its series).
	Backports []Release
	// Commit is the kernel commit that added the entry, and where it was
	// read.
	Commit string
}

// In reports whether release r has the entry.
func (e *WhitelistEntry) In(r Release) bool {
	if !e.Until.IsZero() && r.AtLeast(e.Until) {
		return false
	}
	if e.Since == relNext {
		return r.IsLatest() || r.Next()
	}
	if r.AtLeast(e.Since) {
		return true
	}
	for _, b := range e.Backports {
		if r.Major == b.Major && r.Minor == b.Minor && r.AtLeast(b) {
			return true
		}
	}
	return false
}

// Releases of the entries: each counts from the first candidate of the
// release it was merged for (mergedFor), a stable backport from its
// stable release's first candidate.
var (
	rel54  = mergedFor(5, 4)
	rel56  = mergedFor(5, 6)
	rel57  = mergedFor(5, 7)
	rel58  = mergedFor(5, 8)
	rel59  = mergedFor(5, 9)
	rel518 = mergedFor(5, 18)
	rel71  = mergedFor(7, 1)
	rel72  = mergedFor(7, 2)
	rel713 = Release{Major: 7, Minor: 1, Patch: 3, RC: 1}
	// relNext: only in the PCI tree (pci/p2pdma) and linux-next when
	// read (2026-12): newer than every numbered release.
	relNext = Release{Major: 999, next: true}
)

// pciP2PDMAWhitelist is the kernel's pci_p2pdma_whitelist over its history,
// each entry where the newest table (linux-next) has it; rulesFor keeps
// those of one release, in this order (the first matching entry decides).
//
// Provenance, from drivers/pci/p2pdma.c as read in the kernel trees and
// the linux-pci, stable and linux-next mail archives: v5.4 (a 5.4 tree),
// the PCI maintainer's tree (pci/p2pdma) and linux-next (2026-12). This
// table is the only place the oracle knows it from.
var pciP2PDMAWhitelist = []WhitelistEntry{
	{vendorAMD, 0x1450, false, "AMD Zen root complex", rel54, rel59, nil,
		"0f97da831026 (v5.2, as a root-complex check) kept in the v5.4 table; removed by dea286bb71ba (v5.9, the CPU rule)"},
	{vendorAMD, 0x15d0, false, "AMD Zen Raven", rel58, rel59, nil,
		"7d5b10fcb81e (applied for v5.8, linux-pci 2020-04); removed by dea286bb71ba (v5.9)"},
	{vendorAMD, 0x1630, false, "AMD Zen Renoir", rel58, rel59, nil,
		"7d5b10fcb81e (applied for v5.8, linux-pci 2020-04); removed by dea286bb71ba (v5.9)"},
	{vendorIntel, 0x3c00, true, "Intel Xeon E5 / Core i7", rel54, Release{}, nil, "494d63b0d5d0 (v5.4)"},
	{vendorIntel, 0x3c01, true, "Intel Xeon E5 / Core i7", rel54, Release{}, nil, "494d63b0d5d0 (v5.4)"},
	{vendorIntel, 0x6f00, true, "Intel Xeon E7 v4 / E5 v4 / E3 v4 / Xeon D (Broadwell)", relNext, Release{}, nil,
		"e7b44579a6b4 (linux-next, 2026-12; not in a release yet)"},
	{vendorIntel, 0x2f00, true, "Intel Xeon E7 v3 / E5 v3 / Core i7", rel54, Release{}, nil, "494d63b0d5d0 (v5.4)"},
	{vendorIntel, 0x2f01, true, "Intel Xeon E7 v3 / E5 v3 / Core i7", rel54, Release{}, nil, "494d63b0d5d0 (v5.4)"},
	{vendorIntel, 0x0c08, true, "Intel Haswell (client)", relNext, Release{}, nil,
		"0b9df403ddfa (PCI tree pci/p2pdma and linux-next, 2026-12; not in a release yet)"},
	{vendorIntel, 0x2030, false, "Intel Skylake-E Root Port A", rel56, Release{}, nil, "bc123a515cb7 (applied for v5.6, linux-pci 2019-12-10)"},
	{vendorIntel, 0x2031, false, "Intel Skylake-E Root Port B", rel57, Release{}, nil, "7b94b53db34f (PCI pull for v5.7)"},
	{vendorIntel, 0x2032, false, "Intel Skylake-E Root Port C", rel57, Release{}, nil, "7b94b53db34f (PCI pull for v5.7)"},
	{vendorIntel, 0x2033, false, "Intel Skylake-E Root Port D", rel57, Release{}, nil, "7b94b53db34f (PCI pull for v5.7)"},
	{vendorIntel, 0x2020, false, "Intel Skylake-E", rel56, Release{}, nil, "bc123a515cb7 (applied for v5.6, linux-pci 2019-12-10)"},
	{vendorIntel, 0x09a2, false, "Intel Ice Lake Xeon and later", rel518, Release{}, nil, "feaea1fe8b36 (applied for v5.18, linux-pci 2022-02)"},
	{vendorIntel, 0x0b25, false, "Intel DSA (Sapphire Rapids), first on its root bus", rel72, Release{}, []Release{rel713}, "0ba76b19fd4c (v7.2; stable 7.1.3)"},
	{vendorIntel, 0x0cfe, false, "Intel IAX (Sapphire Rapids), first on its root bus", rel72, Release{}, []Release{rel713}, "0ba76b19fd4c (v7.2; stable 7.1.3)"},
	{vendorIntel, 0x11fb, false, "Intel DSA (Granite Rapids-D), first on its root bus", rel72, Release{}, []Release{rel713}, "0ba76b19fd4c (v7.2; stable 7.1.3)"},
	{vendorIntel, 0x1212, false, "Intel DSA (Diamond Rapids), first on its root bus", rel72, Release{}, []Release{rel713}, "0ba76b19fd4c (v7.2; stable 7.1.3)"},
	{vendorIntel, 0x1216, false, "Intel IAA (Diamond Rapids), first on its root bus", rel72, Release{}, []Release{rel713}, "0ba76b19fd4c (v7.2; stable 7.1.3)"},
	{vendorIntel, 0x4940, false, "Intel QAT 4xxx, first on its root bus", rel72, Release{}, []Release{rel713}, "0ba76b19fd4c (v7.2; stable 7.1.3)"},
	{vendorIntel, 0x4942, false, "Intel QAT 401xx, first on its root bus", rel72, Release{}, []Release{rel713}, "0ba76b19fd4c (v7.2; stable 7.1.3)"},
	{vendorIntel, 0x4944, false, "Intel QAT 402xx, first on its root bus", rel72, Release{}, []Release{rel713}, "0ba76b19fd4c (v7.2; stable 7.1.3)"},
	{vendorIntel, 0x4946, false, "Intel QAT 420xx, first on its root bus", rel72, Release{}, []Release{rel713}, "0ba76b19fd4c (v7.2; stable 7.1.3)"},
	{vendorIntel, 0x4948, false, "Intel QAT 6xxx, first on its root bus", rel72, Release{}, []Release{rel713}, "0ba76b19fd4c (v7.2; stable 7.1.3)"},
	{vendorGoogle, AnyDevice, false, "Google SoCs", rel71, Release{}, nil,
		"70cf146a674c with the wildcard of 1a1f96e3e2a8 (7.1 merge window, linux-next 2026-04)"},
	{vendorNVIDIA, 0x2f95, false, "NVIDIA Vera Rubin CPU", relNext, Release{}, nil, "894a78088fc3 (PCI tree and linux-next, 2026; release not known here)"},
	{vendorNVIDIA, 0x2f96, false, "NVIDIA Vera Rubin CPU", relNext, Release{}, nil, "894a78088fc3 (PCI tree and linux-next, 2026; release not known here)"},
	{vendorNVIDIA, 0x2f97, false, "NVIDIA Vera Rubin CPU", relNext, Release{}, nil, "894a78088fc3 (PCI tree and linux-next, 2026; release not known here)"},
	{vendorNVIDIA, 0x2f98, false, "NVIDIA Vera Rubin CPU", relNext, Release{}, nil, "894a78088fc3 (PCI tree and linux-next, 2026; release not known here)"},
	{vendorZhaoxin, 0x1003, true, "Zhaoxin KX-6000 family", relNext, Release{}, nil, "f7c220404700 (pci/p2pdma on top of 7.3-rc1; linux-next)"},
	{vendorZhaoxin, 0x1005, true, "Zhaoxin KH-40000", relNext, Release{}, nil, "f7c220404700 (pci/p2pdma on top of 7.3-rc1; linux-next)"},
	{vendorZhaoxin, 0x1006, true, "Zhaoxin KX-6000G", relNext, Release{}, nil, "f7c220404700 (pci/p2pdma on top of 7.3-rc1; linux-next)"},
	{vendorZhaoxin, 0x1007, true, "Zhaoxin KX-7000", relNext, Release{}, nil, "f7c220404700 (pci/p2pdma on top of 7.3-rc1; linux-next)"},
	{vendorZhaoxin, 0x1008, false, "Zhaoxin KH-50000", relNext, Release{}, nil, "f7c220404700 (pci/p2pdma on top of 7.3-rc1; linux-next)"},
	{vendorAlibaba, 0x8000, false, "Alibaba T-HEAD Yitian 710", relNext, Release{}, nil, "6a0b9a75b986 (PCI tree pci/p2pdma and linux-next, 2026-12)"},
}

// HostBridgeWhitelist returns the kernel's host-bridge whitelist as
// release r has it, in its order (the first entry matching a host bridge
// decides), each entry with the releases that have it. It is a copy: the
// caller may keep and change it without changing the oracle's rules.
func HostBridgeWhitelist(r Release) []WhitelistEntry {
	wl := rulesFor(r).Whitelist
	out := make([]WhitelistEntry, len(wl))
	for i := range wl {
		out[i] = wl[i].clone()
	}
	return out
}

// clone returns a copy of e that shares nothing with it.
func (e WhitelistEntry) clone() WhitelistEntry {
	e.Backports = slices.Clone(e.Backports)
	return e
}

// hostBridgeVerdict is the outcome of the whitelist check for one bridge.
type hostBridgeVerdict struct {
	ok    bool
	known bool            // false: the root port type could not be read
	entry *WhitelistEntry // the matching entry, if any
	why   string          // for the explanation when !ok
}

// whitelisted is the kernel's __host_bridge_whitelist for one host bridge
// under the rules ru.
func whitelisted(ru *kernelRules, hb HostBridge, sameHostBridge bool) hostBridgeVerdict {
	if !hb.HasFirst {
		return hostBridgeVerdict{known: true, why: "root bus " + hb.Root.String() + " has no function"}
	}
	if hb.First.DevFn() != 0 {
		if !ru.RootPortAnyDevfn {
			return hostBridgeVerdict{known: true, why: hb.First.String() + ", the first function on " + hb.Root.String() + ", is not devfn 00.0 (a Root Port counts from Linux 5.19 only)"}
		}
		if !hb.PortTypeKnown {
			// Not a root port: refused. A root port: its IDs decide. When
			// they are in no entry, both give the same answer.
			asPort := hb
			asPort.PortTypeKnown, asPort.PortType = true, pcicfg.PortTypeRootPort
			if v := whitelisted(ru, asPort, sameHostBridge); !v.ok {
				v.why = "whether or not " + hb.First.String() + " (its config space is not readable) is a root port: " + v.why
				return v
			}
			return hostBridgeVerdict{why: "cannot tell whether " + hb.First.String() + ", the first function on " + hb.Root.String() + ", is a root port: its config space is not readable"}
		}
		if hb.PortType != pcicfg.PortTypeRootPort {
			return hostBridgeVerdict{known: true, why: hb.First.String() + ", the first function on " + hb.Root.String() + ", is neither 00.0 nor a root port"}
		}
	}
	for i := range ru.Whitelist {
		e := &ru.Whitelist[i]
		if e.Vendor != hb.Vendor || (e.Device != AnyDevice && e.Device != int(hb.Device)) {
			continue
		}
		if e.SameHostBridge && !sameHostBridge {
			return hostBridgeVerdict{known: true, entry: e, why: hexID(hb.Vendor, hb.Device) + " (" + e.Note + ") is whitelisted only when both functions sit under it"}
		}
		return hostBridgeVerdict{ok: true, known: true, entry: e}
	}
	return hostBridgeVerdict{known: true, why: "host bridge " + hexID(hb.Vendor, hb.Device) + " at " + hb.First.String() + " is not in the P2PDMA whitelist of " + ru.describe()}
}

func hexID(v, d uint16) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 9)
	for i := 0; i < 4; i++ {
		b[3-i] = digits[(v>>(4*i))&0xf]
		b[8-i] = digits[(d>>(4*i))&0xf]
	}
	b[4] = ':'
	return string(b)
}
