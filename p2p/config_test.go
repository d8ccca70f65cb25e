// SPDX-License-Identifier: MIT

package p2p

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
		le.PutUint16(b[6:], cfgStatusCapList)
		b[cfgCapPtr] = 0x50
		b[0x50] = 0x01 // power management first
		b[0x51] = 0x60
		b[0x60] = capIDExp
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
	BytesConfig
	dwords int
}

func (c *countingConfig) ReadDword(off int) (uint32, bool, error) {
	c.dwords++
	return c.BytesConfig.ReadDword(off)
}

func TestReadACS(t *testing.T) {
	tests := []struct {
		name       string
		cfg        []byte
		want       ACS
		redirects  bool
		wantDwords int
	}{
		{"ACS after AER, RR|CR", config(4096, 6, [2]uint16{0x1, 0}, [2]uint16{extCapIDACS, 0x0c}),
			ACS{Known: true, Present: true, Capability: 0x5f, Control: 0x0c}, true, 3},
		{"ACS first, SV|UF only", config(4096, 6, [2]uint16{extCapIDACS, 0x11}),
			ACS{Known: true, Present: true, Capability: 0x5f, Control: 0x11}, false, 2},
		{"EC alone redirects", config(4096, 6, [2]uint16{extCapIDACS, 0x20}),
			ACS{Known: true, Present: true, Capability: 0x5f, Control: 0x20}, true, 2},
		{"no ACS", config(4096, 0, [2]uint16{0x1, 0}, [2]uint16{0x3, 0}), ACS{Known: true}, false, 2},
		{"empty extended space", config(4096, 0), ACS{Known: true}, false, 1},
		{"conventional 256-byte space", config(256, -1), ACS{Known: true}, false, 1},
		{"unprivileged: 64 bytes", config(4096, 6, [2]uint16{extCapIDACS, 0x0c})[:64], ACS{}, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := &countingConfig{BytesConfig: tt.cfg}
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
	off, known, err := FindExtCap(BytesConfig(b), extCapIDACS)
	if off != 0 || !known || err != nil {
		t.Fatalf("self loop: %d %v %v", off, known, err)
	}
	binary.LittleEndian.PutUint32(b[0x100:], 0xffffffff)
	if off, known, _ := FindExtCap(BytesConfig(b), extCapIDACS); off != 0 || !known {
		t.Fatalf("all ones: %d %v", off, known)
	}
}

func TestPCIePortType(t *testing.T) {
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
		got, known, err := PCIePortType(BytesConfig(tt.cfg))
		if got != tt.want || known != tt.known || err != nil {
			t.Errorf("PCIePortType = %d, %v, %v; want %d, %v", got, known, err, tt.want, tt.known)
		}
	}
}

// FuzzConfigWalk feeds arbitrary config spaces to the walkers: they must
// never panic and always end.
func FuzzConfigWalk(f *testing.F) {
	f.Add(config(4096, 6, [2]uint16{0x1, 0}, [2]uint16{extCapIDACS, 0x0c}))
	f.Add(config(256, 4))
	f.Add(config(4096, 6)[:64])
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4096 {
			b = b[:4096]
		}
		cs := &countingConfig{BytesConfig: b}
		acs, err := ReadACS(cs)
		if err != nil {
			t.Fatal(err)
		}
		if acs.Present && !acs.Known {
			t.Fatal("present but unknown")
		}
		if cs.dwords > extCapTTL+2 {
			t.Fatalf("ACS walk read %d dwords", cs.dwords)
		}
		cs.dwords = 0
		if _, _, err := PCIePortType(cs); err != nil {
			t.Fatal(err)
		}
		if cs.dwords > stdCapTTL+3 {
			t.Fatalf("capability walk read %d dwords", cs.dwords)
		}
	})
}

func TestParseCPUModalias(t *testing.T) {
	tests := []struct {
		in      string
		want    CPU
		p2p     bool
		wantErr bool
	}{
		{in: "cpu:type:x86,ven0002fam0019mod0001:feature:,0000,0001,009F\n", want: CPU{Known: true, Arch: "x86", Vendor: 2, Family: 0x19, Model: 1, Hypervisor: true}, p2p: true},
		{in: "cpu:type:x86,ven0002fam0017mod0031:feature:,0000", want: CPU{Known: true, Arch: "x86", Vendor: 2, Family: 0x17, Model: 0x31}, p2p: true},
		{in: "cpu:type:x86,ven0002fam0015mod0002:feature:", want: CPU{Known: true, Arch: "x86", Vendor: 2, Family: 0x15, Model: 2}},
		{in: "cpu:type:x86,ven0009fam0018mod0000:feature:", want: CPU{Known: true, Arch: "x86", Vendor: 9, Family: 0x18}},
		{in: "cpu:type:x86,ven0000fam0006mod0055:feature:,009E,00A0", want: CPU{Known: true, Arch: "x86", Family: 6, Model: 0x55}},
		{in: "cpu:type:aarch64:feature:,0000,0001", want: CPU{Known: true, Arch: "aarch64"}},
		{in: "cpu:type:x86,venXXXX:feature:", wantErr: true},
		{in: "garbage", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseCPUModalias(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want || got.SupportsP2P() != tt.p2p {
			t.Errorf("ParseCPUModalias(%q) = %+v, %v (p2p %v); want %+v, err %v, p2p %v", tt.in, got, err, got.SupportsP2P(), tt.want, tt.wantErr, tt.p2p)
		}
	}
}

func FuzzParseCPUModalias(f *testing.F) {
	f.Add("cpu:type:x86,ven0002fam0019mod0001:feature:,0000,009F")
	f.Add("cpu:type:aarch64:feature:,0000")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCPUModalias(s)
		if err == nil && !c.Known {
			t.Fatal("parsed but unknown")
		}
	})
}

func TestParseDevicePath(t *testing.T) {
	a := MustParseAddr("10000:01:00.0")
	root, chain, err := ParseDevicePath(a, "../../../devices/pci0000:00/0000:00:0e.0/pci10000:00/10000:00:01.0/10000:01:00.0")
	if err != nil || root != (RootBus{0x10000, 0}) || len(chain) != 2 || chain[0] != MustParseAddr("10000:00:01.0") || chain[1] != a {
		t.Fatalf("VMD path: %v %v %v", root, chain, err)
	}
	if _, _, err := ParseDevicePath(a, "../../../devices/platform/foo/10000:01:00.0"); err == nil {
		t.Fatal("a path without a root bus was accepted")
	}
	if _, _, err := ParseDevicePath(a, "../../../devices/pci0000:00/0000:00:01.0"); err == nil {
		t.Fatal("a path to another function was accepted")
	}
}

func FuzzParseDevicePath(f *testing.F) {
	f.Add("../../../devices/pci0000:44/0000:44:01.1/0000:45:00.0")
	f.Fuzz(func(t *testing.T, s string) {
		a := MustParseAddr("0000:45:00.0")
		_, chain, err := ParseDevicePath(a, s)
		if err == nil && chain[len(chain)-1] != a {
			t.Fatal("chain does not end at the function")
		}
	})
}
