// SPDX-License-Identifier: MIT

// Package topoview draws what the oracle says about a machine the way
// efap2p prints it: the matrix of its accelerators and NICs laid out as
// nvidia-smi topo -m lays it out, with its legend (efap2p topo, --full),
// the Graphviz digraph of their PCI paths (efap2p topo --dot), and one
// pair's verdict with its reasons (efap2p explain). The devices and the
// matrix are package devices'.
package topoview

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/p2p"
)

// cellText is a cell as the matrix prints it, and whether it is marked.
func cellText(m *devices.Matrix, i, j int) (string, bool) {
	if i == j {
		return "X", false
	}
	c := m.Matrix[i][j]
	s := c.Path.String()
	switch {
	case c.Outcome == p2p.OutcomeRefused:
		return s + "!", true
	case c.Outcome == p2p.OutcomeBounced:
		return s + "~", true
	case !c.MapType.Supported():
		return s + "*", true
	}
	return s, false
}

// affinity is a device's CPU Affinity and NUMA Affinity, as nvidia-smi
// prints them: N/A where unknown.
func affinity(d *devices.Device) (string, string) {
	cpus, numa := d.CPUAffinity, "N/A"
	if cpus == "" {
		cpus = "N/A"
	}
	if d.NUMANode >= 0 {
		numa = strconv.Itoa(d.NUMANode)
	}
	return cpus, numa
}

// WriteTable writes the default view of efap2p topo: accelerators as
// columns; accelerators and RDMA NICs as rows; a legend, the NIC legend and
// the accelerators' addresses. It fits 80 columns on a machine of eight
// GPUs (p5.48xlarge). Where the machine has no pair to show, it writes
// nothing; note, when not nil, gets one line saying so, and one saying
// that only the accelerators are shown on a machine without RDMA devices.
func WriteTable(w io.Writer, m *devices.Matrix, note func(string)) {
	if note == nil {
		note = func(string) {}
	}
	var cols, rows, plain []int
	for i := range m.Devices {
		d := &m.Devices[i]
		switch {
		case d.Kind == devices.KindAccelerator:
			cols = append(cols, i)
			rows = append(rows, i)
		case d.RDMA():
			rows = append(rows, i)
		default:
			plain = append(plain, i)
		}
	}
	nics := len(rows) - len(cols)
	switch {
	case len(cols) == 0:
		note("no accelerator on this machine (PCI class 03 or 12): no matrix to show ('efap2p topo --full' lists the NICs)")
		return
	case nics == 0 && len(cols) == 1:
		note(fmt.Sprintf("no RDMA device on this machine, and one accelerator (%s): no pair to show", m.Devices[cols[0]].Addr))
		return
	case nics == 0:
		note("no RDMA device on this machine: only the accelerators are shown")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprint(tw, "\t")
	for _, j := range cols {
		fmt.Fprintf(tw, "%s\t", m.Devices[j].Name)
	}
	fmt.Fprintln(tw, "CPU Affinity\tNUMA Affinity")
	marked := false
	for _, i := range rows {
		d := &m.Devices[i]
		fmt.Fprintf(tw, "%s\t", d.Name)
		for _, j := range cols {
			s, mk := cellText(m, i, j)
			marked = marked || mk
			fmt.Fprintf(tw, "%s\t", s)
		}
		cpus, numa := affinity(d)
		fmt.Fprintf(tw, "%s\t%s\n", cpus, numa)
	}
	tw.Flush()
	example := m.Devices[cols[0]].Name + " " + m.Devices[cols[len(cols)-1]].Name
	if nics > 0 {
		example = m.Devices[cols[0]].Name + " " + m.Devices[rows[len(cols)]].Name
	}
	writeTopoLegend(w, marked, example)
	if nics > 0 {
		fmt.Fprint(w, "\nNIC Legend:\n\n")
		for _, i := range rows[len(cols):] {
			fmt.Fprintf(w, "  %s: %s\n", m.Devices[i].Name, m.Devices[i].IBDev)
		}
	}
	fmt.Fprint(w, "\nAccelerators:\n\n")
	for _, j := range cols {
		fmt.Fprintf(w, "  %s\n", deviceLine(&m.Devices[j]))
	}
	if len(plain) > 0 {
		fmt.Fprint(w, "\nNot shown, no RDMA device ('efap2p topo --full' shows them):\n\n")
		for _, i := range plain {
			fmt.Fprintf(w, "  %s\n", deviceLine(&m.Devices[i]))
		}
	}
}

// WriteFull writes efap2p topo --full: the square matrix of every
// accelerator and NIC, a legend and the devices.
func WriteFull(w io.Writer, m *devices.Matrix) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprint(tw, "\t")
	for _, d := range m.Devices {
		fmt.Fprintf(tw, "%s\t", d.Name)
	}
	fmt.Fprintln(tw, "CPU Affinity\tNUMA Affinity")
	marked := false
	for i := range m.Devices {
		d := &m.Devices[i]
		fmt.Fprintf(tw, "%s\t", d.Name)
		for j := range m.Matrix[i] {
			s, mk := cellText(m, i, j)
			marked = marked || mk
			fmt.Fprintf(tw, "%s\t", s)
		}
		cpus, numa := affinity(d)
		fmt.Fprintf(tw, "%s\t%s\n", cpus, numa)
	}
	tw.Flush()
	example := ""
	if len(m.Devices) > 1 {
		example = m.Devices[0].Name + " " + m.Devices[1].Name
	}
	writeTopoLegend(w, marked, example)
	fmt.Fprint(w, "\nDevices:\n\n")
	for i := range m.Devices {
		fmt.Fprintf(w, "  %s\n", deviceLine(&m.Devices[i]))
	}
}

// deviceLine is "GPU0: 0000:53:00.0 10de:2330 nvidia", with the RDMA
// device of a NIC.
func deviceLine(d *devices.Device) string {
	s := fmt.Sprintf("%s: %s %s:%s", d.Name, d.Addr, d.Vendor, d.Device)
	if d.Driver != "" {
		s += " " + d.Driver
	}
	if d.IBDev != "" {
		s += " " + d.IBDev
	}
	return s
}

func writeTopoLegend(w io.Writer, marked bool, example string) {
	fmt.Fprint(w, `
Legend:

  X    = Self
  SYS  = through PCIe and the interconnect between NUMA nodes (across sockets)
  NODE = through PCIe and between PCIe host bridges of one NUMA node
  PHB  = through PCIe and a PCIe host bridge (typically the CPU)
  PXB  = through several PCIe bridges, without a PCIe host bridge
  PIX  = through at most one PCIe switch (or bridge)
  !    = P2P DMA is refused for this pair
  ~    = allowed, but bounced through system memory by the exporter (amdgpu)
  *    = refused by the kernel's rule (NOT_SUPPORTED), allowed by the exporter
`)
	if !marked {
		fmt.Fprintln(w, "  (no pair is refused or bounced on this machine)")
	}
	if example != "" {
		fmt.Fprintf(w, "  'efap2p explain %s' says why a pair gets its verdict.\n", example)
	}
}
