// SPDX-License-Identifier: MIT

package devices

import (
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// TestOneNICOrder: the oracle lists the RDMA devices in the order topo
// numbers its NICs, PCI order: NIC0 is the first of p2p's RDMADevices,
// NIC31 the last. By hand, from the p5.48xlarge model: rdmap79s0 (4f:00.0)
// .. 82, rdmap96s0 .. 99, then rdmap113s0 (71:00.0), and rdmap201s0 last;
// a sort by bytes would put rdmap113s0 first.
func TestOneNICOrder(t *testing.T) {
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	rdma, err := src.RDMADevices()
	if err != nil || len(rdma) != 32 {
		t.Fatalf("RDMADevices: %d devices, %v; want the model's 32", len(rdma), err)
	}
	for i, want := range map[int]string{0: "rdmap79s0", 3: "rdmap82s0", 7: "rdmap99s0", 8: "rdmap113s0", 31: "rdmap201s0"} {
		if rdma[i].Name != want {
			t.Errorf("RDMADevices()[%d] = %s, want %s", i, rdma[i].Name, want)
		}
	}
	devs, err := List(p2p.NewOracle(p2p.NewTopology(src)), src)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range devs {
		if !d.RDMA() {
			continue
		}
		if n >= len(rdma) || d.IBDev != rdma[n].Name || d.Addr != rdma[n].Addr {
			t.Fatalf("%s is %s (%s); RDMADevices()[%d] is %v", d.Name, d.IBDev, d.Addr, n, rdma[min(n, len(rdma)-1)])
		}
		n++
	}
	if n != len(rdma) {
		t.Errorf("topo numbers %d NICs, the oracle lists %d RDMA devices", n, len(rdma))
	}
}

// TestPCIOrder: every kind of device is numbered in PCI address order,
// not by name: on multi-domain, rdmap2s0 (0000:02:00.0) is NIC0 and
// rdmaP1p2s0 (0001:02:00.0) NIC1, which the natural order of the names
// would swap (P before p).
func TestPCIOrder(t *testing.T) {
	m, err := models.Builtin("multi-domain")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	devs, err := List(p2p.NewOracle(p2p.NewTopology(src)), src)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, d := range devs {
		got[d.Name] = d.IBDev + " " + d.Addr.String()
		if i > 0 && devs[i-1].Kind == d.Kind && devs[i-1].RDMA() == d.RDMA() && !devs[i-1].Addr.Less(d.Addr) {
			t.Errorf("%s (%s) listed after %s (%s)", d.Name, d.Addr, devs[i-1].Name, devs[i-1].Addr)
		}
	}
	if got["NIC0"] != "rdmap2s0 0000:02:00.0" || got["NIC1"] != "rdmaP1p2s0 0001:02:00.0" {
		t.Errorf("NIC0 %q, NIC1 %q; want rdmap2s0 0000:02:00.0, rdmaP1p2s0 0001:02:00.0", got["NIC0"], got["NIC1"])
	}
	rdma, err := src.RDMADevices()
	if err != nil || len(rdma) != 2 || rdma[0].Name != "rdmap2s0" {
		t.Errorf("RDMADevices %v, %v: want rdmap2s0 first", rdma, err)
	}
}
