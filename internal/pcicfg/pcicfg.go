// SPDX-License-Identifier: MIT

// Package pcicfg reads a PCI function's config space one dword at a time,
// as the kernel's capability walkers do (drivers/pci/pci.c), so that the
// dwords read can be counted: on a virtual machine each one traps to the
// hypervisor. It knows the registers the oracle needs: the capability
// lists, the PCI Express capability's port type and Link Capabilities, and
// the ACS extended capability.
//
// It imports nothing of this repository; package p2p, the machine models
// of package models and the command line share it.
package pcicfg

import "encoding/binary"

// Config space layout (include/uapi/linux/pci_regs.h).
const (
	Status        = 0x06
	StatusCapList = 0x10
	CapPtr        = 0x34
	// HeaderSize is what an unprivileged reader sees of config space.
	HeaderSize = 0x40
	// SpaceSize is conventional config space; extended space starts here.
	SpaceSize = 0x100
	// ExtSpaceSize is the size of a PCIe function's config space.
	ExtSpaceSize = 0x1000

	CapIDExp    = 0x10   // PCI Express capability
	ExtCapIDACS = 0x000d // Access Control Services

	// ExpLinkCap is Link Capabilities, in the PCIe capability.
	ExpLinkCap = 0x0c

	// StdCapTTL is the kernel's PCI_FIND_CAP_TTL.
	StdCapTTL = 48
	// ExtCapTTL bounds the extended capability walk: 480 steps at most.
	ExtCapTTL = (ExtSpaceSize - SpaceSize) / 8
)

// PCIe Device/Port Types (bits 7:4 of the PCIe capability's flags).
const (
	PortTypeRootPort = 0x4 // Root Port of a root complex
	PortTypeDownPort = 0x6 // Switch Downstream Port
)

// ACS Control and Capability bits (PCI_ACS_*).
const (
	ACSSourceValidation    uint16 = 0x01 // SV
	ACSTranslationBlocking uint16 = 0x02 // TB
	ACSRequestRedirect     uint16 = 0x04 // RR
	ACSCompletionRedirect  uint16 = 0x08 // CR
	ACSUpstreamForwarding  uint16 = 0x10 // UF
	ACSEgressControl       uint16 = 0x20 // EC
	ACSDirectTranslatedP2P uint16 = 0x40 // DT
	// ACSRedirectMask is what the kernel's pci_bridge_has_acs_redir looks
	// for: RR, CR or EC.
	ACSRedirectMask = ACSRequestRedirect | ACSCompletionRedirect | ACSEgressControl

	// ACSEgressVector is the offset of the ACS Egress Control Vector in the
	// capability, after its header and its Capability and Control
	// registers.
	ACSEgressVector = 0x08
	// ACSVectorSizePos: ACS Capability bits 15:8 give the vector size (0
	// means 256).
	ACSVectorSizePos = 8
)

// ACSBitNames names the ACS bits in register order, as the machine models
// and explanations spell them.
var ACSBitNames = [...]string{"SV", "TB", "RR", "CR", "UF", "EC", "DT"}

// ACSBits formats ACS bits as "RR|CR" (or "none").
func ACSBits(v uint16) string {
	s := ""
	for i, n := range ACSBitNames {
		if v&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	if s == "" {
		return "none"
	}
	return s
}

// Space reads a function's config space one dword at a time.
type Space interface {
	// ReadDword returns the little-endian dword at off (a multiple of 4).
	// readable is false when that dword cannot be read by this process.
	// A conventional (256-byte) function reads 0 past 0x100.
	ReadDword(off int) (v uint32, readable bool, err error)
}

// Bytes is a Space over a copy of the config file's bytes, as read. Bytes
// past its length are unreadable, except that a 256-byte space reads as
// zeros past 0x100 (no extended capabilities).
type Bytes []byte

// ReadDword implements Space.
func (b Bytes) ReadDword(off int) (uint32, bool, error) {
	if off < 0 || off+4 > ExtSpaceSize {
		return 0, false, nil
	}
	if off+4 <= len(b) {
		return binary.LittleEndian.Uint32(b[off:]), true, nil
	}
	if len(b) == SpaceSize && off >= SpaceSize {
		return 0, true, nil
	}
	return 0, false, nil
}

// FindExtCap walks the extended capability list for id as the kernel's
// pci_find_ext_capability does and returns its offset, or 0 when absent.
// known is false when the list could not be read.
func FindExtCap(cs Space, id uint16) (off int, known bool, err error) {
	pos := SpaceSize
	for ttl := ExtCapTTL; ttl > 0; ttl-- {
		hdr, ok, err := cs.ReadDword(pos)
		if err != nil || !ok {
			return 0, false, err
		}
		if hdr == 0 || hdr == 0xffffffff {
			return 0, true, nil
		}
		if uint16(hdr) == id {
			return pos, true, nil
		}
		pos = int(hdr>>20) & 0xffc
		if pos < SpaceSize {
			return 0, true, nil
		}
	}
	return 0, true, nil
}

// FindCap walks the conventional capability list for id as the kernel's
// pci_find_capability does and returns its offset, or 0 when absent.
// known is false when the list could not be read.
func FindCap(cs Space, id uint8) (off int, known bool, err error) {
	v, ok, err := cs.ReadDword(Status &^ 3)
	if err != nil || !ok {
		return 0, false, err
	}
	if (v>>16)&StatusCapList == 0 {
		return 0, true, nil
	}
	v, ok, err = cs.ReadDword(CapPtr)
	if err != nil || !ok {
		return 0, false, err
	}
	pos := int(v & 0xfc)
	for ttl := StdCapTTL; ttl > 0 && pos >= HeaderSize; ttl-- {
		hdr, ok, err := cs.ReadDword(pos)
		if err != nil || !ok {
			return 0, false, err
		}
		if uint8(hdr) == 0xff {
			return 0, true, nil
		}
		if uint8(hdr) == id {
			return pos, true, nil
		}
		pos = int(hdr>>8) & 0xfc
	}
	return 0, true, nil
}

// ACS is what a walk found of a function's Access Control Services.
type ACS struct {
	// Known is false when config space past the first 64 bytes could not
	// be read (not root): ACS may or may not redirect.
	Known bool
	// Present: the function has the ACS extended capability.
	Present bool
	// Capability and Control are the ACS registers (valid when Present).
	Capability uint16
	Control    uint16
}

// Redirects reports whether ACS sends peer traffic up to the root complex:
// the kernel's pci_bridge_has_acs_redir (RR, CR or EC set in Control).
func (a ACS) Redirects() bool { return a.Present && a.Control&ACSRedirectMask != 0 }

// ReadACS finds the ACS capability and reads its Capability and Control
// registers: the extended capability headers up to ACS, then one dword.
func ReadACS(cs Space) (ACS, error) {
	off, known, err := FindExtCap(cs, ExtCapIDACS)
	if err != nil || !known {
		return ACS{}, err
	}
	if off == 0 {
		return ACS{Known: true}, nil
	}
	v, ok, err := cs.ReadDword(off + 4)
	if err != nil || !ok {
		return ACS{}, err
	}
	return ACS{Known: true, Present: true, Capability: uint16(v), Control: uint16(v >> 16)}, nil
}

// PortType returns the Device/Port Type of the PCI Express capability
// (bits 7:4 of its flags), or -1 when the function has none. known is false
// when config space could not be read that far.
func PortType(cs Space) (portType int, known bool, err error) {
	off, known, err := FindCap(cs, CapIDExp)
	if err != nil || !known || off == 0 {
		return -1, known, err
	}
	v, ok, err := cs.ReadDword(off)
	if err != nil || !ok {
		return -1, false, err
	}
	return int(v>>20) & 0xf, true, nil
}

// PortNumber returns the Port Number of a PCIe port (Link Capabilities bits
// 31:24); ok is false when it cannot be read or the function is not PCIe.
func PortNumber(cs Space) (port int, ok bool) {
	off, known, err := FindCap(cs, CapIDExp)
	if err != nil || !known || off == 0 {
		return 0, false
	}
	v, ok, err := cs.ReadDword(off + ExpLinkCap)
	if err != nil || !ok {
		return 0, false
	}
	return int(v >> 24), true
}
