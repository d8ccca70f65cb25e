// SPDX-License-Identifier: MIT

// Package devices lists a machine's accelerators and NICs as efap2p names
// them, the way nvidia-smi topo -m does (GPU0.., ACC0.., NIC0.. one per
// RDMA device, NET0.. for NICs without one; each kind in PCI order),
// works out the verdict matrix between them (what `efap2p topo --json`
// prints and `efap2p export` writes), and resolves the names people type
// (GPU0, rdmap79s0, 53:00.0) to PCI addresses.
package devices

import (
	"fmt"
	"slices"
	"sort"

	"github.com/efap2p/efap2p/internal/natsort"
	"github.com/efap2p/efap2p/p2p"
)

// Kinds of Device.
const (
	KindAccelerator = "accelerator"
	KindNIC         = "nic"
)

// Device is one accelerator or NIC of the machine: a row (and column) of
// its Matrix.
type Device struct {
	Name   string   `json:"name"` // GPU0, ACC0, NIC0 (an RDMA NIC), NET0 (a NIC without RDMA device)
	Addr   p2p.Addr `json:"addr"`
	Kind   string   `json:"kind"` // KindAccelerator or KindNIC
	Vendor string   `json:"vendor"`
	Device string   `json:"device"`
	Driver string   `json:"driver,omitempty"`
	// NUMANode is the function's numa_node: -1 when sysfs does not say.
	NUMANode int `json:"numa_node"`
	// CPUAffinity is the function's local_cpulist ("0-47,96-143"); empty
	// when sysfs does not say.
	CPUAffinity string `json:"cpu_affinity,omitempty"`
	// IBDev is the NIC's RDMA device (the first in natural order when the
	// function has several).
	IBDev string `json:"ibdev,omitempty"`
}

// RDMA reports a NIC with an RDMA device: the NICs nvidia-smi shows.
func (d *Device) RDMA() bool { return d.Kind == KindNIC && d.IBDev != "" }

// List names the machine's accelerators and NICs, each kind in PCI
// address order (the one order of every listing efap2p prints):
// accelerators (GPU0.. for class 03, ACC0.. for class 12), then the NICs
// with an RDMA device (NIC0..), then the NICs without one (NET0..).
func List(o *p2p.Oracle, src *p2p.Sysfs) ([]Device, error) {
	t := o.Topology()
	all, err := t.Functions()
	if err != nil {
		return nil, err
	}
	all = slices.Clone(all)
	slices.SortStableFunc(all, func(a, b p2p.Addr) int {
		switch {
		case a.Less(b):
			return -1
		case b.Less(a):
			return 1
		}
		return 0
	})
	rdma := rdmaDevices(src)
	var accels, nics, plain []Device
	gpus, accs := 0, 0
	for _, a := range all {
		f, err := t.Function(a)
		if err != nil {
			return nil, err
		}
		at, err := f.Attrs()
		if err != nil {
			return nil, err
		}
		d := Device{Addr: a, Vendor: fmt.Sprintf("%04x", at.Vendor), Device: fmt.Sprintf("%04x", at.Device),
			Driver: at.Driver, NUMANode: at.NUMANode}
		switch {
		case at.IsAccelerator():
			d.Kind = KindAccelerator
			if at.Class>>16 == 0x12 {
				d.Name = fmt.Sprintf("ACC%d", accs)
				accs++
			} else {
				d.Name = fmt.Sprintf("GPU%d", gpus)
				gpus++
			}
		case at.Class>>16 == 0x02:
			d.Kind = KindNIC
			if names := rdma[a]; len(names) > 0 {
				d.IBDev = names[0]
			} else {
				d.IBDev = src.RDMAName(a)
			}
		default:
			continue
		}
		d.CPUAffinity = src.LocalCPUList(a)
		switch {
		case d.Kind == KindAccelerator:
			accels = append(accels, d)
		case d.RDMA():
			nics = append(nics, d)
		default:
			plain = append(plain, d)
		}
	}
	for i := range nics {
		nics[i].Name = fmt.Sprintf("NIC%d", i)
	}
	for i := range plain {
		plain[i].Name = fmt.Sprintf("NET%d", i)
	}
	return append(append(accels, nics...), plain...), nil
}

// rdmaDevices maps each PCI function to its RDMA devices (class/infiniband),
// each list in natural order. RDMA devices that are not PCI functions (rxe,
// siw) have no path to an accelerator and are left out.
func rdmaDevices(src *p2p.Sysfs) map[p2p.Addr][]string {
	out := map[p2p.Addr][]string{}
	devs, err := src.RDMADevices()
	if err != nil {
		return out
	}
	for _, d := range devs {
		out[d.Addr] = append(out[d.Addr], d.Name)
	}
	for _, l := range out {
		sort.Slice(l, func(i, j int) bool { return natsort.Less(l[i], l[j]) })
	}
	return out
}
