// SPDX-License-Identifier: MIT

package pcicfg

import (
	"encoding/binary"
	"testing"
)

// config builds a config space with a PCIe capability of the given port
// type at 0x40 and the given extended capabilities (id, control) chained
// from 0x100.
func config(size int, portType int, ext ...[2]uint16) []byte {
	b := make([]byte, size)
	le := binary.LittleEndian
	le.PutUint16(b[0:], 0x8086)
	if portType >= 0 {
		le.PutUint16(b[6:], StatusCapList)
		b[CapPtr] = 0x50
		b[0x50] = 0x01 // power management first
		b[0x51] = 0x60
		b[0x60] = CapIDExp
		le.PutUint16(b[0x62:], uint16(portType)<<4|2)
	}
	pos := 0x100
	for i, e := range ext {
		next := 0
		if i+1 < len(ext) {
			next = pos + 0x20
		}
		if pos+8 <= len(b) {
			le.PutUint32(b[pos:], uint32(e[0])|1<<16|uint32(next)<<20)
			le.PutUint32(b[pos+4:], 0x5f|uint32(e[1])<<16)
		}
		pos = next
	}
	return b
}

type countingConfig struct {
	Bytes
	dwords int
}

func (c *countingConfig) ReadDword(off int) (uint32, bool, error) {
	c.dwords++
	return c.Bytes.ReadDword(off)
}

func TestReadACS(t *testing.T) {
	tests := []struct {
		name       string
		cfg        []byte
		want       ACS
		redirects  bool
		wantDwords int
	}{
		{"ACS after AER, RR|CR", config(4096, 6, [2]uint16{0x1, 0}, [2]uint16{ExtCapIDACS, 0x0c}),
			ACS{Known: true, Present: true, Capability: 0x5f, Control: 0x0c}, true, 3},
		{"ACS first, SV|UF only", config(4096, 6, [2]uint16{ExtCapIDACS, 0x11}),
			ACS{Known: true, Present: true, Capability: 0x5f, Control: 0x11}, false, 2},
		{"EC alone redirects", config(4096, 6, [2]uint16{ExtCapIDACS, 0x20}),
			ACS{Known: true, Present: true, Capability: 0x5f, Control: 0x20}, true, 2},
		{"no ACS", config(4096, 0, [2]uint16{0x1, 0}, [2]uint16{0x3, 0}), ACS{Known: true}, false, 2},
		{"empty extended space", config(4096, 0), ACS{Known: true}, false, 1},
		{"conventional 256-byte space", config(256, -1), ACS{Known: true}, false, 1},
		{"unprivileged: 64 bytes", config(4096, 6, [2]uint16{ExtCapIDACS, 0x0c})[:64], ACS{}, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := &countingConfig{Bytes: tt.cfg}
			got, err := ReadACS(cs)
			if err != nil || got != tt.want || got.Redirects() != tt.redirects {
				t.Fatalf("ReadACS = %+v, %v (redirects %v); want %+v (redirects %v)", got, err, got.Redirects(), tt.want, tt.redirects)
			}
			if cs.dwords != tt.wantDwords {
				t.Errorf("read %d dwords, want %d", cs.dwords, tt.wantDwords)
			}
		})
	}
}

func TestExtCapLoopsEnd(t *testing.T) {
	b := make([]byte, 4096)
	// A capability that points at itself: the walk must stop (TTL).
	binary.LittleEndian.PutUint32(b[0x100:], 0x1|1<<16|0x100<<20)
	off, known, err := FindExtCap(Bytes(b), ExtCapIDACS)
	if off != 0 || !known || err != nil {
		t.Fatalf("self loop: %d %v %v", off, known, err)
	}
	binary.LittleEndian.PutUint32(b[0x100:], 0xffffffff)
	if off, known, _ := FindExtCap(Bytes(b), ExtCapIDACS); off != 0 || !known {
		t.Fatalf("all ones: %d %v", off, known)
	}
}

func TestPortType(t *testing.T) {
	for _, tt := range []struct {
		cfg   []byte
		want  int
		known bool
	}{
		{config(4096, 4), 4, true},
		{config(4096, 6), 6, true},
		{config(4096, -1), -1, true},
		{config(4096, 4)[:64], -1, false}, // the capability sits past 64 bytes
	} {
		got, known, err := PortType(Bytes(tt.cfg))
		if got != tt.want || known != tt.known || err != nil {
			t.Errorf("PortType = %d, %v, %v; want %d, %v", got, known, err, tt.want, tt.known)
		}
	}
}

// FuzzConfigWalk feeds arbitrary config spaces to the walkers: they must
// never panic and always end.
func FuzzConfigWalk(f *testing.F) {
	f.Add(config(4096, 6, [2]uint16{0x1, 0}, [2]uint16{ExtCapIDACS, 0x0c}))
	f.Add(config(256, 4))
	f.Add(config(4096, 6)[:64])
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4096 {
			b = b[:4096]
		}
		cs := &countingConfig{Bytes: b}
		acs, err := ReadACS(cs)
		if err != nil {
			t.Fatal(err)
		}
		if acs.Present && !acs.Known {
			t.Fatal("present but unknown")
		}
		if cs.dwords > ExtCapTTL+2 {
			t.Fatalf("ACS walk read %d dwords", cs.dwords)
		}
		cs.dwords = 0
		if _, _, err := PortType(cs); err != nil {
			t.Fatal(err)
		}
		if cs.dwords > StdCapTTL+3 {
			t.Fatalf("capability walk read %d dwords", cs.dwords)
		}
	})
}

func TestPortNumber(t *testing.T) {
	b := config(4096, 6)
	binary.LittleEndian.PutUint32(b[0x60+ExpLinkCap:], 0x07<<24|0x4d)
	if port, ok := PortNumber(Bytes(b)); !ok || port != 7 {
		t.Errorf("PortNumber = %d, %v; want 7", port, ok)
	}
	if _, ok := PortNumber(Bytes(config(4096, -1))); ok {
		t.Error("PortNumber of a function without a PCIe capability")
	}
	if _, ok := PortNumber(Bytes(b[:0x60])); ok {
		t.Error("PortNumber past what is readable")
	}
}

func TestACSBits(t *testing.T) {
	for v, want := range map[uint16]string{0: "none", ACSRequestRedirect | ACSCompletionRedirect: "RR|CR", ACSRedirectMask: "RR|CR|EC", 0x7f: "SV|TB|RR|CR|UF|EC|DT"} {
		if got := ACSBits(v); got != want {
			t.Errorf("ACSBits(%#x) = %q, want %q", v, got, want)
		}
	}
}
