// SPDX-License-Identifier: MIT

package p2p

// PCI vendor IDs of the host bridges the kernel trusts.
const (
	VendorIntel   = 0x8086
	VendorGoogle  = 0x1ae0
	VendorNVIDIA  = 0x10de
	VendorZhaoxin = 0x1d17
	VendorAMD     = 0x1022
	VendorAmazon  = 0x1d0f
)

// AnyDevice matches every device ID of a vendor in a WhitelistEntry.
const AnyDevice = -1

// WhitelistEntry is one host bridge the kernel lets P2P DMA through.
type WhitelistEntry struct {
	Vendor uint16
	Device int // AnyDevice for every device of Vendor
	// SameHostBridge: only when both functions sit under this one host
	// bridge (REQ_SAME_HOST_BRIDGE).
	SameHostBridge bool
	Note           string
}

// HostBridgeWhitelist is the kernel's pci_p2pdma_whitelist, in its order
// (the first matching entry decides).
//
// Provenance: drivers/pci/p2pdma.c in the PCI maintainer's tree, mid-2026
// (see ../shared/facts/kernel-p2pdma.md). Older kernels have fewer entries:
// the Intel accelerator IDs (Sapphire Rapids DSA/IAX and later), the NVIDIA
// CPUs and the Zhaoxin parts came after Linux 6.2. This table is the only
// place the oracle knows it from.
var HostBridgeWhitelist = []WhitelistEntry{
	{VendorIntel, 0x3c00, true, "Intel Xeon E5 / Core i7"},
	{VendorIntel, 0x3c01, true, "Intel Xeon E5 / Core i7"},
	{VendorIntel, 0x2f00, true, "Intel Xeon E7 v3 / E5 v3 / Core i7"},
	{VendorIntel, 0x2f01, true, "Intel Xeon E7 v3 / E5 v3 / Core i7"},
	{VendorIntel, 0x2030, false, "Intel Skylake-E"},
	{VendorIntel, 0x2031, false, "Intel Skylake-E"},
	{VendorIntel, 0x2032, false, "Intel Skylake-E"},
	{VendorIntel, 0x2033, false, "Intel Skylake-E"},
	{VendorIntel, 0x2020, false, "Intel Skylake-E"},
	{VendorIntel, 0x09a2, false, "Intel Ice Lake Xeon and later"},
	{VendorIntel, 0x0b25, false, "Intel DSA (Sapphire Rapids), first on its root bus"},
	{VendorIntel, 0x0cfe, false, "Intel IAX (Sapphire Rapids), first on its root bus"},
	{VendorIntel, 0x11fb, false, "Intel DSA (Granite Rapids-D), first on its root bus"},
	{VendorIntel, 0x1212, false, "Intel DSA (Diamond Rapids), first on its root bus"},
	{VendorIntel, 0x1216, false, "Intel IAA (Diamond Rapids), first on its root bus"},
	{VendorIntel, 0x4940, false, "Intel QAT 4xxx, first on its root bus"},
	{VendorIntel, 0x4942, false, "Intel QAT 401xx, first on its root bus"},
	{VendorIntel, 0x4944, false, "Intel QAT 402xx, first on its root bus"},
	{VendorIntel, 0x4946, false, "Intel QAT 420xx, first on its root bus"},
	{VendorIntel, 0x4948, false, "Intel QAT 6xxx, first on its root bus"},
	{VendorGoogle, AnyDevice, false, "Google SoCs"},
	{VendorNVIDIA, 0x2f95, false, "NVIDIA CPU"},
	{VendorNVIDIA, 0x2f96, false, "NVIDIA CPU"},
	{VendorNVIDIA, 0x2f97, false, "NVIDIA CPU"},
	{VendorNVIDIA, 0x2f98, false, "NVIDIA CPU"},
	{VendorZhaoxin, 0x1003, true, "Zhaoxin KX-6000 family"},
	{VendorZhaoxin, 0x1005, true, "Zhaoxin KX-6000 family"},
	{VendorZhaoxin, 0x1006, true, "Zhaoxin KX-6000 family"},
	{VendorZhaoxin, 0x1007, true, "Zhaoxin KX-6000 family"},
	{VendorZhaoxin, 0x1008, false, "Zhaoxin KH-50000"},
}

// hostBridgeVerdict is the outcome of the whitelist check for one bridge.
type hostBridgeVerdict struct {
	ok    bool
	known bool            // false: the root port type could not be read
	entry *WhitelistEntry // the matching entry, if any
	why   string          // for the explanation when !ok
}

// whitelisted is the kernel's __host_bridge_whitelist for one host bridge.
func whitelisted(hb HostBridge, sameHostBridge bool) hostBridgeVerdict {
	if !hb.HasFirst {
		return hostBridgeVerdict{known: true, why: "root bus " + hb.Root.String() + " has no function"}
	}
	if hb.First.DevFn() != 0 {
		if !hb.PortTypeKnown {
			return hostBridgeVerdict{why: "cannot tell whether " + hb.First.String() + ", the first function on " + hb.Root.String() + ", is a root port: its config space is not readable"}
		}
		if hb.PortType != expTypeRootPort {
			return hostBridgeVerdict{known: true, why: hb.First.String() + ", the first function on " + hb.Root.String() + ", is neither 00.0 nor a root port"}
		}
	}
	for i := range HostBridgeWhitelist {
		e := &HostBridgeWhitelist[i]
		if e.Vendor != hb.Vendor || (e.Device != AnyDevice && e.Device != int(hb.Device)) {
			continue
		}
		if e.SameHostBridge && !sameHostBridge {
			return hostBridgeVerdict{known: true, entry: e, why: hexID(hb.Vendor, hb.Device) + " (" + e.Note + ") is whitelisted only when both functions sit under it"}
		}
		return hostBridgeVerdict{ok: true, known: true, entry: e}
	}
	return hostBridgeVerdict{known: true, why: "host bridge " + hexID(hb.Vendor, hb.Device) + " at " + hb.First.String() + " is not in the P2PDMA whitelist"}
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
