package p2p

import "fmt"

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

var mapTypeNames = [...]string{"UNKNOWN", "NOT_SUPPORTED", "BUS_ADDR", "THRU_HOST_BRIDGE"}

// String returns the kernel's name without its prefix: "BUS_ADDR".
func (m MapType) String() string {
	if int(m) < len(mapTypeNames) {
		return mapTypeNames[m]
	}
	return fmt.Sprintf("MapType(%d)", uint8(m))
}

// ParseMapType parses the names String returns.
func ParseMapType(s string) (MapType, error) {
	for i, n := range mapTypeNames {
		if n == s {
			return MapType(i), nil
		}
	}
	return MapUnknown, fmt.Errorf("unknown map type %q (want NOT_SUPPORTED, BUS_ADDR or THRU_HOST_BRIDGE)", s)
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

var pathClassNames = [...]string{"UNKNOWN", "LOC", "PIX", "PXB", "PHB", "NODE", "SYS"}

// String returns the NCCL / nvidia-smi name, "PIX".
func (p PathClass) String() string {
	if int(p) < len(pathClassNames) {
		return pathClassNames[p]
	}
	return fmt.Sprintf("PathClass(%d)", uint8(p))
}

// ParsePathClass parses the names String returns.
func ParsePathClass(s string) (PathClass, error) {
	for i, n := range pathClassNames {
		if n == s {
			return PathClass(i), nil
		}
	}
	return PathUnknown, fmt.Errorf("unknown path class %q (want LOC, PIX, PXB, PHB, NODE or SYS)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (p PathClass) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *PathClass) UnmarshalText(b []byte) error {
	v, err := ParsePathClass(string(b))
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
	// RuleACPI: the ACPI P2P table decided reachability.
	RuleACPI
	// RuleTopologyFile: an operator's topology file gave the verdict.
	RuleTopologyFile
)

var ruleNames = [...]string{"none", "same-function", "common-upstream-bridge", "cpu-supports-p2pdma", "host-bridge-whitelist", "host-bridge-not-whitelisted", "acpi-p2p-table", "topology-file"}

// String returns a short kebab-case name, as in `explain --json`.
func (r Rule) String() string {
	if int(r) < len(ruleNames) {
		return ruleNames[r]
	}
	return fmt.Sprintf("Rule(%d)", uint8(r))
}

// MarshalText implements encoding.TextMarshaler.
func (r Rule) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Rule) UnmarshalText(b []byte) error {
	for i, n := range ruleNames {
		if n == string(b) {
			*r = Rule(i)
			return nil
		}
	}
	return fmt.Errorf("unknown rule %q", b)
}
