// SPDX-License-Identifier: MIT

package p2p

import "encoding/binary"

// Config space layout (include/uapi/linux/pci_regs.h).
const (
	cfgStatus        = 0x06
	cfgStatusCapList = 0x10
	cfgCapPtr        = 0x34
	cfgHeaderSize    = 0x40  // what an unprivileged reader sees of config space
	cfgSpaceSize     = 0x100 // conventional config space; extended starts here
	cfgExtSpaceSize  = 0x1000

	capIDExp        = 0x10 // PCI Express capability
	expTypeRootPort = 0x4  // Device/Port Type 0100b in the PCIe flags
	extCapIDACS     = 0x000d

	stdCapTTL = 48                                   // the kernel's PCI_FIND_CAP_TTL
	extCapTTL = (cfgExtSpaceSize - cfgSpaceSize) / 8 // 480 steps at most
)

// ACS Control bits (PCI_ACS_*).
const (
	ACSSourceValidation    uint16 = 0x01 // SV
	ACSTranslationBlocking uint16 = 0x02 // TB
	ACSRequestRedirect     uint16 = 0x04 // RR
	ACSCompletionRedirect  uint16 = 0x08 // CR
	ACSUpstreamForwarding  uint16 = 0x10 // UF
	ACSEgressControl       uint16 = 0x20 // EC
	ACSDirectTranslatedP2P uint16 = 0x40 // DT
	ACSRedirectMask               = ACSRequestRedirect | ACSCompletionRedirect | ACSEgressControl
	acsControlOffset              = 6 // ACS Control: the upper half of the dword at cap+4
)

// ACSBitNames names the ACS bits in register order, as the machine models
// and explanations spell them.
var ACSBitNames = [...]string{"SV", "TB", "RR", "CR", "UF", "EC", "DT"}

// ACS is what the oracle knows of a function's Access Control Services.
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

// ConfigSpace reads a function's config space one dword at a time, so that
// the dwords read can be counted: on a VM each one traps to the hypervisor.
type ConfigSpace interface {
	// ReadDword returns the little-endian dword at off (a multiple of 4).
	// readable is false when that dword cannot be read by this process.
	// A conventional (256-byte) function reads 0 past 0x100.
	ReadDword(off int) (v uint32, readable bool, err error)
}

// BytesConfig is a ConfigSpace over a copy of the config file's bytes, as
// read. Bytes past its length are unreadable, except that a 256-byte space
// reads as zeros past 0x100 (no extended capabilities).
type BytesConfig []byte

// ReadDword implements ConfigSpace.
func (b BytesConfig) ReadDword(off int) (uint32, bool, error) {
	if off < 0 || off+4 > cfgExtSpaceSize {
		return 0, false, nil
	}
	if off+4 <= len(b) {
		return binary.LittleEndian.Uint32(b[off:]), true, nil
	}
	if len(b) == cfgSpaceSize && off >= cfgSpaceSize {
		return 0, true, nil
	}
	return 0, false, nil
}

// FindExtCap walks the extended capability list for id as the kernel's
// pci_find_ext_capability does and returns its offset, or 0 when absent.
// known is false when the list could not be read.
func FindExtCap(cs ConfigSpace, id uint16) (off int, known bool, err error) {
	pos := cfgSpaceSize
	for ttl := extCapTTL; ttl > 0; ttl-- {
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
		if pos < cfgSpaceSize {
			return 0, true, nil
		}
	}
	return 0, true, nil
}

// ReadACS finds the ACS capability and reads its Capability and Control
// registers: the extended capability headers up to ACS, then one dword.
func ReadACS(cs ConfigSpace) (ACS, error) {
	off, known, err := FindExtCap(cs, extCapIDACS)
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

// FindCap walks the conventional capability list for id as the kernel's
// pci_find_capability does and returns its offset, or 0 when absent.
// known is false when the list could not be read.
func FindCap(cs ConfigSpace, id uint8) (off int, known bool, err error) {
	v, ok, err := cs.ReadDword(cfgStatus &^ 3)
	if err != nil || !ok {
		return 0, false, err
	}
	if (v>>16)&cfgStatusCapList == 0 {
		return 0, true, nil
	}
	v, ok, err = cs.ReadDword(cfgCapPtr)
	if err != nil || !ok {
		return 0, false, err
	}
	pos := int(v & 0xfc)
	for ttl := stdCapTTL; ttl > 0 && pos >= cfgHeaderSize; ttl-- {
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

// PCIePortType returns the Device/Port Type of the PCI Express capability
// (bits 7:4 of its flags), or -1 when the function has none. known is false
// when config space could not be read that far.
func PCIePortType(cs ConfigSpace) (portType int, known bool, err error) {
	off, known, err := FindCap(cs, capIDExp)
	if err != nil || !known || off == 0 {
		return -1, known, err
	}
	v, ok, err := cs.ReadDword(off)
	if err != nil || !ok {
		return -1, false, err
	}
	return int(v>>20) & 0xf, true, nil
}
