// SPDX-License-Identifier: MIT

package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/p2p"
)

func init() {
	register(&command{name: "topo", summary: "accelerators and NICs, laid out as nvidia-smi topo -m", run: runTopo})
}

const topoUsage = `Usage: efap2p topo [--sysfs DIR] [--topology FILE] [--full | --json | --dot]

The P2P paths between the machine's accelerators and NICs, laid out as
'nvidia-smi topo -m' lays them out: one column per accelerator (GPU0.. for
PCI class 03, ACC0.. for class 12, in PCI address order), one row per
accelerator and per RDMA NIC, then the CPUs and the NUMA node each device is
local to (N/A where sysfs does not say). NICs are numbered as nvidia-smi
numbers them: one per RDMA device, in the natural order of the device names
(mlx5_2 before mlx5_10, rdmap79s0 before rdmap100s0), NIC0 first; the NIC
legend maps them to the RDMA devices.

Each cell is the path class as NCCL and nvidia-smi name it (PIX, PXB, PHB,
NODE, SYS), marked where P2P is refused (!), bounced through system memory
(~), or refused by the kernel's rule but allowed by the exporting driver
(*). A NIC's row reads as that NIC doing DMA into the column's memory. When
the machine has no accelerator, or no RDMA device, one line on standard
error says so instead of a matrix.

--full prints the square matrix of every accelerator and every NIC (a NIC
without an RDMA device too, as NET0..), with each device's address, IDs and
driver. --json prints the same as JSON.

--dot prints a Graphviz digraph instead (render it with
'dot -Tsvg -o topo.svg'): the PCI tree from the root buses (grouped by NUMA
node) down to the accelerators and NICs, switches boxed with their ports,
each accelerator and NIC filled with its best outcome with the other kind
(green true P2P, orange bounced, red refused), a bold green edge from each
NIC to its nearest accelerator with true P2P, and dashed edges for pairs
refused (red) or bounced (orange) although they share an upstream bridge.

Options:
`

func runTopo(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("topo", flag.ContinueOnError)
	of := oracleFlags{stderr: stderr}
	of.register(fs, true)
	of.registerJSON(fs)
	full := fs.Bool("full", false, "print the square matrix of every accelerator and every NIC, and the devices")
	dot := fs.Bool("dot", false, "print a Graphviz digraph of the PCI paths of accelerators and NICs")
	if err := parseFlags(fs, args, topoUsage, stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("takes no arguments")
	}
	views := 0
	for _, b := range []bool{*full, *dot, of.json} {
		if b {
			views++
		}
	}
	if views > 1 {
		return usagef("--full, --json and --dot exclude each other")
	}
	o, src, err := of.open()
	if err != nil {
		return err
	}
	m, err := devices.BuildMatrix(o, src)
	if err != nil {
		return err
	}
	switch {
	case of.json:
		return writeJSON(stdout, m)
	case *dot:
		return writeDOT(stdout, o, src, m)
	case *full:
		if len(m.Devices) == 0 {
			fmt.Fprintln(stderr, "efap2p: no accelerator and no NIC on this machine: no matrix to show")
			return nil
		}
		printFull(stdout, m)
		return nil
	}
	printTopo(stdout, stderr, m)
	return nil
}

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

// printTopo is the default view: accelerators as columns; accelerators and
// RDMA NICs as rows; a legend, the NIC legend and the accelerators'
// addresses. It fits 80 columns on a machine of eight GPUs (p5.48xlarge).
func printTopo(w, stderr io.Writer, m *devices.Matrix) {
	var cols, rows, plain []int
	for i := range m.Devices {
		d := &m.Devices[i]
		switch {
		case d.Kind == "accelerator":
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
		fmt.Fprintln(stderr, "efap2p: no accelerator on this machine (PCI class 03 or 12): no matrix to show ('efap2p topo --full' lists the NICs)")
		return
	case nics == 0 && len(cols) == 1:
		fmt.Fprintf(stderr, "efap2p: no RDMA device on this machine, and one accelerator (%s): no pair to show\n", m.Devices[cols[0]].Addr)
		return
	case nics == 0:
		fmt.Fprintln(stderr, "efap2p: no RDMA device on this machine: only the accelerators are shown")
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

// printFull is the square matrix of every accelerator and NIC.
func printFull(w io.Writer, m *devices.Matrix) {
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
