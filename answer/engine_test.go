// SPDX-License-Identifier: MIT

package answer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/efap2p/efap2p/abi"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// tree writes a model's sysfs tree: a built-in name, or a file.
func tree(t testing.TB, model string) string {
	t.Helper()
	var m *models.Machine
	var err error
	if strings.HasSuffix(model, ".json") {
		m, err = models.LoadFile(model)
	} else {
		m, err = models.Builtin(model)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sys")
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

const refusedModel = "../ctests/emulator/refused.json"

func newEngine(root, topology, kernel string, warnf func(string, ...any)) *Engine {
	var rel p2p.Release
	if kernel != "" {
		var err error
		if rel, err = p2p.ParseRelease(kernel); err != nil {
			panic(err)
		}
	}
	return New(root, p2p.Options{TopologyFile: topology, Warnf: warnf, Kernel: rel}, true)
}

// modelKernel is the release a model declares for its emulated host.
func modelKernel(t testing.TB, model string) string {
	t.Helper()
	var m *models.Machine
	var err error
	if strings.HasSuffix(model, ".json") {
		m, err = models.LoadFile(model)
	} else {
		m, err = models.Builtin(model)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m.KernelRelease().String()
}

func newTestEngine(t testing.TB, model, topology string) (*Engine, *[]string) {
	var warnings []string
	e := newEngine(tree(t, model), topology, modelKernel(t, model), func(f string, a ...any) {
		warnings = append(warnings, fmt.Sprintf(f, a...))
	})
	if e.Err() != nil {
		t.Fatal(e.Err())
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
		a, errno := e.NIC(tc.ibdev)
		if errno != 0 || a.Reaches != tc.want || !strings.HasPrefix(a.Summary, tc.ibdev+" (") {
			t.Errorf("%s %s: reaches %v errno %v (%s), want %v", tc.model, tc.ibdev, a.Reaches, errno, a.Summary, tc.want)
		}
	}
}

func TestNICErrors(t *testing.T) {
	e, _ := newTestEngine(t, "p5.48xlarge", "")
	if a, errno := e.NIC("mlx5_0"); errno != syscall.ENODEV || a.Reaches || a.Summary == "" {
		t.Errorf("unknown device: %v %v %q", a.Reaches, errno, a.Summary)
	}
	none := newEngine(filepath.Join(t.TempDir(), "nothing"), "", "", nil)
	if _, errno := none.NIC("rdmap79s0"); errno != syscall.EIO {
		t.Errorf("no tree: errno %v, want EIO", errno)
	}
}

func TestPeer(t *testing.T) {
	e, _ := newTestEngine(t, "p5.48xlarge", "")
	a, errno := e.Peer("rdmap79s0", p2p.MustParseAddr("0000:53:00.0"))
	want := abi.P2PAttr{MapType: abi.P2PMapBusAddr, Distance: 4, Path: abi.P2PPathPIX,
		Outcome: abi.P2POutcomeP2P, Policy: abi.P2PPolicyNVIDIA, Source: abi.P2PSourceComputed,
		PeerBus: 0x53,
		// the model's out-of-tree EFA driver offers "NVIDIA peermem",
		// which serves the nvidia driver of the H100
		PeerMemOutcome: abi.P2POutcomeP2P, PeerMemProvider: abi.P2PPeerMemNVIDIAPeermem}
	got := a.Attr
	got.BandwidthMBs, got.LatencyNs = 0, 0
	if errno != 0 || got != want || a.Attr.BandwidthMBs == 0 || !strings.Contains(a.Reason, "0000:45:00.0") || a.Kernel == "" {
		t.Errorf("peer: %+v %v %q", a.Attr, errno, a.Reason)
	}
	if _, errno := e.Peer("rdmap79s0", p2p.MustParseAddr("0000:ee:00.0")); errno != syscall.ENOENT {
		t.Errorf("no such peer: errno %v", errno)
	}
	if _, errno := e.Peer("nope", p2p.MustParseAddr("0000:53:00.0")); errno != syscall.ENODEV {
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
		{"rdmap3s0", "nvidia", DmabufAllow, true, 0, false},
		{"rdmap3s0", "nv_dmabuf", DmabufAllow, true, 0, false},
		{"rdmap3s0", "amdgpu", DmabufAllow, true, 0, false}, // bounced is not refused
		{"rdmap3s0", "habanalabs", DmabufRefuse, false, 0, false},
		{"rdmap3s0", "drm", DmabufAllow, true, 0, false}, // the one DRM device: the bounced amdgpu
		{"rdmap5s0", "nvidia", DmabufAllow, true, 0, false},
		{"rdmap3s0", "system", DmabufPass, false, syscall.ENOENT, false},
		{"rdmap3s0", "nosuchdriver", DmabufPass, false, syscall.ENOENT, false},
		{"mlx5_0", "nvidia", DmabufPass, false, syscall.ENODEV, false},
	} {
		a := e.Dmabuf(tc.ibdev, tc.exp)
		amb := a.Best.Attr.Flags&abi.P2PFlagAmbiguousPeer != 0
		if a.Decision != tc.decision || a.AllAllowed != tc.allAllowed || a.Err != tc.err || amb != tc.ambiguous {
			t.Errorf("%s + %s: decision %d all-allowed %v err %v ambiguous %v; want %d %v %v %v",
				tc.ibdev, tc.exp, a.Decision, a.AllAllowed, a.Err, amb, tc.decision, tc.allAllowed, tc.err, tc.ambiguous)
		}
		if (a.Decision != DmabufAllow) != (a.Summary != "") {
			t.Errorf("%s + %s: summary %q", tc.ibdev, tc.exp, a.Summary)
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
		{refusedModel, "rdmap3s0", true},       // habanalabs refuses
		{refusedModel, "rdmap5s0", true},       // so does it here
	} {
		e, _ := newTestEngine(t, tc.model, "")
		if got, errno := e.Refusable(tc.ibdev); got != tc.want || errno != 0 {
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
	if a := e.Dmabuf("rdmap5s0", "nvidia"); a.Decision != DmabufRefuse || len(warned) != 0 {
		t.Errorf("blocked NIC: decision %d, warnings %q", a.Decision, warned)
	}
	e = newEngine(dir, bad, "latest", func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) })
	e.NIC("rdmap3s0")
	e.NIC("rdmap5s0")
	if a := e.Dmabuf("rdmap5s0", "nvidia"); a.Decision != DmabufAllow || len(warned) != 1 {
		t.Errorf("bad file: decision %d, warnings %q", a.Decision, warned)
	}
}

// BenchmarkColdP5AllNICs is the core's share of the first P2P_DMA answer
// for every EFA device of p5.48xlarge: a fresh engine, the RDMA device
// resolved through sysfs, the nearest accelerator judged, the log line
// written.
func BenchmarkColdP5AllNICs(b *testing.B) {
	dir := tree(b, "p5.48xlarge")
	m, _ := models.Builtin("p5.48xlarge")
	var names []string
	for _, n := range m.EFANICs() {
		names = append(names, fmt.Sprintf("rdmap%ds0", n.Addr.Bus))
	}
	for b.Loop() {
		e := newEngine(dir, "", "latest", nil)
		for _, n := range names {
			if a, errno := e.NIC(n); errno != 0 || !a.Reaches {
				b.Fatalf("%s: %v %v", n, a.Reaches, errno)
			}
		}
	}
}

// TestAbsentPeersBounded: asking about ever new absent peers does not grow
// the process (every answer is ENOENT; none is kept past a bound).
func TestAbsentPeersBounded(t *testing.T) {
	e, _ := newTestEngine(t, "p5.48xlarge", "")
	ask := func(from, n int) {
		for i := from; i < from+n; i++ {
			peer := p2p.Addr{Domain: uint32(1 + i>>16), Bus: uint8(i >> 8), Device: uint8(i>>3) & 31, Function: uint8(i) & 7}
			if _, errno := e.Peer("rdmap79s0", peer); errno != syscall.ENOENT {
				t.Fatalf("absent peer %s: errno %v", peer, errno)
			}
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	ask(0, 5000) // past any bound
	before := heap()
	ask(5000, 100000)
	if grown := int64(heap()) - int64(before); grown > 1<<20 {
		t.Errorf("100,000 more absent peers grew the heap by %d bytes", grown)
	}
	runtime.KeepAlive(e)
}
