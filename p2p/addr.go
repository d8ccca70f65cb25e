// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"strconv"
)

// Addr is a PCI function address: domain, bus, device and function, as the
// kernel names it in sysfs ("0000:4f:00.0"). The zero value is 0000:00:00.0.
type Addr struct {
	Domain   uint32
	Bus      uint8
	Device   uint8 // 0..31
	Function uint8 // 0..7
}

// ErrBadAddr is wrapped by every address parsing error.
var ErrBadAddr = errors.New("not a PCI address")

// ParseAddr parses "DDDD:BB:dd.f" (the sysfs form) or "BB:dd.f" (the lspci
// short form, domain 0). Hex digits may be upper or lower case.
func ParseAddr(s string) (Addr, error) {
	a, ok := parseAddr(s)
	if !ok {
		return Addr{}, fmt.Errorf("%w: %q (want DDDD:BB:DD.F, e.g. 0000:4f:00.0)", ErrBadAddr, s)
	}
	return a, nil
}

// MustParseAddr is ParseAddr for constants in tests and tables; it panics on
// a malformed address.
func MustParseAddr(s string) Addr {
	a, err := ParseAddr(s)
	if err != nil {
		panic(err)
	}
	return a
}

func parseAddr(s string) (Addr, bool) {
	var a Addr
	switch len(s) {
	case 7: // BB:dd.f
	case 12: // DDDD:BB:dd.f
		d, ok := parseHex(s[:4])
		if !ok || s[4] != ':' {
			return a, false
		}
		a.Domain = d
		s = s[5:]
	default:
		// Domains wider than 16 bits (VMD) print as 5 or more digits.
		i := indexByte(s, ':')
		if i < 5 || i > 8 || len(s) != i+8 {
			return a, false
		}
		d, ok := parseHex(s[:i])
		if !ok {
			return a, false
		}
		a.Domain = d
		s = s[i+1:]
	}
	if s[2] != ':' || s[5] != '.' {
		return a, false
	}
	b, ok1 := parseHex(s[0:2])
	dev, ok2 := parseHex(s[3:5])
	fn, ok3 := parseHex(s[6:7])
	if !ok1 || !ok2 || !ok3 || dev > 31 || fn > 7 {
		return a, false
	}
	a.Bus, a.Device, a.Function = uint8(b), uint8(dev), uint8(fn)
	return a, true
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func parseHex(s string) (uint32, bool) {
	if s == "" || len(s) > 8 {
		return 0, false
	}
	var v uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint32(c)
	}
	return v, true
}

// String returns the sysfs form, "0000:4f:00.0".
func (a Addr) String() string {
	var b [22]byte
	return string(a.appendTo(b[:0]))
}

// appendTo appends the sysfs form: every sysfs path the oracle opens is
// made of one, so it is not left to fmt (which cost half the instructions
// of the first answer).
func (a Addr) appendTo(b []byte) []byte {
	b = appendHex(b, a.Domain, 4)
	b = append(b, ':')
	b = appendHex(b, uint32(a.Bus), 2)
	b = append(b, ':')
	b = appendHex(b, uint32(a.Device), 2)
	b = append(b, '.')
	return strconv.AppendUint(b, uint64(a.Function), 10)
}

// appendHex appends v in lower-case hex, at least width digits.
func appendHex(b []byte, v uint32, width int) []byte {
	const digits = "0123456789abcdef"
	n := 1
	for x := v >> 4; x != 0; x >>= 4 {
		n++
	}
	for ; width > n; width-- {
		b = append(b, '0')
	}
	for i := n - 1; i >= 0; i-- {
		b = append(b, digits[v>>(4*uint(i))&0xf])
	}
	return b
}

// Short returns the kernel's log form without the domain when it is 0
// ("4f:00.0"), as pci=disable_acs_redir= accepts it.
func (a Addr) Short() string {
	if a.Domain == 0 {
		return fmt.Sprintf("%02x:%02x.%d", a.Bus, a.Device, a.Function)
	}
	return a.String()
}

// DevFn is the kernel's devfn: device << 3 | function.
func (a Addr) DevFn() uint8 { return a.Device<<3 | a.Function }

// Less orders addresses as the kernel enumerates them: domain, bus, devfn.
func (a Addr) Less(b Addr) bool {
	if a.Domain != b.Domain {
		return a.Domain < b.Domain
	}
	if a.Bus != b.Bus {
		return a.Bus < b.Bus
	}
	return a.DevFn() < b.DevFn()
}

// MarshalText implements encoding.TextMarshaler (the sysfs form).
func (a Addr) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Addr) UnmarshalText(b []byte) error {
	v, err := ParseAddr(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// RootBus names a PCI root bus, "pciDDDD:BB" in sysfs. On Linux every root
// bus has its own host bridge, so two functions share a host bridge exactly
// when they share a root bus.
type RootBus struct {
	Domain uint32
	Bus    uint8
}

// String returns the sysfs directory name, "pci0000:44".
func (r RootBus) String() string {
	var b [16]byte
	out := appendHex(append(b[:0], "pci"...), r.Domain, 4)
	return string(appendHex(append(out, ':'), uint32(r.Bus), 2))
}

// ParseRootBus parses the sysfs directory name "pciDDDD:BB".
func ParseRootBus(s string) (RootBus, bool) {
	if len(s) < 10 || s[:3] != "pci" {
		return RootBus{}, false
	}
	s = s[3:]
	i := indexByte(s, ':')
	if i < 4 || len(s) != i+3 {
		return RootBus{}, false
	}
	d, ok1 := parseHex(s[:i])
	b, ok2 := parseHex(s[i+1:])
	if !ok1 || !ok2 {
		return RootBus{}, false
	}
	return RootBus{Domain: d, Bus: uint8(b)}, true
}
