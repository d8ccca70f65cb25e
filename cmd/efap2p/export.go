// SPDX-License-Identifier: MIT

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/efap2p/efap2p/answer"
	"github.com/efap2p/efap2p/nccltopo"
	"github.com/efap2p/efap2p/p2p"
)

func init() {
	register(&command{name: "export", summary: "write the machine's verdicts to a topology file (run once as root)", run: runExport})
}

// exportUsage is export's --help text (a function: it names the installed
// documents' paths).
func exportUsage() string {
	return `Usage: efap2p export [--sysfs DIR] [--kernel RELEASE] [--format json|nccl]
                     [--peer-blocked NIC]... [--boot] [--force] [--reasons]
                     [-o FILE]

Work out the verdict of every accelerator with every NIC and every other
accelerator, and write them as a topology file (--format json, the default)
that every process then reads instead of reading config space, or as an
NCCL topology XML (--format nccl) for NCCL_TOPO_FILE. The topology file's
format: ` + docFile("topology-file.md") + `.

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
that file describes this machine; and beside it the NCCL topology of the
same verdicts, bound to this boot too (` + nccltopo.BootFileName + `), which
'efap2p env' names in NCCL_TOPO_FILE.

The NCCL topology holds the machine's GPUs (class 03) and the NICs with an
RDMA device, shaped as NCCL reads sysfs (a PCIe switch is one <pci> node),
so that NCCL's path type for every GPU-NIC pair is efap2p's (NODE is PHB for
NCCL). gdr="1" marks a NIC that gets true P2P DMA into an accelerator and a
GPU that such a NIC reaches; a comment at the top says which
NCCL_NET_GDR_LEVEL makes NCCL use the pairs the oracle allows through host
bridges, and which pairs it would try although the oracle refuses them.

Run it once as root: without CAP_SYS_ADMIN config space past 64 bytes is
hidden, ACS is unknown, and export refuses to write verdicts whose map type
it could only assume (the kernel-safe guess, even where the outcome is
certain) unless --force is given.

--peer-blocked NIC records that a NIC's firmware refuses DMA to every peer,
a fact sysfs cannot show; every pair with that NIC is then refused.

--reasons writes each pair's explanation into the file, which then grows
about tenfold; without it, a reader of the file tells a pair by the facts
recorded (outcome, map type, distance, path).

Options:
`
}

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
	force := fs.Bool("force", false, "write even verdicts whose map type is assumed (config space not readable)")
	reasons := fs.Bool("reasons", false, "write each pair's explanation into the topology file")
	var blocked addrsFlag
	fs.Var(&blocked, "peer-blocked", "`NIC` whose firmware blocks peer access (repeatable, or comma-separated)")
	if err := parseFlags(fs, args, exportUsage(), stderr); err != nil {
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
	of.export, of.boot = true, *boot
	of.noReasons = !*reasons
	o, src, err := of.open()
	if err != nil {
		return err
	}
	if *boot && *out == "" {
		*out = of.bootFile
	}
	var data []byte
	switch *format {
	case "json":
		tf, err := answer.Export(o, src, answer.ExportOptions{PeerBlocked: blocked, Force: *force, Boot: *boot, Reasons: *reasons})
		switch {
		case errors.Is(err, answer.ErrNotNIC):
			return usagef("--peer-blocked %w", err)
		case errors.Is(err, answer.ErrUncertain):
			return fmt.Errorf("%w; run export as root, or pass --force", err)
		case err != nil:
			return err
		}
		if *boot {
			if err := writeBootNCCL(o, src, blocked, *force, *out, stderr); err != nil {
				return err
			}
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
