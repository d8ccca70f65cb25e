// SPDX-License-Identifier: MIT

// Package kerneltruth holds efap2p's oracle to the verdicts of real
// kernels. `make kernel-truth` boots Debian's kernels under QEMU on PCIe
// topologies made of QEMU's devices; in each boot a test module asks the
// kernel for its p2pdma verdict on every ordered pair of PCI functions
// that are not bridges, `efap2p explain --all` answers on the guest's own
// /sys, and the guest's PCI sysfs is dumped. Each boot becomes a fixture
// (fixtures/*.kt): the kernel's verdicts, its ACS registers and the sysfs
// dump. Replay decides every recorded pair again with the oracle, from
// the dump alone, and reports each disagreement; the package's test
// replays every fixture, so `make test` holds the oracle to the kernel's
// own answers without booting anything.
package kerneltruth

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/efap2p/efap2p/internal/sysfsdump"
	"github.com/efap2p/efap2p/p2p"
)

// FixtureHeader is the first line of a fixture.
const FixtureHeader = "kernel-truth 1"

// Fixture is one boot: which kernel, in which scenario, what the kernel
// answered and what its sysfs looked like.
type Fixture struct {
	// Scenario names the QEMU topology and command line ("intel-iommu").
	Scenario string
	// Build names the kernel build ("6.1", "6.12", "debian-6.1.0-57-amd64").
	Build string
	// Kernel is the booted kernel's release (uname -r).
	Kernel string
	// P2PDMA is whether the kernel was built with CONFIG_PCI_P2PDMA, from
	// its build configuration.
	P2PDMA bool
	// QEMU and Cmdline are how it was booted (the machine and device
	// options; the kernel command line).
	QEMU, Cmdline string
	// Guest is how many pairs efap2p explain in the guest got right, of
	// how many, when the fixture was recorded ("400/400").
	Guest string
	// Report is the test module's report.
	Report *Report
	// Sysfs is the guest's PCI sysfs.
	Sysfs sysfsdump.Tree
}

// ErrFixture is wrapped by every error in reading a fixture.
var ErrFixture = errors.New("malformed kernel-truth fixture")

// maxFixture bounds what ReadFixture reads.
const maxFixture = 16 << 20

// ReadFixtureFile reads a fixture from a file.
func ReadFixtureFile(name string) (*Fixture, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fx, err := ReadFixture(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return fx, nil
}

// ReadFixture reads a fixture: its header lines, then the sections
// "=== kernel" (the module's report) and "=== sysfs" (the dump).
func ReadFixture(r io.Reader) (*Fixture, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFixture+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFixture {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrFixture, maxFixture)
	}
	head, secs, err := splitSections(data)
	if err != nil {
		return nil, err
	}
	fx := &Fixture{}
	lines := strings.Split(strings.TrimRight(head, "\n"), "\n")
	if len(lines) == 0 || lines[0] != FixtureHeader {
		return nil, fmt.Errorf("%w: line 1: want %q", ErrFixture, FixtureHeader)
	}
	seen := map[string]bool{}
	for i, l := range lines[1:] {
		k, v, _ := strings.Cut(l, " ")
		if seen[k] {
			return nil, fmt.Errorf("%w: line %d: %s given twice", ErrFixture, i+2, k)
		}
		seen[k] = true
		switch k {
		case "scenario":
			fx.Scenario = v
		case "build":
			fx.Build = v
		case "kernel":
			fx.Kernel = v
		case "p2pdma":
			switch v {
			case "y":
				fx.P2PDMA = true
			case "n":
			default:
				return nil, fmt.Errorf("%w: line %d: p2pdma %q (want y or n)", ErrFixture, i+2, v)
			}
		case "qemu":
			fx.QEMU = v
		case "cmdline":
			fx.Cmdline = v
		case "guest":
			fx.Guest = v
		default:
			return nil, fmt.Errorf("%w: line %d: unknown field %q", ErrFixture, i+2, k)
		}
	}
	for _, k := range []string{"scenario", "build", "kernel", "p2pdma"} {
		if !seen[k] {
			return nil, fmt.Errorf("%w: no %s line", ErrFixture, k)
		}
	}
	if _, err := p2p.ParseRelease(fx.Kernel); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFixture, err)
	}
	if fx.Report, err = ParseReport(strings.NewReader(secs["kernel"])); err != nil {
		return nil, fmt.Errorf("%w: kernel section: %w", ErrFixture, err)
	}
	if fx.Report.Release != fx.Kernel {
		return nil, fmt.Errorf("%w: the module ran on %s, the fixture says %s", ErrFixture, fx.Report.Release, fx.Kernel)
	}
	if fx.Sysfs, err = sysfsdump.Read(strings.NewReader(secs["sysfs"])); err != nil {
		return nil, fmt.Errorf("%w: sysfs section: %w", ErrFixture, err)
	}
	return fx, nil
}

// splitSections cuts text at "=== NAME" lines: the head before the first,
// and each named section (kernel and sysfs required, nothing else).
func splitSections(data []byte) (string, map[string]string, error) {
	secs := map[string]string{}
	var head strings.Builder
	b := &head
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<10)
	bodies := map[string]*strings.Builder{}
	for sc.Scan() {
		l := sc.Text()
		if name, ok := strings.CutPrefix(l, "=== "); ok {
			if name != "kernel" && name != "sysfs" {
				return "", nil, fmt.Errorf("%w: unknown section %q", ErrFixture, name)
			}
			if bodies[name] != nil {
				return "", nil, fmt.Errorf("%w: section %s given twice", ErrFixture, name)
			}
			b = &strings.Builder{}
			bodies[name] = b
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrFixture, err)
	}
	for _, name := range []string{"kernel", "sysfs"} {
		if bodies[name] == nil {
			return "", nil, fmt.Errorf("%w: no %s section", ErrFixture, name)
		}
		secs[name] = bodies[name].String()
	}
	return head.String(), secs, nil
}

// Write writes the fixture in the format ReadFixture reads.
func (fx *Fixture) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, FixtureHeader)
	p2pdma := "n"
	if fx.P2PDMA {
		p2pdma = "y"
	}
	for _, kv := range [][2]string{{"scenario", fx.Scenario}, {"build", fx.Build}, {"kernel", fx.Kernel},
		{"p2pdma", p2pdma}, {"qemu", fx.QEMU}, {"cmdline", fx.Cmdline}, {"guest", fx.Guest}} {
		if strings.ContainsAny(kv[1], "\n") {
			return fmt.Errorf("kerneltruth: %s has a newline", kv[0])
		}
		if kv[1] != "" {
			fmt.Fprintf(bw, "%s %s\n", kv[0], kv[1])
		}
	}
	fmt.Fprintln(bw, "=== kernel")
	if err := WriteReport(bw, fx.Report); err != nil {
		return err
	}
	fmt.Fprintln(bw, "=== sysfs")
	if err := sysfsdump.WriteTree(fx.Sysfs, bw); err != nil {
		return err
	}
	return bw.Flush()
}

// KernelConfig is the fixture's kernel build configuration as far as the
// oracle needs it, as a /boot/config file would give it.
func (fx *Fixture) KernelConfig() p2p.KernelConfig {
	return p2p.KernelConfigOf(fx.P2PDMA, "the kernel-truth fixture ("+fx.Build+")")
}

// configEntry is the dump's config file of function a, found through its
// bus/pci/devices link as the oracle finds it.
func configEntry(fx *Fixture, a p2p.Addr) *sysfsdump.Entry {
	l := fx.Sysfs["bus/pci/devices/"+a.String()]
	if l == nil || l.Kind != sysfsdump.Symlink {
		return nil
	}
	e := fx.Sysfs[path.Join("bus/pci/devices", l.Target, "config")]
	if e == nil || e.Kind != sysfsdump.Binary {
		return nil
	}
	return e
}
