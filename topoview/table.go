// SPDX-License-Identifier: MIT

// Package topoview draws what the oracle says about a machine the way
// efap2p prints it: the matrix of its accelerators and NICs laid out as
// nvidia-smi topo -m lays it out, tab-separated, with its legend (efap2p
// topo, --full), the capability matrix of each NIC with each accelerator
// by registration path (--p2p, as nvidia-smi topo -p2p is to -m), the
// Graphviz digraph of their PCI paths (efap2p topo --dot), and one pair's
// verdict with its reasons (efap2p explain). The devices and the matrix are
// package devices'.
package topoview

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/p2p"
)

// providerIsAccelerator reports whether the pair of row i and column j is
// about an accelerator's memory (BuildMatrix makes the accelerator the
// provider of an accelerator and NIC pair, whichever way it is read).
func providerIsAccelerator(m *devices.Matrix, i, j int) bool {
	p := m.Matrix[i][j].Provider
	for _, k := range [2]int{i, j} {
		if m.Devices[k].Addr == p {
			return m.Devices[k].Kind == devices.KindAccelerator
		}
	}
	return false
}

// mark is the mark topo puts after a pair's path class: what the client
// gets in the accelerator's memory by either registration path ("" for
// true P2P by dma-buf, as the kernel allows it).
func mark(c *devices.Cell) string {
	switch {
	case c.P2P && c.Via == p2p.RegPeerMem:
		return "+"
	case c.P2P && !c.MapType.Supported():
		return "*"
	case c.P2P:
		return ""
	case c.Effective == p2p.OutcomeBounced:
		return "~"
	case c.Effective == p2p.OutcomeRefused:
		return "!"
	}
	return "?"
}

// cellText is a cell of topo's matrix: " X " on the diagonal, as
// nvidia-smi writes it; the path class; marked on a pair with an
// accelerator's memory (mark).
func cellText(m *devices.Matrix, i, j int) string {
	if i == j {
		return " X "
	}
	c := &m.Matrix[i][j]
	if !providerIsAccelerator(m, i, j) {
		return c.Path.String()
	}
	return c.Path.String() + mark(c)
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

// writeMatrix writes the rows and columns of the devices idx as
// nvidia-smi topo -m does: fields separated by tabs, the header's first
// one empty, then each device's cells, its CPU Affinity and NUMA Affinity,
// an empty field and its GPU NUMA ID (N/A: an accelerator's memory is no
// NUMA node of its own that sysfs shows; empty for a NIC). It returns
// whether a cell is marked.
func writeMatrix(w io.Writer, m *devices.Matrix, idx []int) bool {
	var b strings.Builder
	for _, j := range idx {
		b.WriteString("\t" + m.Devices[j].Name)
	}
	b.WriteString("\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n")
	marked := false
	for _, i := range idx {
		d := &m.Devices[i]
		b.WriteString(d.Name)
		for _, j := range idx {
			s := cellText(m, i, j)
			marked = marked || i != j && providerIsAccelerator(m, i, j) && mark(&m.Matrix[i][j]) != ""
			b.WriteString("\t" + s)
		}
		cpus, numa := affinity(d)
		gpuNUMA := ""
		if d.Kind == devices.KindAccelerator {
			gpuNUMA = "N/A"
		}
		fmt.Fprintf(&b, "\t%s\t%s\t\t%s\n", cpus, numa, gpuNUMA)
	}
	io.WriteString(w, b.String())
	return marked
}

// WriteTable writes the default view of efap2p topo, laid out as
// nvidia-smi topo -m: the accelerators, then the NICs with an RDMA device,
// as rows and as columns, then the CPU Affinity, NUMA Affinity and GPU
// NUMA ID columns; the legend, the NIC legend and the accelerators'
// addresses. Where the machine has no pair to show, it writes nothing;
// note, when not nil, gets one line saying so, and one saying that only
// the accelerators are shown on a machine without RDMA devices.
func WriteTable(w io.Writer, m *devices.Matrix, note func(string)) {
	if note == nil {
		note = func(string) {}
	}
	var accels, nics, plain []int
	for i := range m.Devices {
		d := &m.Devices[i]
		switch {
		case d.Kind == devices.KindAccelerator:
			accels = append(accels, i)
		case d.RDMA():
			nics = append(nics, i)
		default:
			plain = append(plain, i)
		}
	}
	switch {
	case len(accels) == 0:
		note("no accelerator on this machine (PCI class 03 or 12): no matrix to show ('efap2p topo --full' lists the NICs)")
		return
	case len(nics) == 0 && len(accels) == 1:
		note(fmt.Sprintf("no RDMA device on this machine, and one accelerator (%s): no pair to show", m.Devices[accels[0]].Addr))
		return
	case len(nics) == 0:
		note("no RDMA device on this machine: only the accelerators are shown")
	}
	marked := writeMatrix(w, m, append(append([]int{}, accels...), nics...))
	example := m.Devices[accels[0]].Name + " " + m.Devices[accels[len(accels)-1]].Name
	if len(nics) > 0 {
		example = m.Devices[accels[0]].Name + " " + m.Devices[nics[0]].Name
	}
	writeTopoLegend(w, marked, example)
	writeNICLegend(w, m, nics)
	fmt.Fprint(w, "\nAccelerators:\n\n")
	for _, j := range accels {
		fmt.Fprintf(w, "  %s\n", deviceLine(&m.Devices[j]))
	}
	if len(plain) > 0 {
		fmt.Fprint(w, "\nNot shown, no RDMA device ('efap2p topo --full' shows them):\n\n")
		for _, i := range plain {
			fmt.Fprintf(w, "  %s\n", deviceLine(&m.Devices[i]))
		}
	}
}

// WriteFull writes efap2p topo --full: the matrix of every accelerator and
// NIC (those without an RDMA device too, as NET0..), laid out as the
// default view, a legend and the devices.
func WriteFull(w io.Writer, m *devices.Matrix) {
	idx := make([]int, len(m.Devices))
	var nics []int
	for i := range idx {
		idx[i] = i
		if m.Devices[i].RDMA() {
			nics = append(nics, i)
		}
	}
	marked := writeMatrix(w, m, idx)
	example := ""
	if len(m.Devices) > 1 {
		example = m.Devices[0].Name + " " + m.Devices[1].Name
	}
	writeTopoLegend(w, marked, example)
	writeNICLegend(w, m, nics)
	fmt.Fprint(w, "\nDevices:\n\n")
	for i := range m.Devices {
		fmt.Fprintf(w, "  %s\n", deviceLine(&m.Devices[i]))
	}
}

// P2PCode is a cell of efap2p topo --p2p: whether the NIC gets true P2P
// into the accelerator's memory, and by which registration path, with "?"
// after it where the answer is uncertain.
func P2PCode(c *devices.Cell) string {
	var s string
	switch {
	case c.Via == p2p.RegDmabuf|p2p.RegPeerMem:
		s = "OK"
	case c.Via == p2p.RegDmabuf && c.PeerMemPath && c.PeerMem == p2p.OutcomeRefused:
		s = "DMA"
	case c.Via == p2p.RegDmabuf:
		s = "OK"
	case c.Via == p2p.RegPeerMem:
		s = "PEER"
	case c.Effective == p2p.OutcomeBounced:
		s = "BNC"
	case c.Effective == p2p.OutcomeRefused:
		s = "NS"
	default:
		s = "U"
	}
	if !c.Certain && s != "U" {
		s += "?"
	}
	return s
}

// WriteP2P writes efap2p topo --p2p, as nvidia-smi topo -p2p is to -m:
// the capability, not the path. A row per NIC with an RDMA device, a
// column per accelerator, tab-separated; each cell says whether the
// row's NIC gets true P2P DMA into the column's memory and by which
// registration path (P2PCode); the legend, and the NIC legend. Where the
// machine has no such pair, it writes nothing and note gets one line.
func WriteP2P(w io.Writer, m *devices.Matrix, note func(string)) {
	if note == nil {
		note = func(string) {}
	}
	var accels, nics []int
	for i := range m.Devices {
		switch d := &m.Devices[i]; {
		case d.Kind == devices.KindAccelerator:
			accels = append(accels, i)
		case d.RDMA():
			nics = append(nics, i)
		}
	}
	if len(accels) == 0 || len(nics) == 0 {
		note("no accelerator and RDMA NIC pair on this machine: no P2P to show")
		return
	}
	var b strings.Builder
	for _, j := range accels {
		b.WriteString("\t" + m.Devices[j].Name)
	}
	b.WriteString("\n")
	for _, i := range nics {
		b.WriteString(m.Devices[i].Name)
		for _, j := range accels {
			b.WriteString("\t" + P2PCode(&m.Matrix[i][j]))
		}
		b.WriteString("\n")
	}
	io.WriteString(w, b.String())
	fmt.Fprintf(w, `
Legend: can the row's NIC DMA straight into the column's memory, and by which
registration path (dma-buf: ibv_reg_dmabuf_mr; peer memory: ibv_reg_mr through
the out-of-tree EFA driver's provider)?

  OK   = yes, by every path the NIC has (dma-buf, and peer memory where it has it)
  DMA  = yes, by dma-buf only: the NIC's peer-memory provider refuses it
  PEER = yes, by peer memory only: dma-buf registration is refused or bounced
  BNC  = no: registration works, but the exporter bounces the DMA through
         system memory
  NS   = no: refused by every path
  U    = unknown: no path could be decided
  ?    = after a code: uncertain, it rests on what could not be read
         (config space without root)
  'efap2p explain %s %s' says why a pair gets its verdict.
`, m.Devices[accels[0]].Name, m.Devices[nics[0]].Name)
	writeNICLegend(w, m, nics)
}

// writeNICLegend maps NIC names to their RDMA devices, as nvidia-smi's NIC
// Legend does, with each one's PCI address beside it.
func writeNICLegend(w io.Writer, m *devices.Matrix, nics []int) {
	if len(nics) == 0 {
		return
	}
	fmt.Fprint(w, "\nNIC Legend:\n\n")
	for _, i := range nics {
		fmt.Fprintf(w, "  %s: %s (%s)\n", m.Devices[i].Name, m.Devices[i].IBDev, m.Devices[i].Addr)
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
  NV#  = never shown: efap2p reads the PCI tree, where NVLink and NVSwitch do
         not appear; GPUs that nvidia-smi shows as NV# are shown by their PCIe
         path here, which NCCL takes only when NVLink is not there

Marks on a pair with an accelerator's memory (efap2p's; a NIC's row is that
NIC doing DMA into the column's memory): can it DMA straight into it, by
either registration path ('efap2p topo --p2p' shows each)? Unmarked: yes, by
dma-buf, as the kernel's p2pdma rule allows it.

  +    = yes, by the out-of-tree EFA driver's peer memory only (dma-buf
         registration is refused or bounced)
  *    = yes, although the kernel's p2pdma rule refuses the mapping: the
         exporting driver (NVIDIA's, Neuron's) does not ask it
  ~    = no: registration works, but the exporter bounces the DMA through
         system memory
  !    = no: refused by every registration path
  ?    = unknown: no registration path could be decided
`)
	if !marked {
		fmt.Fprintln(w, "  (no pair is marked on this machine)")
	}
	if example != "" {
		fmt.Fprintf(w, "  'efap2p explain %s' says why a pair gets its verdict.\n", example)
	}
}
