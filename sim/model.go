// Package sim is the EFA host emulator's Go half: machine models (real
// instance layouts and edge cases, each with verdicts worked out by hand
// from the kernel's rules), and a writer that turns a model into a sysfs
// tree that both package p2p and the unmodified rdma-core userspace read.
//
// The model format is documented in sim/machines/README.md.
package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

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
	// EFADefaults are the device attributes of every EFA NIC of the
	// machine, before a NIC's own overrides.
	EFADefaults *EFA      `json:"efa_defaults,omitempty"`
	RootBuses   []RootBus `json:"root_buses"`
	Expected    []Expect  `json:"expected,omitempty"`
	// ACPIP2P, when present, is written as the proposed ACPI P2P table.
	ACPIP2P []ACPIEntry `json:"acpi_p2p,omitempty"`

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
}

// RootBus is a PCI root bus (one host bridge) and the functions on it.
type RootBus struct {
	Domain    Hex         `json:"domain"`
	Bus       Hex         `json:"bus"`
	NUMANode  int         `json:"numa_node"`
	Functions []*Function `json:"functions"`
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
	// ExtCaps orders the extended capability list by name ("AER", "ACS",
	// "SN", "LTR", "L1SS", "DPC", ...); by default AER, then ACS when the
	// function has it.
	ExtCaps []string `json:"ext_caps,omitempty"`
	// ConfigSize is the size of the config file: 4096 (PCIe, default) or
	// 256 (conventional PCI).
	ConfigSize int `json:"config_size,omitempty"`
	// EFA marks an EFA NIC.
	EFA *EFA `json:"efa,omitempty"`
	// VFs are the SR-IOV virtual functions of this physical function.
	VFs []*Function `json:"vfs,omitempty"`
	// Children are the functions on the secondary bus of a bridge.
	Children []*Function `json:"children,omitempty"`

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
// RR, CR, UF, EC, DT.
type ACS struct {
	Capability []string `json:"capability"`
	Control    []string `json:"control"`
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
	Outcome string `json:"outcome,omitempty"`
	Policy  string `json:"policy,omitempty"`
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

// ACPIEntry is one function's entry in the proposed ACPI P2P table: the
// peers it can reach, with the figures the firmware gives. An entry with
// no peers says the function reaches none.
type ACPIEntry struct {
	Function p2p.Addr   `json:"function"`
	Peers    []ACPIPeer `json:"peers"`
}

// ACPIPeer is a peer an ACPIEntry's function reaches.
type ACPIPeer struct {
	Peer         p2p.Addr `json:"peer"`
	LatencyNs    int      `json:"latency_ns"`
	BandwidthMBs int      `json:"bandwidth_mbs"`
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
		return nil, fmt.Errorf("%w: %s:%d: %w", ErrModel, name, lineOf(data, dec.InputOffset(), err), err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: %s:%d: data after the model", ErrModel, name, lineOf(data, dec.InputOffset(), nil))
	}
	if m.Format != FormatVersion {
		return nil, fmt.Errorf("%w: %s:1: format %d is not supported (this build reads format %d)", ErrModel, name, m.Format, FormatVersion)
	}
	if err := m.index(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrModel, name, err)
	}
	return &m, nil
}

// lineOf returns the line a decoding error points at.
func lineOf(data []byte, off int64, err error) int { return p2p.JSONErrorLine(data, off, err) }

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

// ACSBits returns the function's ACS Capability and Control registers.
func (f *Function) ACSBits() (capability, control uint16, present bool) {
	if f.ACS == nil {
		return 0, 0, false
	}
	return acsBits(f.ACS.Capability), acsBits(f.ACS.Control), true
}

func acsBits(names []string) uint16 {
	var v uint16
	for _, n := range names {
		for i, b := range p2p.ACSBitNames {
			if n == b {
				v |= 1 << i
			}
		}
	}
	return v
}

// index links parents, fills NUMA nodes and validates the model.
func (m *Machine) index() error {
	if m.Name == "" {
		return errors.New("the model has no name")
	}
	if err := m.CPU.validate(); err != nil {
		return err
	}
	m.fns = make(map[p2p.Addr]*Function)
	seenRoot := map[p2p.RootBus]bool{}
	for i := range m.RootBuses {
		rb := &m.RootBuses[i]
		if rb.Bus > 0xff {
			return fmt.Errorf("root bus %d: bus %#x is not 0..ff", i, uint32(rb.Bus))
		}
		key := p2p.RootBus{Domain: uint32(rb.Domain), Bus: uint8(rb.Bus)}
		if seenRoot[key] {
			return fmt.Errorf("root bus %s listed twice", key)
		}
		seenRoot[key] = true
		if err := m.indexBus(rb, nil, rb.Functions, key.Domain, key.Bus); err != nil {
			return err
		}
	}
	if len(m.fns) == 0 {
		return errors.New("the model has no PCI function")
	}
	ibdevs := map[string]bool{}
	for _, f := range m.EFANICs() {
		name := f.IBDev()
		if ibdevs[name] {
			return fmt.Errorf("%s: ibdev %q used twice", f.Addr, name)
		}
		ibdevs[name] = true
	}
	for i, e := range m.Expected {
		if len(e.Providers) == 0 || len(e.Clients) == 0 {
			return fmt.Errorf("expected[%d]: needs providers and clients", i)
		}
		if e.MapType == p2p.MapUnknown {
			return fmt.Errorf("expected[%d]: map_type is missing", i)
		}
		if e.Why == "" {
			return fmt.Errorf("expected[%d]: say why (the hand-worked reasoning)", i)
		}
		switch e.Outcome {
		case "", OutcomeP2P, OutcomeBounced, OutcomeRefused:
		default:
			return fmt.Errorf("expected[%d]: outcome %q (want p2p, bounced or refused)", i, e.Outcome)
		}
		for _, a := range append(append(append([]p2p.Addr{}, e.Providers...), e.Clients...), e.ACSRedirect...) {
			if m.fns[a] == nil {
				return fmt.Errorf("expected[%d]: %s is not a function of the model", i, a)
			}
		}
	}
	seenACPI := map[p2p.Addr]bool{}
	for i, e := range m.ACPIP2P {
		if m.fns[e.Function] == nil {
			return fmt.Errorf("acpi_p2p[%d]: %s is not a function of the model", i, e.Function)
		}
		if seenACPI[e.Function] {
			return fmt.Errorf("acpi_p2p[%d]: %s has two entries", i, e.Function)
		}
		seenACPI[e.Function] = true
		for _, p := range e.Peers {
			if m.fns[p.Peer] == nil {
				return fmt.Errorf("acpi_p2p[%d]: peer %s is not a function of the model", i, p.Peer)
			}
			if p.LatencyNs < 0 || p.BandwidthMBs < 0 {
				return fmt.Errorf("acpi_p2p[%d]: peer %s: negative figures", i, p.Peer)
			}
		}
	}
	return nil
}

func (m *Machine) indexBus(rb *RootBus, parent *Function, fns []*Function, domain uint32, bus uint8) error {
	for _, f := range fns {
		if f == nil {
			return fmt.Errorf("a null function under %v", parent)
		}
		if err := m.indexFunction(rb, parent, nil, f, domain, bus); err != nil {
			return err
		}
		for _, vf := range f.VFs {
			if vf == nil || len(vf.VFs) > 0 || len(vf.Children) > 0 {
				return fmt.Errorf("%s: a VF can have neither VFs nor children", f.Addr)
			}
			// A VF may sit on a bus number past its PF's; the kernel's
			// upstream bridge for it is the PF's.
			if err := m.indexFunction(rb, parent, f, vf, domain, vf.Addr.Bus); err != nil {
				return err
			}
		}
		if len(f.Children) == 0 {
			continue
		}
		if !f.IsBridge() {
			return fmt.Errorf("%s: a %s has no secondary bus for children", f.Addr, f.Kind)
		}
		sec := f.Children[0].Addr.Bus
		if sec <= bus {
			return fmt.Errorf("%s: secondary bus %02x must be above bus %02x", f.Addr, sec, bus)
		}
		if err := m.indexBus(rb, f, f.Children, domain, sec); err != nil {
			return err
		}
	}
	return nil
}

func (m *Machine) indexFunction(rb *RootBus, parent, physfn, f *Function, domain uint32, bus uint8) error {
	if _, ok := kindPortType[f.Kind]; !ok {
		return fmt.Errorf("%s: unknown kind %q", f.Addr, f.Kind)
	}
	if f.Addr.Domain != domain || f.Addr.Bus != bus {
		return fmt.Errorf("%s: expected on bus %04x:%02x", f.Addr, domain, bus)
	}
	if m.fns[f.Addr] != nil {
		return fmt.Errorf("%s: listed twice", f.Addr)
	}
	if f.Vendor > 0xffff || f.Device > 0xffff || f.Class > 0xffffff {
		return fmt.Errorf("%s: vendor, device or class out of range", f.Addr)
	}
	switch f.ConfigSize {
	case 0:
		f.ConfigSize = 4096
	case 256, 4096:
	default:
		return fmt.Errorf("%s: config_size %d (want 256 or 4096)", f.Addr, f.ConfigSize)
	}
	if f.ACS != nil {
		for _, n := range append(append([]string{}, f.ACS.Capability...), f.ACS.Control...) {
			if acsBits([]string{n}) == 0 {
				return fmt.Errorf("%s: unknown ACS bit %q (want SV, TB, RR, CR, UF, EC, DT)", f.Addr, n)
			}
		}
		if f.ConfigSize == 256 {
			return fmt.Errorf("%s: ACS needs extended config space (config_size 4096)", f.Addr)
		}
	}
	for _, c := range f.ExtCaps {
		if _, ok := extCapIDs[c]; !ok {
			return fmt.Errorf("%s: unknown extended capability %q", f.Addr, c)
		}
		if c == "ACS" && f.ACS == nil {
			return fmt.Errorf("%s: ext_caps lists ACS but the function has no acs", f.Addr)
		}
	}
	if f.EFA != nil {
		if f.Kind != KindEndpoint || f.Vendor != 0x1d0f {
			return fmt.Errorf("%s: an EFA NIC is an Amazon (1d0f) endpoint", f.Addr)
		}
	}
	f.parent, f.physfn, f.root = parent, physfn, rb
	f.numaNode = rb.NUMANode
	if f.NUMANode != nil {
		f.numaNode = *f.NUMANode
	} else if physfn != nil {
		f.numaNode = physfn.numaNode
	}
	m.fns[f.Addr] = f
	return nil
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
