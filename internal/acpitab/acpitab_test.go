// SPDX-License-Identifier: MIT

package acpitab

import (
	"encoding/binary"
	"errors"
	"testing"
)

// Hand-built tables, byte by byte as include/acpi/actbl1.h lays them out.

func acpiHdr(sig string, rev byte, body []byte, extra int) []byte {
	b := make([]byte, 36+extra)
	copy(b, sig)
	b[8] = rev
	b = append(b, body...)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
	return b
}

// p2pStruct is one HMAT type-3 structure.
func p2pStruct(flags, typ byte, base uint64, ini, tgt []uint32, entries []uint16) []byte {
	n := 32 + 4*len(ini) + 4*len(tgt) + 2*len(entries)
	s := make([]byte, 32, n)
	binary.LittleEndian.PutUint16(s[0:], HMATTypeP2P)
	binary.LittleEndian.PutUint32(s[4:], uint32(n))
	s[8], s[9] = flags, typ
	binary.LittleEndian.PutUint32(s[12:], uint32(len(ini)))
	binary.LittleEndian.PutUint32(s[16:], uint32(len(tgt)))
	binary.LittleEndian.PutUint64(s[24:], base)
	for _, v := range ini {
		s = binary.LittleEndian.AppendUint32(s, v)
	}
	for _, v := range tgt {
		s = binary.LittleEndian.AppendUint32(s, v)
	}
	for _, v := range entries {
		s = binary.LittleEndian.AppendUint16(s, v)
	}
	return s
}

// otherStruct is an HMAT structure of another type, n bytes long.
func otherStruct(typ uint16, n int) []byte {
	s := make([]byte, n)
	binary.LittleEndian.PutUint16(s[0:], typ)
	binary.LittleEndian.PutUint32(s[4:], uint32(n))
	return s
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// The kernel's own KUnit matrix (drivers/acpi/numa/hmat_test.c in the
// series): a 2x2 access-latency matrix for both classes, base 1000 ps.
func TestHMATMatrix(t *testing.T) {
	tab := acpiHdr("HMAT", 2, cat(
		otherStruct(HMATTypeProximity, 40), // ignored
		p2pStruct(HMATNonUIO|HMATUIO, HMATAccessLatency, 1000, []uint32{11, 22}, []uint32{33, 44}, []uint16{5, 10, 0xffff, 20}),
		otherStruct(7, 12), // unknown type: skipped by its length
	), 4)
	h, err := ParseHMAT(tab)
	if err != nil {
		t.Fatal(err)
	}
	if h.Revision != 2 || len(h.P2P) != 1 || len(h.P2P[0].Entries) != 4 {
		t.Fatalf("parsed %+v", h)
	}
	l := h.Localities()
	for _, tc := range []struct {
		ini, tgt uint32
		class    Class
		lat      uint32
		err      error
	}{
		{11, 33, NonUIO, 5, nil},
		{11, 44, UIO, 10, nil},
		{22, 44, NonUIO, 20, nil},
		{22, 33, NonUIO, 0, ErrUnreachable}, // 0xffff: invalid
		{33, 11, NonUIO, 0, ErrNoEntry},     // not an initiator
	} {
		c, err := l.Coordinates(tc.ini, tc.tgt, tc.class)
		if !errors.Is(err, tc.err) || c.ReadLatency != tc.lat || c.WriteLatency != tc.lat || c.ReadBandwidth != 0 {
			t.Errorf("%d -> %d: %+v, %v; want latency %d, %v", tc.ini, tc.tgt, c, err, tc.lat, tc.err)
		}
	}
}

// Structures merge per (initiator, target) and class, as the kernel's
// hmat_update_p2p does; a zero entry leaves a pair described but
// unreachable.
func TestHMATMerge(t *testing.T) {
	one := func(flags, typ byte, base uint64, e uint16) []byte {
		return p2pStruct(flags, typ, base, []uint32{1}, []uint32{2}, []uint16{e})
	}
	tab := acpiHdr("HMAT", 2, cat(
		one(HMATNonUIO, HMATAccessBandwidth, 1, 400),
		one(HMATNonUIO, HMATReadLatency, 1000, 7),
		one(HMATNonUIO, HMATWriteLatency, 1000, 9),
		one(HMATUIO, HMATReadBandwidth, 1, 200),
		one(HMATUIO, HMATWriteBandwidth, 1, 300),
		one(HMATUIO, HMATAccessLatency, 1000, 11),
		p2pStruct(HMATNonUIO, HMATAccessBandwidth, 1, []uint32{3}, []uint32{4}, []uint16{0}),
	), 4)
	h, err := ParseHMAT(tab)
	if err != nil {
		t.Fatal(err)
	}
	l := h.Localities()
	c, err := l.Coordinates(1, 2, NonUIO)
	if err != nil || c != (Coordinates{400, 400, 7, 9}) || c.BandwidthMBs() != 400 || c.LatencyNs() != 9 {
		t.Errorf("non-UIO %+v, %v", c, err)
	}
	c, err = l.Coordinates(1, 2, UIO)
	if err != nil || c != (Coordinates{200, 300, 11, 11}) || c.BandwidthMBs() != 200 {
		t.Errorf("UIO %+v, %v", c, err)
	}
	if _, err := l.Coordinates(3, 4, NonUIO); !errors.Is(err, ErrUnreachable) {
		t.Errorf("a zero entry: %v, want unreachable", err)
	}
	if _, err := l.Coordinates(3, 4, UIO); !errors.Is(err, ErrUnreachable) {
		t.Errorf("a class no structure names: %v, want unreachable", err)
	}
}

func TestHMATNormalize(t *testing.T) {
	for _, tc := range []struct {
		entry    uint16
		base     uint64
		typ, rev uint8
		want     uint32
	}{
		{0, 1, HMATAccessBandwidth, 2, 0},
		{0xffff, 1, HMATAccessBandwidth, 2, 0},
		{0xfffe, 1, HMATAccessBandwidth, 2, 0xfffe},
		{950, 1000, HMATAccessLatency, 2, 950},  // ps -> ns
		{1, 1500, HMATWriteLatency, 2, 2},       // rounded up
		{3, 3, HMATAccessBandwidth, 1, 0},       // revision 1: below 10
		{25, 1, HMATReadBandwidth, 1, 3},        // tenths, rounded up
		{2, 1 << 32, HMATAccessBandwidth, 2, 0}, // past 32 bits
		{7, 1000, HMATAccessLatency, 3, 7000},   // another revision: as is
		{1, 0xffffffff, HMATReadBandwidth, 2, 0xffffffff},
	} {
		if got := hmatNormalize(tc.entry, tc.base, tc.typ, tc.rev); got != tc.want {
			t.Errorf("hmatNormalize(%d, %d, %d, rev %d) = %d, want %d", tc.entry, tc.base, tc.typ, tc.rev, got, tc.want)
		}
	}
}

func TestHMATMalformed(t *testing.T) {
	good := p2pStruct(HMATNonUIO, HMATAccessBandwidth, 1, []uint32{1}, []uint32{2}, []uint16{100})
	short := append([]byte{}, good...)
	binary.LittleEndian.PutUint32(short[4:], 31) // shorter than a type-3 structure
	counts := append([]byte{}, good...)
	binary.LittleEndian.PutUint32(counts[12:], 2) // two initiators need more bytes
	huge := append([]byte{}, good...)
	binary.LittleEndian.PutUint32(huge[12:], 0xffffffff)
	binary.LittleEndian.PutUint32(huge[16:], 0xffffffff)
	zero := append([]byte{}, good...)
	binary.LittleEndian.PutUint32(zero[4:], 0)
	past := append([]byte{}, good...)
	binary.LittleEndian.PutUint32(past[4:], 200)
	truncated := acpiHdr("HMAT", 2, good, 4)
	truncated = truncated[:len(truncated)-3]
	for name, tab := range map[string][]byte{
		"empty":              nil,
		"header only":        []byte("HMAT"),
		"truncated":          truncated,
		"wrong signature":    acpiHdr("SRAT", 2, good, 4),
		"revision 0":         acpiHdr("HMAT", 0, good, 4),
		"revision 3":         acpiHdr("HMAT", 3, good, 4),
		"too short a type 3": acpiHdr("HMAT", 2, short, 4),
		"counts past length": acpiHdr("HMAT", 2, counts, 4),
		"huge counts":        acpiHdr("HMAT", 2, huge, 4),
		"zero length":        acpiHdr("HMAT", 2, zero, 4),
		"past the end":       acpiHdr("HMAT", 2, past, 4),
		"stray bytes":        acpiHdr("HMAT", 2, cat(good, []byte{1, 2, 3}), 4),
	} {
		if h, err := ParseHMAT(tab); err == nil || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %+v, %v; want an ErrMalformed error", name, h, err)
		}
	}
	// A header whose length is shorter than the bytes read: the rest is
	// not the table's.
	tab := acpiHdr("HMAT", 2, good, 4)
	tab = append(tab, 0xde, 0xad)
	if h, err := ParseHMAT(tab); err != nil || len(h.P2P) != 1 {
		t.Errorf("trailing bytes past the length: %+v, %v", h, err)
	}
	// No structures at all.
	if h, err := ParseHMAT(acpiHdr("HMAT", 1, nil, 4)); err != nil || len(h.P2P) != 0 {
		t.Errorf("no structures: %+v, %v", h, err)
	}
}

func sratMem(pd uint32, enabled bool) []byte {
	s := make([]byte, 40)
	s[0], s[1] = SRATTypeMemory, 40
	binary.LittleEndian.PutUint32(s[2:], pd)
	if enabled {
		binary.LittleEndian.PutUint32(s[28:], 1)
	}
	return s
}

func sratPort(pd uint32, handleType byte, hid string, uid uint32, enabled bool) []byte {
	s := make([]byte, 32)
	s[0], s[1], s[3] = SRATTypeGenericPort, 32, handleType
	binary.LittleEndian.PutUint32(s[4:], pd)
	copy(s[8:16], hid)
	binary.LittleEndian.PutUint32(s[16:], uid)
	if enabled {
		binary.LittleEndian.PutUint32(s[24:], 1)
	}
	return s
}

func TestSRATGenericPorts(t *testing.T) {
	cpu := make([]byte, 16) // type 0, processor affinity: skipped
	cpu[1] = 16
	tab := acpiHdr("SRAT", 3, cat(
		cpu,
		sratMem(0, true), sratMem(1, true), sratMem(9, false),
		sratPort(10, 0, "PNP0A08", 1, true),
		sratPort(11, 0, "PNP0A08", 2, true),
		sratPort(12, 0, "PNP0A08", 3, false), // disabled
		sratPort(13, 1, "", 4, true),         // a PCI handle: skipped
		sratPort(1, 0, "ACPI0016", 5, true),  // shares memory domain 1's target
	), 12)
	s, err := ParseSRAT(tab)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Memory) != 3 || len(s.GenericPorts) != 5 || s.GenericPorts[0].HID() != "PNP0A08" || s.GenericPorts[1].UID() != 2 {
		t.Fatalf("parsed %+v", s)
	}
	for _, tc := range []struct {
		uid uint32
		pd  uint32
		ok  bool
	}{
		{1, 10, true}, {2, 11, true}, {5, 1, true},
		{3, 0, false}, {4, 0, false}, {6, 0, false},
		// The kernel's acpi_find_genport_target compares the UID of every
		// target's handle, and a memory-only target's is all zeros: _UID
		// 0 finds memory domain 0.
		{0, 0, true},
	} {
		pd, ok := s.GenericPortDomain(tc.uid)
		if pd != tc.pd || ok != tc.ok {
			t.Errorf("_UID %d: domain %d %v, want %d %v", tc.uid, pd, ok, tc.pd, tc.ok)
		}
	}
	for name, tab := range map[string][]byte{
		"truncated":        acpiHdr("SRAT", 3, sratMem(0, true), 12)[:60],
		"zero length":      acpiHdr("SRAT", 3, []byte{1, 0, 0, 0}, 12),
		"short memory":     acpiHdr("SRAT", 3, sratMem(0, true)[:39], 12),
		"short port":       acpiHdr("SRAT", 3, cat([]byte{6, 20}, make([]byte, 18)), 12),
		"past the end":     acpiHdr("SRAT", 3, []byte{1, 40, 0}, 12),
		"a stray byte":     acpiHdr("SRAT", 3, []byte{1}, 12),
		"wrong signature":  acpiHdr("HMAT", 3, nil, 12),
		"header too short": acpiHdr("SRAT", 3, nil, 0),
	} {
		if s, err := ParseSRAT(tab); err == nil || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %+v, %v; want an ErrMalformed error", name, s, err)
		}
	}
}

func TestParseUID(t *testing.T) {
	for in, want := range map[string]uint32{"0": 0, "1\n": 1, "0x10": 16, "017": 15, "4294967295": 0xffffffff} {
		if got, err := ParseUID(in); err != nil || got != want {
			t.Errorf("ParseUID(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "PCI0", "4294967296", "-1", "+1", "1_0", "0b1", "0o7", " 1"} {
		if _, err := ParseUID(bad); err == nil {
			t.Errorf("ParseUID(%q) accepted", bad)
		}
	}
}

func FuzzParseHMAT(f *testing.F) {
	f.Add(acpiHdr("HMAT", 2, p2pStruct(3, HMATAccessLatency, 1000, []uint32{11, 22}, []uint32{33, 44}, []uint16{5, 10, 0xffff, 20}), 4))
	f.Add(acpiHdr("HMAT", 1, cat(otherStruct(1, 40), otherStruct(9, 8)), 4))
	f.Add([]byte("HMAT"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHMAT(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		for _, p := range h.P2P {
			if len(p.Entries) != len(p.Initiators)*len(p.Targets) {
				t.Fatalf("%d entries for %dx%d", len(p.Entries), len(p.Initiators), len(p.Targets))
			}
		}
		l := h.Localities()
		for _, p := range h.P2P {
			for _, i := range p.Initiators {
				for _, j := range p.Targets {
					if _, err := l.Coordinates(i, j, NonUIO); errors.Is(err, ErrNoEntry) {
						t.Fatalf("%d -> %d: described but not found", i, j)
					}
				}
			}
		}
	})
}

func FuzzParseSRAT(f *testing.F) {
	f.Add(acpiHdr("SRAT", 3, cat(sratMem(0, true), sratPort(10, 0, "PNP0A08", 1, true)), 12), uint32(1))
	f.Add([]byte("SRAT"), uint32(0))
	f.Fuzz(func(t *testing.T, data []byte, uid uint32) {
		s, err := ParseSRAT(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		if pd, ok := s.GenericPortDomain(uid); ok {
			found := false
			for _, m := range s.Memory {
				found = found || m.Enabled && m.ProximityDomain == pd
			}
			for _, g := range s.GenericPorts {
				found = found || g.Enabled && g.ProximityDomain == pd
			}
			if !found {
				t.Fatalf("_UID %d gave domain %d, which no enabled structure names", uid, pd)
			}
		}
	})
}

func FuzzParseUID(f *testing.F) {
	f.Add("0x10")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseUID(s) })
}
