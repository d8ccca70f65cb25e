// SPDX-License-Identifier: MIT

// Package acpitab parses the binary ACPI tables the HMAT P2P series reads
// (Leon Romanovsky's series, public mirror
// kernelorg-mirror/linux_kernel_git_leon_linux-rdma: include/acpi/actbl1.h,
// drivers/acpi/numa/hmat.c, drivers/pci/p2pdma.c): the HMAT with its PCIe
// P2P Latency and Bandwidth Information Structure (type 3) and the SRAT
// with its Generic Port Affinity Structure (type 6). The kernel exposes
// both, as the firmware wrote them, in /sys/firmware/acpi/tables/ (mode
// 0400: root reads them).
//
// It imports nothing of this repository; package p2p and the machine
// models of package models share it.
package acpitab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrMalformed is wrapped by every error about a malformed ACPI table.
var ErrMalformed = errors.New("malformed ACPI table")

// Sizes of the fixed parts (actbl.h, actbl1.h, actbl3.h).
const (
	acpiHeaderSize   = 36 // struct acpi_table_header
	hmatHeaderSize   = acpiHeaderSize + 4
	sratHeaderSize   = acpiHeaderSize + 12
	hmatStructHeader = 8  // struct acpi_hmat_structure
	hmatP2PSize      = 32 // struct acpi_hmat_p2p_latency
	sratMemSize      = 40 // struct acpi_srat_mem_affinity
	sratGenericSize  = 32 // struct acpi_srat_generic_affinity

	// MaxTableSize bounds what is read of one table.
	MaxTableSize = 16 << 20
)

// HMAT structure types and data types.
const (
	HMATTypeProximity = 0
	HMATTypeLocality  = 1
	HMATTypeCache     = 2
	HMATTypeP2P       = 3 // PCIe P2P latency and bandwidth

	HMATAccessLatency   = 0
	HMATReadLatency     = 1
	HMATWriteLatency    = 2
	HMATAccessBandwidth = 3
	HMATReadBandwidth   = 4
	HMATWriteBandwidth  = 5

	// HMATNonUIO and HMATUIO are the flags of a type-3 structure:
	// the entries apply to ordered (non-UIO) or Unordered I/O traffic.
	HMATNonUIO = 1 << 0
	HMATUIO    = 1 << 1
)

// SRAT structure types and flags.
const (
	SRATTypeMemory      = 1
	SRATTypeGenericPort = 6

	sratEnabled = 1 << 0 // ACPI_SRAT_MEM_ENABLED, ACPI_SRAT_GENERIC_AFFINITY_ENABLED
)

// HMATP2P is one PCIe P2P Latency and Bandwidth Information Structure: a
// matrix from initiator to target proximity domains (generic ports, that
// is host bridges), entries in units of EntryBase.
type HMATP2P struct {
	Flags      uint8
	DataType   uint8
	EntryBase  uint64
	Initiators []uint32
	Targets    []uint32
	Entries    []uint16 // row-major: initiator i, target j at i*len(Targets)+j
}

// HMAT is what the oracle uses of the Heterogeneous Memory Attribute
// Table: its revision and the P2P structures, in table order.
type HMAT struct {
	Revision uint8
	P2P      []HMATP2P
}

// SRATMemory is an SRAT Memory Affinity Structure.
type SRATMemory struct {
	ProximityDomain uint32
	Base, Length    uint64
	Enabled         bool
}

// SRATGenericPort is an SRAT Generic Port Affinity Structure.
type SRATGenericPort struct {
	ProximityDomain uint32
	// HandleType is 0 for an ACPI device handle (_HID and _UID), 1 for
	// a PCI one (segment and BDF).
	HandleType uint8
	Handle     [16]byte
	Enabled    bool
}

// HID returns the handle's _HID ("PNP0A08") for an ACPI handle.
func (g *SRATGenericPort) HID() string { return strings.TrimRight(string(g.Handle[:8]), "\x00") }

// UID returns the handle's _UID for an ACPI handle.
func (g *SRATGenericPort) UID() uint32 { return binary.LittleEndian.Uint32(g.Handle[8:]) }

// SRAT is what the oracle uses of the System Resource Affinity Table, in
// table order.
type SRAT struct {
	Memory       []SRATMemory
	GenericPorts []SRATGenericPort
}

// acpiBody checks the common header of a table with signature sig and
// returns the table cut to its declared length, and its revision.
func acpiBody(data []byte, sig string, min int) ([]byte, uint8, error) {
	if len(data) < acpiHeaderSize {
		return nil, 0, fmt.Errorf("%w: %s: %d bytes, shorter than the %d-byte header", ErrMalformed, sig, len(data), acpiHeaderSize)
	}
	if got := string(data[:4]); got != sig {
		return nil, 0, fmt.Errorf("%w: signature %q is not %s", ErrMalformed, got, sig)
	}
	n := binary.LittleEndian.Uint32(data[4:])
	if n < uint32(min) {
		return nil, 0, fmt.Errorf("%w: %s: length %d is shorter than its %d-byte header", ErrMalformed, sig, n, min)
	}
	if uint64(n) > uint64(len(data)) {
		return nil, 0, fmt.Errorf("%w: %s: length %d, but only %d bytes were read (truncated)", ErrMalformed, sig, n, len(data))
	}
	return data[:n], data[8], nil
}

// ParseHMAT parses a binary HMAT. As the kernel does, it keeps revisions 1
// and 2 only, walks every structure by its length, ignores the types it
// does not use (0, 1, 2 and unknown ones) and refuses a structure whose
// length is zero, too short for its type, or past the end of the table.
func ParseHMAT(data []byte) (*HMAT, error) {
	body, rev, err := acpiBody(data, "HMAT", hmatHeaderSize)
	if err != nil {
		return nil, err
	}
	if rev != 1 && rev != 2 {
		return nil, fmt.Errorf("%w: HMAT revision %d (the kernel reads revisions 1 and 2 only)", ErrMalformed, rev)
	}
	h := &HMAT{Revision: rev}
	for off := hmatHeaderSize; off < len(body); {
		if len(body)-off < hmatStructHeader {
			return nil, fmt.Errorf("%w: HMAT: %d stray bytes at offset %d", ErrMalformed, len(body)-off, off)
		}
		typ := binary.LittleEndian.Uint16(body[off:])
		n := binary.LittleEndian.Uint32(body[off+4:])
		if n < hmatStructHeader {
			return nil, fmt.Errorf("%w: HMAT: structure at offset %d: length %d", ErrMalformed, off, n)
		}
		if uint64(n) > uint64(len(body)-off) {
			return nil, fmt.Errorf("%w: HMAT: structure at offset %d: length %d runs past the end of the table (%d bytes)", ErrMalformed, off, n, len(body))
		}
		s := body[off : off+int(n)]
		if typ == HMATTypeP2P {
			p, err := parseHMATP2P(s)
			if err != nil {
				return nil, fmt.Errorf("%w: HMAT: P2P structure at offset %d: %w", ErrMalformed, off, err)
			}
			h.P2P = append(h.P2P, p)
		}
		off += int(n)
	}
	return h, nil
}

func parseHMATP2P(s []byte) (HMATP2P, error) {
	if len(s) < hmatP2PSize {
		return HMATP2P{}, fmt.Errorf("length %d is shorter than %d", len(s), hmatP2PSize)
	}
	p := HMATP2P{Flags: s[8], DataType: s[9], EntryBase: binary.LittleEndian.Uint64(s[24:])}
	ni := uint64(binary.LittleEndian.Uint32(s[12:]))
	nt := uint64(binary.LittleEndian.Uint32(s[16:]))
	need := uint64(hmatP2PSize) + 4*ni + 4*nt + 2*ni*nt
	if need > uint64(len(s)) {
		return HMATP2P{}, fmt.Errorf("%d initiators and %d targets need %d bytes, the structure has %d", ni, nt, need, len(s))
	}
	off := hmatP2PSize
	p.Initiators = make([]uint32, ni)
	for i := range p.Initiators {
		p.Initiators[i] = binary.LittleEndian.Uint32(s[off:])
		off += 4
	}
	p.Targets = make([]uint32, nt)
	for i := range p.Targets {
		p.Targets[i] = binary.LittleEndian.Uint32(s[off:])
		off += 4
	}
	p.Entries = make([]uint16, ni*nt)
	for i := range p.Entries {
		p.Entries[i] = binary.LittleEndian.Uint16(s[off:])
		off += 2
	}
	return p, nil
}

// ParseSRAT parses a binary SRAT: its Memory Affinity and Generic Port
// Affinity structures; other types are skipped by their length. A
// structure of length zero, shorter than its type needs or past the end
// of the table is an error.
func ParseSRAT(data []byte) (*SRAT, error) {
	body, _, err := acpiBody(data, "SRAT", sratHeaderSize)
	if err != nil {
		return nil, err
	}
	s := &SRAT{}
	for off := sratHeaderSize; off < len(body); {
		if len(body)-off < 2 {
			return nil, fmt.Errorf("%w: SRAT: a stray byte at offset %d", ErrMalformed, off)
		}
		typ, n := body[off], int(body[off+1])
		if n < 2 {
			return nil, fmt.Errorf("%w: SRAT: structure at offset %d: length %d", ErrMalformed, off, n)
		}
		if n > len(body)-off {
			return nil, fmt.Errorf("%w: SRAT: structure at offset %d: length %d runs past the end of the table (%d bytes)", ErrMalformed, off, n, len(body))
		}
		e := body[off : off+n]
		switch typ {
		case SRATTypeMemory:
			if n < sratMemSize {
				return nil, fmt.Errorf("%w: SRAT: memory affinity at offset %d: length %d is shorter than %d", ErrMalformed, off, n, sratMemSize)
			}
			s.Memory = append(s.Memory, SRATMemory{
				ProximityDomain: binary.LittleEndian.Uint32(e[2:]),
				Base:            binary.LittleEndian.Uint64(e[8:]),
				Length:          binary.LittleEndian.Uint64(e[16:]),
				Enabled:         binary.LittleEndian.Uint32(e[28:])&sratEnabled != 0,
			})
		case SRATTypeGenericPort:
			if n < sratGenericSize {
				return nil, fmt.Errorf("%w: SRAT: generic port affinity at offset %d: length %d is shorter than %d", ErrMalformed, off, n, sratGenericSize)
			}
			g := SRATGenericPort{
				HandleType:      e[3],
				ProximityDomain: binary.LittleEndian.Uint32(e[4:]),
				Enabled:         binary.LittleEndian.Uint32(e[24:])&sratEnabled != 0,
			}
			copy(g.Handle[:], e[8:24])
			s.GenericPorts = append(s.GenericPorts, g)
		}
		off += n
	}
	return s, nil
}

// Coordinates are the P2P access figures of one (initiator, target)
// pair of host bridges, as the kernel's struct access_coordinate: MB/s and
// ns, 0 where the table gives none.
type Coordinates struct {
	ReadBandwidth, WriteBandwidth uint32
	ReadLatency, WriteLatency     uint32
}

func (c Coordinates) populated() bool {
	return c.ReadBandwidth != 0 || c.WriteBandwidth != 0 || c.ReadLatency != 0 || c.WriteLatency != 0
}

// BandwidthMBs is the narrower direction, 0 unless both are given (how
// the series ranks providers).
func (c Coordinates) BandwidthMBs() int {
	if c.ReadBandwidth == 0 || c.WriteBandwidth == 0 {
		return 0
	}
	return int(min(c.ReadBandwidth, c.WriteBandwidth))
}

// LatencyNs is the slower direction, 0 unless both are given.
func (c Coordinates) LatencyNs() int {
	if c.ReadLatency == 0 || c.WriteLatency == 0 {
		return 0
	}
	return int(max(c.ReadLatency, c.WriteLatency))
}

// Class is the traffic class of an HMAT P2P entry.
type Class uint8

// The classes.
const (
	NonUIO Class = iota // ordered traffic: what p2pdma authorizes
	UIO                 // Unordered I/O
)

// Errors of Localities.Coordinates, as the kernel's -ENOENT and
// -ENODATA.
var (
	ErrNoEntry     = errors.New("the HMAT describes no P2P entry for these host bridges")
	ErrUnreachable = errors.New("the HMAT describes the P2P path between these host bridges as unreachable")
)

type hmatLocality struct {
	initiator, target uint32
	valid             uint8 // bit per Class
	coord             [2]Coordinates
}

// Localities are the P2P coordinates of every host-bridge pair the
// HMAT describes, merged across its structures as the kernel merges them.
type Localities struct {
	list []hmatLocality
}

// Localities merges the table's P2P structures: each entry normalized by
// the table's revision, assigned to the classes its structure's flags name.
func (h *HMAT) Localities() *Localities {
	l := &Localities{}
	for i := range h.P2P {
		p := &h.P2P[i]
		nt := len(p.Targets)
		for a, ini := range p.Initiators {
			for b, tgt := range p.Targets {
				v := hmatNormalize(p.Entries[a*nt+b], p.EntryBase, p.DataType, h.Revision)
				l.update(ini, tgt, p.Flags, p.DataType, v)
			}
		}
	}
	return l
}

func (l *Localities) find(ini, tgt uint32) *hmatLocality {
	for i := range l.list {
		if l.list[i].initiator == ini && l.list[i].target == tgt {
			return &l.list[i]
		}
	}
	return nil
}

func (l *Localities) update(ini, tgt uint32, flags, typ uint8, v uint32) {
	loc := l.find(ini, tgt)
	if loc == nil {
		l.list = append(l.list, hmatLocality{initiator: ini, target: tgt})
		loc = &l.list[len(l.list)-1]
	}
	for class := NonUIO; class <= UIO; class++ {
		if class == NonUIO && flags&HMATNonUIO == 0 || class == UIO && flags&HMATUIO == 0 {
			continue
		}
		c := &loc.coord[class]
		switch typ {
		case HMATAccessLatency:
			c.ReadLatency, c.WriteLatency = v, v
		case HMATReadLatency:
			c.ReadLatency = v
		case HMATWriteLatency:
			c.WriteLatency = v
		case HMATAccessBandwidth:
			c.ReadBandwidth, c.WriteBandwidth = v, v
		case HMATReadBandwidth:
			c.ReadBandwidth = v
		case HMATWriteBandwidth:
			c.WriteBandwidth = v
		}
		loc.valid |= 1 << class
	}
}

// Coordinates returns the figures from initiator to target for class: an
// error wrapping ErrNoEntry when the table has no entry for the pair,
// ErrUnreachable when it has one but not for this class, or with every
// value invalid (0 or 0xffff).
func (l *Localities) Coordinates(initiator, target uint32, class Class) (Coordinates, error) {
	loc := l.find(initiator, target)
	if loc == nil {
		return Coordinates{}, fmt.Errorf("%w (proximity domains %d -> %d)", ErrNoEntry, initiator, target)
	}
	if loc.valid&(1<<class) == 0 || !loc.coord[class].populated() {
		return Coordinates{}, fmt.Errorf("%w (proximity domains %d -> %d)", ErrUnreachable, initiator, target)
	}
	return loc.coord[class], nil
}

// hmatNormalize is the kernel's hmat_normalize_revision: 0 and 0xffff are
// invalid, as is a product past 32 bits; revision 1 counts tenths,
// revision 2 gives latencies in picoseconds (reported in ns, rounded up).
func hmatNormalize(entry uint16, base uint64, typ, revision uint8) uint32 {
	if entry == 0 || entry == 0xffff {
		return 0
	}
	if base > uint64(^uint32(0))/uint64(entry) {
		return 0
	}
	v := uint32(entry) * uint32(base)
	switch revision {
	case 1:
		if v < 10 {
			return 0
		}
		v = (v + 9) / 10
	case 2:
		if typ <= HMATWriteLatency {
			v = (v + 999) / 1000
		}
	}
	return v
}

// GenericPortDomain is the kernel's acpi_get_genport_proximity_domain: the
// proximity domain of the generic port whose ACPI device handle has _UID
// uid. Like the kernel it looks through the memory targets in the order
// SRAT created them (enabled memory affinity first, then enabled generic
// ports with an ACPI handle, which share a target with memory of the same
// domain) and takes the first whose handle's UID matches; a target with no
// generic port has an all-zero handle, so _UID 0 can match plain memory.
func (s *SRAT) GenericPortDomain(uid uint32) (uint32, bool) {
	type target struct {
		pd     uint32
		handle [16]byte
	}
	var ts []target
	find := func(pd uint32) *target {
		for i := range ts {
			if ts[i].pd == pd {
				return &ts[i]
			}
		}
		ts = append(ts, target{pd: pd})
		return &ts[len(ts)-1]
	}
	for _, m := range s.Memory {
		if m.Enabled {
			find(m.ProximityDomain)
		}
	}
	for i := range s.GenericPorts {
		g := &s.GenericPorts[i]
		if g.Enabled && g.HandleType == 0 {
			find(g.ProximityDomain).handle = g.Handle
		}
	}
	for _, t := range ts {
		if binary.LittleEndian.Uint32(t.handle[8:]) == uid {
			return t.pd, true
		}
	}
	return 0, false
}

// ParseUID parses a _UID as the kernel's kstrtou32(s, 0): decimal,
// 0x-prefixed hex, or 0-prefixed octal, with an optional trailing newline.
func ParseUID(s string) (uint32, error) {
	s = strings.TrimSuffix(s, "\n")
	v, err := strconv.ParseUint(s, 0, 32)
	if err != nil || strings.HasPrefix(s, "+") || strings.Contains(s, "_") || strings.HasPrefix(s, "0b") || strings.HasPrefix(s, "0o") {
		return 0, fmt.Errorf("_UID %q is not a number", s)
	}
	return uint32(v), nil
}
