// SPDX-License-Identifier: MIT

package p2p

import (
	"fmt"
	"strconv"
	"strings"
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
func (o *Outcome) UnmarshalText(b []byte) error {
	v, err := enumParse[Outcome](outcomeNames[1:], string(b), "outcome", "p2p, bounced or refused")
	if err == nil {
		v++ // outcomeNames[1:] starts at OutcomeP2P
	}
	*o = v
	return err
}

// Exporter policies: whose rule decided the outcome.
const (
	// PolicyKernel: the exporter applies the kernel's distance check and
	// refuses on failure (xe, vfio-pci, unknown or absent drivers).
	PolicyKernel = "kernel"
	// PolicyAMDGPU: amdgpu applies the kernel's check but on failure
	// migrates the buffer to system memory instead of refusing.
	PolicyAMDGPU = "amdgpu"
	// PolicyNVIDIA: NVIDIA's open kernel modules apply their own rule.
	PolicyNVIDIA = "nvidia"
)

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

// policyFor names the rule of the driver bound to the provider.
func policyFor(driver string) string {
	switch driver {
	case "nvidia":
		return PolicyNVIDIA
	case "amdgpu":
		return PolicyAMDGPU
	}
	return PolicyKernel
}

// applyPolicy sets the verdict's Policy and Outcome from the provider's
// exporting driver, and adds that driver's reasoning to the explanation.
func (t *Topology) applyPolicy(v *Verdict, p, c *Function) {
	driver := p.Driver()
	v.Policy = policyFor(driver)
	switch v.Policy {
	case PolicyAMDGPU:
		if v.MapType.Supported() {
			v.Outcome = OutcomeP2P
			v.addReason("amdgpu exports the memory and keeps it in VRAM for a peer the kernel allows (kernels before 6.15 still move buffers pinned by an importer such as EFA to system memory).")
		} else {
			v.Outcome = OutcomeBounced
			v.addReason("amdgpu does not refuse: it marks the attachment non-P2P and migrates the buffer to system memory, so registration succeeds but the NIC's DMA bounces through host memory.")
		}
	case PolicyNVIDIA:
		t.nvidiaPolicy(v, p, c)
	default:
		if v.MapType.Supported() {
			v.Outcome = OutcomeP2P
		} else {
			v.Outcome = OutcomeRefused
		}
		if driver != "" {
			v.addReason(fmt.Sprintf("The exporter (%s) applies the kernel's check as it is.", driver))
		} else {
			v.addReason("No driver is bound to the provider; an exporter would apply the kernel's check.")
		}
	}
}

// nvidiaPolicy is the rule of NVIDIA's open kernel modules for a peer
// attaching to a GPU dma-buf (nv_grdma_pci_topology_supported): coherent
// GPUs allow, the module override decides, a passthrough VM allows, a
// flagged chipset allows only a peer sharing an upstream bridge, and
// everything else is allowed. The kernel's p2pdma check is not consulted.
func (t *Topology) nvidiaPolicy(v *Verdict, p, c *Function) {
	allow := func(why string) {
		v.Outcome = OutcomeP2P
		v.addReason(why)
	}
	deny := func(why string) {
		v.Outcome = OutcomeRefused
		v.addReason(why)
	}
	// Coherent GPUs allow first; reading the device ID is left for when the
	// answer depends on it.
	coherent := func() (string, bool) {
		at, _ := p.Attrs()
		name, ok := nvidiaCoherentGPUs[at.Device]
		return name, ok
	}
	if ver, ok := t.driverVersion("nvidia"); ok && versionLess(ver, nvidiaFirstTopologyCheck) {
		allow(fmt.Sprintf("nvidia %s checks no PCI topology on dma-buf attach (that check came in 580.65.06), so every peer is allowed.", fmtVersion(ver)))
		return
	}
	switch t.nvidiaOverride() {
	case 1:
		allow("NVreg_GrdmaPciTopoCheckOverride=1 makes the nvidia driver allow every peer.")
		return
	case 2:
		if name, ok := coherent(); ok {
			allow(fmt.Sprintf("The nvidia driver allows every peer of a coherent (NVLink-C2C) %s GPU, before its override.", name))
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
		allow(fmt.Sprintf("The nvidia driver allows every peer of a coherent (NVLink-C2C) %s GPU.", name))
		return
	}
	if chip, found := t.flaggedChipset(p.Addr.Domain); found {
		if commonAncestor2(p.Upstream, c.Upstream) != nil {
			allow(fmt.Sprintf("The nvidia driver flags the %s chipset for P2P, but the GPU and the peer share an upstream bridge, which it allows.", chip))
		} else {
			deny(fmt.Sprintf("The nvidia driver flags the %s chipset as unsupported for PCI P2P and allows only peers that share an upstream bridge with the GPU; these do not (attach fails with ENOTSUPP, 524).", chip))
		}
		return
	}
	allow("The nvidia driver allows the peer: no coherent link, no override, not a flagged chipset (it does not consult the kernel's p2pdma check).")
}

// commonAncestor2 is commonAncestor for two possibly nil upstream bridges.
func commonAncestor2(a, b *Function) *Function {
	if a == nil || b == nil {
		return nil
	}
	return commonAncestor(a, b)
}

// flaggedChipset scans the domain's functions for a chipset NVIDIA flags.
func (t *Topology) flaggedChipset(domain uint32) (string, bool) {
	all, err := t.Functions()
	if err != nil {
		return "", false
	}
	for _, a := range all {
		if a.Domain != domain {
			continue
		}
		f, err := t.Function(a)
		if err != nil {
			continue
		}
		at, err := f.Attrs()
		if err != nil {
			continue
		}
		for _, c := range nvidiaFlaggedChipsets {
			if at.Vendor == c.vendor && at.Device == c.device {
				return c.name, true
			}
		}
	}
	return "", false
}

// DriverInfo is an optional Source interface for what a driver module
// reports about itself.
type DriverInfo interface {
	// DriverVersion returns a module's version ("580.65.06"), "" if unknown.
	DriverVersion(module string) string
	// NVIDIATopoCheckOverride returns NVreg_GrdmaPciTopoCheckOverride (0
	// default, 1 allow, 2 deny), 0 when unknown.
	NVIDIATopoCheckOverride() int
}

// driverVersion returns a module's version, read once per module.
func (t *Topology) driverVersion(module string) ([3]int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.versions[module]; ok {
		return parseVersion(v)
	}
	v := ""
	if di, ok := t.src.(DriverInfo); ok {
		v = di.DriverVersion(module)
	}
	if t.versions == nil {
		t.versions = map[string]string{}
	}
	t.versions[module] = v
	return parseVersion(v)
}

// nvidiaOverride returns NVreg_GrdmaPciTopoCheckOverride, read once.
func (t *Topology) nvidiaOverride() int {
	t.overrideOnce.Do(func() {
		if di, ok := t.src.(DriverInfo); ok {
			t.override = di.NVIDIATopoCheckOverride()
		}
	})
	return t.override
}

func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func versionLess(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func fmtVersion(v [3]int) string { return fmt.Sprintf("%d.%d.%02d", v[0], v[1], v[2]) }

// addReason appends a sentence to the explanation.
func (v *Verdict) addReason(s string) {
	if v.Reason != "" && !strings.HasSuffix(v.Reason, " ") {
		v.Reason += " "
	}
	v.Reason += s
}
