// SPDX-License-Identifier: MIT

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/efap2p/efap2p/internal/textwrap"
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
	kconfig  string  // --kernel-config
	json     bool
	stderr   io.Writer
	// inputs, when not nil, are the topology files to read instead of the
	// default places (export reads only the operator's file, and only
	// with --boot).
	inputs []string
}

func (o *oracleFlags) register(fs *flag.FlagSet, withTopology bool) {
	fs.StringVar(&o.sysfs, "sysfs", "", "sysfs root `DIR` to read (default $SYSFS_PATH, else /sys)")
	fs.Func("kernel", "decide by the p2pdma rules of kernel `RELEASE` (\"6.1.0-28-amd64\", \"latest\" for the newest known, \"p2p-hmat\" with the ACPI HMAT P2P series; default $EFAP2P_KERNEL, else the running kernel's)", func(v string) error {
		o.kernel = &v
		return nil
	})
	fs.StringVar(&o.kconfig, "kernel-config", "", "the kernel's build configuration `FILE` (as /boot/config-RELEASE, or /proc/config.gz), for whether it has PCI_P2PDMA (default $"+p2p.KernelConfigEnv+", else what the live system tells: /proc/config.gz, /boot/config-RELEASE, /proc/kallsyms)")
	if withTopology {
		fs.StringVar(&o.topology, "topology", "", "topology `FILE` written by 'efap2p export' (default $EFAP2P_TOPOLOGY, else "+p2p.BootTopologyFile+" or "+p2p.OperatorTopologyFile+")")
	}
}

// registerJSON adds --json, for the commands that print JSON.
func (o *oracleFlags) registerJSON(fs *flag.FlagSet) {
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
		return nil, nil, inputError{err}
	}
	opts := p2p.Options{TopologyFile: o.topology, TopologyFiles: o.inputs}
	if opts.TopologyFile == "" && opts.TopologyFiles == nil {
		opts.TopologyFiles = p2p.TopologyFileCandidates()
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
	if o.kconfig != "" {
		k, err := p2p.ReadKernelConfigFile(o.kconfig)
		if err != nil {
			return nil, nil, inputError{fmt.Errorf("--kernel-config: %w", err)}
		}
		opts.KernelConfig = &k
	} else {
		k, err := p2p.KernelConfigFromEnv()
		if err != nil {
			return nil, nil, inputError{err}
		}
		opts.KernelConfig = k
	}
	opts.Warnf = o.warnf()
	return p2p.NewOracleWith(p2p.NewTopology(src), opts), src, nil
}

// warnf reports what the oracle works around on stderr.
func (o *oracleFlags) warnf() func(string, ...any) {
	if o.stderr == nil {
		return nil
	}
	return func(format string, args ...any) { fmt.Fprintf(o.stderr, "efap2p: warning: "+format+"\n", args...) }
}

const explainUsage = `Usage: efap2p explain [--sysfs DIR] [--topology FILE] [--kernel RELEASE] [--json] PROVIDER CLIENT
       efap2p explain --all [--sysfs DIR] [--topology FILE] [--kernel RELEASE] [--json]

The P2P DMA verdict for a DMA from CLIENT (e.g. a NIC) into memory owned by
PROVIDER (e.g. a GPU), by both registration paths: the dma-buf one (the
kernel's map type and distance, then what the driver exporting PROVIDER's
memory does with them: policy and outcome) and, for an EFA NIC, the
peer-memory one (the out-of-tree EFA driver's p2p provider); the kernel
release whose rules decided, the path's bandwidth and latency, the source of
the verdict (topology file, ACPI HMAT, or computed), the reason and the
kernel's own hint.

PROVIDER and CLIENT are named as 'efap2p topo' names them (GPU0, ACC0, NIC3,
NET0), by RDMA device (rdmap79s0, mlx5_0), or by PCI address as sysfs
writes it (0000:53:00.0, or 53:00.0 in domain 0000):

  efap2p explain GPU0 NIC3
  efap2p explain 53:00.0 rdmap79s0

With --all, every ordered pair of PCI functions that are not PCI-to-PCI
bridges, in address order: the pairs a kernel test module can ask the
kernel about (docs/kernel-releases.md, "Checked against booted kernels").

Options:
`

func runExplain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	of := oracleFlags{stderr: stderr}
	of.register(fs, true)
	of.registerJSON(fs)
	all := fs.Bool("all", false, "every ordered pair of PCI functions that are not bridges, one line each (one JSON object a line with --json)")
	if err := parseFlags(fs, args, explainUsage, stderr); err != nil {
		return err
	}
	if *all {
		if fs.NArg() != 0 {
			return usagef("--all takes no PROVIDER or CLIENT (got %d arguments)", fs.NArg())
		}
		o, _, err := of.open()
		if err != nil {
			return err
		}
		return explainAll(o, of.json, stdout)
	}
	if fs.NArg() != 2 {
		return usagef("needs a PROVIDER and a CLIENT (got %d arguments)", fs.NArg())
	}
	o, src, err := of.open()
	if err != nil {
		return err
	}
	r := newDeviceResolver(o, src)
	provider, err := r.resolve(fs.Arg(0))
	if err != nil {
		return inputError{fmt.Errorf("provider: %w", err)}
	}
	client, err := r.resolve(fs.Arg(1))
	if err != nil {
		return inputError{fmt.Errorf("client: %w", err)}
	}
	v, err := o.Verdict(provider, client)
	if err != nil {
		if errors.Is(err, p2p.ErrNoFunction) {
			return inputError{err}
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
	fmt.Fprintf(w, "p2pdma\t%s\n", o.KernelConfig().Describe())
	if bw := v.BandwidthMBs(); bw > 0 {
		fmt.Fprintf(w, "bandwidth\t%d MB/s (narrowest link)\n", bw)
	}
	fmt.Fprintf(w, "latency\t~%d ns (estimate)\n", v.LatencyNs())
	fmt.Fprintf(w, "source\t%s\n", v.Source)
	if name, why := o.TopologyFileInUse(); name != "" {
		fmt.Fprintf(w, "topology file\t%s (trusted: %s)\n", name, why)
	}
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
	fmt.Fprintf(stdout, "\n%s\n", textwrap.Wrap(v.Reason, 78))
	if v.Hint != "" {
		fmt.Fprintf(stdout, "\nhint: %s\n", v.Hint)
	}
	return nil
}

// explainAll writes the verdict of every ordered pair of functions that are
// not PCI-to-PCI bridges, in address order: the pairs a kernel can be asked
// about (kerneltruth compares them with a booted kernel's).
func explainAll(o *p2p.Oracle, asJSON bool, stdout io.Writer) error {
	t := o.Topology()
	addrs, err := t.Functions()
	if err != nil {
		return inputError{err}
	}
	var ends []p2p.Addr
	for _, a := range addrs {
		f, err := t.Function(a)
		if err != nil {
			return inputError{err}
		}
		at, err := f.Attrs()
		if err != nil {
			return inputError{fmt.Errorf("%s: %w", a, err)}
		}
		if !at.IsBridge() {
			ends = append(ends, a)
		}
	}
	bw := bufio.NewWriter(stdout)
	enc := json.NewEncoder(bw)
	w := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(w, "PROVIDER\tCLIENT\tMAP TYPE\tDISTANCE\tPATH\tRULE\tPOLICY\tOUTCOME")
	}
	for _, p := range ends {
		for _, c := range ends {
			v, err := o.Verdict(p, c)
			if err != nil {
				return err
			}
			if asJSON {
				if err := enc.Encode(v); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", p, c, v.MapType, v.Distance, v.Path, v.Rule, v.Policy, v.Outcome)
		}
	}
	if !asJSON {
		w.Flush()
	}
	return bw.Flush()
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
	if ib := src.RDMAName(a); ib != "" {
		extra = append(extra, ib)
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
