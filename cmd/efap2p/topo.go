// SPDX-License-Identifier: MIT

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

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

// topoDevice is one row (and column) of the matrix.
type topoDevice struct {
	Name   string   `json:"name"` // GPU0, ACC0, NIC0 (an RDMA NIC), NET0 (a NIC without RDMA device)
	Addr   p2p.Addr `json:"addr"`
	Kind   string   `json:"kind"` // "accelerator" or "nic"
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

// rdma reports a NIC with an RDMA device: the NICs nvidia-smi shows.
func (d *topoDevice) rdma() bool { return d.Kind == "nic" && d.IBDev != "" }

// topoCell is one cell of the matrix.
type topoCell struct {
	Provider     p2p.Addr          `json:"provider"`
	Client       p2p.Addr          `json:"client"`
	Path         p2p.PathClass     `json:"path"`
	MapType      p2p.MapType       `json:"map_type"`
	Distance     int               `json:"distance"`
	Policy       p2p.Policy        `json:"policy"`
	Outcome      p2p.Outcome       `json:"outcome"`
	PeerMem      p2p.Outcome       `json:"peer_mem_outcome"`
	BandwidthMBs int               `json:"bandwidth_mbs"`
	LatencyNs    int               `json:"latency_ns"`
	Source       p2p.VerdictSource `json:"source"`
}

type topoMatrix struct {
	Kernel  p2p.Release  `json:"kernel"`
	Devices []topoDevice `json:"devices"`
	Matrix  [][]topoCell `json:"matrix"`
}

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
	m, err := buildMatrix(o, src)
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

// listDevices names the machine's accelerators and NICs: accelerators in
// PCI address order (GPU0.. for class 03, ACC0.. for class 12), then the
// NICs with an RDMA device in the natural order of its name (NIC0..), then
// the NICs without one in address order (NET0..).
func listDevices(o *p2p.Oracle, src *p2p.Sysfs) ([]topoDevice, error) {
	t := o.Topology()
	all, err := t.Functions()
	if err != nil {
		return nil, err
	}
	rdma := rdmaDevices(src)
	var accels, nics, plain []topoDevice
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
		d := topoDevice{Addr: a, Vendor: fmt.Sprintf("%04x", at.Vendor), Device: fmt.Sprintf("%04x", at.Device),
			Driver: at.Driver, NUMANode: at.NUMANode}
		switch {
		case at.IsAccelerator():
			d.Kind = "accelerator"
			if at.Class>>16 == 0x12 {
				d.Name = fmt.Sprintf("ACC%d", accs)
				accs++
			} else {
				d.Name = fmt.Sprintf("GPU%d", gpus)
				gpus++
			}
		case at.Class>>16 == 0x02:
			d.Kind = "nic"
			if names := rdma[a]; len(names) > 0 {
				d.IBDev = names[0]
			} else {
				d.IBDev = src.RDMAName(a)
			}
		default:
			continue
		}
		d.CPUAffinity = cpuAffinity(src, a)
		switch {
		case d.Kind == "accelerator":
			accels = append(accels, d)
		case d.rdma():
			nics = append(nics, d)
		default:
			plain = append(plain, d)
		}
	}
	sort.SliceStable(nics, func(i, j int) bool { return naturalLess(nics[i].IBDev, nics[j].IBDev) })
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
	names, err := listDir(src.Root() + "/class/infiniband")
	if err != nil {
		return out
	}
	for _, n := range names {
		if a, err := src.RDMADevice(n); err == nil {
			out[a] = append(out[a], n)
		}
	}
	for _, l := range out {
		sort.Slice(l, func(i, j int) bool { return naturalLess(l[i], l[j]) })
	}
	return out
}

// naturalLess orders names as people count: the digit runs compare as
// numbers (mlx5_2 < mlx5_10 < mlx5_bond_0, rdmap99s0 < rdmap100s0).
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		switch {
		case da && db:
			na, ra := digitRun(a)
			nb, rb := digitRun(b)
			ta, tb := strings.TrimLeft(na, "0"), strings.TrimLeft(nb, "0")
			if len(ta) != len(tb) {
				return len(ta) < len(tb)
			}
			if ta != tb {
				return ta < tb
			}
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			a, b = ra, rb
		case a[0] != b[0]:
			return a[0] < b[0]
		default:
			a, b = a[1:], b[1:]
		}
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digitRun(s string) (run, rest string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

func buildMatrix(o *p2p.Oracle, src *p2p.Sysfs) (*topoMatrix, error) {
	devs, err := listDevices(o, src)
	if err != nil {
		return nil, err
	}
	m := &topoMatrix{Kernel: o.Kernel(), Devices: devs}
	for _, r := range m.Devices {
		row := make([]topoCell, len(m.Devices))
		for j, c := range m.Devices {
			provider, client := r.Addr, c.Addr
			if r.Kind == "nic" && c.Kind == "accelerator" {
				provider, client = c.Addr, r.Addr
			}
			v, err := o.Verdict(provider, client)
			if err != nil {
				return nil, err
			}
			row[j] = topoCell{Provider: provider, Client: client, Path: v.Path, MapType: v.MapType, Distance: v.Distance,
				Policy: v.Policy, Outcome: v.Outcome, PeerMem: v.PeerMem.Outcome, BandwidthMBs: v.BandwidthMBs(), LatencyNs: v.LatencyNs(), Source: v.Source}
		}
		m.Matrix = append(m.Matrix, row)
	}
	return m, nil
}

// cellText is a cell as the matrix prints it, and whether it is marked.
func cellText(m *topoMatrix, i, j int) (string, bool) {
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
func affinity(d *topoDevice) (string, string) {
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
func printTopo(w, stderr io.Writer, m *topoMatrix) {
	var cols, rows, plain []int
	for i := range m.Devices {
		d := &m.Devices[i]
		switch {
		case d.Kind == "accelerator":
			cols = append(cols, i)
			rows = append(rows, i)
		case d.rdma():
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
func printFull(w io.Writer, m *topoMatrix) {
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
func deviceLine(d *topoDevice) string {
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

// deviceResolver turns what users type into PCI addresses: an address
// (0000:53:00.0, 53:00.0), a name 'efap2p topo' prints (GPU0, ACC0, NIC3,
// NET0) or an RDMA device (rdmap79s0, mlx5_0).
type deviceResolver struct {
	o    *p2p.Oracle
	src  *p2p.Sysfs
	devs []topoDevice // listed on first need
}

func newDeviceResolver(o *p2p.Oracle, src *p2p.Sysfs) *deviceResolver {
	return &deviceResolver{o: o, src: src}
}

// topoName reports a name of the form 'efap2p topo' gives devices.
func topoName(s string) bool {
	if len(s) < 4 {
		return false
	}
	switch strings.ToUpper(s[:3]) {
	case "GPU", "ACC", "NIC", "NET":
	default:
		return false
	}
	_, err := strconv.ParseUint(s[3:], 10, 16)
	return err == nil
}

func (r *deviceResolver) resolve(s string) (p2p.Addr, error) {
	if a, err := p2p.ParseAddr(s); err == nil {
		return a, nil
	}
	if topoName(s) {
		if r.devs == nil {
			devs, err := listDevices(r.o, r.src)
			if err != nil {
				return p2p.Addr{}, err
			}
			r.devs = devs
		}
		for _, d := range r.devs {
			if strings.EqualFold(d.Name, s) {
				return d.Addr, nil
			}
		}
		if a, err := r.src.RDMADevice(s); err == nil {
			return a, nil
		}
		return p2p.Addr{}, fmt.Errorf("no device %s on this machine (it has %s)", strings.ToUpper(s), nameRanges(r.devs))
	}
	a, err := r.src.RDMADevice(s)
	if err == nil {
		return a, nil
	}
	if errors.Is(err, p2p.ErrNotPCI) {
		return p2p.Addr{}, fmt.Errorf("RDMA device %s is not a PCI function (rxe, siw): no P2P DMA to decide", s)
	}
	return p2p.Addr{}, fmt.Errorf("%q is not a PCI address (0000:53:00.0, 53:00.0), a device as 'efap2p topo' names it (GPU0, NIC3) nor an RDMA device of this machine", s)
}

// nameRanges summarizes device names: "GPU0..GPU7, NIC0..NIC31, NET0".
func nameRanges(devs []topoDevice) string {
	var parts []string
	for i := 0; i < len(devs); {
		prefix := devs[i].Name[:3]
		j := i
		for j+1 < len(devs) && devs[j+1].Name[:3] == prefix {
			j++
		}
		if i == j {
			parts = append(parts, devs[i].Name)
		} else {
			parts = append(parts, devs[i].Name+".."+devs[j].Name)
		}
		i = j + 1
	}
	if len(parts) == 0 {
		return "no accelerator and no NIC"
	}
	return strings.Join(parts, ", ")
}
