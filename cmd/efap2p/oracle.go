// SPDX-License-Identifier: MIT

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/topoview"
)

func init() {
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
	// export is set for export, which reads only the operator's file,
	// and only with boot (--boot); bootFile is then the boot-time file of
	// the machine read, where export --boot writes by default.
	export, boot bool
	bootFile     string
	// named is the topology file open read by name (--topology, or
	// $EFAP2P_TOPOLOGY for this machine), "" for the default places.
	named string
	// noReasons: the command prints no verdict's reason (p2p.Options).
	noReasons bool
}

func (o *oracleFlags) register(fs *flag.FlagSet, withTopology bool) {
	fs.StringVar(&o.sysfs, "sysfs", "", "sysfs root `DIR` to read (default $SYSFS_PATH, else /sys)")
	fs.Func("kernel", "decide by the p2pdma rules of kernel `RELEASE` (\"6.1.0-28-amd64\", \"latest\" for the newest known, \"p2p-hmat\" with the ACPI HMAT P2P series; default $EFAP2P_KERNEL, else the running kernel's)", func(v string) error {
		o.kernel = &v
		return nil
	})
	fs.StringVar(&o.kconfig, "kernel-config", "", "the kernel's build configuration `FILE` (as /boot/config-RELEASE, or /proc/config.gz), for whether it has PCI_P2PDMA (default $"+p2p.KernelConfigEnv+", else what the live system tells: /proc/config.gz, /boot/config-RELEASE, /proc/kallsyms)")
	if withTopology {
		fs.StringVar(&o.topology, "topology", "", "topology `FILE` written by 'efap2p export' (default $EFAP2P_TOPOLOGY, else "+p2p.BootTopologyFile+" or "+p2p.OperatorTopologyFile+"; with --sysfs DIR, DIR"+p2p.BootTopologyFile+" or DIR"+p2p.OperatorTopologyFile+")")
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
	// the machine's defaults, as the library takes them: a tree given
	// with --sysfs is another machine, with topology files of its own
	topo := p2p.NewTopology(src)
	opts := p2p.Defaults{}.Options(topo)
	places := opts.TopologyFiles
	if opts.TopologyFile != "" {
		places = []string{opts.TopologyFile}
	}
	switch {
	case o.export:
		opts.TopologyFile, opts.TopologyFiles = "", []string{}
		if o.boot {
			opts.TopologyFiles, o.bootFile = places[len(places)-1:], places[0]
		}
	case o.topology != "":
		opts.TopologyFile, opts.TopologyFiles = o.topology, nil
	}
	o.named = opts.TopologyFile
	if o.kernel != nil {
		r, err := p2p.ParseRelease(*o.kernel)
		if err != nil {
			return nil, nil, usagef("--kernel: %w", err)
		}
		opts.Kernel = r
	} else if _, err := p2p.ReleaseFromEnv(); err != nil {
		return nil, nil, usageError{err}
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
	opts.NoReasons = o.noReasons
	return p2p.NewOracleWith(topo, opts), src, nil
}

// warnf reports what the oracle works around on stderr.
func (o *oracleFlags) warnf() func(string, ...any) {
	if o.stderr == nil {
		return nil
	}
	return func(format string, args ...any) { fmt.Fprintf(o.stderr, "efap2p: warning: "+format+"\n", args...) }
}

// explainUsage is explain's --help text (a function: it names an installed
// document's path).
func explainUsage() string {
	return `Usage: efap2p explain [--sysfs DIR] [--topology FILE] [--kernel RELEASE]
                      [--json] PROVIDER CLIENT
       efap2p explain --all [--sysfs DIR] [--topology FILE] [--kernel RELEASE]
                      [--json]

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
kernel about ("Checked against booted kernels" in
` + docFile("kernel-releases.md") + `).

Options:
`
}

func runExplain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	of := oracleFlags{stderr: stderr}
	of.register(fs, true)
	of.registerJSON(fs)
	all := fs.Bool("all", false, "every ordered pair of PCI functions that are not bridges, one line each (one JSON object a line with --json)")
	if err := parseFlags(fs, args, explainUsage(), stderr); err != nil {
		return err
	}
	if *all {
		if fs.NArg() != 0 {
			return usagef("--all takes no PROVIDER or CLIENT (got %s)", arguments(fs.NArg()))
		}
		o, _, err := of.open()
		if err != nil {
			return err
		}
		if err := topoview.WriteAll(stdout, o, of.json); err != nil {
			return inputError{err}
		}
		return nil
	}
	if fs.NArg() != 2 {
		return usagef("needs a PROVIDER and a CLIENT (got %s)", arguments(fs.NArg()))
	}
	o, src, err := of.open()
	if err != nil {
		return err
	}
	r := devices.NewResolver(o, src)
	provider, err := r.Resolve(fs.Arg(0))
	if err != nil {
		return inputError{fmt.Errorf("provider: %w", err)}
	}
	client, err := r.Resolve(fs.Arg(1))
	if err != nil {
		return inputError{fmt.Errorf("client: %w", err)}
	}
	if nicAndAccelerator(o, client, provider) {
		// A NIC does DMA into an accelerator's memory: the accelerator is
		// the provider, whichever way the pair was typed (topo reads it so).
		fmt.Fprintf(stderr, "efap2p: %s is a NIC and %s an accelerator: the accelerator owns the memory, so this is 'efap2p explain %s %s'\n",
			fs.Arg(0), fs.Arg(1), fs.Arg(1), fs.Arg(0))
		provider, client = client, provider
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
	topoview.WriteExplain(stdout, o, src, v)
	return nil
}

// nicAndAccelerator reports whether acc is an accelerator and nic a NIC
// (PCI class 02) of the machine.
func nicAndAccelerator(o *p2p.Oracle, acc, nic p2p.Addr) bool {
	t := o.Topology()
	a, err := t.Function(acc)
	if err != nil {
		return false
	}
	n, err := t.Function(nic)
	if err != nil {
		return false
	}
	aa, err := a.Attrs()
	if err != nil || !aa.IsAccelerator() {
		return false
	}
	na, err := n.Attrs()
	return err == nil && na.Class>>16 == 0x02
}

// arguments says "1 argument", "3 arguments".
func arguments(n int) string {
	if n == 1 {
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", n)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
