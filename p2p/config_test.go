// SPDX-License-Identifier: MIT

package p2p

import "testing"

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
		got, err := parseCPUModalias(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want || got.supportsP2P() != tt.p2p {
			t.Errorf("parseCPUModalias(%q) = %+v, %v (p2p %v); want %+v, err %v, p2p %v", tt.in, got, err, got.supportsP2P(), tt.want, tt.wantErr, tt.p2p)
		}
	}
}

func FuzzParseCPUModalias(f *testing.F) {
	f.Add("cpu:type:x86,ven0002fam0019mod0001:feature:,0000,009F")
	f.Add("cpu:type:aarch64:feature:,0000")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCPUModalias(s)
		if err == nil && !c.Known {
			t.Fatal("parsed but unknown")
		}
	})
}

func TestParseDevicePath(t *testing.T) {
	a := MustParseAddr("10000:01:00.0")
	root, chain, _, err := parseDevicePath(a, "../../../devices/pci0000:00/0000:00:0e.0/pci10000:00/10000:00:01.0/10000:01:00.0")
	if err != nil || root != (RootBus{0x10000, 0}) || len(chain) != 2 || chain[0] != MustParseAddr("10000:00:01.0") || chain[1] != a {
		t.Fatalf("VMD path: %v %v %v", root, chain, err)
	}
	if _, _, _, err := parseDevicePath(a, "../../../devices/platform/foo/10000:01:00.0"); err == nil {
		t.Fatal("a path without a root bus was accepted")
	}
	if _, _, _, err := parseDevicePath(a, "../../../devices/pci0000:00/0000:00:01.0"); err == nil {
		t.Fatal("a path to another function was accepted")
	}
}

func FuzzParseDevicePath(f *testing.F) {
	f.Add("../../../devices/pci0000:44/0000:44:01.1/0000:45:00.0")
	f.Fuzz(func(t *testing.T, s string) {
		a := MustParseAddr("0000:45:00.0")
		_, chain, _, err := parseDevicePath(a, s)
		if err == nil && chain[len(chain)-1] != a {
			t.Fatal("chain does not end at the function")
		}
	})
}
