// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/efap2p/efap2p/answer"
	"github.com/efap2p/efap2p/internal/secenv"
	"github.com/efap2p/efap2p/jobenv"
	"github.com/efap2p/efap2p/nccltopo"
	"github.com/efap2p/efap2p/p2p"
)

func init() {
	register(&command{name: "env", summary: "the environment a job's launcher gives a task, so that libfabric and NCCL take the node's answer (NCCL_TOPO_FILE, FI_HMEM_DISABLE_P2P)", run: runEnv})
}

// envUsage is env's --help text (a function: it names installed paths).
func envUsage() string {
	return `Usage: efap2p env [--gpus LIST] [--nics LIST] [--sysfs DIR] [--topology FILE]
                  [--kernel RELEASE] [--json | --format FORMAT] [-o FILE]

The variables to export for a task's GPUs and EFA NICs (default: every one
of the node), so that the unmodified stacks take the node's answer instead of
finding out by trying:

  NCCL_TOPO_FILE=` + nccltopo.BootFile(p2p.BootTopologyFile) + `
      the NCCL topology 'efap2p export --boot' writes beside the boot-time
      topology file (named only when root wrote it in this boot): NCCL keeps
      its gdr attributes, one per GPU and per NIC;
  FI_HMEM_DISABLE_P2P=1
      only where no GPU-EFA NIC pair of the task gets true P2P DMA, and that
      is certain: libfabric 2.x then skips its CUDA probe. A line on stderr
      says why in the words of 'efap2p check', and what aws-ofi-nccl will do
      (on p4d, p5 and later it refuses to run without GPUDirect RDMA);
  EFAP2P_ENV
      the names of the variables efap2p env set.

A variable the environment already has is kept (the user's), unless an
earlier efap2p env set it (EFAP2P_ENV names it): that one is decided again,
set or unset. The verdicts come from the boot-time topology file (milliseconds);
without one they are computed from sysfs, and stderr says so.

--gpus and --nics take comma-separated lists: GPU indexes in PCI order (as
nvidia-smi numbers them, and CUDA with CUDA_DEVICE_ORDER=PCI_BUS_ID), names
as 'efap2p topo' prints them (GPU3, NIC4), PCI addresses (0000:97:00.0) or
RDMA devices (rdmap79s0). An empty list is none: not applicable.

Formats:
  shell           export and unset lines for sh, each after a comment
                  (eval "$(efap2p env)")
  slurm           a Slurm TaskProlog's output: export and unset lines, and
                  a print line for the task's output where no pair has P2P
  json            the answer, the pairs counted, the variables
  libfabric-conf  FI_NAME=value lines for /etc/libfabric.conf (libfabric
                  1.18 and later; the environment wins), for sites without
                  a launcher hook: nothing where a pair works, and no one's
                  environment counts (-o /etc/libfabric.conf writes it)

The Slurm TaskProlog and the other configurations: ` + docFile("operators.md") + `
What each stack does with them: ` + docFile("consumers.md") + `

Options:
`
}

// listFlag is a comma-separated list; set records that it was given (an
// empty list is then none, not all).
type listFlag struct {
	items []string
	set   bool
}

func (l *listFlag) String() string { return strings.Join(l.items, ",") }

func (l *listFlag) Set(s string) error {
	l.set = true
	if l.items == nil {
		l.items = []string{}
	}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			l.items = append(l.items, part)
		}
	}
	return nil
}

func (l *listFlag) list() []string {
	if !l.set {
		return nil
	}
	return l.items
}

func runEnv(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("env", flag.ContinueOnError)
	of := oracleFlags{stderr: stderr, noReasons: true}
	of.register(fs, true)
	of.registerJSON(fs)
	format := fs.String("format", jobenv.FormatShell, "output `FORMAT`: "+strings.Join(jobenv.Formats, ", "))
	out := fs.String("o", "", "write the lines to `FILE` (atomically, mode 0644) instead of standard output")
	var gpus, nics listFlag
	fs.Var(&gpus, "gpus", "the task's GPUs, a comma-separated `LIST` (default: the node's)")
	fs.Var(&nics, "nics", "the task's EFA NICs, a comma-separated `LIST` (default: the node's)")
	if err := parseFlags(fs, args, envUsage(), stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("env takes no arguments")
	}
	if of.json {
		if *format != jobenv.FormatShell && *format != jobenv.FormatJSON {
			return usagef("--json and --format %s exclude each other", *format)
		}
		*format = jobenv.FormatJSON
	}
	known := false
	for _, f := range jobenv.Formats {
		known = known || f == *format
	}
	if !known {
		return usagef("--format %q: want %s", *format, strings.Join(jobenv.Formats, ", "))
	}
	o, src, err := of.open()
	if err != nil {
		return err
	}
	opts := jobenv.Options{Oracle: o, Sysfs: src, TopologyFile: of.named, Accelerators: gpus.list(), NICs: nics.list(), Lookup: os.LookupEnv}
	if place := p2p.BootTopologyPlace(o.Topology()); place != "" {
		// a path the task's programs find from any folder
		if opts.NCCLTopoFile, err = filepath.Abs(nccltopo.BootFile(place)); err != nil {
			return err
		}
	}
	switch {
	case of.kernel != nil:
		opts.Kernel = *of.kernel
	case secenv.Getenv(p2p.KernelEnv) != "":
		opts.Kernel, opts.KernelSource = secenv.Getenv(p2p.KernelEnv), "environment"
	}
	if *format == jobenv.FormatLibfabricConf {
		// a file for every process of the node: no one's environment
		opts.Lookup = nil
	}
	r, err := jobenv.Run(opts)
	switch {
	case errors.Is(err, jobenv.ErrSelection):
		return inputError{err}
	case err != nil:
		return fmt.Errorf("env: %w", err)
	}
	var buf bytes.Buffer
	if err := r.Write(&buf, *format); err != nil {
		return err
	}
	if *out == "" {
		if _, err := stdout.Write(buf.Bytes()); err != nil {
			return err
		}
	} else if err := answer.WriteFileAtomic(*out, buf.Bytes()); err != nil {
		return fmt.Errorf("env: %w", err)
	}
	if r.Why != "" {
		fmt.Fprintf(stderr, "efap2p env: %s\n", r.Why)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(stderr, "efap2p env: %s\n", n)
	}
	return nil
}
