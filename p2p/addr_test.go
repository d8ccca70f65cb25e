// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"testing"
)

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in      string
		want    Addr
		str     string
		wantErr bool
	}{
		{in: "0000:4f:00.0", want: Addr{0, 0x4f, 0, 0}, str: "0000:4f:00.0"},
		{in: "4F:1D.7", want: Addr{0, 0x4f, 0x1d, 7}, str: "0000:4f:1d.7"},
		{in: "0001:00:1f.3", want: Addr{1, 0, 0x1f, 3}, str: "0001:00:1f.3"},
		{in: "10000:01:00.0", want: Addr{0x10000, 1, 0, 0}, str: "10000:01:00.0"},
		{in: "0000:4f:20.0", wantErr: true}, // device > 31
		{in: "0000:4f:00.8", wantErr: true}, // function > 7
		{in: "0000-4f:00.0", wantErr: true},
		{in: "4f:00", wantErr: true},
		{in: "", wantErr: true},
		{in: "zz:00.0", wantErr: true},
		{in: "000:4f:00.0", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseAddr(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrBadAddr) {
				t.Errorf("ParseAddr(%q) = %v, %v; want ErrBadAddr", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want || got.String() != tt.str {
			t.Errorf("ParseAddr(%q) = %v (%s), %v; want %v (%s)", tt.in, got, got, err, tt.want, tt.str)
		}
	}
}

func TestParseRootBus(t *testing.T) {
	for in, want := range map[string]RootBus{"pci0000:44": {0, 0x44}, "pci10000:00": {0x10000, 0}} {
		got, ok := ParseRootBus(in)
		if !ok || got != want || got.String() != in {
			t.Errorf("ParseRootBus(%q) = %v, %v", in, got, ok)
		}
	}
	for _, in := range []string{"pci0000:4", "0000:44", "pcixxxx:44", "pci:44"} {
		if _, ok := ParseRootBus(in); ok {
			t.Errorf("ParseRootBus(%q) accepted", in)
		}
	}
}

func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"0000:4f:00.0", "4f:00.0", "10000:01:00.0", "ffff:ff:1f.7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddr(s)
		if err != nil {
			return
		}
		b, err := ParseAddr(a.String())
		if err != nil || a != b {
			t.Fatalf("round trip %q -> %s -> %v, %v", s, a, b, err)
		}
	})
}

// FuzzAddrString: the sysfs forms are the ones fmt writes, for every
// address and root bus.
func FuzzAddrString(f *testing.F) {
	f.Add(uint32(0), uint8(0x4f), uint8(0), uint8(0))
	f.Add(uint32(0x10000), uint8(0xff), uint8(31), uint8(7))
	f.Add(uint32(0xffffffff), uint8(1), uint8(2), uint8(3))
	f.Fuzz(func(t *testing.T, domain uint32, bus, dev, fn uint8) {
		a := Addr{Domain: domain, Bus: bus, Device: dev % 32, Function: fn % 8}
		if got, want := a.String(), fmt.Sprintf("%04x:%02x:%02x.%d", a.Domain, a.Bus, a.Device, a.Function); got != want {
			t.Fatalf("%#v: %q, want %q", a, got, want)
		}
		r := RootBus{domain, bus}
		if got, want := r.String(), fmt.Sprintf("pci%04x:%02x", r.Domain, r.Bus); got != want {
			t.Fatalf("%#v: %q, want %q", r, got, want)
		}
	})
}
