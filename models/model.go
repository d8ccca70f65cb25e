// SPDX-License-Identifier: MIT

// Package models holds the machine models: real instance layouts and
// edge cases of the kernel's rules, each with its DMI identity, its loaded
// kernel modules and the verdicts expected for chosen pairs, worked out by
// hand from the kernel's rules. A model is a p2p.Source, and a writer turns
// it into a sysfs tree that both package p2p and the unmodified rdma-core
// userspace read. The oracle's tests, the node check (efap2p check compares
// a node with its instance type's model), the NCCL export and the emulator
// (package sim) all read them here.
//
// The model format is documented in models/machines/README.md.
package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/efap2p/efap2p/internal/jsonline"
	"github.com/efap2p/efap2p/internal/pcicfg"
	"github.com/efap2p/efap2p/p2p"
)

// FormatVersion is the model format this package reads and writes.
const FormatVersion = 1

// Machine is one machine model: a host's CPU, its PCI hierarchy, its EFA
// NICs, and the verdicts expected for chosen pairs.
type Machine struct {
	Format      int    `json:"format"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Provenance  string `json:"provenance,omitempty"`
	CPU         CPU    `json:"cpu"`
	// Kernel is the release of the emulated host's kernel, whose p2pdma
	// rules the expected verdicts follow ("6.8.0-1015-aws", "latest");
	// default "latest". `efap2p sim` gives it to the processes it runs as
	// EFAP2P_KERNEL.
	Kernel p2p.Release `json:"kernel,omitzero"`
	// KernelBuild is what that kernel is built with, as far as a verdict
	// depends on it; default: with PCI_P2PDMA. `efap2p sim` writes it as
	// the tree's kernel.config and names that file in
	// EFAP2P_KERNEL_CONFIG.
	KernelBuild *KernelBuild `json:"kernel_config,omitempty"`
	// EFADefaults are the device attributes of every EFA NIC of the
	// machine, before a NIC's own overrides.
	EFADefaults *EFA      `json:"efa_defaults,omitempty"`
	RootBuses   []RootBus `json:"root_buses"`
	Expected    []Expect  `json:"expected,omitempty"`
	// ACPI, when present, is written as the binary HMAT and SRAT under
	// firmware/acpi/tables/.
	ACPI *ACPI `json:"acpi,omitempty"`
	// Host holds the DMI identity and the loaded modules (host.go).
	Host

	fns map[p2p.Addr]*Function // filled by index
}

// CPU describes the boot CPU.
type CPU struct {
	Arch       string `json:"arch"`             // "x86" or "arm64"
	Vendor     string `json:"vendor,omitempty"` // x86: Intel, AMD, Hygon, Zhaoxin
	Family     Hex    `json:"family,omitempty"`
	Model      Hex    `json:"model,omitempty"`
	ModelName  string `json:"model_name,omitempty"`
	Sockets    int    `json:"sockets,omitempty"`
	Hypervisor bool   `json:"hypervisor,omitempty"` // a virtual machine
	// CPUs is the number of logical CPUs, spread evenly over the NUMA
	// nodes (default 2 cores per node); ThreadsPerCore the SMT threads of
	// a core (default 1).
	CPUs           int `json:"cpus,omitempty"`
	ThreadsPerCore int `json:"threads_per_core,omitempty"`
}

// RootBus is a PCI root bus (one host bridge) and the functions on it.
type RootBus struct {
	Domain   Hex `json:"domain"`
	Bus      Hex `json:"bus"`
	NUMANode int `json:"numa_node"`
	// ParentFunction, when set, puts the root bus's directory below that
	// PCI function's (an Intel VMD domain: pci10000:00 below the VMD
	// endpoint, with a host bridge of its own).
	ParentFunction *p2p.Addr `json:"parent_function,omitempty"`
	// SysfsParent, when set, puts the root bus's directory below that
	// path under devices/ ("platform/soc@0/1c00000.pcie" for a
	// devicetree host controller, a VMBus device for Hyper-V vPCI).
	SysfsParent string `json:"sysfs_parent,omitempty"`
	// FirmwareNode is the host bridge's ACPI companion (written as its
	// firmware_node link, with hid and uid).
	FirmwareNode *FirmwareNode `json:"firmware_node,omitempty"`
	Functions    []*Function   `json:"functions"`
}

// FirmwareNode is an ACPI device: its _HID and _UID.
type FirmwareNode struct {
	HID string `json:"hid"`
	UID string `json:"uid"`
}

// Addr returns the root bus's name.
func (rb *RootBus) Addr() p2p.RootBus {
	return p2p.RootBus{Domain: uint32(rb.Domain), Bus: uint8(rb.Bus)}
}

// Kinds of function, which set the header type and PCIe port type.
const (
	KindHostBridge       = "host_bridge"       // class 0x0600, no PCIe capability
	KindRootPort         = "root_port"         // PCIe port type 4
	KindSwitchUpstream   = "switch_upstream"   // PCIe port type 5
	KindSwitchDownstream = "switch_downstream" // PCIe port type 6
	KindPCIBridge        = "pci_bridge"        // PCIe-to-PCI bridge, port type 7
	KindEndpoint         = "endpoint"          // PCIe endpoint, port type 0
	KindIntegrated       = "integrated"        // root complex integrated endpoint, port type 9
)

var kindPortType = map[string]int{
	KindHostBridge: -1, KindRootPort: 4, KindSwitchUpstream: 5, KindSwitchDownstream: 6,
	KindPCIBridge: 7, KindEndpoint: 0, KindIntegrated: 9,
}

// Function is one PCI function of a model.
type Function struct {
	Addr      p2p.Addr `json:"addr"`
	Kind      string   `json:"kind"`
	Name      string   `json:"name,omitempty"` // a comment for people
	Vendor    Hex      `json:"vendor"`
	Device    Hex      `json:"device"`
	SubVendor *Hex     `json:"subsystem_vendor,omitempty"`
	SubDevice *Hex     `json:"subsystem_device,omitempty"`
	Class     Hex      `json:"class"`
	Driver    string   `json:"driver,omitempty"`
	// NUMANode overrides the root bus's node.
	NUMANode *int `json:"numa_node,omitempty"`
	Link     Link `json:"link,omitzero"`
	ACS      *ACS `json:"acs,omitempty"`
	// PortNumber is the Port Number of a root or switch downstream port
	// (Link Capabilities bits 31:24), which indexes ACS Egress Control
	// Vectors.
	PortNumber int `json:"port_number,omitempty"`
	// ExtCaps orders the extended capability list by name ("AER", "ACS",
	// "SN", "LTR", "L1SS", "DPC", ...); by default AER, then ACS when the
	// function has it.
	ExtCaps []string `json:"ext_caps,omitempty"`
	// ConfigSize is the size of the config file: 4096 (PCIe, default) or
	// 256 (conventional PCI; the default of a host bridge, which has no
	// PCIe capability, without ACS or ext_caps).
	ConfigSize int `json:"config_size,omitempty"`
	// EFA marks an EFA NIC.
	EFA *EFA `json:"efa,omitempty"`
	// VFs are the SR-IOV virtual functions of this physical function.
	VFs []*Function `json:"vfs,omitempty"`
	// Children are the functions on the secondary bus of a bridge.
	Children []*Function `json:"children,omitempty"`

	path     []any     // JSON path in the model, for error messages
	parent   *Function // upstream bridge, nil on a root bus
	physfn   *Function // for a VF
	root     *RootBus
	numaNode int
}

// Link is a function's current PCIe link.
type Link struct {
	Speed string `json:"speed,omitempty"` // "32.0 GT/s PCIe"
	Width int    `json:"width,omitempty"`
}

// ACS lists a function's ACS Capability and Control bits by name: SV, TB,
// RR, CR, UF, EC, DT, and its Egress Control Vector.
type ACS struct {
	Capability []string `json:"capability"`
	Control    []string `json:"control"`
	// EgressVector is the Egress Control Vector, 32 ports a dword (bit n
	// of dword k blocks egress port 32k+n); its size is 32 bits a dword
	// (written into the capability's vector size field).
	EgressVector []Hex `json:"egress_vector,omitempty"`
}

// Expect is a verdict worked out by hand from the kernel's rules: the
// ground truth the oracle is tested against and the emulated kernel
// enforces. One entry may cover every provider x client combination it
// lists.
type Expect struct {
	Providers   []p2p.Addr    `json:"providers"`
	Clients     []p2p.Addr    `json:"clients"`
	MapType     p2p.MapType   `json:"map_type"`
	Distance    int           `json:"distance"`
	Path        p2p.PathClass `json:"path,omitempty"`
	ACSRedirect []p2p.Addr    `json:"acs_redirect,omitempty"`
	// Outcome is what the accelerator's exporter does with the pair:
	// "p2p", "bounced" (allowed through system memory) or "refused"; by
	// default it follows MapType (refused when NOT_SUPPORTED).
	Outcome string     `json:"outcome,omitempty"`
	Policy  p2p.Policy `json:"policy,omitempty"`
	// PeerMem is the outcome of the peer-memory path (p2p, refused,
	// unknown); not checked when absent.
	PeerMem string `json:"peer_mem,omitempty"`
	Why     string `json:"why"`
}

// Outcomes of an exporter's decision.
const (
	OutcomeP2P     = "p2p"
	OutcomeBounced = "bounced"
	OutcomeRefused = "refused"
)

// ExpectedOutcome returns Outcome, or the one MapType implies.
func (e *Expect) ExpectedOutcome() string {
	if e.Outcome != "" {
		return e.Outcome
	}
	if e.MapType.Supported() {
		return OutcomeP2P
	}
	return OutcomeRefused
}

// Pair is one expected (provider, client) verdict, expanded from an Expect.
type Pair struct {
	Provider, Client p2p.Addr
	*Expect
}

// Pairs expands every Expect entry into its pairs, in model order.
func (m *Machine) Pairs() []Pair {
	var out []Pair
	for i := range m.Expected {
		e := &m.Expected[i]
		for _, p := range e.Providers {
			for _, c := range e.Clients {
				out = append(out, Pair{p, c, e})
			}
		}
	}
	return out
}

// ACPI are the ACPI tables of a model, written as binary HMAT and SRAT.
type ACPI struct {
	// HMATRevision is the HMAT's revision: 2 (ACPI 6.3 and later,
	// latencies in picoseconds; default) or 1.
	HMATRevision int `json:"hmat_revision,omitempty"`
	// MemoryDomains are the SRAT Memory Affinity structures (enabled).
	MemoryDomains []uint32 `json:"memory_domains"`
	// GenericPorts are the SRAT Generic Port Affinity structures.
	GenericPorts []GenericPort `json:"generic_ports"`
	// P2P are the HMAT PCIe P2P Latency and Bandwidth structures.
	P2P []HMATP2P `json:"p2p"`
}

// GenericPort is an SRAT Generic Port Affinity structure with an ACPI
// device handle (a host bridge's _HID and _UID).
type GenericPort struct {
	Domain  uint32 `json:"domain"`
	HID     string `json:"hid"`
	UID     uint32 `json:"uid"`
	Enabled *bool  `json:"enabled,omitempty"` // default true
}

// HMATP2P is an HMAT PCIe P2P structure: from each initiator domain (a
// client's host bridge) to each target domain (a provider's), an entry in
// units of base (ps for latencies with revision 2, MB/s for bandwidths).
type HMATP2P struct {
	// Classes: "non_uio" (ordered traffic, what p2pdma authorizes),
	// "uio", or both.
	Classes []string `json:"classes"`
	// DataType: access_latency, read_latency, write_latency,
	// access_bandwidth, read_bandwidth or write_bandwidth.
	DataType   string     `json:"data_type"`
	Base       uint64     `json:"base"`
	Initiators []uint32   `json:"initiators"`
	Targets    []uint32   `json:"targets"`
	Entries    [][]uint16 `json:"entries"` // one row per initiator
}

// Load reads a model from r; name is used in error messages (a file name).
// Errors name the file and the line.
func Load(r io.Reader, name string) (*Machine, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return Parse(data, name)
}

// ErrModel is wrapped by every error about a malformed model.
var ErrModel = errors.New("malformed machine model")

// Parse decodes and validates a model.
func Parse(data []byte, name string) (*Machine, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Machine
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %s:%d: %w", ErrModel, name, decodeErrorLine(data, dec.InputOffset(), err), err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: %s:%d: data after the model", ErrModel, name, lineOf(data, dec.InputOffset(), nil))
	}
	if m.Format != FormatVersion {
		return nil, fmt.Errorf("%w: %s:%d: format %d is not supported (this build reads format %d)", ErrModel, name, lineAt(data, []any{"format"}), m.Format, FormatVersion)
	}
	if err := m.index(); err != nil {
		var le *locError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("%w: %s:%d: %w", ErrModel, name, lineAt(data, le.path), le.err)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrModel, name, err)
	}
	return &m, nil
}

// lineOf returns the line a decoding error points at.
func lineOf(data []byte, off int64, err error) int { return jsonline.Line(data, off, err) }

// Marshal returns the model as indented JSON.
func (m *Machine) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Function returns the function at a, or nil.
func (m *Machine) Function(a p2p.Addr) *Function { return m.fns[a] }

// Functions returns every function in enumeration order.
func (m *Machine) Functions() []*Function {
	out := make([]*Function, 0, len(m.fns))
	for _, f := range m.fns {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr.Less(out[j].Addr) })
	return out
}

// EFANICs returns the EFA NICs in enumeration order (the order of their
// uverbs devices).
func (m *Machine) EFANICs() []*Function {
	var out []*Function
	for _, f := range m.Functions() {
		if f.EFA != nil {
			out = append(out, f)
		}
	}
	return out
}

// Parent returns the function's upstream bridge (nil on a root bus).
func (f *Function) Parent() *Function { return f.parent }

// PhysFn returns the physical function of a VF, or nil.
func (f *Function) PhysFn() *Function { return f.physfn }

// Root returns the root bus the function hangs from.
func (f *Function) Root() *RootBus { return f.root }

// NUMA returns the function's NUMA node.
func (f *Function) NUMA() int { return f.numaNode }

// PortType returns the PCIe Device/Port Type of the function's kind, or -1
// when it has no PCIe capability.
func (f *Function) PortType() int { return kindPortType[f.Kind] }

// IsBridge reports a kind with a secondary bus.
func (f *Function) IsBridge() bool {
	switch f.Kind {
	case KindRootPort, KindSwitchUpstream, KindSwitchDownstream, KindPCIBridge:
		return true
	}
	return false
}

// ACSBits returns the function's ACS Capability and Control registers; the
// Capability holds the Egress Control Vector size (bits 15:8, 0 for 256)
// when the function has a vector.
func (f *Function) ACSBits() (capability, control uint16, present bool) {
	if f.ACS == nil {
		return 0, 0, false
	}
	capability = acsBits(f.ACS.Capability)
	if n := len(f.ACS.EgressVector); n > 0 {
		capability |= uint16(n*32%256) << 8
	}
	return capability, acsBits(f.ACS.Control), true
}

// KernelBuild is a model kernel's build configuration.
type KernelBuild struct {
	// PCIP2PDMA is CONFIG_PCI_P2PDMA: "y" or "n" (no stock Debian 12
	// kernel has it).
	PCIP2PDMA string `json:"pci_p2pdma"`
}

// KernelConfig is the emulated host's kernel configuration, as the oracle
// takes it (Options.KernelConfig).
func (m *Machine) KernelConfig() p2p.KernelConfig {
	if m.KernelBuild == nil {
		return p2p.KernelConfigOf(true, fmt.Sprintf("the machine model %s, whose kernel has the default configuration", m.Name))
	}
	return p2p.KernelConfigOf(m.KernelBuild.PCIP2PDMA == "y", fmt.Sprintf("the machine model %s", m.Name))
}

// KernelConfigFile is the kernel.config of the model's written tree: what
// /boot/config-RELEASE says of PCI_P2PDMA.
func (m *Machine) KernelConfigFile() string {
	if m.KernelConfig().P2PDMA == p2p.BuiltYes {
		return "CONFIG_PCI_P2PDMA=y\n"
	}
	return "# CONFIG_PCI_P2PDMA is not set\n"
}

// OracleOptions are the options of an oracle that decides as the
// emulated host's kernel: its release and its configuration.
func (m *Machine) OracleOptions() p2p.Options {
	kc := m.KernelConfig()
	return p2p.Options{Kernel: m.KernelRelease(), KernelConfig: &kc}
}

// KernelRelease is the emulated host's kernel release ("latest" when the
// model names none).
func (m *Machine) KernelRelease() p2p.Release {
	if m.Kernel.IsZero() {
		return p2p.MustParseRelease("latest")
	}
	return m.Kernel
}

func acsBits(names []string) uint16 {
	var v uint16
	for _, n := range names {
		for i, b := range pcicfg.ACSBitNames {
			if n == b {
				v |= 1 << i
			}
		}
	}
	return v
}

func (c *CPU) validate() error {
	switch c.Arch {
	case "x86":
		if _, ok := x86Vendors[c.Vendor]; !ok {
			return fmt.Errorf("cpu: vendor %q (want Intel, AMD, Hygon or Zhaoxin)", c.Vendor)
		}
	case "arm64":
	default:
		return fmt.Errorf("cpu: arch %q (want x86 or arm64)", c.Arch)
	}
	return nil
}

var x86Vendors = map[string]int{
	"Intel": p2p.X86VendorIntel, "AMD": p2p.X86VendorAMD,
	"Hygon": p2p.X86VendorHygon, "Zhaoxin": p2p.X86VendorZhaoxin,
}

// Modalias returns the CPU's devices/system/cpu/modalias line.
func (c *CPU) Modalias() string {
	var b strings.Builder
	if c.Arch == "x86" {
		fmt.Fprintf(&b, "cpu:type:x86,ven%04Xfam%04Xmod%04X:feature:", x86Vendors[c.Vendor], uint32(c.Family), uint32(c.Model))
		// A plausible common feature set: FPU, VME, DE, PSE, TSC, MSR, PAE.
		feats := []int{0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06}
		if c.Hypervisor {
			feats = append(feats, 0x9f)
		}
		for _, f := range feats {
			fmt.Fprintf(&b, ",%04X", f)
		}
	} else {
		b.WriteString("cpu:type:aarch64:feature:,0000,0001,0002")
	}
	return b.String()
}
