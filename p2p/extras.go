// SPDX-License-Identifier: MIT

package p2p

import "github.com/efap2p/efap2p/internal/pcicfg"

// The optional methods of a Source (see Source): each interface is looked
// for, with a type assertion, in what NewTopology found beside Source (its
// ext field); without it the oracle does without the fact. Sysfs offers
// them all through sysfsExtras; the machine models of package models have
// their own.

// acpiSource: the machine's binary ACPI tables and the ACPI companions of
// its host bridges.
type acpiSource interface {
	// ACPITable returns a table by signature ("HMAT", "SRAT") as the
	// firmware wrote it; nil and no error when the machine has none.
	ACPITable(sig string) ([]byte, error)
	// HostBridgeFirmware returns the _HID and _UID of the ACPI companion
	// of a root bus's host bridge; ok is false when it has none (a
	// devicetree or VMD host bridge).
	HostBridgeFirmware(r RootBus) (hid, uid string, ok bool, err error)
}

// peerMemSource: the out-of-tree EFA driver's p2p attribute.
type peerMemSource interface {
	// PeerMemProvider returns the p2p attribute of the NIC's PCI
	// function; present is false without one.
	PeerMemProvider(nic Addr) (provider string, present bool, err error)
}

// driverFunctions: the functions bound to a driver.
type driverFunctions interface {
	// DriverFunctions lists the functions bound to driver; none when the
	// machine has no such driver.
	DriverFunctions(driver string) ([]Addr, error)
}

// driverInfo: what a driver module reports about itself.
type driverInfo interface {
	// DriverVersion returns a module's version ("580.65.06"), "" if unknown.
	DriverVersion(module string) string
	// NVIDIATopoCheckOverride returns NVreg_GrdmaPciTopoCheckOverride (0
	// default, 1 allow, 2 deny), 0 when unknown.
	NVIDIATopoCheckOverride() int
}

// idReader: a function's vendor and device IDs alone, cheaper than Attrs.
type idReader interface {
	FunctionIDs(a Addr) (vendor, device uint16, err error)
}

// configSource: raw config space access, for the registers only a few
// rules need (the ACS Egress Control Vector, a port's Link Capabilities).
type configSource interface {
	// Config opens the function's config space; the caller calls done.
	Config(a Addr) (cs pcicfg.Space, done func(), err error)
}

// extrasOf returns where a Topology looks for the optional methods of src:
// src itself, or for a Sysfs its unexported readers.
func extrasOf(src Source) any {
	if s, ok := src.(*Sysfs); ok {
		return sysfsExtras{s}
	}
	return src
}

// sysfsExtras offers a Sysfs's optional readers to the oracle, without
// making them part of Sysfs's API.
type sysfsExtras struct{ s *Sysfs }

func (x sysfsExtras) ACPITable(sig string) ([]byte, error) { return x.s.acpiTable(sig) }

func (x sysfsExtras) HostBridgeFirmware(r RootBus) (string, string, bool, error) {
	return x.s.hostBridgeFirmware(r)
}

func (x sysfsExtras) PeerMemProvider(nic Addr) (string, bool, error) {
	return x.s.peerMemProvider(nic)
}

func (x sysfsExtras) DriverFunctions(driver string) ([]Addr, error) {
	return x.s.driverFunctions(driver)
}

func (x sysfsExtras) DriverVersion(module string) string { return x.s.driverVersion(module) }

func (x sysfsExtras) NVIDIATopoCheckOverride() int { return x.s.nvidiaTopoCheckOverride() }

func (x sysfsExtras) FunctionIDs(a Addr) (uint16, uint16, error) { return x.s.functionIDs(a) }

func (x sysfsExtras) Config(a Addr) (pcicfg.Space, func(), error) {
	c, err := x.s.openConfig(a)
	if err != nil {
		return nil, nil, err
	}
	return c, c.close, nil
}
