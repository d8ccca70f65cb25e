// SPDX-License-Identifier: MIT

package models

import (
	"fmt"

	"github.com/efap2p/efap2p/p2p"
)

// The shape of a synthetic machine. Every root bus owns 64 bus numbers
// (root buses 00, 40, 80 and c0 of each PCI domain) and holds a host bridge
// at 00.0 and up to six switch units. A unit is a root port (with AMD's
// dummy host bridge beside it), a switch upstream port and eight downstream
// ports, one device under each: 23 functions on 10 bus numbers.
const (
	synRootBusesPerDomain = 4
	synRootBusSpan        = 0x40
	synUnitsPerRootBus    = 6
	synDSPs               = 8
	synUnitBuses          = 2 + synDSPs
	synUnitFunctions      = 2 + 1 + synDSPs + 12 // see synDevices
)

// synDevice is what hangs under one downstream port of a unit.
type synDevice struct {
	vendor, device, class Hex
	driver, name          string
	functions             int
	efa                   bool
	width                 int
}

// synDevices are the devices under downstream ports 0..7 of every unit:
// 12 functions in all.
var synDevices = [synDSPs]synDevice{
	{0x10de, 0x2330, 0x030200, "vfio-pci", "H100 SXM5 (vfio-pci)", 1, false, 16},
	{0x1d0f, 0xefa1, 0x020000, "efa", "EFA", 1, true, 8},
	{0x1d0f, 0xefa1, 0x020000, "efa", "EFA", 1, true, 8},
	{0x15b3, 0x1021, 0x020000, "mlx5_core", "ConnectX-7, 2 ports", 2, false, 16},
	{0x10de, 0x2330, 0x030200, "nvidia", "H100 SXM5", 1, false, 16},
	{0x1d0f, 0xefa1, 0x020000, "efa", "EFA", 1, true, 8},
	{0x8086, 0x1592, 0x020000, "ice", "E810-C, 4 functions", 4, false, 16},
	{0x144d, 0xa80a, 0x010802, "nvme", "NVMe SSD PM9A3", 1, false, 4},
}

// synACSUnit reports whether the downstream ports of unit u of a root bus
// have ACS redirect (RR|CR) enabled: every third unit, from the second.
func synACSUnit(u int) bool { return u%3 == 1 }

// synAddr builds an address in a synthetic machine.
func synAddr(domain uint32, bus, dev, fn int) p2p.Addr {
	return p2p.Addr{Domain: domain, Bus: uint8(bus), Device: uint8(dev), Function: uint8(fn)}
}

// synUnitBus is the upstream port's bus of unit u on the root bus at base;
// the downstream ports sit on the next bus and device j on base+3+10u+j.
func synUnitBus(base, u int) int { return base + 1 + synUnitBuses*u }

// Synthetic returns a deterministic, valid machine of exactly n PCI
// functions (at least 1): an AMD EPYC (Zen 3) host with as many PCI domains
// as it takes, four root buses per domain (00 and 40 on NUMA node 0, 80 and
// c0 on node 1), each with a host bridge at 00.0 and up to six switch units
// (root port, switch, eight downstream ports with an H100 under vfio-pci, an
// H100 under nvidia, three EFA NICs, a 2-function and a 4-function NIC and
// an NVMe drive). The downstream ports of every third unit (units 1 and 4
// of each root bus) have ACS SV|RR|CR|UF enabled; the others have ACS
// present but off. Functions left over when no further unit fits are RCiEPs
// on the last root bus, at devices 18-1f.
//
// Its expected verdicts follow from the construction (each is listed when
// the functions exist), with G = the vfio-pci H100 (downstream port 0) and
// E = the first EFA (downstream port 1) of a unit:
//   - G -> E in unit 0 of domain 0000, root bus 00: BUS_ADDR, distance 4,
//     PIX (common ancestor: the switch's upstream port, no redirect);
//   - the same in unit 1 (ACS on): THRU_HOST_BRIDGE, 4, PIX, acs_redirect
//     the two downstream ports, allowed by the AMD CPU rule;
//   - the 2-function NIC, function 0 -> 1, in unit 0: BUS_ADDR, 2, PIX; in
//     unit 1: THRU_HOST_BRIDGE, 2, PIX, acs_redirect its downstream port;
//   - G of unit 0 -> E of unit 2 (another root port, same root bus):
//     THRU_HOST_BRIDGE, 4+4=8, PHB;
//   - G of root bus 00 -> E of root bus 40 (same NUMA node): 8, NODE;
//   - G of root bus 00 -> E of root bus 80 (NUMA node 1): 8, SYS;
//   - G of domain 0000 -> E of domain 0001, both root bus 00: 8, NODE.
//
// GPU -> EFA entries name the kernel policy (vfio-pci).
func Synthetic(n int) *Machine {
	if n < 1 {
		n = 1
	}
	m := &Machine{
		Format:      FormatVersion,
		Name:        fmt.Sprintf("synthetic-%d", n),
		Description: fmt.Sprintf("A synthetic machine of %d PCI functions (models.Synthetic): PCI domains of four root buses, switch units with GPUs, EFA NICs and multi-function devices, ACS redirect on every third unit.", n),
		Provenance:  "Generated; device IDs are real (H100 10de:2330, EFA 1d0f:efa1, ConnectX-7 15b3:1021, E810-C 8086:1592, PM9A3 144d:a80a, Broadcom PEX890xx 1000:c030, AMD root complex 1022:1480/1482/1483), the layout is not a real machine's.",
		CPU:         CPU{Arch: "x86", Vendor: "AMD", Family: 0x19, Model: 0x01, ModelName: "AMD EPYC 7763", Sockets: 2},
	}
	left := n
	for d := uint32(0); left > 0; d++ {
		for r := 0; r < synRootBusesPerDomain && left > 0; r++ {
			base := r * synRootBusSpan
			rb := RootBus{Domain: Hex(d), Bus: Hex(base), NUMANode: (r / 2) % 2}
			rb.Functions = append(rb.Functions, &Function{Addr: synAddr(d, base, 0, 0), Kind: KindHostBridge, Vendor: 0x1022, Device: 0x1480, Class: 0x060000, Name: "root complex"})
			left--
			u := 0
			for ; u < synUnitsPerRootBus && left >= synUnitFunctions; u++ {
				rb.Functions = append(rb.Functions, synUnit(d, base, u)...)
				left -= synUnitFunctions
			}
			// Fill up with RCiEPs when no further unit fits anywhere: here
			// if this root bus still has room for one, else on the next.
			if left > 0 && left < synUnitFunctions {
				for i := 0; left > 0; i++ {
					rb.Functions = append(rb.Functions, &Function{Addr: synAddr(d, base, 0x18+i/8, i%8), Kind: KindIntegrated, Vendor: 0x1022, Device: 0x14dc, Class: 0x088000, Name: "filler RCiEP"})
					left--
				}
			}
			m.RootBuses = append(m.RootBuses, rb)
		}
	}
	m.Expected = synExpected(m)
	if err := m.index(); err != nil {
		panic("sim: Synthetic built an invalid machine: " + err.Error())
	}
	return m
}

// synUnit returns the root port (and its dummy host bridge) of unit u on
// the root bus at base, with the switch below it.
func synUnit(d uint32, base, u int) []*Function {
	ub := synUnitBus(base, u)
	dspACS := &ACS{Capability: []string{"SV", "TB", "RR", "CR", "UF"}}
	if synACSUnit(u) {
		dspACS.Control = []string{"SV", "RR", "CR", "UF"}
	}
	usp := &Function{Addr: synAddr(d, ub, 0, 0), Kind: KindSwitchUpstream, Vendor: 0x1000, Device: 0xc030, Class: 0x060400, Driver: "pcieport", Name: "PCIe switch", Link: Link{"32.0 GT/s PCIe", 16}}
	for j := 0; j < synDSPs; j++ {
		dev := synDevices[j]
		dsp := &Function{Addr: synAddr(d, ub+1, j, 0), Kind: KindSwitchDownstream, Vendor: 0x1000, Device: 0xc030, Class: 0x060400, Driver: "pcieport", Link: Link{"32.0 GT/s PCIe", dev.width}, ACS: dspACS}
		for f := 0; f < dev.functions; f++ {
			a := synAddr(d, ub+2+j, 0, f)
			ep := &Function{Addr: a, Kind: KindEndpoint, Vendor: dev.vendor, Device: dev.device, Class: dev.class, Driver: dev.driver, Name: dev.name, Link: Link{"32.0 GT/s PCIe", dev.width}}
			if dev.efa {
				ep.EFA = &EFA{}
				if d != 0 {
					// systemd's path naming with the domain keeps names unique.
					ep.EFA.IBDev = fmt.Sprintf("rdmaP%dp%ds%d", d, a.Bus, a.Device)
				}
			}
			dsp.Children = append(dsp.Children, ep)
		}
		usp.Children = append(usp.Children, dsp)
	}
	rp := &Function{Addr: synAddr(d, base, 1+u, 1), Kind: KindRootPort, Vendor: 0x1022, Device: 0x1483, Class: 0x060400, Driver: "pcieport", Name: "GPP bridge", Link: Link{"32.0 GT/s PCIe", 16},
		ACS: &ACS{Capability: []string{"SV", "TB", "RR", "CR", "UF"}}, Children: []*Function{usp}}
	dummy := &Function{Addr: synAddr(d, base, 1+u, 0), Kind: KindHostBridge, Vendor: 0x1022, Device: 0x1482, Class: 0x060000, Name: "dummy host bridge"}
	return []*Function{dummy, rp}
}

// synExpected lists the verdicts that follow from the construction, for
// the units that exist.
func synExpected(m *Machine) []Expect {
	have := map[p2p.Addr]bool{}
	for _, rb := range m.RootBuses {
		var walk func([]*Function)
		walk = func(fs []*Function) {
			for _, f := range fs {
				have[f.Addr] = true
				walk(f.Children)
			}
		}
		walk(rb.Functions)
	}
	gpu := func(d uint32, base, u int) p2p.Addr { return synAddr(d, synUnitBus(base, u)+2, 0, 0) }
	efa := func(d uint32, base, u int) p2p.Addr { return synAddr(d, synUnitBus(base, u)+3, 0, 0) }
	dsp := func(d uint32, base, u, j int) p2p.Addr { return synAddr(d, synUnitBus(base, u)+1, j, 0) }
	nic := func(d uint32, base, u, f int) p2p.Addr { return synAddr(d, synUnitBus(base, u)+5, 0, f) }
	var out []Expect
	add := func(e Expect) {
		for _, a := range append(append(append([]p2p.Addr{}, e.Providers...), e.Clients...), e.ACSRedirect...) {
			if !have[a] {
				return
			}
		}
		if e.Policy == p2p.PolicyKernel {
			e.Outcome = OutcomeP2P
		}
		out = append(out, e)
	}
	one := func(a p2p.Addr) []p2p.Addr { return []p2p.Addr{a} }
	add(Expect{Providers: one(gpu(0, 0, 0)), Clients: one(efa(0, 0, 0)), MapType: p2p.MapBusAddr, Distance: 4, Path: p2p.PathPIX, Policy: p2p.PolicyKernel,
		Why: "By construction: GPU and EFA under downstream ports 0 and 1 of unit 0's switch, which has ACS off: they meet at the upstream port after 2 hops each, no redirect: BUS_ADDR 4, PIX."})
	add(Expect{Providers: one(gpu(0, 0, 1)), Clients: one(efa(0, 0, 1)), MapType: p2p.MapThruHostBridge, Distance: 4, Path: p2p.PathPIX,
		ACSRedirect: []p2p.Addr{dsp(0, 0, 1, 0), dsp(0, 0, 1, 1)}, Policy: p2p.PolicyKernel,
		Why: "By construction: unit 1's downstream ports have RR|CR: the provider's port, then the client's, are listed; 2+2=4; THRU_HOST_BRIDGE allowed by the AMD CPU rule; PIX."})
	add(Expect{Providers: one(nic(0, 0, 0, 0)), Clients: one(nic(0, 0, 0, 1)), MapType: p2p.MapBusAddr, Distance: 2, Path: p2p.PathPIX,
		Why: "By construction: two functions of one device under a downstream port without redirect: they meet at the port after 1 hop each: BUS_ADDR 2."})
	add(Expect{Providers: one(nic(0, 0, 1, 0)), Clients: one(nic(0, 0, 1, 1)), MapType: p2p.MapThruHostBridge, Distance: 2, Path: p2p.PathPIX,
		ACSRedirect: []p2p.Addr{dsp(0, 0, 1, 3)},
		Why:         "By construction: two functions of one device under a unit-1 downstream port, which is the common ancestor and has RR|CR: listed; THRU_HOST_BRIDGE 2 by the AMD CPU rule."})
	add(Expect{Providers: one(gpu(0, 0, 0)), Clients: one(efa(0, 0, 2)), MapType: p2p.MapThruHostBridge, Distance: 8, Path: p2p.PathPHB, Policy: p2p.PolicyKernel,
		Why: "By construction: units 0 and 2 hang from different root ports of one root bus: no common ancestor, chains of 4 (root port, upstream, downstream port, device) each: 8; AMD CPU rule; PHB."})
	add(Expect{Providers: one(gpu(0, 0, 0)), Clients: one(efa(0, synRootBusSpan, 0)), MapType: p2p.MapThruHostBridge, Distance: 8, Path: p2p.PathNODE, Policy: p2p.PolicyKernel,
		Why: "By construction: root buses 00 and 40 of domain 0000, both on NUMA node 0: 4+4=8, AMD CPU rule, NODE."})
	add(Expect{Providers: one(gpu(0, 0, 0)), Clients: one(efa(0, 2*synRootBusSpan, 0)), MapType: p2p.MapThruHostBridge, Distance: 8, Path: p2p.PathSYS, Policy: p2p.PolicyKernel,
		Why: "By construction: root bus 00 (NUMA 0) and root bus 80 (NUMA 1): 4+4=8, AMD CPU rule, SYS."})
	add(Expect{Providers: one(gpu(0, 0, 0)), Clients: one(efa(1, 0, 0)), MapType: p2p.MapThruHostBridge, Distance: 8, Path: p2p.PathNODE, Policy: p2p.PolicyKernel,
		Why: "By construction: root bus 00 of domains 0000 and 0001 (different root buses, NUMA 0 both): 4+4=8, AMD CPU rule, NODE."})
	return out
}
