// SPDX-License-Identifier: MIT

package p2p_test

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// writeModel writes a built-in model to a temporary sysfs tree.
func writeModel(tb testing.TB, name string, opt models.WriteOptions) (*models.Machine, string) {
	tb.Helper()
	m, err := models.Builtin(name)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	if err := m.Write(dir, opt); err != nil {
		tb.Fatal(err)
	}
	return m, dir
}

func openOracle(tb testing.TB, dir string) (*p2p.Oracle, *p2p.Sysfs) {
	tb.Helper()
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return p2p.NewOracle(p2p.NewTopology(src)), src
}

var (
	p5GPU = p2p.MustParseAddr("0000:53:00.0")
	p5NIC = p2p.MustParseAddr("0000:4f:00.0") // same switch as p5GPU
)

// TestUnprivileged reads the tree as a process without CAP_SYS_ADMIN sees
// it: ACS is unknown, the verdict takes the kernel-safe branch and says so.
func TestUnprivileged(t *testing.T) {
	_, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{ConfigBytes: 64})
	o, _ := openOracle(t, dir)
	v, err := o.Verdict(p5GPU, p5NIC)
	if err != nil {
		t.Fatal(err)
	}
	if v.MapType != p2p.MapThruHostBridge || v.Distance != 4 || v.Certain {
		t.Errorf("got %s distance %d certain %v; want THRU_HOST_BRIDGE 4 uncertain (the AMD CPU allows the assumed detour)", v.MapType, v.Distance, v.Certain)
	}
	// Every function on the path, the common ancestor included, is unknown.
	want := "0000:53:00.0 0000:46:05.0 0000:45:00.0 0000:4f:00.0 0000:46:01.0"
	var got []string
	for _, a := range v.ACSUnknown {
		got = append(got, a.String())
	}
	if strings.Join(got, " ") != want {
		t.Errorf("acs unknown = %v, want %s", got, want)
	}
	if len(v.ACSRedirect) != 0 {
		t.Errorf("acs redirect = %v, want none (unknown is not redirect)", v.ACSRedirect)
	}
	if !strings.Contains(v.Reason, "efap2p export") || !strings.Contains(v.Reason, "CAP_SYS_ADMIN") {
		t.Errorf("reason does not say how to get a certain answer: %s", v.Reason)
	}
	// Across switches nothing depends on ACS: still certain.
	v, err = o.Verdict(p5GPU, p2p.MustParseAddr("0000:c6:00.0"))
	if err != nil || !v.Certain || v.MapType != p2p.MapThruHostBridge {
		t.Errorf("cross-switch verdict: %+v, %v", v, err)
	}
}

// TestConfigDwordBudget holds the oracle to at most 8 config dwords per
// function on the paths asked about (each one traps on a VM).
func TestConfigDwordBudget(t *testing.T) {
	m, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	o, src := openOracle(t, dir)
	onPath := map[p2p.Addr]bool{}
	for _, nic := range m.EFANICs() {
		ok, v, err := o.ReachesAccelerator(nic.Addr)
		if err != nil || !ok {
			t.Fatalf("%s: reaches %v (%v), want true", nic.Addr, ok, err)
		}
		for _, a := range []p2p.Addr{v.Provider, v.Client} {
			f, _ := o.Topology().Function(a)
			for ; f != nil; f = f.Upstream {
				onPath[f.Addr] = true
			}
		}
	}
	st := src.Stats()
	if st.ConfigDwords == 0 || st.ConfigDwords > int64(8*len(onPath)) {
		t.Errorf("read %d config dwords for %d functions on the paths; budget is 8 each", st.ConfigDwords, len(onPath))
	}
	if st.ConfigOpens > int64(len(m.Functions())) {
		t.Errorf("opened %d config files for %d functions: some twice", st.ConfigOpens, len(m.Functions()))
	}
}

func TestWarmVerdictDoesNotAllocate(t *testing.T) {
	_, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	o, _ := openOracle(t, dir)
	if _, err := o.Verdict(p5GPU, p5NIC); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { o.Verdict(p5GPU, p5NIC) }); n != 0 {
		t.Errorf("warm lookup allocates %v times", n)
	}
}

// TestMatrixAgrees checks that the packed matrix equals Verdict on every
// pair of every model.
func TestMatrixAgrees(t *testing.T) {
	for _, name := range models.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			m, err := models.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			o := p2p.NewOracle(p2p.NewTopology(m.Source()))
			addrs, _ := o.Topology().Functions()
			mx, err := o.Matrix(addrs)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range addrs {
				for j, c := range addrs {
					v, err := o.Verdict(p, c)
					if err != nil {
						t.Fatal(err)
					}
					mt, d, path := mx.Cell(i, j)
					if mt != v.MapType || d != v.Distance || path != v.Path {
						t.Fatalf("%s -> %s: matrix %s %d %s, verdict %s %d %s", p, c, mt, d, path, v.MapType, v.Distance, v.Path)
					}
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	if _, err := p2p.OpenSysfs(t.TempDir()); err == nil {
		t.Error("an empty directory was taken for a sysfs tree")
	}
	_, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	o, _ := openOracle(t, dir)
	missing := p2p.MustParseAddr("0000:3f:00.0")
	if _, err := o.Verdict(missing, p5NIC); err == nil || !strings.Contains(err.Error(), "0000:3f:00.0") {
		t.Errorf("missing provider: %v", err)
	}
	if _, err := o.Verdict(p5GPU, missing); err == nil {
		t.Error("missing client accepted")
	}
	if d, _, err := o.DistanceMany(p5GPU, nil); d != -1 || err == nil {
		t.Errorf("DistanceMany without clients = %d, %v", d, err)
	}
}

func TestDistanceMany(t *testing.T) {
	_, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	o, _ := openOracle(t, dir)
	clients := []p2p.Addr{p5NIC, p2p.MustParseAddr("0000:50:00.0"), p2p.MustParseAddr("0000:c6:00.0")}
	// 4 + 4 (same switch) + 8 (across sockets), worked out in the model.
	if d, vs, err := o.DistanceMany(p5GPU, clients); d != 16 || len(vs) != 3 || err != nil {
		t.Errorf("DistanceMany = %d, %d verdicts, %v; want 16", d, len(vs), err)
	}
}

func TestConcurrentVerdicts(t *testing.T) {
	m, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	o, _ := openOracle(t, dir)
	var fns []p2p.Addr
	for _, f := range m.Functions() {
		fns = append(fns, f.Addr)
	}
	var wg sync.WaitGroup
	results := make([]map[[2]p2p.Addr]*p2p.Verdict, 8)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := map[[2]p2p.Addr]*p2p.Verdict{}
			for i := range fns {
				p := fns[(i+g)%len(fns)]
				for _, c := range fns[:20] {
					v, err := o.Verdict(p, c)
					if err != nil {
						t.Error(err)
						return
					}
					r[[2]p2p.Addr{p, c}] = v
				}
			}
			results[g] = r
		}()
	}
	wg.Wait()
	for k, v := range results[0] {
		for g := 1; g < len(results); g++ {
			if results[g][k] != v {
				t.Fatalf("%v: goroutines got different verdicts", k)
			}
		}
	}
}

// TestRealSysfs runs the oracle read-only on this machine's /sys: every
// pair gets a definite answer and the matrix agrees.
func TestRealSysfs(t *testing.T) {
	src, err := p2p.OpenSysfs("/sys")
	if err != nil {
		t.Skipf("no PCI sysfs here: %v", err)
	}
	o := p2p.NewOracle(p2p.NewTopology(src))
	addrs, err := o.Topology().Functions()
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) > 64 {
		addrs = addrs[:64]
	}
	mx, err := o.Matrix(addrs)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range addrs {
		for j, c := range addrs {
			v, err := o.Verdict(p, c)
			if err != nil {
				t.Fatalf("%s -> %s: %v", p, c, err)
			}
			if v.MapType == p2p.MapUnknown || v.Path == p2p.PathUnknown || v.Reason == "" {
				t.Fatalf("%s -> %s: incomplete verdict %+v", p, c, v)
			}
			if mt, d, _ := mx.Cell(i, j); mt != v.MapType || d != v.Distance {
				t.Fatalf("%s -> %s: matrix %s %d, verdict %s %d", p, c, mt, d, v.MapType, v.Distance)
			}
		}
	}
	if os.Geteuid() != 0 && len(addrs) > 0 {
		t.Logf("not root: ACS read as unknown where config space is hidden")
	}
	t.Logf("%d functions, %+v", len(addrs), src.Stats())
}

func TestRDMADevice(t *testing.T) {
	_, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	_, src := openOracle(t, dir)
	if a, err := src.RDMADevice("rdmap79s0"); err != nil || a != p5NIC {
		t.Errorf("rdmap79s0 = %v, %v; want %s", a, err, p5NIC)
	}
	for _, bad := range []string{"nonesuch", "", "../x"} {
		if _, err := src.RDMADevice(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestRDMAName: the inverse of RDMADevice; a GPU has no RDMA device.
func TestRDMAName(t *testing.T) {
	_, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	_, src := openOracle(t, dir)
	if got := src.RDMAName(p5NIC); got != "rdmap79s0" {
		t.Errorf("RDMAName(%s) = %q, want rdmap79s0", p5NIC, got)
	}
	if got := src.RDMAName(p5GPU); got != "" {
		t.Errorf("RDMAName(%s) = %q, want none", p5GPU, got)
	}
}

// TestTwoOraclesOneSysfs: a second oracle over the same Sysfs (export
// writes a file with one, reads it back with another) finds every function
// again.
func TestTwoOraclesOneSysfs(t *testing.T) {
	_, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		o := p2p.NewOracle(p2p.NewTopology(src))
		if v, err := o.Verdict(p5GPU, p5NIC); err != nil || v.MapType != p2p.MapBusAddr {
			t.Fatalf("oracle %d: %v, %v", i+1, v, err)
		}
	}
}
