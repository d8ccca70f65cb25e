// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DmabufMagic is the f_type fstatfs reports for a dma-buf fd.
const DmabufMagic = 0x444d4142

// systemMemoryExporters name dma-buf exporters whose buffers live in host
// memory: a NIC registering them is not doing peer-to-peer DMA.
// Provenance: udmabuf, the dma-heap system heap, the CMA heaps (named
// after their area: "reserved" on x86 with cma=, device-tree names
// elsewhere, "default_cma_region" from Linux 6.17), and i915, which always
// migrates an attached buffer to system memory.
var systemMemoryExporters = map[string]bool{
	"udmabuf": true, "system": true, "system-uncached": true, "reserved": true,
	"linux,cma": true, "default-pool": true, "default_cma_region": true, "i915": true,
}

// exporterDrivers maps an exporter name, as /proc/<pid>/fdinfo/<fd> shows
// it (exp_name), to the PCI drivers whose devices may own such a buffer.
// Provenance: nvidia's open modules name their exports "nv_dmabuf" from
// 580.65.06 ("nvidia" before); amdgpu, xe, nouveau and radeon export
// through DRM PRIME, whose name is "drm"; vfio-pci's BAR exports say
// "vfio_pci_core". Any other name is taken as the name of a driver.
var exporterDrivers = map[string][]string{
	"nv_dmabuf":     {"nvidia"},
	"nvidia":        {"nvidia"},
	"drm":           {"amdgpu", "xe", "nouveau", "radeon"},
	"vfio_pci_core": {"vfio-pci"},
}

// ExporterNames returns the dma-buf exporter names the oracle knows, as
// fdinfo shows them: those of device-memory exporters and of system-memory
// ones, sorted. (Any other name is taken as the name of a driver.)
func ExporterNames() []string {
	names := make([]string, 0, len(exporterDrivers)+len(systemMemoryExporters))
	for n := range exporterDrivers {
		names = append(names, n)
	}
	for n := range systemMemoryExporters {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ParseFdinfo returns the exp_name field of a dma-buf's
// /proc/<pid>/fdinfo/<fd> text.
func ParseFdinfo(text string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "exp_name" {
			v = strings.TrimSpace(v)
			return v, v != ""
		}
	}
	return "", false
}

// DriverFunctions is an optional Source interface: the functions bound to
// a driver.
type DriverFunctions interface {
	DriverFunctions(driver string) ([]Addr, error)
}

// DriverFunctions implements DriverFunctions from bus/pci/drivers/<driver>.
func (s *Sysfs) DriverFunctions(driver string) ([]Addr, error) {
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

// ExporterCandidates returns the PCI functions that may own a dma-buf from
// the named exporter, in enumeration order. It returns ErrSystemMemory for
// a system-memory exporter and ErrUnknownExporter when no function is
// bound to the exporter's drivers.
func (t *Topology) ExporterCandidates(expName string) ([]Addr, error) {
	if systemMemoryExporters[expName] {
		return nil, fmt.Errorf("%w (%s)", ErrSystemMemory, expName)
	}
	df, ok := t.src.(DriverFunctions)
	if !ok {
		return nil, fmt.Errorf("%w (%s): the source cannot list drivers", ErrUnknownExporter, expName)
	}
	drivers, ok := exporterDrivers[expName]
	if !ok {
		drivers = []string{expName}
	}
	var out []Addr
	for _, d := range drivers {
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
// peer to judge.
func (o *Oracle) Dmabuf(client Addr, expName string) (*DmabufDecision, error) {
	cands, err := o.topo.ExporterCandidates(expName)
	if err != nil {
		return nil, err
	}
	d := &DmabufDecision{Exporter: expName, Refuse: true}
	for _, a := range cands {
		v, err := o.Verdict(a, client)
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
