// SPDX-License-Identifier: MIT

//go:build cgo

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/efap2p/efap2p/abi"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim"
)

// tree writes a model's sysfs tree: a built-in name, or a file.
func tree(t testing.TB, model string) string {
	t.Helper()
	var m *sim.Machine
	var err error
	if strings.HasSuffix(model, ".json") {
		m, err = sim.LoadFile(model)
	} else {
		m, err = sim.Builtin(model)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sys")
	if err := m.Write(dir, sim.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

const refusedModel = "../../ctests/emulator/refused.json"

// modelKernel is the release a model declares for its emulated host.
func modelKernel(t testing.TB, model string) string {
	t.Helper()
	var m *sim.Machine
	var err error
	if strings.HasSuffix(model, ".json") {
		m, err = sim.LoadFile(model)
	} else {
		m, err = sim.Builtin(model)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m.KernelRelease().String()
}

func newTestEngine(t testing.TB, model, topology string) (*engine, *[]string) {
	var warnings []string
	e := newEngine(tree(t, model), topology, modelKernel(t, model), func(f string, a ...any) {
		warnings = append(warnings, fmt.Sprintf(f, a...))
	})
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e, &warnings
}

// The P2P_DMA bit, stated by hand from the models: p5.48xlarge puts every
// NIC on a switch with an H100 (nvidia allows peers in a VM);
// intel-acs-switch refuses or bounces every GPU-NIC path.
func TestNIC(t *testing.T) {
	for _, tc := range []struct {
		model, ibdev string
		want         bool
	}{
		{"p5.48xlarge", "rdmap79s0", true},
		{"p5.48xlarge", "rdmap201s0", true},
		{"intel-acs-switch", "rdmap4s0", false},
		{"intel-acs-switch", "rdmap132s0", false},
		{refusedModel, "rdmap3s0", true},
		{refusedModel, "rdmap5s0", true}, // the firmware block is invisible in sysfs
	} {
		e, _ := newTestEngine(t, tc.model, "")
		a, errno := e.nic(tc.ibdev)
		if errno != 0 || a.reaches != tc.want || !strings.HasPrefix(a.summary, tc.ibdev+" (") {
			t.Errorf("%s %s: reaches %v errno %v (%s), want %v", tc.model, tc.ibdev, a.reaches, errno, a.summary, tc.want)
		}
	}
}

func TestNICErrors(t *testing.T) {
	e, _ := newTestEngine(t, "p5.48xlarge", "")
	if a, errno := e.nic("mlx5_0"); errno != syscall.ENODEV || a.reaches || a.summary == "" {
		t.Errorf("unknown device: %v %v %q", a.reaches, errno, a.summary)
	}
	none := newEngine(filepath.Join(t.TempDir(), "nothing"), "", "", nil)
	if _, errno := none.nic("rdmap79s0"); errno != syscall.EIO {
		t.Errorf("no tree: errno %v, want EIO", errno)
	}
}

func TestPeer(t *testing.T) {
	e, _ := newTestEngine(t, "p5.48xlarge", "")
	a, errno := e.peer("rdmap79s0", p2p.MustParseAddr("0000:53:00.0"))
	want := abi.P2PAttr{MapType: abi.P2PMapBusAddr, Distance: 4, Path: abi.P2PPathPIX,
		Outcome: abi.P2POutcomeP2P, Policy: abi.P2PPolicyNVIDIA, Source: abi.P2PSourceComputed,
		PeerBus: 0x53}
	got := a.attr
	got.BandwidthMBs, got.LatencyNs = 0, 0
	if errno != 0 || got != want || a.attr.BandwidthMBs == 0 || !strings.Contains(a.reason, "0000:45:00.0") {
		t.Errorf("peer: %+v %v %q", a.attr, errno, a.reason)
	}
	if _, errno := e.peer("rdmap79s0", p2p.MustParseAddr("0000:ee:00.0")); errno != syscall.ENOENT {
		t.Errorf("no such peer: errno %v", errno)
	}
	if _, errno := e.peer("nope", p2p.MustParseAddr("0000:53:00.0")); errno != syscall.ENODEV {
		t.Errorf("no such device: errno %v", errno)
	}
}

// Registration decisions on refused.json, by hand from its verdicts.
func TestDmabuf(t *testing.T) {
	e, _ := newTestEngine(t, refusedModel, "")
	for _, tc := range []struct {
		ibdev, exp string
		decision   int
		allAllowed bool
		err        syscall.Errno
		ambiguous  bool
	}{
		{"rdmap3s0", "nvidia", dmabufAllow, true, 0, false},
		{"rdmap3s0", "nv_dmabuf", dmabufAllow, true, 0, false},
		{"rdmap3s0", "amdgpu", dmabufAllow, true, 0, false}, // bounced is not refused
		{"rdmap3s0", "xe", dmabufRefuse, false, 0, false},
		{"rdmap3s0", "drm", dmabufAllow, false, 0, true}, // amdgpu bounced, xe refused
		{"rdmap5s0", "nvidia", dmabufAllow, true, 0, false},
		{"rdmap3s0", "system", dmabufPass, false, syscall.ENOENT, false},
		{"rdmap3s0", "nosuchdriver", dmabufPass, false, syscall.ENOENT, false},
		{"mlx5_0", "nvidia", dmabufPass, false, syscall.ENODEV, false},
	} {
		a := e.dmabuf(tc.ibdev, tc.exp)
		amb := a.best.attr.Flags&abi.P2PFlagAmbiguousPeer != 0
		if a.decision != tc.decision || a.allAllowed != tc.allAllowed || a.err != tc.err || amb != tc.ambiguous {
			t.Errorf("%s + %s: decision %d all-allowed %v err %v ambiguous %v; want %d %v %v %v",
				tc.ibdev, tc.exp, a.decision, a.allAllowed, a.err, amb, tc.decision, tc.allAllowed, tc.err, tc.ambiguous)
		}
		if (a.decision != dmabufAllow) != (a.summary != "") {
			t.Errorf("%s + %s: summary %q", tc.ibdev, tc.exp, a.summary)
		}
	}
}

func TestRefusable(t *testing.T) {
	for _, tc := range []struct {
		model, ibdev string
		want         bool
	}{
		{"p5.48xlarge", "rdmap79s0", false},    // nvidia allows every peer in a VM
		{"intel-acs-switch", "rdmap4s0", true}, // the other NICs (efa, mlx5_core) are refused
		{refusedModel, "rdmap3s0", true},       // xe refuses
		{refusedModel, "rdmap5s0", true},       // so does it here
	} {
		e, _ := newTestEngine(t, tc.model, "")
		if got, errno := e.refusable(tc.ibdev); got != tc.want || errno != 0 {
			t.Errorf("%s %s: refusable %v %v, want %v", tc.model, tc.ibdev, got, errno, tc.want)
		}
	}
}

// A topology file that records the peer-blocked NIC refuses its pairs; a
// malformed one is reported once and the other sources answer.
func TestTopologyFile(t *testing.T) {
	dir := tree(t, refusedModel)
	tf := p2p.NewTopologyFile("test")
	tf.NICs = append(tf.NICs, p2p.TopoNIC{Addr: p2p.MustParseAddr("0000:05:00.0"), PeerAccessBlocked: true})
	data, err := tf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "topo.json")
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(good, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	var warned []string
	e := newEngine(dir, good, "latest", func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) })
	if a := e.dmabuf("rdmap5s0", "nvidia"); a.decision != dmabufRefuse || len(warned) != 0 {
		t.Errorf("blocked NIC: decision %d, warnings %q", a.decision, warned)
	}
	e = newEngine(dir, bad, "latest", func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) })
	e.nic("rdmap3s0")
	e.nic("rdmap5s0")
	if a := e.dmabuf("rdmap5s0", "nvidia"); a.decision != dmabufAllow || len(warned) != 1 {
		t.Errorf("bad file: decision %d, warnings %q", a.decision, warned)
	}
}

// BenchmarkColdP5AllNICs is the core's share of the first P2P_DMA answer
// for every EFA device of p5.48xlarge: a fresh engine, the RDMA device
// resolved through sysfs, the nearest accelerator judged, the log line
// written.
func BenchmarkColdP5AllNICs(b *testing.B) {
	dir := tree(b, "p5.48xlarge")
	m, _ := sim.Builtin("p5.48xlarge")
	var names []string
	for _, n := range m.EFANICs() {
		names = append(names, fmt.Sprintf("rdmap%ds0", n.Addr.Bus))
	}
	for b.Loop() {
		e := newEngine(dir, "", "latest", nil)
		for _, n := range names {
			if a, errno := e.nic(n); errno != 0 || !a.reaches {
				b.Fatalf("%s: %v %v", n, a.reaches, errno)
			}
		}
	}
}
