// SPDX-License-Identifier: MIT

package p2p

import (
	"fmt"
	"strings"
)

// MapType is the kernel's pci_p2pdma_map_type: how a DMA from the client to
// the provider's memory is mapped, or that it cannot be.
type MapType uint8

// The map types, with the kernel's values.
const (
	MapUnknown        MapType = 0 // not computed
	MapNotSupported   MapType = 1 // the mapping must fail
	MapBusAddr        MapType = 2 // switches only: program PCI bus addresses
	MapThruHostBridge MapType = 3 // routed through the root complex
)

var mapTypeNames = []string{"UNKNOWN", "NOT_SUPPORTED", "BUS_ADDR", "THRU_HOST_BRIDGE"}

// String returns the kernel's name without its prefix: "BUS_ADDR".
func (m MapType) String() string { return enumName(mapTypeNames, m, "MapType") }

// ParseMapType parses the names String returns.
func ParseMapType(s string) (MapType, error) {
	return enumParse[MapType](mapTypeNames, s, "map type", "NOT_SUPPORTED, BUS_ADDR or THRU_HOST_BRIDGE")
}

// Supported reports whether the kernel lets the mapping happen.
func (m MapType) Supported() bool { return m == MapBusAddr || m == MapThruHostBridge }

// MarshalText implements encoding.TextMarshaler.
func (m MapType) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *MapType) UnmarshalText(b []byte) error {
	v, err := ParseMapType(string(b))
	*m = v
	return err
}

// PathClass names the path between two functions the way NCCL and
// `nvidia-smi topo -m` do. Classes are ordered: a larger one is a longer,
// slower path.
type PathClass uint8

// The path classes.
const (
	PathUnknown PathClass = iota
	PathLOC               // the same function
	PathPIX               // at most one PCIe bridge (or the ports of one switch)
	PathPXB               // several bridges, not through a host bridge
	PathPHB               // through one PCIe host bridge
	PathNODE              // across host bridges within one NUMA node
	PathSYS               // across the inter-socket link
)

var pathClassNames = []string{"UNKNOWN", "LOC", "PIX", "PXB", "PHB", "NODE", "SYS"}

// String returns the NCCL / nvidia-smi name, "PIX".
func (p PathClass) String() string { return enumName(pathClassNames, p, "PathClass") }

// parsePathClass parses the names String returns.
func parsePathClass(s string) (PathClass, error) {
	return enumParse[PathClass](pathClassNames, s, "path class", "LOC, PIX, PXB, PHB, NODE or SYS")
}

// MarshalText implements encoding.TextMarshaler.
func (p PathClass) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *PathClass) UnmarshalText(b []byte) error {
	v, err := parsePathClass(string(b))
	*p = v
	return err
}

// Rule names the part of the kernel's algorithm that decided a verdict.
type Rule uint8

// The rules.
const (
	RuleNone Rule = iota
	// RuleSameFunction: provider and client are one function.
	RuleSameFunction
	// RuleCommonBridge: a common upstream bridge and no ACS redirect on the
	// path: BUS_ADDR.
	RuleCommonBridge
	// RuleCPU: through the host bridge, allowed because the CPU supports
	// P2P DMA (AMD Zen and later).
	RuleCPU
	// RuleWhitelist: through the host bridge, allowed because the host
	// bridge (or both) is in the kernel's whitelist.
	RuleWhitelist
	// RuleHostBridge: through the host bridge, refused: neither the CPU
	// nor the whitelist allows it.
	RuleHostBridge
	// RuleACPI: through the host bridge, allowed because the ACPI HMAT
	// describes a reachable P2P path between the host bridges (p2p-hmat).
	RuleACPI
	// RuleTopologyFile: an operator's topology file gave the verdict.
	RuleTopologyFile
	// RuleNoP2PDMA: the kernel is built without PCI_P2PDMA, so its
	// pci_p2pdma_distance is the stub that refuses every pair.
	RuleNoP2PDMA
)

var ruleNames = []string{"none", "same-function", "common-upstream-bridge", "cpu-supports-p2pdma", "host-bridge-whitelist", "host-bridge-not-whitelisted", "acpi-hmat-p2p", "topology-file", "kernel-without-p2pdma"}

// String returns a short kebab-case name, as in `explain --json`.
func (r Rule) String() string { return enumName(ruleNames, r, "Rule") }

// MarshalText implements encoding.TextMarshaler.
func (r Rule) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Rule) UnmarshalText(b []byte) error {
	v, err := enumParse[Rule](ruleNames, string(b), "rule", "one of "+strings.Join(ruleNames[1:], ", "))
	*r = v
	return err
}

// Policy names the rule of the driver that exports the provider's memory:
// whose decision the Outcome is.
type Policy uint8

// The exporter policies.
const (
	PolicyUnknown Policy = iota
	// PolicyKernel: the exporter applies the kernel's distance check and
	// refuses on failure (habanalabs; unknown or absent drivers).
	PolicyKernel
	// PolicyAMDGPU: amdgpu applies the kernel's check but on failure
	// migrates the buffer to system memory instead of refusing.
	PolicyAMDGPU
	// PolicyNVIDIA: NVIDIA's open kernel modules apply their own rule.
	PolicyNVIDIA
	// PolicyNeuron: the AWS Neuron driver lets any importer attach (one
	// at a time) without a topology check.
	PolicyNeuron
	// PolicyXe: Intel's xe applies the kernel's check at attach and, on
	// failure, moves the buffer to system memory; a buffer an importer
	// pins stays in VRAM only from 6.19.
	PolicyXe
	// PolicyVFIO: vfio-pci exports BAR memory as dma-bufs from 6.19, to
	// importers that can give their mappings back (revoke); an RDMA NIC's
	// pinned registration cannot.
	PolicyVFIO
	// PolicyI915: i915 moves every buffer it exports to system memory at
	// attach.
	PolicyI915
)

var policyNames = []string{"unknown", "kernel", "amdgpu", "nvidia", "neuron", "xe", "vfio-pci", "i915"}

// String returns "kernel", "amdgpu", "nvidia", "neuron", "xe", "vfio-pci"
// or "i915".
func (p Policy) String() string { return enumName(policyNames, p, "Policy") }

// parsePolicy parses the names String returns.
func parsePolicy(s string) (Policy, error) {
	return enumParse[Policy](policyNames, s, "policy", "kernel, amdgpu, nvidia, neuron, xe, vfio-pci or i915")
}

// MarshalText implements encoding.TextMarshaler.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Policy) UnmarshalText(b []byte) error {
	v, err := parsePolicy(string(b))
	*p = v
	return err
}

// VerdictSource says where a verdict came from. (Source is the interface
// a Topology is filled from.)
type VerdictSource uint8

// The verdict sources, in precedence order after the unknown value: an
// operator's or the boot-time topology file, then the ACPI tables (HMAT and
// SRAT), then the oracle's own computation.
const (
	SourceUnknown VerdictSource = iota
	SourceComputed
	SourceACPI
	SourceTopologyFile
)

var sourceNames = []string{"unknown", "computed", "acpi", "topology-file"}

// String returns "computed", "acpi" or "topology-file".
func (s VerdictSource) String() string { return enumName(sourceNames, s, "VerdictSource") }

// parseVerdictSource parses the names String returns.
func parseVerdictSource(s string) (VerdictSource, error) {
	return enumParse[VerdictSource](sourceNames, s, "source", "computed, acpi or topology-file")
}

// MarshalText implements encoding.TextMarshaler.
func (s VerdictSource) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *VerdictSource) UnmarshalText(b []byte) error {
	v, err := parseVerdictSource(string(b))
	*s = v
	return err
}

// enumName returns names[v], or "Type(v)" for a value without a name.
func enumName[T ~uint8](names []string, v T, typ string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(v))
}

// enumParse returns the value whose name is s; what and want word the error.
func enumParse[T ~uint8](names []string, s, what, want string) (T, error) {
	for i, n := range names {
		if n == s {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", what, s, want)
}
