// SPDX-License-Identifier: MIT

package kerneltruth

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/efap2p/efap2p/p2p"
)

// Report is what the test module (module/p2ptruth.c) read from a booted
// kernel through /proc/p2ptruth: every PCI function with its ACS
// registers, and the kernel's verdict for every ordered pair of functions
// that are not bridges.
type Report struct {
	// Release is the kernel's utsname release.
	Release string
	// Probed is false when the kretprobe on calc_map_type_and_dist could
	// not be placed (a kernel built without PCI_P2PDMA has no such
	// function); ProbeErr is the errno register_kretprobe returned.
	Probed   bool
	ProbeErr int
	Funcs    []Func
	Pairs    []KernelPair
}

// Func is one PCI function as the kernel has it.
type Func struct {
	Addr           p2p.Addr
	Vendor, Device uint16
	Class          uint32
	HdrType        uint8
	Bridge         bool      // pci_is_bridge
	Upstream       *p2p.Addr // pci_upstream_bridge, nil on a root bus
	// ACSPos is the ACS extended capability's offset (0: none); ACSCap
	// and ACSCtrl its Capability and Control registers.
	ACSPos          int
	ACSCap, ACSCtrl uint16
}

// KernelPair is the kernel's verdict for one ordered pair.
type KernelPair struct {
	Provider, Client p2p.Addr
	// Ret is what pci_p2pdma_distance_many returned for the one client:
	// the distance, or -1.
	Ret int
	// Probed: the kretprobe saw the one calc_map_type_and_dist call, and
	// MapType and Dist are its result; else they are zero.
	Probed  bool
	MapType p2p.MapType
	Dist    int
}

// ErrReport is wrapped by every error in reading a module report.
var ErrReport = errors.New("malformed kernel report")

// ParseReport reads a module report.
func ParseReport(r io.Reader) (*Report, error) {
	sc := bufio.NewScanner(r)
	rep := &Report{}
	line, ended := 0, false
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrReport, line, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if ended {
			return nil, fail("text after the end line")
		}
		switch {
		case line == 1:
			if len(f) != 3 || f[0] != "kt" || f[1] != "1" {
				return nil, fail("want \"kt 1 RELEASE\", got %.60q", sc.Text())
			}
			rep.Release = f[2]
		case f[0] == "probe" && len(f) == 2 && f[1] == "ok":
			rep.Probed = true
		case f[0] == "probe" && len(f) == 3 && f[1] == "absent":
			n, err := strconv.Atoi(f[2])
			if err != nil {
				return nil, fail("probe errno %q", f[2])
			}
			rep.ProbeErr = n
		case f[0] == "fn":
			fn, err := parseFunc(f)
			if err != nil {
				return nil, fail("%v", err)
			}
			rep.Funcs = append(rep.Funcs, fn)
		case f[0] == "pair":
			p, err := parsePair(f)
			if err != nil {
				return nil, fail("%v", err)
			}
			rep.Pairs = append(rep.Pairs, p)
		case f[0] == "end" && len(f) == 2:
			n, err := strconv.Atoi(f[1])
			if err != nil || n != len(rep.Pairs) {
				return nil, fail("the module counted %s pairs, the report has %d", f[1], len(rep.Pairs))
			}
			ended = true
		default:
			return nil, fail("unknown line %.60q", sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReport, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("%w: empty", ErrReport)
	}
	if !ended {
		return nil, fmt.Errorf("%w: no end line (the report was cut short)", ErrReport)
	}
	return rep, nil
}

// fn BDF VENDOR DEVICE CLASS HDR bridge=B up=BDF|- acs=POS:CAP:CTRL|acs=-
func parseFunc(f []string) (Func, error) {
	var fn Func
	if len(f) != 9 {
		return fn, fmt.Errorf("fn line has %d fields, want 9", len(f))
	}
	var err error
	if fn.Addr, err = p2p.ParseAddr(f[1]); err != nil {
		return fn, err
	}
	hex := func(s string, bits int) (uint64, error) {
		v, err := strconv.ParseUint(s, 16, bits)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not hex", fn.Addr, s)
		}
		return v, nil
	}
	v, err := hex(f[2], 16)
	if err != nil {
		return fn, err
	}
	d, err := hex(f[3], 16)
	if err != nil {
		return fn, err
	}
	c, err := hex(f[4], 24)
	if err != nil {
		return fn, err
	}
	h, err := hex(f[5], 8)
	if err != nil {
		return fn, err
	}
	fn.Vendor, fn.Device, fn.Class, fn.HdrType = uint16(v), uint16(d), uint32(c), uint8(h)
	switch f[6] {
	case "bridge=0":
	case "bridge=1":
		fn.Bridge = true
	default:
		return fn, fmt.Errorf("%s: %q", fn.Addr, f[6])
	}
	up, ok := strings.CutPrefix(f[7], "up=")
	if !ok {
		return fn, fmt.Errorf("%s: %q", fn.Addr, f[7])
	}
	if up != "-" {
		a, err := p2p.ParseAddr(up)
		if err != nil {
			return fn, err
		}
		fn.Upstream = &a
	}
	acs, ok := strings.CutPrefix(f[8], "acs=")
	if !ok {
		return fn, fmt.Errorf("%s: %q", fn.Addr, f[8])
	}
	if acs != "-" {
		parts := strings.Split(acs, ":")
		if len(parts) != 3 {
			return fn, fmt.Errorf("%s: acs=%q", fn.Addr, acs)
		}
		pos, err := hex(parts[0], 12)
		if err != nil {
			return fn, err
		}
		cp, err := hex(parts[1], 16)
		if err != nil {
			return fn, err
		}
		ct, err := hex(parts[2], 16)
		if err != nil {
			return fn, err
		}
		if pos < 0x100 {
			return fn, fmt.Errorf("%s: ACS at %#x, below extended config space", fn.Addr, pos)
		}
		fn.ACSPos, fn.ACSCap, fn.ACSCtrl = int(pos), uint16(cp), uint16(ct)
	}
	return fn, nil
}

// pair PROVIDER CLIENT RET MAP DIST, or pair PROVIDER CLIENT RET - - calls=N
func parsePair(f []string) (KernelPair, error) {
	var p KernelPair
	if len(f) != 6 && len(f) != 7 {
		return p, fmt.Errorf("pair line has %d fields", len(f))
	}
	var err error
	if p.Provider, err = p2p.ParseAddr(f[1]); err != nil {
		return p, err
	}
	if p.Client, err = p2p.ParseAddr(f[2]); err != nil {
		return p, err
	}
	if p.Ret, err = strconv.Atoi(f[3]); err != nil || p.Ret < -1 {
		return p, fmt.Errorf("%s %s: distance %q", p.Provider, p.Client, f[3])
	}
	if f[4] == "-" {
		if f[5] != "-" {
			return p, fmt.Errorf("%s %s: a distance without a map type", p.Provider, p.Client)
		}
		return p, nil
	}
	if len(f) != 6 {
		return p, fmt.Errorf("%s %s: extra fields", p.Provider, p.Client)
	}
	if p.MapType, err = p2p.ParseMapType(f[4]); err != nil {
		return p, err
	}
	if p.Dist, err = strconv.Atoi(f[5]); err != nil || p.Dist < 0 {
		return p, fmt.Errorf("%s %s: probed distance %q", p.Provider, p.Client, f[5])
	}
	p.Probed = true
	return p, nil
}

// WriteReport writes rep in the module's format.
func WriteReport(w io.Writer, rep *Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "kt 1 %s\n", rep.Release)
	if rep.Probed {
		fmt.Fprintln(bw, "probe ok")
	} else {
		fmt.Fprintf(bw, "probe absent %d\n", rep.ProbeErr)
	}
	for _, fn := range rep.Funcs {
		up := "-"
		if fn.Upstream != nil {
			up = fn.Upstream.String()
		}
		b := 0
		if fn.Bridge {
			b = 1
		}
		acs := "-"
		if fn.ACSPos != 0 {
			acs = fmt.Sprintf("%03x:%04x:%04x", fn.ACSPos, fn.ACSCap, fn.ACSCtrl)
		}
		fmt.Fprintf(bw, "fn %s %04x %04x %06x %02x bridge=%d up=%s acs=%s\n", fn.Addr, fn.Vendor, fn.Device, fn.Class, fn.HdrType, b, up, acs)
	}
	for _, p := range rep.Pairs {
		if p.Probed {
			fmt.Fprintf(bw, "pair %s %s %d %s %d\n", p.Provider, p.Client, p.Ret, p.MapType, p.Dist)
		} else {
			fmt.Fprintf(bw, "pair %s %s %d - - calls=0\n", p.Provider, p.Client, p.Ret)
		}
	}
	fmt.Fprintf(bw, "end %d\n", len(rep.Pairs))
	return bw.Flush()
}
