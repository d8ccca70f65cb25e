// SPDX-License-Identifier: MIT

package models

import (
	"fmt"

	"github.com/efap2p/efap2p/internal/pcicfg"
	"github.com/efap2p/efap2p/internal/pcilink"
	"github.com/efap2p/efap2p/p2p"
)

// Source returns the model as a p2p.Source, so that the oracle can answer
// on the model without a sysfs tree (the synthetic machines use this). It
// offers the optional methods p2p looks for (see p2p.Source): the ACPI
// tables, the EFA driver's p2p attribute, config space and the functions
// of each driver.
func (m *Machine) Source() p2p.Source { return modelSource{m} }

type modelSource struct{ m *Machine }

func (s modelSource) fn(a p2p.Addr) (*Function, error) {
	f := s.m.fns[a]
	if f == nil {
		return nil, fmt.Errorf("%w: %s is not in machine %s", p2p.ErrNoFunction, a, s.m.Name)
	}
	return f, nil
}

func (s modelSource) Chain(a p2p.Addr) (p2p.RootBus, []p2p.Addr, error) {
	f, err := s.fn(a)
	if err != nil {
		return p2p.RootBus{}, nil, err
	}
	var chain []p2p.Addr
	for g := f; g != nil; g = g.parent {
		chain = append(chain, g.Addr)
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return p2p.RootBus{Domain: uint32(f.root.Domain), Bus: uint8(f.root.Bus)}, chain, nil
}

func (s modelSource) Class(a p2p.Addr) (uint32, error) {
	f, err := s.fn(a)
	if err != nil {
		return 0, err
	}
	return uint32(f.Class), nil
}

func (s modelSource) Link(a p2p.Addr) (float64, int, error) {
	f, err := s.fn(a)
	if err != nil {
		return 0, 0, err
	}
	return pcilink.ParseSpeed(f.Link.Speed), f.Link.Width, nil
}

func (s modelSource) Driver(a p2p.Addr) (string, error) {
	f, err := s.fn(a)
	if err != nil {
		return "", err
	}
	return f.Driver, nil
}

func (s modelSource) NUMANode(a p2p.Addr) (int, error) {
	f, err := s.fn(a)
	if err != nil {
		return -1, err
	}
	return f.NUMA(), nil
}

func (s modelSource) Attrs(a p2p.Addr) (p2p.Attrs, error) {
	f, err := s.fn(a)
	if err != nil {
		return p2p.Attrs{NUMANode: -1}, err
	}
	at := p2p.Attrs{
		Vendor: uint16(f.Vendor), Device: uint16(f.Device),
		SubVendor: uint16(f.Vendor), SubDevice: uint16(f.Device),
		Class: uint32(f.Class), Driver: f.Driver, NUMANode: f.NUMA(),
		LinkSpeedGTs: pcilink.ParseSpeed(f.Link.Speed), LinkWidth: f.Link.Width,
	}
	if f.SubVendor != nil {
		at.SubVendor = uint16(*f.SubVendor)
	}
	if f.SubDevice != nil {
		at.SubDevice = uint16(*f.SubDevice)
	}
	if f.physfn != nil {
		pf := f.physfn.Addr
		at.PhysFn = &pf
	}
	return at, nil
}

func (s modelSource) ACS(a p2p.Addr) (p2p.ACS, error) {
	f, err := s.fn(a)
	if err != nil {
		return p2p.ACS{}, err
	}
	c, ctrl, ok := f.ACSBits()
	return p2p.ACS{Known: true, Present: ok, Capability: c, Control: ctrl}, nil
}

func (s modelSource) HostBridge(r p2p.RootBus) (p2p.HostBridge, error) {
	hb := p2p.HostBridge{Root: r, PortType: -1, PortTypeKnown: true}
	for i := range s.m.RootBuses {
		rb := &s.m.RootBuses[i]
		if uint32(rb.Domain) != r.Domain || uint8(rb.Bus) != r.Bus {
			continue
		}
		for _, f := range rb.Functions {
			if !hb.HasFirst || f.Addr.DevFn() < hb.First.DevFn() {
				hb.First, hb.HasFirst = f.Addr, true
				hb.Vendor, hb.Device = uint16(f.Vendor), uint16(f.Device)
				hb.PortType = f.PortType()
			}
		}
		return hb, nil
	}
	return hb, fmt.Errorf("root bus %s is not in machine %s", r, s.m.Name)
}

func (s modelSource) CPU() (p2p.CPU, error) {
	c := s.m.CPU
	out := p2p.CPU{Known: true, Arch: c.Arch, Family: int(c.Family), Model: int(c.Model), Hypervisor: c.Hypervisor}
	if c.Arch == "x86" {
		out.Vendor = x86Vendors[c.Vendor]
	} else {
		out.Arch = "aarch64"
	}
	return out, nil
}

func (s modelSource) Functions() ([]p2p.Addr, error) {
	out := make([]p2p.Addr, 0, len(s.m.fns))
	for a := range s.m.fns {
		out = append(out, a)
	}
	return out, nil
}

// ACPITable gives the oracle the model's binary ACPI tables (HMAT, SRAT).
func (s modelSource) ACPITable(sig string) ([]byte, error) { return s.m.ACPITable(sig), nil }

// HostBridgeFirmware gives the oracle the ACPI companions of the host
// bridges, from the root buses' firmware_node.
func (s modelSource) HostBridgeFirmware(r p2p.RootBus) (string, string, bool, error) {
	for i := range s.m.RootBuses {
		rb := &s.m.RootBuses[i]
		if rb.Addr() == r {
			if rb.FirmwareNode == nil {
				return "", "", false, nil
			}
			return rb.FirmwareNode.HID, rb.FirmwareNode.UID, true, nil
		}
	}
	return "", "", false, fmt.Errorf("root bus %s is not in machine %s", r, s.m.Name)
}

// PeerMemProvider gives the oracle the EFA NICs' p2p attribute.
func (s modelSource) PeerMemProvider(nic p2p.Addr) (string, bool, error) {
	f, err := s.fn(nic)
	if err != nil || f.EFA == nil {
		return "", false, err
	}
	at := s.m.EFAAttrs(f)
	if at.P2P == nil {
		return "", false, nil
	}
	return *at.P2P, true, nil
}

// Config gives the oracle the config space (p2p reads it for the rules
// of the HMAT series) from the config space the writer
// writes.
func (s modelSource) Config(a p2p.Addr) (pcicfg.Space, func(), error) {
	f, err := s.fn(a)
	if err != nil {
		return nil, nil, err
	}
	return pcicfg.Bytes(s.m.ConfigSpace(f)), func() {}, nil
}

// DriverFunctions gives the oracle the functions bound to a driver.
func (s modelSource) DriverFunctions(driver string) ([]p2p.Addr, error) {
	var out []p2p.Addr
	for a, f := range s.m.fns {
		if f.Driver == driver {
			out = append(out, a)
		}
	}
	return out, nil
}
