// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/efap2p/efap2p/internal/pciclass"
)

// ErrNoFunction is wrapped by errors for an address the topology lacks.
var ErrNoFunction = errors.New("no such PCI function")

// Attrs are the sysfs attributes of a function the oracle uses beyond the
// kernel's rule (classes, drivers, NUMA and link figures).
type Attrs struct {
	Vendor, Device       uint16
	SubVendor, SubDevice uint16
	Class                uint32 // base class << 16 | subclass << 8 | prog-if
	Driver               string // bound driver, "" when none
	NUMANode             int    // -1 when unknown
	LinkSpeedGTs         float64
	LinkWidth            int
	PhysFn               *Addr // set for an SR-IOV virtual function
}

// IsAccelerator reports whether the function is a GPU or an accelerator
// whose memory a NIC would DMA into: PCI class 0x03 (display) or 0x12
// (processing accelerator), but not a display controller that is only a
// framebuffer (a hypervisor's or a BMC's VGA), or an AWS Neuron device
// (Inferentia, Trainium) whatever its class.
func (a Attrs) IsAccelerator() bool {
	return pciclass.IsAccelerator(a.Class, a.Vendor, a.Device)
}

// isAccelerator reports an accelerator by class, reading the function's
// IDs only where the class does not decide (a display controller, a class
// a Neuron device might have).
func (f *Function) isAccelerator() bool {
	c, err := f.Class()
	if err != nil {
		return false
	}
	if accel, decided := pciclass.ByClass(c); decided {
		return accel
	}
	v, d, err := f.ids()
	return err == nil && pciclass.IsAccelerator(c, v, d)
}

// ids returns the function's vendor and device IDs, read once: alone where
// the source can (two attributes, not all of Attrs), else from Attrs.
func (f *Function) ids() (vendor, device uint16, err error) {
	f.idsOnce.Do(func() {
		if r, ok := extrasOf(f.src).(idReader); ok {
			f.vendor, f.device, f.idsErr = r.FunctionIDs(f.Addr)
			return
		}
		at, err := f.Attrs()
		f.vendor, f.device, f.idsErr = at.Vendor, at.Device, err
	})
	return f.vendor, f.device, f.idsErr
}

// IsBridge reports a PCI-to-PCI bridge (class 0x0604).
func (a Attrs) IsBridge() bool { return a.Class>>8 == 0x0604 }

// HostBridge is what the kernel's whitelist check sees of a root bus: its
// first function in enumeration order.
type HostBridge struct {
	Root RootBus
	// First is the lowest-devfn function on the root bus; HasFirst is false
	// when the bus is empty.
	First    Addr
	HasFirst bool
	Vendor   uint16
	Device   uint16
	// PortType is the PCIe Device/Port Type of First (-1: not PCIe), read
	// only when First is not devfn 00.0. PortTypeKnown is false when its
	// config space could not be read.
	PortType      int
	PortTypeKnown bool
}

// CPU is the boot CPU as the kernel's cpu_supports_p2pdma sees it.
type CPU struct {
	// Known is false when the CPU could not be identified.
	Known bool
	Arch  string // "x86", "arm64", ...
	// Vendor is the kernel's x86 vendor number (0 Intel, 2 AMD, 9 Hygon,
	// 10 Zhaoxin); meaningful when Arch is "x86".
	Vendor int
	Family int
	Model  int
	// Hypervisor: the x86 hypervisor feature is set (a virtual machine).
	Hypervisor bool
}

// x86 vendor numbers (arch/x86/include/asm/processor.h).
const (
	X86VendorIntel   = 0
	X86VendorAMD     = 2
	X86VendorHygon   = 9
	X86VendorZhaoxin = 10
)

// vendorName returns "Intel", "AMD", ... for an x86 CPU.
func (c CPU) vendorName() string {
	if c.Arch != "x86" {
		return c.Arch
	}
	switch c.Vendor {
	case X86VendorIntel:
		return "Intel"
	case X86VendorAMD:
		return "AMD"
	case X86VendorHygon:
		return "Hygon"
	case X86VendorZhaoxin:
		return "Zhaoxin"
	}
	return fmt.Sprintf("x86 vendor %d", c.Vendor)
}

// supportsP2P is the kernel's cpu_supports_p2pdma: an AMD CPU of family
// 0x17 (Zen) or later.
func (c CPU) supportsP2P() bool {
	return c.Known && c.Arch == "x86" && c.Vendor == X86VendorAMD && c.Family >= 0x17
}

// A Source fills a Topology: sysfs (OpenSysfs), or a machine model held in
// memory (package models: Machine.Source). Every method may be called
// concurrently, each at most once per argument.
//
// Beyond these methods a Source may offer facts some rules need; the
// oracle looks for each of the following methods and does without the
// fact when the source lacks it (Sysfs offers them all):
//
//	ACPITable(sig string) ([]byte, error)                               // binary ACPI tables (HMAT, SRAT); nil when absent
//	HostBridgeFirmware(r RootBus) (hid, uid string, ok bool, err error) // a host bridge's ACPI companion
//	PeerMemProvider(nic Addr) (provider string, present bool, err error) // the EFA driver's p2p attribute
//	DriverFunctions(driver string) ([]Addr, error)                      // the functions bound to a driver
//	DriverVersion(module string) string                                 // "580.65.06"; "" when unknown
//	NVIDIATopoCheckOverride() int                                       // NVreg_GrdmaPciTopoCheckOverride
//	FunctionIDs(a Addr) (vendor, device uint16, err error)              // cheaper than Attrs
type Source interface {
	// Chain returns the function's root bus and its upstream chain from the
	// function on the root bus down to a itself (a is last).
	Chain(a Addr) (RootBus, []Addr, error)
	// Class returns the function's PCI class alone (one attribute read),
	// for scans over every function.
	Class(a Addr) (uint32, error)
	// Link returns the function's current link speed (GT/s) and width;
	// zeros when unknown.
	Link(a Addr) (gts float64, width int, err error)
	// Driver returns the name of the driver bound to the function, "" when
	// none.
	Driver(a Addr) (string, error)
	// NUMANode returns the function's NUMA node, -1 when unknown.
	NUMANode(a Addr) (int, error)
	// Attrs returns all the function's attributes.
	Attrs(a Addr) (Attrs, error)
	// ACS returns the function's ACS state.
	ACS(a Addr) (ACS, error)
	// HostBridge returns what the whitelist check sees of a root bus.
	HostBridge(r RootBus) (HostBridge, error)
	// CPU returns the boot CPU.
	CPU() (CPU, error)
	// Functions lists every function, in enumeration order.
	Functions() ([]Addr, error)
}

// Function is one PCI function of a Topology. Its attributes and ACS state
// are read from the source the first time they are needed.
type Function struct {
	Addr Addr
	// Upstream is the kernel's pci_upstream_bridge: the bridge above the
	// function (for a virtual function, the one above its physical
	// function); nil on a root bus.
	Upstream *Function
	// Root is the root bus the function hangs from.
	Root RootBus
	// Depth counts the bridges above the function: 0 on a root bus.
	Depth int

	src Source

	attrsOnce sync.Once
	attrs     Attrs
	attrsErr  error

	acsOnce sync.Once
	acs     ACS
	acsErr  error

	classOnce sync.Once
	class     uint32
	classErr  error

	idsOnce        sync.Once
	vendor, device uint16
	idsErr         error

	linkOnce  sync.Once
	linkGTs   float64
	linkWidth int

	numaOnce sync.Once
	numa     int

	driverOnce sync.Once
	driver     string
}

// Driver returns the driver bound to the function, read once ("" when none).
func (f *Function) Driver() string {
	f.driverOnce.Do(func() { f.driver, _ = f.src.Driver(f.Addr) })
	return f.driver
}

// Link returns the function's current link (speed in GT/s, width), read
// once; zeros when unknown.
func (f *Function) Link() (float64, int) {
	f.linkOnce.Do(func() {
		g, w, err := f.src.Link(f.Addr)
		if err == nil {
			f.linkGTs, f.linkWidth = g, w
		}
	})
	return f.linkGTs, f.linkWidth
}

// NUMANode returns the function's NUMA node, read once; -1 when unknown.
func (f *Function) NUMANode() int {
	f.numaOnce.Do(func() {
		n, err := f.src.NUMANode(f.Addr)
		if err != nil {
			n = -1
		}
		f.numa = n
	})
	return f.numa
}

// Class returns the function's PCI class, reading only that attribute once.
func (f *Function) Class() (uint32, error) {
	f.classOnce.Do(func() { f.class, f.classErr = f.src.Class(f.Addr) })
	return f.class, f.classErr
}

// Attrs returns the function's attributes, reading them once.
func (f *Function) Attrs() (Attrs, error) {
	f.attrsOnce.Do(func() {
		f.attrs, f.attrsErr = f.src.Attrs(f.Addr)
		if f.attrsErr != nil {
			f.attrs.NUMANode = -1
		}
	})
	return f.attrs, f.attrsErr
}

// ACS returns the function's ACS state, reading it once. An error reading
// it is reported as unknown ACS, which the rule treats like the kernel
// treats an unreadable register: not proof of direct routing.
func (f *Function) ACS() ACS {
	f.acsOnce.Do(func() {
		f.acs, f.acsErr = f.src.ACS(f.Addr)
		if f.acsErr != nil {
			f.acs = ACS{}
		}
	})
	return f.acs
}

// Topology is the PCI hierarchy of one machine as far as it has been asked
// about. It is safe for concurrent use.
type Topology struct {
	src Source
	ext any // where the optional Source methods are looked for (extrasOf)

	mu         sync.Mutex
	acpiOnce   acpiState
	pxms       map[RootBus]pxmEntry
	peerMem    map[Addr]peerMemEntry
	fns        map[Addr]*Function
	bad        map[Addr]error
	hbs        map[RootBus]*hostBridgeEntry
	cpu        *CPU
	cpuErr     error
	all        []Addr
	classes    map[Addr]classEntry // classes read before their Function was made
	accels     []*Function
	extraAccel map[Addr]bool
	versions   map[string]string // module versions, by module
	// What every pair of a domain, a root-bus pair or an exporter shares,
	// worked out once: the chipset NVIDIA flags in a domain, the
	// host-bridge decision for two root buses under one set of rules,
	// the functions an exporter may own.
	flagged   map[uint32]flaggedEntry
	hostDec   map[hostKey]hostDecision
	exporters map[string]exporterEntry

	overrideOnce sync.Once
	override     int
}

type classEntry struct {
	class uint32
	err   error
	// the IDs, when the scan read them (its class did not decide)
	ids            bool
	vendor, device uint16
	idsErr         error
}

type hostBridgeEntry struct {
	hb  HostBridge
	err error
}

// maxBadFunctions bounds how many absent addresses a Topology remembers.
const maxBadFunctions = 1024

// NewTopology returns a topology filled lazily from src.
func NewTopology(src Source) *Topology {
	return &Topology{
		src: src,
		ext: extrasOf(src),
		fns: make(map[Addr]*Function),
		bad: make(map[Addr]error),
		hbs: make(map[RootBus]*hostBridgeEntry),
	}
}

// Function returns the function at a, reading its chain on first use.
func (t *Topology) Function(a Addr) (*Function, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.functionLocked(a)
}

func (t *Topology) functionLocked(a Addr) (*Function, error) {
	if f, ok := t.fns[a]; ok {
		return f, nil
	}
	if err, ok := t.bad[a]; ok {
		return nil, err
	}
	root, chain, err := t.src.Chain(a)
	if err == nil && (len(chain) == 0 || chain[len(chain)-1] != a) {
		err = fmt.Errorf("%w: %s: malformed upstream chain", ErrNoFunction, a)
	}
	if err != nil {
		// Remember a bounded number of absent functions: a caller asking
		// about ever new addresses must not grow the process.
		if len(t.bad) < maxBadFunctions {
			t.bad[a] = err
		}
		return nil, err
	}
	var up *Function
	for i, c := range chain {
		f, ok := t.fns[c]
		if !ok {
			f = &Function{Addr: c, Upstream: up, Root: root, Depth: i, src: t.src}
			if e, ok := t.classes[c]; ok {
				f.classOnce.Do(func() { f.class, f.classErr = e.class, e.err })
				if e.ids {
					f.idsOnce.Do(func() { f.vendor, f.device, f.idsErr = e.vendor, e.device, e.idsErr })
				}
			}
			t.fns[c] = f
		}
		up = f
	}
	return up, nil
}

// remember returns what the cache m (a field of t, guarded by t.mu) holds
// for k, else fill's answer, kept there (the first kept wins) while the
// cache holds fewer than limit entries (0: no limit). fill runs without
// the lock: it may read the source.
func remember[K comparable, V any](t *Topology, m *map[K]V, k K, limit int, fill func() V) V {
	t.mu.Lock()
	v, ok := (*m)[k]
	t.mu.Unlock()
	if ok {
		return v
	}
	v = fill()
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := (*m)[k]; ok {
		return old
	}
	if *m == nil {
		*m = map[K]V{}
	}
	if limit == 0 || len(*m) < limit {
		(*m)[k] = v
	}
	return v
}

// scanIDs reads a function's IDs for the accelerator scan, keeping them
// for the Function made later (or giving its own, when it exists).
func (t *Topology) scanIDs(a Addr) (uint16, uint16, error) {
	t.mu.Lock()
	f := t.fns[a]
	t.mu.Unlock()
	if f != nil {
		return f.ids()
	}
	v, d, err := t.functionIDs(a)
	t.mu.Lock()
	if e, ok := t.classes[a]; ok {
		e.ids, e.vendor, e.device, e.idsErr = true, v, d, err
		t.classes[a] = e
	}
	t.mu.Unlock()
	return v, d, err
}

// classOf returns a function's PCI class: its Function's when there is one,
// else read by address alone (through the bus/pci/devices link, without the
// readlink that places a function in the tree), and kept for the Function
// made later. A scan over every function needs nothing more of most.
func (t *Topology) classOf(a Addr) (uint32, error) {
	t.mu.Lock()
	f := t.fns[a]
	e, ok := t.classes[a]
	t.mu.Unlock()
	if f != nil {
		return f.Class()
	}
	if ok {
		return e.class, e.err
	}
	c, err := t.src.Class(a)
	t.mu.Lock()
	if t.classes == nil {
		t.classes = map[Addr]classEntry{}
	}
	t.classes[a] = classEntry{class: c, err: err}
	t.mu.Unlock()
	return c, err
}

// CPU returns the boot CPU, reading it once.
func (t *Topology) CPU() (CPU, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cpu == nil {
		c, err := t.src.CPU()
		t.cpu, t.cpuErr = &c, err
	}
	return *t.cpu, t.cpuErr
}

// HostBridge returns the root bus's whitelist view, reading it once.
func (t *Topology) HostBridge(r RootBus) (HostBridge, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.hbs[r]
	if !ok {
		hb, err := t.src.HostBridge(r)
		hb.Root = r
		e = &hostBridgeEntry{hb, err}
		t.hbs[r] = e
	}
	return e.hb, e.err
}

// Functions lists every function of the machine in enumeration order.
func (t *Topology) Functions() ([]Addr, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.all == nil {
		all, err := t.src.Functions()
		if err != nil {
			return nil, err
		}
		sort.Slice(all, func(i, j int) bool { return all[i].Less(all[j]) })
		t.all = all
	}
	return t.all, nil
}

// Accelerators lists the GPUs and accelerators: PCI class 03 (display) or
// 12 (processing accelerator), and AWS Neuron devices. It reads the class
// of every function once (and the IDs of functions of other classes than
// storage, network and bridges).
func (t *Topology) Accelerators() ([]*Function, error) {
	t.mu.Lock()
	done := t.accels != nil
	t.mu.Unlock()
	if done {
		return t.accels, nil
	}
	all, err := t.Functions()
	if err != nil {
		return nil, err
	}
	out := []*Function{}
	for _, a := range all {
		c, err := t.classOf(a)
		if err != nil {
			continue
		}
		if !t.extraAccel[a] {
			accel, decided := pciclass.ByClass(c)
			if !decided {
				v, d, err := t.scanIDs(a)
				accel = err == nil && pciclass.IsAccelerator(c, v, d)
			}
			if !accel {
				continue
			}
		}
		f, err := t.Function(a)
		if err != nil {
			continue
		}
		out = append(out, f)
	}
	t.mu.Lock()
	t.accels = out
	t.mu.Unlock()
	return out, nil
}

// addAccelerators marks functions as accelerators whatever their class
// (the topology file can list them).
func (t *Topology) addAccelerators(as []Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.extraAccel == nil {
		t.extraAccel = map[Addr]bool{}
	}
	for _, a := range as {
		t.extraAccel[a] = true
	}
	t.accels = nil
}

// commonAncestor returns the lowest function on both upstream chains (each
// chain includes its function), or nil: the first a, climbing from the
// provider, that the client's climb meets, as calc_map_type_and_dist finds it.
func commonAncestor(p, c *Function) *Function {
	if p.Root != c.Root {
		return nil
	}
	for p.Depth > c.Depth {
		p = p.Upstream
	}
	for c.Depth > p.Depth {
		c = c.Upstream
	}
	for p != c {
		if p == nil || c == nil {
			return nil
		}
		p, c = p.Upstream, c.Upstream
	}
	return p
}
