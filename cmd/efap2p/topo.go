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
	register(&command{name: "topo", summary: "accelerators and NICs, laid out as nvidia-smi topo -m; --p2p: which registration path gives true P2P", run: runTopo})
}

const topoUsage = `Usage: efap2p topo [--sysfs DIR] [--topology FILE]
                   [--full | --p2p | --json | --dot]

The PCI paths between the machine's accelerators and NICs, laid out as
'nvidia-smi topo -m' lays them out, tab-separated: the accelerators (GPU0..
for PCI class 03, ACC0.. for class 12), then the NICs with an RDMA device
(NIC0.., each kind in PCI address order), as rows and as columns; then CPU
Affinity and NUMA Affinity (the device's local_cpulist and numa_node, N/A
where sysfs does not say) and GPU NUMA ID (N/A). The NIC legend maps each
NIC to its RDMA device (as NCCL and fi_info name it) and PCI address.

Each cell is the path class as NCCL and nvidia-smi name it (PIX, PXB, PHB,
NODE, SYS). NVLink is not in the PCI tree: where nvidia-smi shows NV#, efap2p
shows the PCIe path. On a pair with an accelerator's memory, a mark says
whether the NIC (or the other accelerator) can DMA straight into it by
either registration path: none for true P2P by dma-buf, + by the EFA
driver's peer memory only, * although the kernel's rule refuses it (the
exporter allows), ~ bounced through system memory, ! refused. A NIC's row
reads as that NIC doing DMA into the column's memory. When the machine has
no accelerator, or no RDMA device, one line on standard error says so
instead of a matrix.

--p2p prints the capability instead of the path, as 'nvidia-smi topo -p2p'
does: a row per NIC, a column per accelerator, each cell OK, DMA (dma-buf
only), PEER (peer memory only), BNC (bounced), NS (refused) or U, with ?
where it is uncertain.

--full adds the NICs without an RDMA device (NET0..) and each device's
address, IDs and driver. --json prints the matrix as JSON: each cell with
both registration paths and the answer over both (p2p, p2p_via,
effective_outcome).

--dot prints a Graphviz digraph instead (render it with
'dot -Tsvg -o topo.svg'): the PCI tree from the root buses (grouped by NUMA
node) down to the accelerators and NICs, switches boxed with their ports,
each accelerator and NIC filled with its best answer with the other kind
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
	p2pView := fs.Bool("p2p", false, "print whether each NIC gets true P2P into each accelerator, and by which registration path")
	dot := fs.Bool("dot", false, "print a Graphviz digraph of the PCI paths of accelerators and NICs")
	if err := parseFlags(fs, args, topoUsage, stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("takes no arguments")
	}
	views := 0
	for _, b := range []bool{*full, *dot, of.json, *p2pView} {
		if b {
			views++
		}
	}
	if views > 1 {
		return usagef("--full, --p2p, --json and --dot exclude each other")
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
	case *p2pView:
		topoview.WriteP2P(stdout, m, func(note string) { fmt.Fprintln(stderr, "efap2p: "+note) })
		return nil
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
