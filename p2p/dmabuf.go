// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/efap2p/efap2p/internal/dmabuf"
)

// driverFunctions lists the functions bound to a PCI driver, from
// bus/pci/drivers/<driver> (none for a driver the machine does not have).
func (s *Sysfs) driverFunctions(driver string) ([]Addr, error) {
	if driver == "" || strings.ContainsAny(driver, "/\x00") || driver == "." || driver == ".." {
		return nil, fmt.Errorf("driver name %q", driver)
	}
	s.readdirs.Add(1)
	names, err := readDirNames(filepath.Join(s.root, "bus/pci/drivers", driver))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Addr
	for _, name := range names {
		if a, ok := parseAddr(name); ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// ErrSystemMemory is returned for a dma-buf whose exporter keeps it in host
// memory: there is no peer.
var ErrSystemMemory = errors.New("the dma-buf's exporter keeps it in system memory: no peer device")

// ErrUnknownExporter is returned when no PCI function can be found for a
// dma-buf's exporter.
var ErrUnknownExporter = errors.New("no PCI function of this machine belongs to the dma-buf's exporter")

// exporterCandidates returns the PCI functions that may own a dma-buf from
// the named exporter, in enumeration order. It returns ErrSystemMemory for
// a system-memory exporter and ErrUnknownExporter when no function is
// bound to the exporter's drivers.
func (t *Topology) exporterCandidates(expName string) ([]Addr, error) {
	// bounded: a process handing ever new exporter names must not grow it
	e := remember(t, &t.exporters, expName, maxExporters, func() exporterEntry {
		var e exporterEntry
		e.addrs, e.err = t.findExporterCandidates(expName)
		return e
	})
	return e.addrs, e.err
}

// maxExporters bounds how many exporter names a Topology remembers.
const maxExporters = 256

type exporterEntry struct {
	addrs []Addr
	err   error
}

func (t *Topology) findExporterCandidates(expName string) ([]Addr, error) {
	if dmabuf.SystemMemory(expName) {
		return nil, fmt.Errorf("%w (%s)", ErrSystemMemory, expName)
	}
	df, ok := t.ext.(driverFunctions)
	if !ok {
		return nil, fmt.Errorf("%w (%s): the source cannot list drivers", ErrUnknownExporter, expName)
	}
	var out []Addr
	for _, d := range dmabuf.Drivers(expName) {
		fns, err := df.DriverFunctions(d)
		if err != nil {
			return nil, err
		}
		out = append(out, fns...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w (%s)", ErrUnknownExporter, expName)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out, nil
}

// DmabufDecision is the oracle's answer for a NIC registering a dma-buf
// from an exporter whose exact device is not known: one verdict per device
// the exporter's drivers own.
type DmabufDecision struct {
	Exporter   string
	Candidates []*Verdict // one per candidate device, in enumeration order
	// Best is the most favourable candidate: p2p before bounced before
	// refused, then the nearest.
	Best *Verdict
	// Refuse is true when every candidate is refused: the registration
	// cannot work, whichever device owns the buffer.
	Refuse bool
}

// Dmabuf decides a registration by NIC client of a dma-buf exported by
// expName. It wraps ErrSystemMemory or ErrUnknownExporter when there is no
// peer to judge. The candidates' verdicts are not cached (Compute): a
// driver such as a NIC's own may own thousands of functions, each asked
// about once per NIC.
func (o *Oracle) Dmabuf(client Addr, expName string) (*DmabufDecision, error) {
	cands, err := o.topo.exporterCandidates(expName)
	if err != nil {
		return nil, err
	}
	d := &DmabufDecision{Exporter: expName, Refuse: true}
	for _, a := range cands {
		v, err := o.Compute(a, client)
		if err != nil {
			return nil, err
		}
		d.Candidates = append(d.Candidates, v)
		if v.Outcome != OutcomeRefused {
			d.Refuse = false
		}
		if d.Best == nil || better(v, d.Best) {
			d.Best = v
		}
	}
	return d, nil
}

// better orders verdicts for a dma-buf's candidates.
func better(a, b *Verdict) bool {
	rank := func(o Outcome) int {
		switch o {
		case OutcomeP2P:
			return 0
		case OutcomeBounced:
			return 1
		}
		return 2
	}
	if ra, rb := rank(a.Outcome), rank(b.Outcome); ra != rb {
		return ra < rb
	}
	return a.Distance < b.Distance
}
