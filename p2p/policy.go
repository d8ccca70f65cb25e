// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/efap2p/efap2p/internal/modversion"
)

// Outcome is what happens to a NIC's DMA into the provider's memory once
// the exporting driver has applied its own rule.
type Outcome uint8

// The outcomes.
const (
	OutcomeUnknown Outcome = iota
	// OutcomeP2P: the NIC reads and writes the accelerator's memory
	// directly.
	OutcomeP2P
	// OutcomeBounced: registration succeeds but the exporter moves the
	// buffer to system memory (amdgpu): it works, and it is not P2P.
	OutcomeBounced
	// OutcomeRefused: the exporter (or the platform) refuses the pair.
	OutcomeRefused
)

var outcomeNames = []string{"unknown", "p2p", "bounced", "refused"}

// String returns "p2p", "bounced" or "refused".
func (o Outcome) String() string { return enumName(outcomeNames, o, "Outcome") }

// MarshalText implements encoding.TextMarshaler.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
// "unknown" parses too (a path that cannot be decided, as the peer-memory
// path without a provider attribute).
func (o *Outcome) UnmarshalText(b []byte) error {
	v, err := enumParse[Outcome](outcomeNames, string(b), "outcome", "p2p, bounced or refused")
	*o = v
	return err
}

// nvidiaFlaggedChipsets are the chipsets NVIDIA's driver marks as
// unsupported for PCI P2P (NV_FLAG_PCI_P2P_UNSUPPORTED_CHIPSET): on them a
// peer may attach only when it shares an upstream bridge with the GPU.
// Provenance: open-gpu-kernel-modules 580.65.06 and later, chipset table
// (CS_NVIDIA_TH500, CS_AMPERE_ALTRA, CS_AMPERE_AMPEREONE160); the driver
// looks for these IDs among all functions of the GPU's PCI domain.
var nvidiaFlaggedChipsets = []struct {
	vendor, device uint16
	name           string
}{
	{0x10de, 0x22b1, "NVIDIA Grace (TH500)"}, {0x10de, 0x22b2, "NVIDIA Grace (TH500)"},
	{0x10de, 0x22b3, "NVIDIA Grace (TH500)"}, {0x10de, 0x22b4, "NVIDIA Grace (TH500)"},
	{0x10de, 0x22b8, "NVIDIA Grace (TH500)"}, {0x10de, 0x22b9, "NVIDIA Grace (TH500)"},
	{0x1def, 0xe000, "Ampere Altra"}, {0x1def, 0xe00d, "Ampere Altra"},
	{0x1def, 0xe00e, "Ampere Altra"}, {0x1def, 0xe010, "Ampere Altra"},
	{0x1def, 0xe100, "Ampere Altra"}, {0x1def, 0xe110, "Ampere Altra"},
	{0x1def, 0xe200, "AmpereOne"}, {0x1def, 0xe201, "AmpereOne"}, {0x1def, 0xe202, "AmpereOne"},
	{0x1def, 0xe203, "AmpereOne"}, {0x1def, 0xe204, "AmpereOne"}, {0x1def, 0xe205, "AmpereOne"},
	{0x1def, 0xe206, "AmpereOne"}, {0x1def, 0xe207, "AmpereOne"},
}

// nvidiaCoherentGPUs are GPUs attached to their CPU by NVLink-C2C, which
// NVIDIA's driver treats as coherent (peer attach always allowed).
// Provenance: the PCI ID database (GH200 and GB200 superchips).
var nvidiaCoherentGPUs = map[uint16]string{
	0x2342: "GH200", 0x2348: "GH200 144G", 0x2941: "GB200",
}

// nvidiaFirstTopologyCheck is the first NVIDIA driver version whose dma-buf
// attach checks the PCI topology (580.65.06); older ones allow every peer.
var nvidiaFirstTopologyCheck = [3]int{580, 65, 6}

// neuronDriver is the PCI driver of AWS Neuron devices (aws-neuron-driver
// registers "neuron-driver"; its dma-bufs are exported as "neuron").
const neuronDriver = "neuron-driver"

// policyFor names the rule of the driver bound to the provider.
func policyFor(driver string) Policy {
	switch driver {
	case "nvidia":
		return PolicyNVIDIA
	case "amdgpu":
		return PolicyAMDGPU
	case neuronDriver:
		return PolicyNeuron
	case "xe":
		return PolicyXe
	case "vfio-pci":
		return PolicyVFIO
	case "i915":
		return PolicyI915
	}
	return PolicyKernel
}

// applyPolicy sets the verdict's Policy and Outcome from the provider's
// exporting driver under the rules ru, and adds that driver's reasoning to
// the explanation.
func (t *Topology) applyPolicy(ru *kernelRules, v *Verdict, p, c *Function) {
	driver := p.Driver()
	v.Policy = policyFor(driver)
	switch v.Policy {
	case PolicyAMDGPU:
		switch {
		case !v.MapType.Supported():
			v.Outcome = OutcomeBounced
			v.addReason("amdgpu does not refuse: it marks the attachment non-P2P and migrates the buffer to system memory, so registration succeeds but the NIC's DMA bounces through host memory.")
		case !ru.AMDGPUPinnedVRAM && pinsDmabuf(c):
			v.Outcome = OutcomeBounced
			if v.explain {
				v.reasonf("The kernel allows the peer, but amdgpu in Linux %s moves every buffer an importer pins (an RDMA NIC such as EFA pins its dma-buf MRs) to system memory; it keeps it in VRAM for a P2P-capable importer from 6.15 (f5e7fabd1f5c). Registration succeeds and the NIC's DMA bounces through host memory.", ru.Release)
			}
		default:
			v.Outcome = OutcomeP2P
			v.addReason("amdgpu exports the memory and keeps it in VRAM for a peer the kernel allows, also when the importer pins it (6.15 and later).")
		}
	case PolicyNVIDIA:
		t.nvidiaPolicy(v, p, c)
		if v.Rule == RuleNoP2PDMA {
			v.addReason("The nvidia driver never asks p2pdma, so a kernel without PCI_P2PDMA does not change its answer.")
		}
	case PolicyNeuron:
		v.Outcome = OutcomeP2P
		v.addReason("The Neuron driver exports the device memory and lets any importer attach (one at a time) without consulting the kernel's p2pdma check (aws-neuron-driver ndmabuf_attach), so the NIC's DMA goes straight to the Neuron device.")
		if v.Rule == RuleNoP2PDMA {
			v.addReason("A kernel without PCI_P2PDMA does not change that.")
		}
	case PolicyXe:
		xePolicy(ru, v, c)
	case PolicyVFIO:
		vfioPolicy(ru, v, c)
	case PolicyI915:
		v.Outcome = OutcomeBounced
		v.addReason("i915 moves every buffer it exports to system memory when an importer attaches (i915_gem_dmabuf_attach migrates device memory to SMEM, or refuses a buffer that cannot move): registration succeeds and the NIC's DMA bounces through host memory.")
	default:
		if v.MapType.Supported() {
			v.Outcome = OutcomeP2P
		} else {
			v.Outcome = OutcomeRefused
		}
		switch {
		case driver == "habanalabs":
			v.addReason("habanalabs asks the kernel's check at attach and, when it fails, marks the attachment non-P2P, whose mapping it then refuses (EPERM): it applies the kernel's check as it is.")
		case driver != "":
			if v.explain {
				v.reasonf("The exporter (%s) applies the kernel's check as it is.", driver)
			}
		default:
			v.addReason("No driver is bound to the provider; an exporter would apply the kernel's check.")
		}
	}
}

// xePolicy is Intel xe's exporter rule (xe_dma_buf.c): attach asks the
// kernel's check and turns a failure into a non-P2P attachment; a buffer
// of such an attachment, or one an importer pins before 6.19, is moved to
// system memory (TT).
func xePolicy(ru *kernelRules, v *Verdict, c *Function) {
	switch {
	case !v.MapType.Supported():
		v.Outcome = OutcomeBounced
		v.addReason("xe does not refuse: the kernel's check failed, so it marks the attachment non-P2P and moves the buffer to system memory (TT); registration succeeds and the NIC's DMA bounces through host memory.")
	case pinsDmabuf(c) && !ru.XePinnedVRAM:
		v.Outcome = OutcomeBounced
		if v.explain {
			v.reasonf("The kernel allows the peer, but xe in Linux %s moves every buffer an importer pins (an RDMA NIC such as EFA pins its dma-buf MRs) to system memory (TT); it keeps it in VRAM for P2P importers from 6.19 (df636bf28366). Registration succeeds and the NIC's DMA bounces through host memory.", ru.Release)
		}
	default:
		v.Outcome = OutcomeP2P
		v.addReason("xe exports the memory and keeps it in VRAM for a peer the kernel allows, also when the importer pins it (6.19 and later).")
	}
}

// vfioPolicy is vfio-pci's exporter rule for BAR dma-bufs
// (vfio_pci_dmabuf.c): none before 6.19; in 6.19-rc1 to rc7 for any
// importer; from 6.19-rc8 only for importers that can let go of their
// mappings, which an RDMA NIC's pinned registration cannot; a mapping
// goes through the kernel's p2pdma check.
func vfioPolicy(ru *kernelRules, v *Verdict, c *Function) {
	switch {
	case !ru.VFIODmabuf:
		v.Outcome = OutcomeRefused
		if v.explain {
			v.reasonf("vfio-pci exports BAR memory as dma-bufs from Linux 6.19 (5d74781ebc86); in %s it exports none, so there is nothing to register.", ru.Release)
		}
	case v.Rule == RuleNoP2PDMA:
		v.Outcome = OutcomeRefused
		v.addReason("vfio-pci's dma-buf export needs PCI_P2PDMA (VFIO_PCI_DMABUF depends on it): this kernel has none.")
	case pinsDmabuf(c) && !ru.VFIONoPinned:
		if v.MapType.Supported() {
			v.Outcome = OutcomeP2P
			if v.explain {
				v.reasonf("vfio-pci in Linux %s exports the BAR, lets an importer pin it as an RDMA NIC's dma-buf MR does, and maps it for a peer the kernel's p2pdma check allows; from 6.19-rc8 it refuses importers that pin (61ceaf236115).", ru.Release)
			}
		} else {
			v.Outcome = OutcomeRefused
			v.addReason("vfio-pci maps its BAR only for a peer the kernel's p2pdma check allows: refused.")
		}
	case pinsDmabuf(c) && !ru.VFIORevocable:
		v.Outcome = OutcomeRefused
		v.addReason("vfio-pci refuses an importer that pins its buffer (dma_buf_pin fails with EOPNOTSUPP, 61ceaf236115, 6.19-rc8), as an RDMA NIC's dma-buf MR does: revoking the BAR (reset, close) could not take it back.")
	case pinsDmabuf(c):
		v.Outcome = OutcomeRefused
		v.addReason("vfio-pci takes pinned importers only when they can revoke their mappings (dma_buf_attach_revocable, 0b45a66ffb1e); an RDMA NIC's pinned dma-buf MR (ib_umem_dmabuf_get_pinned) cannot, so attach fails with EOPNOTSUPP.")
	case v.MapType.Supported():
		v.Outcome = OutcomeP2P
		v.addReason("vfio-pci exports the BAR and maps it for a peer the kernel's p2pdma check allows.")
	default:
		v.Outcome = OutcomeRefused
		v.addReason("vfio-pci maps its BAR only for a peer the kernel's p2pdma check allows: refused.")
	}
}

// nvidiaPolicy is the rule of NVIDIA's open kernel modules for a peer
// attaching to a GPU dma-buf (nv_grdma_pci_topology_supported): coherent
// GPUs allow, the module override decides, a passthrough VM allows, a
// flagged chipset allows only a peer sharing an upstream bridge, and
// everything else is allowed. The kernel's p2pdma check is not consulted.
func (t *Topology) nvidiaPolicy(v *Verdict, p, c *Function) {
	allow := func(format string, args ...any) {
		v.Outcome = OutcomeP2P
		v.reasonf(format, args...)
	}
	deny := func(format string, args ...any) {
		v.Outcome = OutcomeRefused
		v.reasonf(format, args...)
	}
	// Coherent GPUs allow first; reading the device ID is left for when the
	// answer depends on it.
	coherent := func() (string, bool) {
		_, device, _ := p.ids()
		name, ok := nvidiaCoherentGPUs[device]
		return name, ok
	}
	if ver, ok := t.driverVersion("nvidia"); ok && modversion.Less(ver, nvidiaFirstTopologyCheck) {
		allow("nvidia %s checks no PCI topology on dma-buf attach (that check came in 580.65.06), so every peer is allowed.", fmtVersion(ver))
		return
	}
	switch t.nvidiaOverride() {
	case 1:
		allow("NVreg_GrdmaPciTopoCheckOverride=1 makes the nvidia driver allow every peer.")
		return
	case 2:
		if name, ok := coherent(); ok {
			allow("The nvidia driver allows every peer of a coherent (NVLink-C2C) %s GPU, before its override.", name)
		} else {
			deny("NVreg_GrdmaPciTopoCheckOverride=2 makes the nvidia driver refuse every peer.")
		}
		return
	}
	if cpu, _ := t.CPU(); cpu.Hypervisor {
		allow("The nvidia driver always allows peers in a passthrough VM (the CPU reports the hypervisor feature), whatever the PCI path.")
		return
	}
	if name, ok := coherent(); ok {
		allow("The nvidia driver allows every peer of a coherent (NVLink-C2C) %s GPU.", name)
		return
	}
	if chip, found := t.flaggedChipset(p.Addr.Domain); found {
		if commonAncestor2(p.Upstream, c.Upstream) != nil {
			allow("The nvidia driver flags the %s chipset for P2P, but the GPU and the peer share an upstream bridge, which it allows.", chip)
		} else {
			deny("The nvidia driver flags the %s chipset as unsupported for PCI P2P and allows only peers that share an upstream bridge with the GPU; these do not (attach fails with ENOTSUPP, 524).", chip)
		}
		return
	}
	allow("The nvidia driver allows the peer: no coherent link, no override, not a flagged chipset (it does not consult the kernel's p2pdma check).")
}

// pinsDmabuf reports an importer that pins the dma-bufs it maps: an RDMA
// NIC (class 02: ib_umem_dmabuf_get_pinned), unlike a GPU importer that
// attaches dynamically.
func pinsDmabuf(c *Function) bool {
	cl, err := c.Class()
	return err == nil && cl>>16 == 0x02
}

// commonAncestor2 is commonAncestor for two possibly nil upstream bridges.
func commonAncestor2(a, b *Function) *Function {
	if a == nil || b == nil {
		return nil
	}
	return commonAncestor(a, b)
}

type flaggedEntry struct {
	name  string
	found bool
}

// flaggedChipset scans the domain's functions for a chipset NVIDIA flags,
// once per domain: the answer is the same for every pair of the domain.
func (t *Topology) flaggedChipset(domain uint32) (string, bool) {
	e := remember(t, &t.flagged, domain, 0, func() flaggedEntry { return t.scanFlagged(domain) })
	return e.name, e.found
}

func (t *Topology) scanFlagged(domain uint32) flaggedEntry {
	all, err := t.Functions()
	if err != nil {
		return flaggedEntry{}
	}
	for _, a := range all {
		if a.Domain != domain {
			continue
		}
		v, d, err := t.functionIDs(a)
		if err != nil {
			continue
		}
		for _, c := range nvidiaFlaggedChipsets {
			if v == c.vendor && d == c.device {
				return flaggedEntry{c.name, true}
			}
		}
	}
	return flaggedEntry{}
}

// driverVersion returns a module's version, read once per module.
func (t *Topology) driverVersion(module string) ([3]int, bool) {
	return modversion.Parse(t.moduleVersion(module))
}

// moduleVersion returns a module's version as the module gives it
// ("2.17.3g"), "" when it has none; read once per module.
func (t *Topology) moduleVersion(module string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.versions[module]; ok {
		return v
	}
	v := ""
	if di, ok := t.ext.(driverInfo); ok {
		v = di.DriverVersion(module)
	}
	if t.versions == nil {
		t.versions = map[string]string{}
	}
	t.versions[module] = v
	return v
}

// nvidiaOverride returns NVreg_GrdmaPciTopoCheckOverride, read once.
func (t *Topology) nvidiaOverride() int {
	t.overrideOnce.Do(func() {
		if di, ok := t.ext.(driverInfo); ok {
			t.override = di.NVIDIATopoCheckOverride()
		}
	})
	return t.override
}

func fmtVersion(v [3]int) string { return fmt.Sprintf("%d.%d.%02d", v[0], v[1], v[2]) }

// addReason appends a sentence to the explanation, when the verdict is
// explained (Options.NoReasons); reasonf formats one only then.
func (v *Verdict) addReason(s string) {
	if !v.explain {
		return
	}
	v.appendReason(s)
}

// reasonf appends a formatted sentence to the explanation.
func (v *Verdict) reasonf(format string, args ...any) {
	if !v.explain {
		return
	}
	v.appendReason(fmt.Sprintf(format, args...))
}

func (v *Verdict) appendReason(s string) {
	if v.Reason != "" && !strings.HasSuffix(v.Reason, " ") {
		v.Reason += " "
	}
	v.Reason += s
}

// PeerMem is the peer-memory registration path of a (accelerator, NIC)
// pair: the out-of-tree EFA driver (amzn-drivers) registers accelerator
// memory by virtual address through the provider its p2p attribute names,
// without dma-buf or p2pdma.
type PeerMem struct {
	// Provider is the NIC function's p2p attribute: "NVIDIA" (the
	// nvidia_p2p_* API), "NVIDIA peermem" (the efa_nv_peermem shim),
	// "NEURON", or "" (the driver has no provider).
	Provider string `json:"provider"`
	// Present is false when the NIC has no p2p attribute: the in-tree
	// EFA driver (dma-buf only), or not an EFA NIC.
	Present bool `json:"present"`
	// Outcome is p2p when the provider serves the accelerator's driver,
	// refused when the driver has none for it, unknown without the
	// attribute.
	Outcome Outcome `json:"outcome"`
}

// peerMemProvider reads the p2p attribute of an EFA NIC
// (bus/pci/devices/<nic>/p2p, the out-of-tree driver's); present is false
// without one.
func (s *Sysfs) peerMemProvider(nic Addr) (string, bool, error) {
	b, err := s.readAttr(s.devPath(nic, "p2p"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(b), true, nil
}

type peerMemEntry struct {
	provider string
	present  bool
}

// peerMemProvider reads a NIC's p2p attribute once.
func (t *Topology) peerMemProvider(nic Addr) peerMemEntry {
	return remember(t, &t.peerMem, nic, 0, func() (e peerMemEntry) {
		if src, ok := t.ext.(peerMemSource); ok {
			if p, present, err := src.PeerMemProvider(nic); err == nil {
				e = peerMemEntry{p, present}
			}
		}
		return e
	})
}

// peerMemDrivers maps a provider to the accelerator driver whose memory it
// registers. Provenance: amzn-drivers kernel/linux/efa (efa_p2p.c,
// efa_nvmem_impl.h, efa_neuronmem.c, efa_sysfs.c): the attribute names the
// first available provider.
var peerMemDrivers = map[string]string{
	"NVIDIA":         "nvidia",
	"NVIDIA peermem": "nvidia",
	"NEURON":         neuronDriver,
}

// peerMemPath decides the peer-memory path of an accelerator provider and
// an EFA NIC client.
func (t *Topology) peerMemPath(v *Verdict, p, c *Function) {
	// Cheap, cached reads first: the client's class and driver (the
	// in-tree and the out-of-tree EFA driver both bind as "efa"), the
	// provider's class; its IDs only where a Neuron device could hide.
	if cl, err := c.Class(); err != nil || cl>>16 != 0x02 || c.Driver() != "efa" || !p.isAccelerator() {
		return
	}
	e := t.peerMemProvider(c.Addr)
	v.PeerMem = PeerMem{Provider: e.provider, Present: e.present}
	driver := p.Driver()
	switch want, known := peerMemDrivers[e.provider]; {
	case !e.present:
		v.PeerMem.Outcome = OutcomeUnknown
		v.addReason("The NIC has no p2p attribute (the in-tree EFA driver, which registers accelerator memory by dma-buf only): no peer-memory path.")
	case e.provider == "":
		v.PeerMem.Outcome = OutcomeRefused
		v.addReason("The out-of-tree EFA driver has no peer-memory provider (its p2p attribute is empty): registering the accelerator's memory by address fails.")
	case !known:
		v.PeerMem.Outcome = OutcomeUnknown
		if v.explain {
			v.reasonf("The EFA driver names a peer-memory provider efap2p does not know (%q).", e.provider)
		}
	case want == driver:
		v.PeerMem.Outcome = OutcomeP2P
		if v.explain {
			v.reasonf("Peer memory: the out-of-tree EFA driver registers %s memory by address through its %q provider, which pins the device pages for the NIC without the kernel's p2pdma check: true P2P.", driver, e.provider)
		}
	default:
		v.PeerMem.Outcome = OutcomeRefused
		if v.explain {
			v.reasonf("Peer memory: the EFA driver's provider (%q) serves %s memory, not this accelerator's (driver %q).", e.provider, want, driver)
		}
	}
}
