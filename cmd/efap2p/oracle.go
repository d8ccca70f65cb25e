// SPDX-License-Identifier: MIT

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/efap2p/efap2p/p2p"
)

func init() {
	register(&command{name: "topo", summary: "the matrix of accelerators and NICs, like nvidia-smi topo -m", run: runTopo})
	register(&command{name: "explain", summary: "the verdict for one provider/client pair, and why", run: runExplain})
}

// oracleFlags are the flags of the commands that read a machine.
type oracleFlags struct {
	sysfs    string
	topology string
	kernel   *string // nil: --kernel not given
	json     bool
	stderr   io.Writer
}

func (o *oracleFlags) register(fs *flag.FlagSet, withTopology bool) {
	fs.StringVar(&o.sysfs, "sysfs", "", "sysfs root `DIR` to read (default $SYSFS_PATH, else /sys)")
	fs.Func("kernel", "decide by the p2pdma rules of kernel `RELEASE` (\"6.1.0-28-amd64\", \"latest\" for the newest known, \"p2p-hmat\" with the ACPI HMAT P2P series; default $EFAP2P_KERNEL, else the running kernel's)", func(v string) error {
		o.kernel = &v
		return nil
	})
	if withTopology {
		fs.StringVar(&o.topology, "topology", "", "topology `FILE` written by 'efap2p export' (default $EFAP2P_TOPOLOGY)")
	}
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

// open returns an oracle over the chosen tree; a missing tree is a usage
// error (exit 2) that names it. A topology file that cannot be used is
// reported on stderr and the other sources answer.
func (o *oracleFlags) open() (*p2p.Oracle, *p2p.Sysfs, error) {
	root := o.sysfs
	if root == "" {
		root = p2p.SysfsRoot()
	}
	src, err := p2p.OpenSysfs(root)
	if err != nil {
		return nil, nil, usageError{err}
	}
	opts := p2p.Options{TopologyFile: o.topology}
	if opts.TopologyFile == "" {
		opts.TopologyFile = os.Getenv("EFAP2P_TOPOLOGY")
	}
	switch {
	case o.kernel != nil:
		r, err := p2p.ParseRelease(*o.kernel)
		if err != nil {
			return nil, nil, usagef("--kernel: %w", err)
		}
		opts.Kernel = r
	default:
		r, err := p2p.ReleaseFromEnv()
		if err != nil {
			return nil, nil, usageError{err}
		}
		opts.Kernel = r
	}
	if o.stderr != nil {
		opts.Warnf = func(format string, args ...any) { fmt.Fprintf(o.stderr, "efap2p: warning: "+format+"\n", args...) }
	}
	return p2p.NewOracleWith(p2p.NewTopology(src), opts), src, nil
}

func parseFlags(fs *flag.FlagSet, args []string, usage string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usageError{err}
	}
	return nil
}

const explainUsage = `Usage: efap2p explain [--sysfs DIR] [--topology FILE] [--kernel RELEASE] [--json] PROVIDER CLIENT

The P2P DMA verdict for a DMA from CLIENT (e.g. a NIC) into memory owned by
PROVIDER (e.g. a GPU), by both registration paths: the dma-buf one (the
kernel's map type and distance, then what the driver exporting PROVIDER's
memory does with them: policy and outcome) and, for an EFA NIC, the
peer-memory one (the out-of-tree EFA driver's p2p provider); the kernel
release whose rules decided, the path's bandwidth and latency, the source of
the verdict (topology file, ACPI HMAT, or computed), the reason and the
kernel's own hint. Addresses are PCI addresses as sysfs names them:
0000:4f:00.0 (or 4f:00.0).

Options:
`

func runExplain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	of := oracleFlags{stderr: stderr}
	of.register(fs, true)
	if err := parseFlags(fs, args, explainUsage, stderr); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return usagef("explain needs a PROVIDER and a CLIENT address")
	}
	provider, err := p2p.ParseAddr(fs.Arg(0))
	if err != nil {
		return usagef("provider: %w", err)
	}
	client, err := p2p.ParseAddr(fs.Arg(1))
	if err != nil {
		return usagef("client: %w", err)
	}
	o, src, err := of.open()
	if err != nil {
		return err
	}
	v, err := o.Verdict(provider, client)
	if err != nil {
		if errors.Is(err, p2p.ErrNoFunction) {
			return usageError{err}
		}
		return err
	}
	if of.json {
		return writeJSON(stdout, v)
	}
	t := o.Topology()
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "provider\t%s\n", describe(t, src, provider))
	fmt.Fprintf(w, "client\t%s\n", describe(t, src, client))
	fmt.Fprintf(w, "map type\t%s\n", v.MapType)
	fmt.Fprintf(w, "distance\t%d\n", v.Distance)
	fmt.Fprintf(w, "path\t%s\n", v.Path)
	fmt.Fprintf(w, "rule\t%s\n", v.Rule)
	fmt.Fprintf(w, "policy\t%s\n", v.Policy)
	fmt.Fprintf(w, "outcome\t%s (dma-buf: p2pdma and the exporter's rule)\n", v.Outcome)
	fmt.Fprintf(w, "peer memory\t%s\n", peerMemLine(v.PeerMem))
	fmt.Fprintf(w, "kernel\t%s\n", v.Kernel)
	if bw := v.BandwidthMBs(); bw > 0 {
		fmt.Fprintf(w, "bandwidth\t%d MB/s (narrowest link)\n", bw)
	}
	fmt.Fprintf(w, "latency\t~%d ns (estimate)\n", v.LatencyNs())
	fmt.Fprintf(w, "source\t%s\n", v.Source)
	if v.CommonBridge != nil {
		fmt.Fprintf(w, "common bridge\t%s\n", v.CommonBridge)
	}
	fmt.Fprintf(w, "acs redirect\t%s\n", addrList(v.ACSRedirect))
	if len(v.ACSUnknown) > 0 {
		fmt.Fprintf(w, "acs unknown\t%s\n", addrList(v.ACSUnknown))
	}
	if !v.Certain {
		fmt.Fprintf(w, "certain\tno: something the rule needs could not be read\n")
	}
	w.Flush()
	fmt.Fprintf(stdout, "\n%s\n", wrap(v.Reason, 78))
	if v.Hint != "" {
		fmt.Fprintf(stdout, "\nhint: %s\n", v.Hint)
	}
	return nil
}

// peerMemLine describes the peer-memory path for explain.
func peerMemLine(pm p2p.PeerMem) string {
	switch {
	case !pm.Present && pm.Outcome == p2p.OutcomeUnknown && pm.Provider == "":
		return "unknown (no p2p attribute on the NIC: the in-tree EFA driver registers by dma-buf only)"
	case pm.Provider == "":
		return pm.Outcome.String() + " (the EFA driver has no peer-memory provider)"
	}
	return fmt.Sprintf("%s (provider %q of the out-of-tree EFA driver)", pm.Outcome, pm.Provider)
}

func addrList(as []p2p.Addr) string {
	if len(as) == 0 {
		return "none"
	}
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// describe names a function for people: address, IDs, class and driver.
func describe(t *p2p.Topology, src *p2p.Sysfs, a p2p.Addr) string {
	f, err := t.Function(a)
	if err != nil {
		return a.String()
	}
	at, err := f.Attrs()
	if err != nil {
		return a.String()
	}
	s := fmt.Sprintf("%s  %04x:%04x %s", a, at.Vendor, at.Device, className(at.Class))
	var extra []string
	if at.Driver != "" {
		extra = append(extra, at.Driver)
	}
	if ib := ibdevOf(src, a); ib != "" {
		extra = append(extra, ib)
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// ibdevOf returns the RDMA device name of a NIC function, if it has one.
func ibdevOf(src *p2p.Sysfs, a p2p.Addr) string {
	ents, err := os.ReadDir(filepath.Join(src.Root(), "bus/pci/devices", a.String(), "infiniband"))
	if err != nil || len(ents) == 0 {
		return ""
	}
	return ents[0].Name()
}

func className(class uint32) string {
	switch class >> 8 {
	case 0x0300:
		return "VGA controller"
	case 0x0302:
		return "3D controller"
	case 0x0380:
		return "display controller"
	case 0x1200:
		return "processing accelerator"
	case 0x0200:
		return "Ethernet controller"
	case 0x0207:
		return "InfiniBand controller"
	case 0x0280:
		return "network controller"
	case 0x0604:
		return "PCI bridge"
	case 0x0600:
		return "host bridge"
	case 0x0108:
		return "NVMe controller"
	}
	return fmt.Sprintf("class %06x", class)
}

func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		if n > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

const topoUsage = `Usage: efap2p topo [--sysfs DIR] [--topology FILE] [--kernel RELEASE] [--json | --dot]

The matrix of the machine's accelerators (PCI class 03 display, 12 processing
accelerator) and NICs (class 02), each cell the path class between the two as
NCCL and nvidia-smi name it, marked where P2P is refused (!), bounced through
system memory (~), or refused by the kernel's rule but allowed by the
exporting driver (*). For an accelerator and a NIC, the accelerator is the
provider (it owns the memory) and the NIC the client.

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
	Name     string   `json:"name"`
	Addr     p2p.Addr `json:"addr"`
	Kind     string   `json:"kind"` // "accelerator" or "nic"
	Vendor   string   `json:"vendor"`
	Device   string   `json:"device"`
	Driver   string   `json:"driver,omitempty"`
	NUMANode int      `json:"numa_node"`
	IBDev    string   `json:"ibdev,omitempty"`
}

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
	dot := fs.Bool("dot", false, "print a Graphviz digraph of the PCI paths of accelerators and NICs")
	if err := parseFlags(fs, args, topoUsage, stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return usagef("topo takes no arguments")
	}
	if *dot && of.json {
		return usagef("--dot and --json exclude each other")
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
	}
	printMatrix(stdout, m)
	return nil
}

func buildMatrix(o *p2p.Oracle, src *p2p.Sysfs) (*topoMatrix, error) {
	t := o.Topology()
	all, err := t.Functions()
	if err != nil {
		return nil, err
	}
	var accels, nics []topoDevice
	for _, a := range all {
		f, err := t.Function(a)
		if err != nil {
			return nil, err
		}
		at, err := f.Attrs()
		if err != nil {
			return nil, err
		}
		d := topoDevice{Addr: a, Vendor: fmt.Sprintf("%04x", at.Vendor), Device: fmt.Sprintf("%04x", at.Device), Driver: at.Driver, NUMANode: at.NUMANode}
		switch {
		case at.IsAccelerator():
			d.Kind = "accelerator"
			d.Name = fmt.Sprintf("GPU%d", len(accels))
			if at.Class>>16 == 0x12 {
				d.Name = fmt.Sprintf("ACC%d", len(accels))
			}
			accels = append(accels, d)
		case at.Class>>16 == 0x02:
			d.Kind = "nic"
			d.Name = fmt.Sprintf("NIC%d", len(nics))
			d.IBDev = ibdevOf(src, a)
			nics = append(nics, d)
		}
	}
	m := &topoMatrix{Kernel: o.Kernel(), Devices: append(accels, nics...)}
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

func printMatrix(w io.Writer, m *topoMatrix) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprint(tw, "\t")
	for _, d := range m.Devices {
		fmt.Fprintf(tw, "%s\t", d.Name)
	}
	fmt.Fprintln(tw, "NUMA")
	refused := false
	for i, d := range m.Devices {
		fmt.Fprintf(tw, "%s\t", d.Name)
		for j, c := range m.Matrix[i] {
			cell := c.Path.String()
			switch {
			case i == j:
				cell = "X"
			case c.Outcome == p2p.OutcomeRefused:
				cell += "!"
				refused = true
			case c.Outcome == p2p.OutcomeBounced:
				cell += "~"
				refused = true
			case !c.MapType.Supported():
				cell += "*"
				refused = true
			}
			fmt.Fprintf(tw, "%s\t", cell)
		}
		fmt.Fprintf(tw, "%d\n", d.NUMANode)
	}
	tw.Flush()
	fmt.Fprint(w, `
Legend:
  X    = Self
  SYS  = Path through PCIe and the interconnect between NUMA nodes (e.g. across sockets)
  NODE = Path through PCIe and between host bridges within one NUMA node
  PHB  = Path through PCIe and one PCIe host bridge (typically the CPU)
  PXB  = Path through several PCIe bridges, without a host bridge
  PIX  = Path through at most one PCIe switch (or bridge)
  !    = P2P DMA is refused for this pair
  ~    = allowed, but bounced through system memory by the exporter (amdgpu): not P2P
  *    = the kernel's rule refuses the pair (NOT_SUPPORTED), the exporter (nvidia) allows it
  'efap2p explain PROVIDER CLIENT' says why.
`)
	if !refused {
		fmt.Fprintln(w, "  (no pair is refused on this machine)")
	}
	fmt.Fprintln(w, "\nDevices:")
	names := make([]string, 0, len(m.Devices))
	for _, d := range m.Devices {
		s := fmt.Sprintf("  %-6s %s %s:%s", d.Name+":", d.Addr, d.Vendor, d.Device)
		if d.Driver != "" {
			s += " " + d.Driver
		}
		if d.IBDev != "" {
			s += " " + d.IBDev
		}
		names = append(names, s)
	}
	fmt.Fprintln(w, strings.Join(names, "\n"))
}
