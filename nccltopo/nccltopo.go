// SPDX-License-Identifier: MIT

// Package nccltopo writes an NCCL topology XML for a machine the oracle of
// package p2p reads, so that NCCL uses GPUDirect RDMA exactly with the
// GPU-NIC pairs that get true P2P DMA.
//
// NCCL reads a topology file named by NCCL_TOPO_FILE before it looks at
// the machine itself, keeps what the file says, and fills in what it leaves
// out (CPU affinity, NVLinks, the ranks, ...). Marshal gives NCCL the PCI
// tree as NCCL itself would read it from sysfs, so that NCCL's path type
// between a GPU and a NIC is the oracle's path class (PathType), and it
// sets the gdr attributes from the oracle's verdicts: a <net> gets gdr="1"
// when its NIC gets true P2P DMA into at least one accelerator
// (p2p.Oracle.ReachesAccelerator, the same answer as the P2P_DMA
// capability bit), a <gpu> when at least one NIC of the file gets true P2P
// DMA into it. A comment at the top says which NCCL_NET_GDR_LEVEL makes
// NCCL use the pairs the oracle allows through host bridges, and which
// pairs NCCL would try although the oracle refuses them.
//
// How NCCL sees the PCI tree (src/graph/xml.cc, topo.cc, paths.cc, as this
// project reads NCCL's documentation and source):
//
//   - NCCL climbs from a device's sysfs directory two directories at a
//     time: the parent of a PCI device is the function two levels up (its
//     grandparent), and a climb that reaches the root bus directory
//     (pciDDDD:BB) on either step ends at the CPU of the device's NUMA
//     node. Below a root port, a switch is then one node (its upstream
//     port) holding the devices below its downstream ports directly; the
//     root port and the downstream ports are never nodes.
//   - NCCL's path types between a GPU and a NIC: PIX when both hang from
//     one such node (one switch), PXB when the path crosses two or more of
//     them without the CPU, PHB when it goes through the CPU node of one
//     NUMA node, SYS when it crosses from one NUMA node's CPU to another's.
//     NCCL has no NODE: devices under different host bridges of one NUMA
//     node hang from the same CPU node, so NCCL sees PHB.
//
// The format NCCL's own parser accepts is narrower than XML: no XML
// declaration, one element per line, attributes separated by one space,
// values in double quotes and never unescaped, only spaces and newlines
// between elements (no tabs), and comments that start with "<!-- ". The
// writer keeps to it.
package nccltopo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/efap2p/efap2p/internal/textwrap"
	"github.com/efap2p/efap2p/p2p"
)

// Options choose what Marshal writes.
type Options struct {
	// PeerBlocked are NICs whose firmware refuses DMA to every peer (a
	// fact sysfs cannot show): their gdr is 0 and no GPU counts them. Each
	// must be a NIC of the machine.
	PeerBlocked []p2p.Addr
	// Force writes the file even when some verdicts are uncertain (config
	// space not readable: run as root for certain ones).
	Force bool
	// Model names the machine model an emulated sysfs tree was written
	// from (efap2p sim write), for the header comment; "" for a real
	// host, which the comment names by its host name and sysfs root.
	Model string
	// GeneratedBy names the program in the header comment; "" means
	// "efap2p's nccltopo package".
	GeneratedBy string
	// BootID binds the file to a boot (`efap2p export --boot`): the header
	// names it first, and ReadBootID reads it back; "" for a file that
	// outlives boots.
	BootID string
}

// ErrUncertain is wrapped when some verdicts between the machine's
// accelerators and NICs are uncertain and Options.Force is not set.
var ErrUncertain = errors.New("some verdicts are uncertain")

// ErrNotNIC is wrapped when Options.PeerBlocked names a function that is
// not a NIC of the machine.
var ErrNotNIC = errors.New("not a NIC of this machine")

// PathType returns the name NCCL gives a path of class c: the same name
// for LOC, PIX, PXB, PHB and SYS, and PHB for NODE, which NCCL does not
// have (it sees one CPU node per NUMA node, whatever the number of host
// bridges under it). It returns "" for p2p.PathUnknown.
func PathType(c p2p.PathClass) string {
	switch c {
	case p2p.PathLOC, p2p.PathPIX, p2p.PathPXB, p2p.PathPHB, p2p.PathSYS:
		return c.String()
	case p2p.PathNODE:
		return p2p.PathPHB.String()
	}
	return ""
}

// parent returns the function NCCL takes as the parent of f when it reads
// sysfs: f's grandparent in the sysfs directory tree, or nil when the
// climb reaches the root bus (NCCL then attaches f to the CPU of its NUMA
// node). For an SR-IOV virtual function the sysfs directory sits beside
// its physical function's, so its chain is the physical function's
// (p2p.Function.Upstream already follows that layout).
func parent(f *p2p.Function) *p2p.Function {
	if f == nil || f.Upstream == nil {
		return nil
	}
	return f.Upstream.Upstream
}

// NIC attributes NCCL's net plugins report for EFA, written as they are.
const (
	ncclNetPort    = "1"
	ncclNetLatency = "0"
	ncclNetMaxConn = "131072"
)

// ncclSM maps NVIDIA device IDs to the compute capability NCCL records in
// <gpu sm=...> (major x 10 + minor). IDs from the public PCI ID lists.
// A GPU not in the table gets no sm attribute: NCCL then asks the device
// itself, which is better than a guess (NCCL keeps an sm it finds in the
// file, and uses it to tune).
var ncclSM = map[uint16]int{
	// V100 SXM2 16 and 32 GB (p3, p3dn)
	0x1db1: 70, 0x1db5: 70,
	// T4 (g4dn)
	0x1eb8: 75,
	// A100 SXM4 40 and 80 GB, PCIe 80 and 40 GB (p4d, p4de)
	0x20b0: 80, 0x20b2: 80, 0x20b5: 80, 0x20f1: 80,
	// A10G (g5)
	0x2237: 86,
	// L4 (g6)
	0x27b8: 89,
	// H100 SXM5 80 GB and PCIe (p5); H200 SXM 141 GB (p5e, p5en)
	0x2330: 90, 0x2331: 90, 0x2335: 90,
	// B200 (p6-b200)
	0x2901: 100,
}

// xmlElem is one element of the topology XML.
type xmlElem struct {
	name  string
	attrs [][2]string
	subs  []*xmlElem
	key   p2p.Addr // sort key among siblings (pci elements)
}

func (e *xmlElem) set(k, v string) { e.attrs = append(e.attrs, [2]string{k, v}) }

// ncclTopo is the topology being written.
type ncclTopo struct {
	opts Options
	o    *p2p.Oracle
	src  *p2p.Sysfs
	cpus map[int]*xmlElem
	pci  map[p2p.Addr]*xmlElem
	gpus []*ncclEndpoint
	nics []*ncclEndpoint
	// left out of the file, for the header comment
	otherAccels, plainNICs []p2p.Addr
	uncertain              []string // pairs whose verdict is not certain
}

// ncclEndpoint is a GPU or an RDMA NIC of the file.
type ncclEndpoint struct {
	f     *p2p.Function
	at    p2p.Attrs
	ibdev string // NICs
	gdr   bool
	numa  int  // the NUMA node of the CPU it hangs from
	block bool // NICs: peer access blocked (Options.PeerBlocked)
}

// Marshal returns the NCCL topology XML of the machine o reads; src is the
// sysfs tree o's topology was opened on, from which the RDMA device names,
// port rates, node GUIDs and NUMA nodes' CPU maps are read. It returns
// an error wrapping ErrUncertain when a verdict is uncertain, unless
// opts.Force is set, and one wrapping ErrNotNIC when opts.PeerBlocked
// names anything but a NIC.
func Marshal(o *p2p.Oracle, src *p2p.Sysfs, opts Options) ([]byte, error) {
	nt := &ncclTopo{opts: opts, o: o, src: src, cpus: map[int]*xmlElem{}, pci: map[p2p.Addr]*xmlElem{}}
	if err := nt.collect(); err != nil {
		return nil, err
	}
	if err := nt.decideGDR(); err != nil {
		return nil, err
	}
	if len(nt.uncertain) > 0 && !opts.Force {
		return nil, fmt.Errorf("%w (%s, e.g. %s): their outcome rests on what this user cannot read (PCI config space past 64 bytes needs root)", ErrUncertain, pairCount(len(nt.uncertain)), nt.uncertain[0])
	}
	cpu, cpuErr := o.Topology().CPU()
	for i, e := range nt.gpus {
		g := nt.place(e)
		g.set("dev", strconv.Itoa(i))
		if sm, ok := ncclSM[e.at.Device]; ok && e.at.Vendor == 0x10de {
			g.set("sm", strconv.Itoa(sm))
		}
		g.set("rank", strconv.Itoa(i))
		g.set("gdr", boolDigit(e.gdr))
	}
	for i, e := range nt.nics {
		nic := nt.place(e)
		net := &xmlElem{name: "net"}
		net.set("name", e.ibdev)
		net.set("dev", strconv.Itoa(i))
		if mbps := nt.nicSpeedMbps(e.ibdev); mbps > 0 {
			net.set("speed", strconv.Itoa(mbps))
		}
		net.set("port", ncclNetPort)
		net.set("latency", ncclNetLatency)
		if guid, ok := nt.nicGUID(e.ibdev); ok {
			net.set("guid", fmt.Sprintf("0x%x", guid))
		}
		net.set("maxconn", ncclNetMaxConn)
		net.set("gdr", boolDigit(e.gdr))
		nic.subs = append(nic.subs, net)
	}
	for numa, c := range nt.cpus {
		nt.cpuAttrs(c, numa, cpu, cpuErr == nil && cpu.Known)
	}
	header, err := nt.header()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	writeComment(&b, header)
	b.WriteString("<system version=\"1\">\n")
	numas := make([]int, 0, len(nt.cpus))
	for n := range nt.cpus {
		numas = append(numas, n)
	}
	sort.Ints(numas)
	for _, n := range numas {
		writeElem(&b, nt.cpus[n], 2)
	}
	b.WriteString("</system>\n")
	return []byte(b.String()), nil
}

// collect picks the functions of the file: GPUs (class 03, the only
// accelerators NCCL knows) and NICs (class 02) with an RDMA device.
func (nt *ncclTopo) collect() error {
	t := nt.o.Topology()
	all, err := t.Functions()
	if err != nil {
		return err
	}
	for _, a := range all {
		f, err := t.Function(a)
		if err != nil {
			return err
		}
		at, err := f.Attrs()
		if err != nil {
			return err
		}
		switch base := at.Class >> 16; {
		case base == 0x03 && at.IsAccelerator():
			nt.gpus = append(nt.gpus, &ncclEndpoint{f: f, at: at})
		case at.IsAccelerator():
			nt.otherAccels = append(nt.otherAccels, a)
		case base == 0x02:
			if ib := nt.src.RDMAName(a); ib != "" {
				nt.nics = append(nt.nics, &ncclEndpoint{f: f, at: at, ibdev: ib, block: slices.Contains(nt.opts.PeerBlocked, a)})
			} else {
				nt.plainNICs = append(nt.plainNICs, a)
			}
		}
	}
	for _, b := range nt.opts.PeerBlocked {
		if !slices.ContainsFunc(nt.nics, func(n *ncclEndpoint) bool { return n.f.Addr == b }) && !slices.Contains(nt.plainNICs, b) {
			return fmt.Errorf("%s: %w", b, ErrNotNIC)
		}
	}
	return nil
}

// decideGDR sets the gdr attributes: a NIC's when the oracle says it gets
// true P2P into at least one accelerator (Oracle.ReachesAccelerator, the
// same answer as the P2P_DMA capability bit); a GPU's when at least one NIC
// of the file gets true P2P into it.
// It also notes the pairs whose verdict is uncertain.
func (nt *ncclTopo) decideGDR() error {
	accels, err := nt.o.Topology().Accelerators()
	if err != nil {
		return err
	}
	for _, n := range nt.nics {
		ok, _, err := nt.o.ReachesAccelerator(n.f.Addr)
		if err != nil {
			return err
		}
		n.gdr = ok && !n.block
		for _, a := range accels {
			v, err := nt.o.Verdict(a.Addr, n.f.Addr)
			if err != nil {
				return err
			}
			if !v.Certain {
				nt.uncertain = append(nt.uncertain, a.Addr.String()+" -> "+n.f.Addr.String())
			}
		}
	}
	for _, g := range nt.gpus {
		for _, n := range nt.nics {
			ok, err := nt.p2p(g, n)
			if err != nil {
				return err
			}
			if ok {
				g.gdr = true
				break
			}
		}
	}
	return nil
}

// p2p reports whether NIC n gets true P2P DMA into GPU g's memory.
func (nt *ncclTopo) p2p(g, n *ncclEndpoint) (bool, error) {
	v, err := nt.o.Verdict(g.f.Addr, n.f.Addr)
	if err != nil {
		return false, err
	}
	return v.P2P() && !n.block, nil
}

// place puts an endpoint's chain of NCCL parents into the tree and returns
// the element the endpoint's <gpu> or <nic> goes into.
func (nt *ncclTopo) place(e *ncclEndpoint) *xmlElem {
	chain := []*p2p.Function{e.f}
	for p := parent(e.f); p != nil; p = parent(p) {
		chain = append(chain, p)
	}
	// NCCL takes the NUMA node of the topmost function, where it meets the CPU.
	e.numa = chain[len(chain)-1].NUMANode()
	parent := nt.cpus[e.numa]
	if parent == nil {
		parent = &xmlElem{name: "cpu"}
		nt.cpus[e.numa] = parent
	}
	for i := len(chain) - 1; i >= 0; i-- {
		f := chain[i]
		el := nt.pci[f.Addr]
		if el == nil {
			el = nt.pciElem(f)
			nt.pci[f.Addr] = el
			parent.subs = append(parent.subs, el)
		}
		parent = el
	}
	sub := &xmlElem{name: "gpu"}
	if e.ibdev != "" {
		sub.name = "nic"
	}
	parent.subs = append(parent.subs, sub)
	return sub
}

// pciElem is a function's <pci> element. NCCL records the link a function
// trains to with its upstream port: the slower speed and the narrower width
// of the two (NCCL reads the max_ values; this reads the current ones,
// which is what the function runs at).
func (nt *ncclTopo) pciElem(f *p2p.Function) *xmlElem {
	at, _ := f.Attrs()
	e := &xmlElem{name: "pci", key: f.Addr}
	e.set("busid", f.Addr.String())
	e.set("class", fmt.Sprintf("0x%06x", at.Class))
	e.set("vendor", fmt.Sprintf("0x%04x", at.Vendor))
	e.set("device", fmt.Sprintf("0x%04x", at.Device))
	e.set("subsystem_vendor", fmt.Sprintf("0x%04x", at.SubVendor))
	e.set("subsystem_device", fmt.Sprintf("0x%04x", at.SubDevice))
	gts, width := f.Link()
	if f.Upstream != nil {
		ug, uw := f.Upstream.Link()
		if ug > 0 && (gts == 0 || ug < gts) {
			gts = ug
		}
		if uw > 0 && (width == 0 || uw < width) {
			width = uw
		}
	}
	// NCCL writes empty values when sysfs has none, and then assumes x16
	// at 8 GT/s.
	speed, w := "", ""
	if gts > 0 {
		speed = strconv.FormatFloat(gts, 'f', 1, 64) + " GT/s PCIe"
	}
	if width > 0 {
		w = strconv.Itoa(width)
	}
	e.set("link_speed", speed)
	e.set("link_width", w)
	return e
}

// cpuAttrs fills a <cpu>: numaid, affinity (from sysfs when it has the
// node's cpumap; NCCL fills it in otherwise), and the CPU NCCL would
// identify with cpuid: arch, vendor, family and model (decimal).
func (nt *ncclTopo) cpuAttrs(c *xmlElem, numa int, cpu p2p.CPU, known bool) {
	c.set("numaid", strconv.Itoa(numa))
	if numa >= 0 {
		if b, err := os.ReadFile(filepath.Join(nt.src.Root(), "devices/system/node", fmt.Sprintf("node%d", numa), "cpumap")); err == nil {
			if m := strings.TrimSpace(string(b)); m != "" {
				c.set("affinity", m)
			}
		}
	}
	if !known {
		return
	}
	switch cpu.Arch {
	case "x86":
		c.set("arch", "x86_64")
		if v := x86VendorString(cpu.Vendor); v != "" {
			c.set("vendor", v)
		}
		c.set("familyid", strconv.Itoa(cpu.Family))
		c.set("modelid", strconv.Itoa(cpu.Model))
	case "arm64", "aarch64":
		c.set("arch", "arm64")
	case "ppc64", "ppc64le":
		c.set("arch", "ppc64")
	}
}

// x86VendorString is the cpuid vendor string NCCL records.
func x86VendorString(v int) string {
	switch v {
	case p2p.X86VendorIntel:
		return "GenuineIntel"
	case p2p.X86VendorAMD:
		return "AuthenticAMD"
	case p2p.X86VendorHygon:
		return "HygonGenuine"
	case p2p.X86VendorZhaoxin:
		return "CentaurHauls"
	}
	return ""
}

// nicSpeedMbps reads the RDMA port's rate ("100 Gb/sec (4X EDR)") in Mb/s;
// 0 when unknown (NCCL then takes the plugin's figure).
func (nt *ncclTopo) nicSpeedMbps(ibdev string) int {
	b, err := os.ReadFile(filepath.Join(nt.src.Root(), "class/infiniband", ibdev, "ports/1/rate"))
	if err != nil {
		return 0
	}
	num, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	g, err := strconv.ParseFloat(num, 64)
	if err != nil || g <= 0 {
		return 0
	}
	return int(g * 1000)
}

// nicGUID reads the RDMA device's node GUID ("0123:4567:89ab:cdef").
func (nt *ncclTopo) nicGUID(ibdev string) (uint64, bool) {
	b, err := os.ReadFile(filepath.Join(nt.src.Root(), "class/infiniband", ibdev, "node_guid"))
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.ReplaceAll(strings.TrimSpace(string(b)), ":", ""), 16, 64)
	return v, err == nil
}

// ncclClass is the path type NCCL computes between two endpoints of the
// file: through their NCCL parents (ncclUp), PIX when they hang from one
// <pci>, PXB when a link between two <pci> is on the way, PHB through the
// CPU, SYS across CPUs.
func ncclClass(a, b *ncclEndpoint) string {
	if a.numa != b.numa {
		return "SYS"
	}
	depth := map[*p2p.Function]int{}
	i := 0
	for p := ncclUp(a.f); p != nil; p = ncclUp(p) {
		i++
		depth[p] = i
	}
	j := 0
	for p := ncclUp(b.f); p != nil; p = ncclUp(p) {
		j++
		if i, ok := depth[p]; ok {
			if i == 1 && j == 1 {
				return "PIX"
			}
			return "PXB"
		}
	}
	return "PHB"
}

// ncclUp is the PCI node NCCL links f to once it has built its graph: the
// NCCL parent, except that NCCL flattens Broadcom Gen4 and Gen5 PEX
// switches that present themselves as two levels (a switch of the same
// generation right below one), linking what hangs from the lower one to the
// upper one. The XML keeps both; the path types differ (PIX for NCCL, PXB
// for the oracle), and the header says so.
func ncclUp(f *p2p.Function) *p2p.Function {
	p := parent(f)
	if p == nil {
		return nil
	}
	if up := parent(p); up != nil {
		if g := bcmGen(up, 0); g != 0 && bcmGen(p, 1) == g {
			return up
		}
	}
	return p
}

// bcmGen returns 4 or 5 when f is a Broadcom PEX switch NCCL flattens, at
// level 0 (the upper half) or 1 (the lower half), by its vendor, device and
// subsystem IDs; 0 otherwise.
func bcmGen(f *p2p.Function, level int) int {
	at, err := f.Attrs()
	if err != nil || !at.IsBridge() || at.Vendor != 0x1000 || at.SubVendor != 0x1000 {
		return 0
	}
	switch {
	case at.Device == 0xc010 && at.SubDevice&0xf000 == 0xa000:
		return 4
	case at.Device == 0xc030 && int(at.SubDevice&0xf000) == level*0x1000:
		return 5
	}
	return 0
}

// ncclLevels orders NCCL's path types for GPU-NIC pairs.
var ncclLevels = map[string]int{"LOC": 0, "PIX": 4, "PXB": 5, "PHB": 8, "SYS": 9}

// header is the comment at the top of the file: where it comes from, how
// it is shaped, and what each NCCL_NET_GDR_LEVEL would make NCCL do with
// the oracle's verdicts.
func (nt *ncclTopo) header() ([]string, error) {
	var h []string
	if nt.opts.BootID != "" {
		h = append(h, bootLine(nt.opts.BootID), "")
	}
	// para wraps a paragraph; indent > 0 makes it a bullet.
	para := func(indent int, s string) {
		pad := strings.Repeat(" ", indent)
		for i, l := range strings.Split(textwrap.Wrap(s, 96-indent), "\n") {
			switch {
			case indent == 0:
				h = append(h, l)
			case i == 0:
				h = append(h, pad[2:]+"- "+l)
			default:
				h = append(h, pad+l)
			}
		}
	}
	source := fmt.Sprintf("NCCL topology of machine model %s (an emulated sysfs tree written by efap2p sim write)", nt.opts.Model)
	if nt.opts.Model == "" {
		host, _ := os.Hostname()
		source = fmt.Sprintf("NCCL topology of host %s (sysfs at %s)", host, nt.src.Root())
	}
	by := nt.opts.GeneratedBy
	if by == "" {
		by = "efap2p's nccltopo package"
	}
	para(0, source+", written by "+by+". Use it with NCCL_TOPO_FILE; NCCL fills in what it leaves out (CPU affinity, NVLinks, ranks) from the machine.")
	h = append(h, "")
	para(0, "Shape: as NCCL reads sysfs, a PCIe switch is one <pci> (its upstream port) holding the GPUs and NICs below its downstream ports; root ports and downstream ports are not nodes. Path types: efap2p's PIX, PXB, PHB and SYS are NCCL's; efap2p's NODE (host bridges of one NUMA node) is PHB for NCCL.")
	para(0, "gdr=\"1\" on a <net>: efap2p's oracle says the NIC gets true P2P DMA into at least one accelerator; on a <gpu>: at least one NIC of this file gets true P2P DMA into it.")
	if len(nt.otherAccels) > 0 {
		para(0, "Left out: accelerators that are not GPUs (class 12, not NCCL devices): "+addrList(nt.otherAccels)+".")
	}
	if len(nt.plainNICs) > 0 {
		para(0, "Left out: NICs without an RDMA device: "+addrList(nt.plainNICs)+".")
	}
	if len(nt.gpus) == 0 || len(nt.nics) == 0 {
		h = append(h, "")
		para(0, "No GPU-NIC pair on this machine: no GPUDirect RDMA to decide.")
		return h, nil
	}

	// Every GPU-NIC pair NCCL would consider for GPUDirect RDMA (both gdr
	// set), by the level it needs.
	type pair struct {
		g, n    *ncclEndpoint
		class   string
		v       *p2p.Verdict
		ok      bool   // true P2P
		outcome string // the oracle's outcome, or "blocked"
	}
	var pairs, diverge []pair
	for _, g := range nt.gpus {
		for _, n := range nt.nics {
			v, err := nt.o.Verdict(g.f.Addr, n.f.Addr)
			if err != nil {
				return nil, err
			}
			ok, err := nt.p2p(g, n)
			if err != nil {
				return nil, err
			}
			pr := pair{g, n, ncclClass(g, n), v, ok, v.Outcome.String()}
			if n.block {
				pr.outcome = "refused, peer access blocked"
			}
			if pr.class != PathType(v.Path) {
				diverge = append(diverge, pr)
			}
			if g.gdr && n.gdr {
				pairs = append(pairs, pr)
			}
		}
	}
	h = append(h, "")
	para(0, "GPUDirect RDMA: NCCL uses it between a GPU and a NIC when both have gdr=\"1\" and their path type is at most NCCL_NET_GDR_LEVEL (default PXB).")
	if len(pairs) == 0 {
		para(0, "On this machine no NIC gets true P2P DMA into a GPU: every gdr is 0, and NCCL will not use GPUDirect RDMA at any level.")
	}
	examples := func(ps []pair) string {
		var s []string
		for i, pr := range ps {
			if i == 2 {
				s = append(s, fmt.Sprintf("%d more", len(ps)-2))
				break
			}
			s = append(s, fmt.Sprintf("GPU %s with %s (%s, %s, %s)", pr.g.f.Addr.Short(), pr.n.ibdev, pr.n.f.Addr.Short(), pr.class, pr.outcome))
		}
		return strings.Join(s, "; ")
	}
	prev := -1
	for _, lvl := range []string{"PXB", "PHB", "SYS"} {
		if len(pairs) == 0 {
			break
		}
		var ok, bad []pair
		for _, pr := range pairs {
			if l := ncclLevels[pr.class]; l > prev && l <= ncclLevels[lvl] {
				if pr.ok {
					ok = append(ok, pr)
				} else {
					bad = append(bad, pr)
				}
			}
		}
		prev = ncclLevels[lvl]
		var s string
		switch {
		case lvl == "PXB":
			s = fmt.Sprintf("At the default level (PXB) NCCL uses it on %s with true P2P", pairCount(len(ok)))
		case len(ok)+len(bad) == 0:
			para(4, "NCCL_NET_GDR_LEVEL="+lvl+" adds no pair.")
			continue
		default:
			s = fmt.Sprintf("NCCL_NET_GDR_LEVEL=%s adds %s the oracle allows through host bridges", lvl, pairCount(len(ok)))
		}
		if len(ok) > 0 {
			s += " (" + examples(ok) + ")"
		}
		if len(bad) == 0 {
			s += ", and no pair the oracle refuses or bounces."
		} else {
			s += fmt.Sprintf(", and %s the oracle refuses or bounces, where NCCL would try GPUDirect RDMA and fail or go through system memory (%s).", pairCount(len(bad)), examples(bad))
		}
		para(4, s)
	}
	for _, pr := range diverge {
		para(0, fmt.Sprintf("Note: NCCL sees GPU %s - %s %s as %s; efap2p's path class is %s (%s): the file keeps NCCL's own shape.",
			pr.g.f.Addr.Short(), pr.n.ibdev, pr.n.f.Addr.Short(), pr.class, pr.v.Path, pr.v.MapType))
	}
	return h, nil
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// writeComment writes an XML comment NCCL's parser skips: "<!-- " first,
// no "--" inside.
func writeComment(b *strings.Builder, lines []string) {
	b.WriteString("<!--\n")
	for _, l := range lines {
		for strings.Contains(l, "--") {
			l = strings.ReplaceAll(l, "--", "-")
		}
		if l == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("  " + l + "\n")
	}
	b.WriteString("-->\n")
}

// writeElem writes e and its children, one element per line, children of
// a <pci> ordered by bus ID as NCCL orders them.
func writeElem(b *strings.Builder, e *xmlElem, indent int) {
	pad := strings.Repeat(" ", indent)
	b.WriteString(pad + "<" + e.name)
	for _, a := range e.attrs {
		b.WriteString(" " + a[0] + "=\"" + attrEscape(a[1]) + "\"")
	}
	if len(e.subs) == 0 {
		b.WriteString("/>\n")
		return
	}
	b.WriteString(">\n")
	subs := append([]*xmlElem(nil), e.subs...)
	sort.SliceStable(subs, func(i, j int) bool {
		if (subs[i].name == "pci") != (subs[j].name == "pci") {
			return subs[i].name != "pci"
		}
		return subs[i].key.Less(subs[j].key)
	})
	for _, s := range subs {
		writeElem(b, s, indent+2)
	}
	b.WriteString(pad + "</" + e.name + ">\n")
}

// attrEscape keeps a value inside its quotes. NCCL does not unescape, so
// anything escaped would reach it as written; the values written here
// (IDs, numbers, RDMA device names) never need it.
func attrEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\"", "&quot;", "\n", " ").Replace(s)
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

// pairCount says "1 pair", "4 pairs".
func pairCount(n int) string {
	if n == 1 {
		return "1 pair"
	}
	return fmt.Sprintf("%d pairs", n)
}
