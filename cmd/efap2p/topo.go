// SPDX-License-Identifier: MIT

package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/sim"
	"github.com/efap2p/efap2p/topoview"
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
		name, _ := sim.TreeMachine(src.Root())
		return topoview.WriteDOT(stdout, o, src, m, name)
	case *full:
		if len(m.Devices) == 0 {
			fmt.Fprintln(stderr, "efap2p: no accelerator and no NIC on this machine: no matrix to show")
			return nil
		}
		topoview.WriteFull(stdout, m)
		return nil
	}
	topoview.WriteTable(stdout, m, func(note string) { fmt.Fprintln(stderr, "efap2p: "+note) })
	return nil
}
