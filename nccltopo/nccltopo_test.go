// SPDX-License-Identifier: MIT

package nccltopo

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"github.com/efap2p/efap2p/internal/pciclass"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// xnode is an element of a parsed topology XML.
type xnode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Subs    []*xnode   `xml:",any"`
	parent  *xnode
}

func (n *xnode) attr(k string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == k {
			return a.Value
		}
	}
	return ""
}

func (n *xnode) has(k string) bool {
	for _, a := range n.Attrs {
		if a.Name.Local == k {
			return true
		}
	}
	return false
}

func (n *xnode) name() string { return n.XMLName.Local }

// isSwitch: a <pci> NCCL takes as a PCI node (a bridge), not a device.
func (n *xnode) isSwitch() bool { return n.name() == "pci" && n.attr("class") == "0x060400" }

func (n *xnode) link(parent *xnode) {
	n.parent = parent
	for _, s := range n.Subs {
		s.link(n)
	}
}

// parsedTopo indexes a parsed topology XML.
type parsedTopo struct {
	system *xnode
	pci    map[string]*xnode // by busid
	gpu    map[string]*xnode // by the busid of its <pci>
	net    map[string]*xnode // by name
}

func parseNCCL(t *testing.T, data []byte) *parsedTopo {
	t.Helper()
	if err := ncclReaderCheck(data); err != nil {
		t.Fatalf("NCCL's reader would refuse the file: %v\n%s", err, data)
	}
	var sys xnode
	if err := xml.Unmarshal(data, &sys); err != nil {
		t.Fatalf("not XML: %v\n%s", err, data)
	}
	sys.link(nil)
	if sys.name() != "system" || sys.attr("version") != "1" {
		t.Fatalf("top element <%s version=%q>, want <system version=\"1\">", sys.name(), sys.attr("version"))
	}
	pt := &parsedTopo{system: &sys, pci: map[string]*xnode{}, gpu: map[string]*xnode{}, net: map[string]*xnode{}}
	var walk func(n *xnode)
	walk = func(n *xnode) {
		switch n.name() {
		case "pci":
			if pt.pci[n.attr("busid")] != nil {
				t.Errorf("pci %s twice", n.attr("busid"))
			}
			pt.pci[n.attr("busid")] = n
			for _, k := range []string{"busid", "class", "vendor", "device", "subsystem_vendor", "subsystem_device", "link_speed", "link_width"} {
				if !n.has(k) {
					t.Errorf("pci %s: no %s", n.attr("busid"), k)
				}
			}
		case "gpu":
			pt.gpu[n.parent.attr("busid")] = n
		case "net":
			pt.net[n.attr("name")] = n
		case "cpu":
			if n.parent != &sys {
				t.Errorf("cpu under <%s>", n.parent.name())
			}
		}
		for _, s := range n.Subs {
			walk(s)
		}
	}
	walk(&sys)
	return pt
}

// cpuOf returns the <cpu> above n.
func cpuOf(n *xnode) *xnode {
	for ; n != nil && n.name() != "cpu"; n = n.parent {
	}
	return n
}

// ncclPathType is NCCL's path type between a GPU and a NIC, worked out
// from the XML tree the way NCCL's topology code defines it: the <pci> of
// a GPU or NIC is that device, linked to the element above it; a link
// between a device and a PCI node is PIX, between two PCI nodes PXB, with
// a CPU PHB, and between two CPUs (NUMA nodes) SYS. A path's type is the
// worst type of its links.
func ncclPathType(gpuPCI, nicPCI *xnode) string {
	if cpuOf(gpuPCI) != cpuOf(nicPCI) {
		return "SYS"
	}
	up := func(n *xnode) []*xnode {
		var out []*xnode
		for ; n != nil; n = n.parent {
			out = append(out, n)
		}
		return out
	}
	a, b := up(gpuPCI), up(nicPCI)
	on := map[*xnode]int{}
	for i, n := range a {
		on[n] = i
	}
	var lca *xnode
	j := 0
	for j = range b {
		if _, ok := on[b[j]]; ok {
			lca = b[j]
			break
		}
	}
	linkType := func(lower, upper *xnode, lowerIsDevice bool) int {
		switch {
		case upper.name() == "cpu":
			return 8 // PHB
		case lowerIsDevice:
			return 4 // PIX
		default:
			return 5 // PXB
		}
	}
	worst := 0
	climb := func(chain []*xnode, n int) {
		for k := 0; k < n; k++ {
			worst = max(worst, linkType(chain[k], chain[k+1], k == 0))
		}
	}
	climb(a, on[lca])
	climb(b, j)
	return map[int]string{4: "PIX", 5: "PXB", 8: "PHB"}[worst]
}

// nearestSwitch returns the upstream port of the nearest switch above f in
// the model, or nil.
func nearestSwitch(f *models.Function) *models.Function {
	for p := f.Parent(); p != nil; p = p.Parent() {
		if p.Kind == models.KindSwitchUpstream {
			return p
		}
	}
	return nil
}

// checkPlace checks that the element of f sits under the element of its
// nearest switch (or directly under the CPU of its NUMA node), and so on up.
func checkPlace(t *testing.T, pt *parsedTopo, f *models.Function, what string) {
	t.Helper()
	el := pt.pci[f.Addr.String()]
	for f != nil {
		sw := nearestSwitch(f)
		if sw == nil {
			if el.parent.name() != "cpu" || el.parent.attr("numaid") != fmt.Sprint(f.NUMA()) {
				t.Errorf("%s: %s is under <%s %s numaid=%q>, want the cpu of NUMA node %d", what, f.Addr, el.parent.name(), el.parent.attr("busid"), el.parent.attr("numaid"), f.NUMA())
			}
			return
		}
		if el.parent.attr("busid") != sw.Addr.String() || !el.parent.isSwitch() {
			t.Errorf("%s: %s is under <%s %s>, want switch %s", what, f.Addr, el.parent.name(), el.parent.attr("busid"), sw.Addr)
			return
		}
		f, el = sw, el.parent
	}
}

// writeTree writes a built-in model's sysfs tree.
func writeTree(t *testing.T, name string) (*models.Machine, string) {
	t.Helper()
	m, err := models.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return m, dir
}

// openOracle returns an oracle over the tree at dir, deciding by the
// rules of the model's kernel release as the emulated host does.
func openOracle(t *testing.T, m *models.Machine, dir string) (*p2p.Oracle, *p2p.Sysfs) {
	t.Helper()
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: m.KernelRelease()}), src
}

// marshalTree returns Marshal's XML for the tree at dir written from m.
func marshalTree(t *testing.T, m *models.Machine, dir string, opts Options) []byte {
	t.Helper()
	o, src := openOracle(t, m, dir)
	opts.Model = m.Name
	data, err := Marshal(o, src, opts)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return data
}

// TestNCCLTopologyModels: for every built-in model, the XML names every GPU
// and every RDMA NIC under the right switch and CPU, NCCL's path type over
// the XML is the oracle's class for every GPU-NIC pair, and the gdr
// attributes follow the oracle.
func TestNCCLTopologyModels(t *testing.T) {
	for _, name := range models.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			m, err := models.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := m.Write(dir, models.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			data := marshalTree(t, m, dir, Options{})
			pt := parseNCCL(t, data)
			if !bytes.Contains(data, []byte("machine model "+name+" ")) {
				t.Errorf("the header does not name the model")
			}
			o, _ := openOracle(t, m, dir)

			var gpus, nics []*models.Function
			for _, f := range m.Functions() {
				switch {
				case uint32(f.Class)>>16 == 0x03 && pciclass.IsAccelerator(uint32(f.Class), uint16(f.Vendor), uint16(f.Device)):
					gpus = append(gpus, f)
				case f.EFA != nil:
					nics = append(nics, f)
				}
			}
			if len(pt.gpu) != len(gpus) || len(pt.net) != len(nics) {
				t.Errorf("%d <gpu> and %d <net>, want %d and %d", len(pt.gpu), len(pt.net), len(gpus), len(nics))
			}
			for _, g := range gpus {
				el := pt.gpu[g.Addr.String()]
				if el == nil {
					t.Errorf("GPU %s is missing", g.Addr)
					continue
				}
				checkPlace(t, pt, g, "GPU")
				p2pAny := false
				for _, n := range nics {
					v, err := o.Verdict(g.Addr, n.Addr)
					if err != nil {
						t.Fatal(err)
					}
					p2pAny = p2pAny || v.P2P()
				}
				if want := boolDigit(p2pAny); el.attr("gdr") != want {
					t.Errorf("GPU %s: gdr=%q, want %s", g.Addr, el.attr("gdr"), want)
				}
			}
			for _, n := range nics {
				el := pt.net[n.IBDev()]
				if el == nil {
					t.Errorf("NIC %s (%s) is missing", n.Addr, n.IBDev())
					continue
				}
				if el.parent.name() != "nic" || el.parent.parent.attr("busid") != n.Addr.String() {
					t.Errorf("net %s is not in <pci busid=%q><nic>", n.IBDev(), n.Addr)
					continue
				}
				checkPlace(t, pt, n, "NIC")
				reaches, _, err := o.ReachesAccelerator(n.Addr)
				if err != nil {
					t.Fatal(err)
				}
				if want := boolDigit(reaches); el.attr("gdr") != want {
					t.Errorf("NIC %s: gdr=%q, want %s (ReachesAccelerator)", n.Addr, el.attr("gdr"), want)
				}
				for _, k := range []string{"dev", "speed", "port", "latency", "guid", "maxconn"} {
					if !el.has(k) {
						t.Errorf("net %s: no %s", n.IBDev(), k)
					}
				}
				for _, g := range gpus {
					v, err := o.Verdict(g.Addr, n.Addr)
					if err != nil {
						t.Fatal(err)
					}
					got := ncclPathType(pt.pci[g.Addr.String()], pt.pci[n.Addr.String()])
					if want := PathType(v.Path); got != want {
						t.Errorf("GPU %s - NIC %s: NCCL's path type over the XML is %s, the oracle's class %s (NCCL: %s)", g.Addr, n.Addr, got, v.Path, want)
					}
				}
			}
			for numa, c := range pt.system.Subs {
				if !c.has("numaid") || !c.has("arch") {
					t.Errorf("cpu %d: %v", numa, c.Attrs)
				}
				if c.attr("arch") == "x86_64" && (!c.has("vendor") || !c.has("familyid") || !c.has("modelid")) {
					t.Errorf("cpu %d: x86_64 without vendor, familyid or modelid: %v", numa, c.Attrs)
				}
			}
			if bytes.Contains(data, []byte("Note: NCCL sees")) {
				t.Errorf("a path NCCL sees differently from the oracle:\n%s", data)
			}
		})
	}
}

// TestNCCLTopologyP5: p5.48xlarge, stated by hand from the public layout:
// each switch holds its GPU and four EFAs, switches 0-3 on NUMA node 0,
// 4-7 on node 1, AMD family 25.
func TestNCCLTopologyP5(t *testing.T) {
	m, dir := writeTree(t, "p5.48xlarge")
	pt := parseNCCL(t, marshalTree(t, m, dir, Options{}))
	groups := []struct {
		sw, gpu string
		efa0    int
		numa    string
	}{
		{"45", "53", 0x4f, "0"}, {"56", "64", 0x60, "0"}, {"67", "75", 0x71, "0"}, {"78", "86", 0x82, "0"},
		{"89", "97", 0x93, "1"}, {"9a", "a8", 0xa4, "1"}, {"ab", "b9", 0xb5, "1"}, {"bc", "ca", 0xc6, "1"},
	}
	if len(pt.system.Subs) != 2 {
		t.Fatalf("%d cpus, want 2", len(pt.system.Subs))
	}
	for _, c := range pt.system.Subs {
		if c.attr("arch") != "x86_64" || c.attr("vendor") != "AuthenticAMD" || c.attr("familyid") != "25" || c.attr("modelid") != "1" {
			t.Errorf("cpu %v", c.Attrs)
		}
	}
	for i, g := range groups {
		sw := pt.pci["0000:"+g.sw+":00.0"]
		if sw == nil || !sw.isSwitch() || sw.parent.name() != "cpu" || sw.parent.attr("numaid") != g.numa {
			t.Fatalf("switch %s:00.0 missing or not directly under cpu %s", g.sw, g.numa)
		}
		if len(sw.Subs) != 5 {
			t.Errorf("switch %s: %d children, want 5 (GPU and four EFAs)", g.sw, len(sw.Subs))
		}
		gpu := pt.pci["0000:"+g.gpu+":00.0"]
		if gpu == nil || gpu.parent != sw {
			t.Errorf("GPU %s:00.0 not under switch %s:00.0", g.gpu, g.sw)
		} else if el := pt.gpu[gpu.attr("busid")]; el.attr("sm") != "90" || el.attr("dev") != fmt.Sprint(i) || el.attr("gdr") != "1" {
			t.Errorf("GPU %s: %v", g.gpu, el.Attrs)
		}
		for k := 0; k < 4; k++ {
			bus := g.efa0 + k
			nic := pt.pci[fmt.Sprintf("0000:%02x:00.0", bus)]
			if nic == nil || nic.parent != sw {
				t.Errorf("EFA %02x:00.0 not under switch %s:00.0", bus, g.sw)
				continue
			}
			net := nic.Subs[0].Subs[0]
			want := fmt.Sprintf("rdmap%ds0", bus)
			if net.attr("name") != want || net.attr("gdr") != "1" || net.attr("speed") != "100000" || net.attr("port") != "1" || net.attr("maxconn") != "131072" || !strings.HasPrefix(net.attr("guid"), "0x") {
				t.Errorf("EFA %02x:00.0: %v", bus, net.Attrs)
			}
			if ncclPathType(gpu, nic) != "PIX" {
				t.Errorf("GPU %s - EFA %02x: %s", g.gpu, bus, ncclPathType(gpu, nic))
			}
		}
	}
	// Across switches of one NUMA node NCCL sees PHB (the oracle's NODE), across nodes SYS.
	if got := ncclPathType(pt.pci["0000:53:00.0"], pt.pci["0000:60:00.0"]); got != "PHB" {
		t.Errorf("GPU 53 - EFA 60: %s, want PHB", got)
	}
	if got := ncclPathType(pt.pci["0000:53:00.0"], pt.pci["0000:93:00.0"]); got != "SYS" {
		t.Errorf("GPU 53 - EFA 93: %s, want SYS", got)
	}
	// The ENA has no RDMA device: left out.
	if pt.pci["0000:00:05.0"] != nil {
		t.Errorf("the ENA is in the file")
	}
}

// TestNCCLTopologyP4d: p4d.24xlarge has no switch in the VM: every GPU and
// EFA sits directly under the CPU of its NUMA node; the kernel refuses
// every pair but NVIDIA's exporter allows it, so with a kernel whose
// in-tree EFA driver registers dma-bufs (5.16 and later) gdr is 1, and the
// header says that only NCCL_NET_GDR_LEVEL=PHB (or SYS) lets NCCL use it.
// Under the model's own kernel (5.10, in-tree driver) the NICs cannot
// register dma-buf memory at all: every gdr is 0.
func TestNCCLTopologyP4d(t *testing.T) {
	m, dir := writeTree(t, "p4d.24xlarge")
	own := parseNCCL(t, marshalTree(t, m, dir, Options{}))
	for _, n := range own.net {
		if n.attr("gdr") != "0" {
			t.Errorf("kernel %s: NIC %s gdr %s; the in-tree EFA driver registers dma-bufs from 5.16", m.KernelRelease(), n.attr("name"), n.attr("gdr"))
		}
	}
	m.Kernel = p2p.MustParseRelease("6.8.0-1015-aws")
	data := marshalTree(t, m, dir, Options{})
	pt := parseNCCL(t, data)
	for _, bus := range []string{"10", "20", "90", "a0"} {
		numa := "0"
		if bus >= "90" {
			numa = "1"
		}
		for _, dev := range []string{"1b", "1c", "1d"} {
			el := pt.pci["0000:"+bus+":"+dev+".0"]
			if el == nil || el.parent.name() != "cpu" || el.parent.attr("numaid") != numa {
				t.Errorf("%s:%s.0 not directly under cpu %s", bus, dev, numa)
			}
		}
	}
	for _, c := range pt.system.Subs {
		if c.attr("vendor") != "GenuineIntel" || c.attr("familyid") != "6" {
			t.Errorf("cpu %v", c.Attrs)
		}
	}
	for _, want := range []string{"At the default level (PXB) NCCL uses it on 0 pairs", "NCCL_NET_GDR_LEVEL=PHB adds 16 pairs the oracle allows"} {
		if !strings.Contains(strings.Join(strings.Fields(string(data)), " "), want) {
			t.Errorf("header lacks %q:\n%s", want, data)
		}
	}
}

// TestNCCLTopologyRefusedInSwitch: intel-acs-switch refuses (bounces) every
// pair: every gdr is 0 and the header says NCCL will not use GPUDirect RDMA.
func TestNCCLTopologyRefusedInSwitch(t *testing.T) {
	m, dir := writeTree(t, "intel-acs-switch")
	data := marshalTree(t, m, dir, Options{})
	pt := parseNCCL(t, data)
	for _, n := range pt.net {
		if n.attr("gdr") != "0" {
			t.Errorf("net %s: gdr %s", n.attr("name"), n.attr("gdr"))
		}
	}
	if !strings.Contains(strings.Join(strings.Fields(string(data)), " "), "every gdr is 0") {
		t.Errorf("header:\n%s", data)
	}
}

// TestNCCLTopologyDivergence: where NCCL's reading of the tree gives
// another path type than the oracle's, the file keeps NCCL's shape and its
// header says so.
//   - A GPU and an EFA as two functions below one root port: the oracle
//     says PIX (a common upstream bridge, one hop up on each side), NCCL
//     skips the root port, attaches both to the CPU and sees PHB.
//   - A GPU below a Broadcom Gen4 switch nested in another (subsystem
//     1000:a0xx), an EFA below the upper one: the oracle says PXB, NCCL
//     flattens the two switches into one and sees PIX.
func TestNCCLTopologyDivergence(t *testing.T) {
	const head = `{"format": 1, "name": "%s", "cpu": {"arch": "x86", "vendor": "AMD", "family": "19", "model": "01"},
  "root_buses": [{"domain": "0000", "bus": "00", "numa_node": 0, "functions": [
    {"addr": "0000:00:00.0", "kind": "host_bridge", "vendor": "1022", "device": "1480", "class": "060000"},
    {"addr": "0000:00:01.1", "kind": "root_port", "vendor": "1022", "device": "1483", "class": "060400", "children": [%s]}]}]}`
	const bcm = `"vendor": "1000", "device": "c010", "subsystem_vendor": "1000", "subsystem_device": "a064", "class": "060400"`
	for _, tc := range []struct {
		name, children    string
		gpu, nic          string
		xmlPath, ncclSees string
		oracleSays, ibdev string
	}{
		{"rootport-pair", `
      {"addr": "0000:01:00.0", "kind": "endpoint", "vendor": "10de", "device": "2330", "class": "030200", "driver": "nvidia"},
      {"addr": "0000:01:00.1", "kind": "endpoint", "vendor": "1d0f", "device": "efa1", "class": "020000", "driver": "efa", "efa": {}}`,
			"0000:01:00.0", "0000:01:00.1", "PHB", "PHB", "PIX", "rdmap1s0"},
		{"broadcom-gen4", `
      {"addr": "0000:01:00.0", "kind": "switch_upstream", ` + bcm + `, "children": [
        {"addr": "0000:02:00.0", "kind": "switch_downstream", ` + bcm + `, "children": [
          {"addr": "0000:03:00.0", "kind": "switch_upstream", ` + bcm + `, "children": [
            {"addr": "0000:04:00.0", "kind": "switch_downstream", ` + bcm + `, "children": [
              {"addr": "0000:05:00.0", "kind": "endpoint", "vendor": "10de", "device": "2330", "class": "030200", "driver": "nvidia"}]}]}]},
        {"addr": "0000:02:01.0", "kind": "switch_downstream", ` + bcm + `, "children": [
          {"addr": "0000:06:00.0", "kind": "endpoint", "vendor": "1d0f", "device": "efa1", "class": "020000", "driver": "efa", "efa": {}}]}]}`,
			"0000:05:00.0", "0000:06:00.0", "PXB", "PIX", "PXB", "rdmap6s0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := models.Parse([]byte(fmt.Sprintf(head, tc.name, tc.children)), tc.name+".json")
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := m.Write(dir, models.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			data := marshalTree(t, m, dir, Options{})
			pt := parseNCCL(t, data)
			if got := ncclPathType(pt.pci[tc.gpu], pt.pci[tc.nic]); got != tc.xmlPath {
				t.Errorf("path type over the XML %s, want %s", got, tc.xmlPath)
			}
			g, n := p2p.MustParseAddr(tc.gpu), p2p.MustParseAddr(tc.nic)
			flat := strings.Join(strings.Fields(string(data)), " ")
			want := fmt.Sprintf("Note: NCCL sees GPU %s - %s %s as %s; efap2p's path class is %s", g.Short(), tc.ibdev, n.Short(), tc.ncclSees, tc.oracleSays)
			if !strings.Contains(flat, want) {
				t.Errorf("header lacks %q:\n%s", want, data)
			}
		})
	}
}

// TestNCCLTopologyAffinity: a tree with the node's cpumap gets it as the
// cpu's affinity.
func TestNCCLTopologyAffinity(t *testing.T) {
	m, dir := writeTree(t, "p5.48xlarge")
	for n, mask := range []string{"00000000,ffffff00,0000ffff", "ffffffff,000000ff,ffff0000"} {
		d := filepath.Join(dir, "devices/system/node", fmt.Sprintf("node%d", n))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cpumap"), []byte(mask+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pt := parseNCCL(t, marshalTree(t, m, dir, Options{}))
	if got := pt.system.Subs[1].attr("affinity"); got != "ffffffff,000000ff,ffff0000" {
		t.Errorf("cpu 1 affinity %q", got)
	}
}

// ncclReaderCheck checks data against a conservative subset of the format
// NCCL's own reader accepts (written from its behaviour): elements separated
// only by spaces, CRs and newlines; a start tag on one line with its
// attributes each after exactly one space, values in double or single
// quotes and at most 254 bytes, at most 16 attributes; comments that start
// with "<!--" followed by a space or newline; no XML declaration or other
// "<?"/"<!" markup; end tags that match.
func ncclReaderCheck(data []byte) error {
	s := string(data)
	i := 0
	var open []string
	isSep := func(c byte) bool { return c == ' ' || c == '\n' || c == '\r' }
	token := func() string { // a name: up to a space, '>', '/', newline or CR
		j := i
		for j < len(s) && !isSep(s[j]) && s[j] != '>' && s[j] != '/' && s[j] != '=' {
			j++
		}
		t := s[i:j]
		i = j
		return t
	}
	for {
		for i < len(s) && isSep(s[i]) {
			i++
		}
		if i == len(s) {
			if len(open) > 0 {
				return fmt.Errorf("unterminated <%s>", open[len(open)-1])
			}
			return nil
		}
		if s[i] != '<' {
			return fmt.Errorf("offset %d: %q where an element should start", i, s[i])
		}
		i++
		if strings.HasPrefix(s[i:], "!--") {
			if i+3 >= len(s) || !isSep(s[i+3]) {
				return fmt.Errorf("offset %d: a comment must start with \"<!-- \"", i)
			}
			end := strings.Index(s[i+3:], "-->")
			if end < 0 {
				return fmt.Errorf("offset %d: unterminated comment", i)
			}
			i += 3 + end + 3
			continue
		}
		if s[i] == '/' {
			i++
			name := token()
			if i >= len(s) || s[i] != '>' {
				return fmt.Errorf("offset %d: end tag </%s not closed by '>'", i, name)
			}
			i++
			if len(open) == 0 || open[len(open)-1] != name {
				return fmt.Errorf("offset %d: </%s> does not match", i, name)
			}
			open = open[:len(open)-1]
			continue
		}
		name := token()
		if name == "" || strings.ContainsAny(name[:1], "?!") {
			return fmt.Errorf("offset %d: element name %q", i, name)
		}
		nattrs := 0
		for i < len(s) && s[i] == ' ' {
			i++
			key := token()
			if key == "" || i >= len(s) || s[i] != '=' {
				return fmt.Errorf("offset %d: <%s>: attribute %q without '=' right after it", i, name, key)
			}
			i++
			if i >= len(s) || (s[i] != '"' && s[i] != '\'') {
				return fmt.Errorf("offset %d: <%s %s>: value not quoted", i, name, key)
			}
			q := s[i]
			end := strings.IndexByte(s[i+1:], q)
			if end < 0 || end > 254 {
				return fmt.Errorf("offset %d: <%s %s>: value unterminated or too long", i, name, key)
			}
			i += 1 + end + 1
			if nattrs++; nattrs > 16 {
				return fmt.Errorf("<%s>: more than 16 attributes", name)
			}
		}
		if i < len(s) && s[i] == '/' {
			i++
			if i >= len(s) || s[i] != '>' {
				return fmt.Errorf("offset %d: <%s/ not closed by '>'", i, name)
			}
			i++
			continue
		}
		if i >= len(s) || s[i] != '>' {
			return fmt.Errorf("offset %d: <%s>: expected '>'", i, name)
		}
		i++
		open = append(open, name)
	}
}

func TestNCCLReaderCheck(t *testing.T) {
	good := "<!-- c -->\n<system version=\"1\">\n  <cpu numaid=\"0\"/>\n</system>\n"
	if err := ncclReaderCheck([]byte(good)); err != nil {
		t.Errorf("good file: %v", err)
	}
	for _, bad := range []string{
		"<?xml version=\"1.0\"?>\n" + good,
		"\t" + good,
		"<system version=\"1\"><cpu  numaid=\"0\"/></system>",
		"<system\n version=\"1\"></system>",
		"<system version=\"1\"><cpu numaid=\"0\"></system>",
		"<!--a=b -->\n" + good,
		good + "x",
	} {
		if err := ncclReaderCheck([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestNCCLTopologyOptions: PeerBlocked clears the NIC's gdr and must name
// a NIC; uncertain verdicts (config space hidden) are refused unless Force.
func TestNCCLTopologyOptions(t *testing.T) {
	m, dir := writeTree(t, "p5.48xlarge")
	pt := parseNCCL(t, marshalTree(t, m, dir, Options{PeerBlocked: []p2p.Addr{p2p.MustParseAddr("4f:00.0")}}))
	if g := pt.net["rdmap79s0"].attr("gdr"); g != "0" {
		t.Errorf("blocked NIC: gdr %s", g)
	}
	if g := pt.net["rdmap80s0"].attr("gdr"); g != "1" {
		t.Errorf("its neighbour: gdr %s", g)
	}
	if g := pt.gpu["0000:53:00.0"].attr("gdr"); g != "1" {
		t.Errorf("the GPU (three NICs left): gdr %s", g)
	}
	o, src := openOracle(t, m, dir)
	if _, err := Marshal(o, src, Options{PeerBlocked: []p2p.Addr{p2p.MustParseAddr("53:00.0")}}); !errors.Is(err, ErrNotNIC) || !strings.Contains(err.Error(), "0000:53:00.0") {
		t.Errorf("blocking a GPU: %v, want ErrNotNIC naming it", err)
	}

	hidden := t.TempDir()
	if err := m.Write(hidden, models.WriteOptions{ConfigBytes: 64}); err != nil {
		t.Fatal(err)
	}
	// Without root on p5.48xlarge ACS is hidden, and it does not matter
	// (the AMD CPU rule allows the detour, NVIDIA's exporter does not ask):
	// the same GPUs and NICs, each with its gdr.
	o, src = openOracle(t, m, hidden)
	data, err := Marshal(o, src, Options{Model: m.Name})
	if err != nil {
		t.Fatalf("unprivileged p5.48xlarge: %v", err)
	}
	if got, want := parseNCCL(t, data), parseNCCL(t, marshalTree(t, m, dir, Options{})); len(got.net) != len(want.net) || got.gpu["0000:53:00.0"].attr("gdr") != want.gpu["0000:53:00.0"].attr("gdr") {
		t.Errorf("unprivileged: %d NICs, GPU gdr %s; as root %d, %s", len(got.net), got.gpu["0000:53:00.0"].attr("gdr"), len(want.net), want.gpu["0000:53:00.0"].attr("gdr"))
	}
	// Where it matters: amdgpu on Linux 6.15 keeps VRAM for a peer the
	// kernel allows, and below the non-whitelisted Broadwell switch the
	// hidden ACS state decides between BUS_ADDR and NOT_SUPPORTED.
	am, err := models.Builtin("intel-acs-switch")
	if err != nil {
		t.Fatal(err)
	}
	amDir := t.TempDir()
	if err := am.Write(amDir, models.WriteOptions{ConfigBytes: 64}); err != nil {
		t.Fatal(err)
	}
	amSrc, err := p2p.OpenSysfs(amDir)
	if err != nil {
		t.Fatal(err)
	}
	o = p2p.NewOracleWith(p2p.NewTopology(amSrc), p2p.Options{Kernel: p2p.MustParseRelease("6.15.0")})
	if _, err := Marshal(o, amSrc, Options{}); !errors.Is(err, ErrUncertain) {
		t.Errorf("uncertain: %v, want ErrUncertain", err)
	}
	data, err = Marshal(o, amSrc, Options{Force: true})
	if err != nil {
		t.Fatalf("Force: %v", err)
	}
	parseNCCL(t, data)
}

// TestNCCLTopologyHeader: the header names the model, or the host and its
// sysfs root, and the program that wrote it.
func TestNCCLTopologyHeader(t *testing.T) {
	m, dir := writeTree(t, "p4d.24xlarge")
	o, src := openOracle(t, m, dir)
	host, _ := os.Hostname()
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Model: "p4d.24xlarge"}, "NCCL topology of machine model p4d.24xlarge (an emulated sysfs tree written by efap2p sim write), written by efap2p's nccltopo package."},
		{Options{GeneratedBy: "efap2p export -format nccl"}, "NCCL topology of host " + host + " (sysfs at " + dir + "), written by efap2p export -format nccl."},
	} {
		data, err := Marshal(o, src, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if flat := strings.Join(strings.Fields(string(data)), " "); !strings.Contains(flat, tc.want) {
			t.Errorf("header lacks %q:\n%s", tc.want, data)
		}
	}
}
