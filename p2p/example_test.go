// SPDX-License-Identifier: MIT

package p2p_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// The examples read machines of package models: p5.48xlarge (8 H100s, each in
// a PCIe switch with four EFA NICs, two sockets) written as a sysfs tree,
// as on the host the tree would be /sys (p2p.SysfsRoot()), or held in
// memory.

// writeTree writes a built-in machine model as a sysfs tree and returns
// its root; the caller removes it.
func writeTree(name string) string {
	m, err := models.Builtin(name)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "efap2p-example-")
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		log.Fatal(err)
	}
	return dir
}

// Can the EFA NIC 4f:00.0 DMA straight into the memory of the H100 at
// 53:00.0, in its own PCIe switch, and into the one at ca:00.0 on the
// other socket? The kernel maps the first by bus address and the second
// through the host bridges (AMD Zen: the CPU allows it); NVIDIA's exporter
// has the last word, and allows both in this VM. On a host the tree is
// p2p.SysfsRoot() and Options.Kernel is left zero (the running kernel's
// rules); the example fixes both so that its output holds.
func Example() {
	root := writeTree("p5.48xlarge")
	defer os.RemoveAll(root)

	src, err := p2p.OpenSysfs(root)
	if err != nil {
		log.Fatal(err)
	}
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease("6.8.0-1015-aws")})

	nic := p2p.MustParseAddr("0000:4f:00.0")
	for _, gpu := range []string{"0000:53:00.0", "0000:ca:00.0"} {
		v, err := o.Verdict(p2p.MustParseAddr(gpu), nic)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v.Provider, v.MapType, v.Distance, v.Path, v.Policy, v.Outcome, v.P2P())
	}
	// Output:
	// 0000:53:00.0 BUS_ADDR 4 PIX nvidia p2p true
	// 0000:ca:00.0 THRU_HOST_BRIDGE 8 SYS nvidia p2p true
}

// One answer over both ways of registering the GPU's memory. On a Grace
// host whose chipset NVIDIA's driver flags, the GPU's dma-buf is refused
// to the EFA NIC behind another host bridge (Outcome is the dma-buf
// path's), while the out-of-tree EFA driver's peer-memory provider
// registers it by address: the NIC gets true P2P, by peer memory only.
func ExampleVerdict_Effective() {
	root := writeTree("arm64-grace-peermem")
	defer os.RemoveAll(root)

	src, err := p2p.OpenSysfs(root)
	if err != nil {
		log.Fatal(err)
	}
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease("6.8.0-1021-nvidia-64k")})
	v, err := o.Verdict(p2p.MustParseAddr("0000:01:00.0"), p2p.MustParseAddr("0001:01:00.0"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("dma-buf:", v.Outcome, "peer memory:", v.PeerMem.Outcome)
	fmt.Println("the NIC gets:", v.Effective(), "via", v.Via())
	// Output:
	// dma-buf: refused peer memory: p2p
	// the NIC gets: p2p via peer-memory
}

// A machine model held in memory is a Source too: no sysfs tree needed.
func ExampleNewTopology() {
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		log.Fatal(err)
	}
	topo := p2p.NewTopology(m.Source())
	accels, err := topo.Accelerators()
	if err != nil {
		log.Fatal(err)
	}
	f := accels[0]
	at, err := f.Attrs()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d accelerators; the first, %s (%04x:%04x, %s), is %d bridges below root bus %s\n",
		len(accels), f.Addr, at.Vendor, at.Device, at.Driver, f.Depth, f.Root)
	// Output:
	// 8 accelerators; the first, 0000:53:00.0 (10de:2330, nvidia), is 3 bridges below root bus pci0000:44
}

// The P2P_DMA capability bit: does the NIC get true P2P DMA into any
// accelerator of the machine? The nearest ones are asked first.
func ExampleOracle_ReachesAccelerator() {
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		log.Fatal(err)
	}
	o := p2p.NewOracleWith(p2p.NewTopology(m.Source()), p2p.Options{Kernel: m.KernelRelease()})
	ok, v, err := o.ReachesAccelerator(p2p.MustParseAddr("0000:c6:00.0"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ok, "through", v.Provider, v.Path)
	// Output:
	// true through 0000:ca:00.0 PIX
}

// The same pair decided by the rules of three kernel releases: 8086:09a2
// host bridges (Ice Lake) joined the whitelist in Linux 5.18; the GPU's
// exporter, xe, keeps a buffer the EFA pins in VRAM only from 6.19.
func ExampleOptions_kernel() {
	m, err := models.Builtin("intel-icelake-2rootbus")
	if err != nil {
		log.Fatal(err)
	}
	gpu, nic := p2p.MustParseAddr("0000:19:00.0"), p2p.MustParseAddr("0000:32:00.0")
	for _, rel := range []string{"5.15.0-105-generic", "6.1.0-28-amd64", "6.19.2"} {
		o := p2p.NewOracleWith(p2p.NewTopology(m.Source()), p2p.Options{Kernel: p2p.MustParseRelease(rel)})
		v, err := o.Verdict(gpu, nic)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v.Kernel, v.MapType, v.Rule, v.Outcome)
	}
	// Output:
	// 5.15.0-105-generic NOT_SUPPORTED host-bridge-not-whitelisted bounced
	// 6.1.0-28-amd64 THRU_HOST_BRIDGE host-bridge-whitelist bounced
	// 6.19.2 THRU_HOST_BRIDGE host-bridge-whitelist p2p
}

// A dma-buf names its exporter, not its device: every GPU the exporter's
// driver owns is a candidate, and the most favourable one is chosen.
func ExampleOracle_Dmabuf() {
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		log.Fatal(err)
	}
	o := p2p.NewOracleWith(p2p.NewTopology(m.Source()), p2p.Options{Kernel: m.KernelRelease()})
	d, err := o.Dmabuf(p2p.MustParseAddr("0000:4f:00.0"), "nv_dmabuf")
	if err != nil {
		log.Fatal(err) // p2p.ErrSystemMemory for udmabuf, a heap, ...
	}
	fmt.Println(len(d.Candidates), "candidates; best", d.Best.Provider, d.Best.Outcome, "; refuse:", d.Refuse)
	// Output:
	// 8 candidates; best 0000:53:00.0 p2p ; refuse: false
}

// The oracle's verdicts are shared with its cache; a clone is the
// caller's to change.
func ExampleVerdict_Clone() {
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		log.Fatal(err)
	}
	o := p2p.NewOracleWith(p2p.NewTopology(m.Source()), p2p.Options{Kernel: m.KernelRelease()})
	gpu, nic := p2p.MustParseAddr("0000:53:00.0"), p2p.MustParseAddr("0000:4f:00.0")
	v, err := o.Verdict(gpu, nic)
	if err != nil {
		log.Fatal(err)
	}
	mine := v.Clone()
	mine.Reason = "annotated by the caller"
	again, _ := o.Verdict(gpu, nic)
	fmt.Println(again == v, again.Reason == mine.Reason)
	// Output:
	// true false
}

// A topology file, written as root where config space is readable (what
// `efap2p export` does), answers for every process of the machine: its
// verdicts come first.
func ExampleTopologyFile() {
	root := writeTree("p5.48xlarge")
	defer os.RemoveAll(root)
	src, err := p2p.OpenSysfs(root)
	if err != nil {
		log.Fatal(err)
	}
	kernel := p2p.MustParseRelease("6.8.0-1015-aws")
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: kernel})

	gpu, nic := p2p.MustParseAddr("0000:53:00.0"), p2p.MustParseAddr("0000:4f:00.0")
	v, err := o.Verdict(gpu, nic)
	if err != nil {
		log.Fatal(err)
	}
	tf := p2p.NewTopologyFile("example-host")
	tf.NICs = append(tf.NICs, p2p.TopoNIC{Addr: nic, IBDev: "rdmap79s0"})
	tf.Pairs = append(tf.Pairs, p2p.TopoPair{Provider: v.Provider, Client: v.Client,
		MapType: v.MapType, Distance: v.Distance, Path: v.Path, Policy: v.Policy, Outcome: v.Outcome})
	if err := tf.RecordMachine(o, false); err != nil { // the kernel and the IDs of the functions named
		log.Fatal(err)
	}
	data, err := tf.Marshal()
	if err != nil {
		log.Fatal(err)
	}
	name := filepath.Join(root, "topology.json")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		log.Fatal(err)
	}

	// Another process: the file describes its machine, so it answers.
	reader := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{TopologyFile: name, Kernel: kernel})
	w, err := reader.Verdict(gpu, nic)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(w.Source, w.Rule, w.MapType, w.Outcome)
	// Output:
	// topology-file topology-file BUS_ADDR p2p
}

// The kernel's host-bridge whitelist of one release, entry by entry.
func ExampleHostBridgeWhitelist() {
	for _, e := range p2p.HostBridgeWhitelist(p2p.MustParseRelease("5.4.0")) {
		fmt.Printf("%04x:%04x same host bridge only: %-5v since %s (%s)\n", e.Vendor, e.Device, e.SameHostBridge, e.Since, e.Note)
	}
	// Output:
	// 1022:1450 same host bridge only: false since 5.4.0 (AMD Zen root complex)
	// 8086:3c00 same host bridge only: true  since 5.4.0 (Intel Xeon E5 / Core i7)
	// 8086:3c01 same host bridge only: true  since 5.4.0 (Intel Xeon E5 / Core i7)
	// 8086:2f00 same host bridge only: true  since 5.4.0 (Intel Xeon E7 v3 / E5 v3 / Core i7)
	// 8086:2f01 same host bridge only: true  since 5.4.0 (Intel Xeon E7 v3 / E5 v3 / Core i7)
}

func ExampleParseAddr() {
	for _, s := range []string{"0000:4f:00.0", "4f:00.0", "10000:01:00.0", "4f:00"} {
		a, err := p2p.ParseAddr(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(a, a.Short())
	}
	// Output:
	// 0000:4f:00.0 4f:00.0
	// 0000:4f:00.0 4f:00.0
	// 10000:01:00.0 10000:01:00.0
	// not a PCI address: "4f:00" (want DDDD:BB:DD.F, e.g. 0000:4f:00.0)
}

func ExampleParseRelease() {
	for _, s := range []string{"6.8.0-1015-aws", "7.4.0-rc2-next-20261002", "latest", "p2p-hmat"} {
		r, err := p2p.ParseRelease(s)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(r, r.AtLeast(p2p.MustParseRelease("5.18")), r.IsLatest(), r.HMAT(), r.Next())
	}
	// Output:
	// 6.8.0-1015-aws true false false false
	// 7.4.0-rc2-next-20261002 true false false true
	// latest true true false false
	// p2p-hmat true true true false
}
