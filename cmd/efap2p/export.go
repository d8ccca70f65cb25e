// SPDX-License-Identifier: MIT

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/efap2p/efap2p/answer"
	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/p2p"
)

func init() {
	register(&command{name: "export", summary: "write the machine's verdicts to a topology file (run once as root)", run: runExport})
}

const exportUsage = `Usage: efap2p export [--sysfs DIR] [--format json|nccl] [--peer-blocked NIC]... [--boot] [-o FILE]

Work out the verdict of every accelerator with every NIC and every other
accelerator, and write them as a topology file (--format json, the default;
docs/topology-file.md) that every process then reads instead of reading
config space, or as an NCCL topology XML (--format nccl) for NCCL_TOPO_FILE.

The topology file records the machine it describes (the kernel release, its
PCI functions with their IDs; with --boot, this boot's ID): readers ignore a
file that does not describe their machine. With -o, the folder is created,
FILE and its index FILE.idx (what libefap2p answers from without loading its
Go core) are written atomically, mode 0644. Processes read, without
configuration, ` + p2p.BootTopologyFile + ` (written at every boot
by efap2p-topology.service, 'efap2p export --boot'), else the operator's
` + p2p.OperatorTopologyFile + `; EFAP2P_TOPOLOGY names another.

--boot writes the boot-time file (to ` + p2p.BootTopologyFile + ` unless -o
says otherwise): bound to this boot, and carrying the facts of the
operator's file (its blocked NICs, its extra accelerators, its pairs) when
that file describes this machine.

The NCCL topology holds the machine's GPUs (class 03) and the NICs with an
RDMA device, shaped as NCCL reads sysfs (a PCIe switch is one <pci> node),
so that NCCL's path type for every GPU-NIC pair is efap2p's (NODE is PHB for
NCCL). gdr="1" marks a NIC that gets true P2P DMA into an accelerator and a
GPU that such a NIC reaches; a comment at the top says which
NCCL_NET_GDR_LEVEL makes NCCL use the pairs the oracle allows through host
bridges, and which pairs it would try although the oracle refuses them.

Run it once as root: without CAP_SYS_ADMIN config space past 64 bytes is
hidden, ACS is unknown, and export refuses to write uncertain verdicts
unless --force is given.

--peer-blocked NIC records that a NIC's firmware refuses DMA to every peer,
a fact sysfs cannot show; every pair with that NIC is then refused.

Options:
`

// addrsFlag collects repeated PCI address flags.
type addrsFlag []p2p.Addr

func (a *addrsFlag) String() string { return fmt.Sprint(*a) }

func (a *addrsFlag) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		v, err := p2p.ParseAddr(strings.TrimSpace(part))
		if err != nil {
			return err
		}
		*a = append(*a, v)
	}
	return nil
}

func runExport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	of := oracleFlags{stderr: stderr}
	of.register(fs, false)
	out := fs.String("o", "", "write to `FILE` (and FILE.idx) instead of standard output")
	boot := fs.Bool("boot", false, "write the boot-time topology file: bound to this boot, from the operator's file and sysfs")
	format := fs.String("format", "json", "`FORMAT`: json (topology file) or nccl (NCCL topology XML)")
	force := fs.Bool("force", false, "write even verdicts that are uncertain (config space not readable)")
	var blocked addrsFlag
	fs.Var(&blocked, "peer-blocked", "`NIC` whose firmware blocks peer access (repeatable, or comma-separated)")
	if err := parseFlags(fs, args, exportUsage, stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return usagef("export takes no arguments")
	}
	if *format != "json" && *format != "nccl" {
		return usagef("--format %q: want json or nccl", *format)
	}
	if *boot && *format != "json" {
		return usagef("--boot writes a topology file: it takes --format json")
	}
	defaults := p2p.TopologyFileCandidates()
	of.inputs = []string{}
	if *boot {
		// the operator's file: the last default place
		of.inputs = defaults[len(defaults)-1:]
		if *out == "" {
			*out = defaults[0]
		}
	}
	o, src, err := of.open()
	if err != nil {
		return err
	}
	var data []byte
	switch *format {
	case "json":
		tf, err := exportTopology(o, src, blocked, *force)
		if err != nil {
			return err
		}
		if err := tf.RecordMachine(o, *boot); err != nil {
			return err
		}
		if *out != "" {
			if err := answer.WriteTopology(*out, tf, src, p2p.Options{Warnf: of.warnf(), Kernel: o.Kernel()}); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "efap2p: wrote %s and %s\n", *out, *out+answer.IndexSuffix)
			return nil
		}
		if data, err = tf.Marshal(); err != nil {
			return err
		}
	case "nccl":
		if data, err = exportNCCL(o, src, blocked, *force); err != nil {
			return err
		}
	}
	if *out == "" {
		_, err = stdout.Write(data)
		return err
	}
	if err := answer.WriteFileAtomic(*out, data); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "efap2p: wrote %s\n", *out)
	return nil
}

// facts are what an operator's topology file says beyond its pairs.
type facts struct {
	nics   map[p2p.Addr]p2p.TopoNIC
	accels []p2p.TopoAccelerator
}

// operatorFacts returns the NIC and accelerator facts of the topology file
// the oracle reads (export --boot: the operator's), to carry them into the
// file written; its pairs reach the new file through the oracle's verdicts.
func operatorFacts(o *p2p.Oracle) facts {
	f := facts{nics: map[p2p.Addr]p2p.TopoNIC{}}
	name, _ := o.TopologyFileInUse()
	if name == "" {
		return f
	}
	tf, err := p2p.ReadTopologyFile(name)
	if err != nil {
		return f
	}
	for _, n := range tf.NICs {
		f.nics[n.Addr] = n
	}
	f.accels = tf.Accelerators
	return f
}

// errUncertain is returned when export would write verdicts it cannot vouch for.
var errUncertain = errors.New("some verdicts are uncertain")

// exportTopology works out every accelerator's verdict with every NIC and
// every other accelerator.
func exportTopology(o *p2p.Oracle, src *p2p.Sysfs, blocked []p2p.Addr, force bool) (*p2p.TopologyFile, error) {
	m, err := devices.BuildMatrix(o, src)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	tf := p2p.NewTopologyFile(host)
	operator := operatorFacts(o)
	isNIC := map[p2p.Addr]bool{}
	for _, d := range m.Devices {
		switch d.Kind {
		case "nic":
			isNIC[d.Addr] = true
			tf.NICs = append(tf.NICs, p2p.TopoNIC{Addr: d.Addr, IBDev: d.IBDev})
		case "accelerator":
			tf.Accelerators = append(tf.Accelerators, p2p.TopoAccelerator{Addr: d.Addr, Driver: d.Driver, Vendor: d.Vendor, Device: d.Device})
		}
	}
	for i := range tf.NICs {
		if n, ok := operator.nics[tf.NICs[i].Addr]; ok && n.PeerAccessBlocked {
			tf.NICs[i].PeerAccessBlocked, tf.NICs[i].Note = true, n.Note
		}
	}
	for _, a := range operator.accels {
		if !slices.ContainsFunc(tf.Accelerators, func(x p2p.TopoAccelerator) bool { return x.Addr == a.Addr }) {
			tf.Accelerators = append(tf.Accelerators, a)
		}
	}
	for _, b := range blocked {
		if !isNIC[b] {
			return nil, usagef("--peer-blocked %s: not a NIC of this machine", b)
		}
		for i := range tf.NICs {
			if tf.NICs[i].Addr == b {
				tf.NICs[i].PeerAccessBlocked = true
				tf.NICs[i].Note = "recorded by efap2p export --peer-blocked"
			}
		}
	}
	var uncertain []string
	for _, p := range m.Devices {
		if p.Kind != "accelerator" {
			continue
		}
		for _, c := range m.Devices {
			if c.Addr == p.Addr {
				continue
			}
			v, err := o.Verdict(p.Addr, c.Addr)
			if err != nil {
				return nil, err
			}
			if !v.Certain {
				uncertain = append(uncertain, p.Addr.String()+" -> "+c.Addr.String())
			}
			tf.Pairs = append(tf.Pairs, p2p.TopoPair{
				Provider: v.Provider, Client: v.Client, MapType: v.MapType, Distance: v.Distance, Path: v.Path,
				Policy: v.Policy, Outcome: v.Outcome, BandwidthMBs: v.BandwidthMBs(), LatencyNs: v.LatencyNs(),
				ACSRedirect: v.ACSRedirect, Reason: v.Reason,
			})
		}
	}
	if len(uncertain) > 0 && !force {
		return nil, fmt.Errorf("%w (%d pairs, e.g. %s): config space is not readable; run export as root, or pass --force", errUncertain, len(uncertain), uncertain[0])
	}
	return tf, nil
}
