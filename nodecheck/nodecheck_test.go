// SPDX-License-Identifier: MIT

package nodecheck_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/nodecheck"
	"github.com/efap2p/efap2p/p2p"
)

// A recent kernel, so that the answers do not depend on the machine the
// tests run on.
const newKernel = "6.8.0-1015-aws"

func builtin(t *testing.T, name string) *models.Machine {
	t.Helper()
	m, err := models.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// kernelConfigName is the file an emulated host keeps its kernel's
// configuration in (kernelConfigName): write puts the model's there,
// and run gives it to the oracle, as efap2p sim does.
const kernelConfigName = "kernel.config"

func write(t *testing.T, m *models.Machine, opt models.WriteOptions) string {
	t.Helper()
	dir := t.TempDir()
	if err := m.Write(dir, opt); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, kernelConfigName), []byte(m.KernelConfigFile()), 0o444); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run checks the tree at dir as `efap2p check` does.
func run(t *testing.T, dir, topology string, opt nodecheck.Options) *nodecheck.Report {
	t.Helper()
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var kc *p2p.KernelConfig
	if k, err := p2p.ReadKernelConfigFile(filepath.Join(dir, kernelConfigName)); err == nil {
		kc = &k
	}
	opt.Oracle = p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{TopologyFile: topology, KernelConfig: kc})
	opt.Root, opt.TopologyFile = dir, topology
	if opt.Kernel == "" {
		opt.Kernel = newKernel
	}
	r, err := nodecheck.Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func finding(r *nodecheck.Report, code string) *nodecheck.Finding {
	for i := range r.Findings {
		if r.Findings[i].Code == code {
			return &r.Findings[i]
		}
	}
	return nil
}

func codes(r *nodecheck.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Code)
	}
	return out
}

func text(t *testing.T, r *nodecheck.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func addrs(ss ...string) []p2p.Addr {
	out := make([]p2p.Addr, len(ss))
	for i, s := range ss {
		out[i] = p2p.MustParseAddr(s)
	}
	return out
}

// The switch-local EFA NICs of each H100 of p5.48xlarge, from the public
// layout (shared facts, ecosystem.md): switch / GPU / EFAs.
var p5Local = map[string][]string{
	"0000:53:00.0": {"0000:4f:00.0", "0000:50:00.0", "0000:51:00.0", "0000:52:00.0"},
	"0000:64:00.0": {"0000:60:00.0", "0000:61:00.0", "0000:62:00.0", "0000:63:00.0"},
	"0000:75:00.0": {"0000:71:00.0", "0000:72:00.0", "0000:73:00.0", "0000:74:00.0"},
	"0000:86:00.0": {"0000:82:00.0", "0000:83:00.0", "0000:84:00.0", "0000:85:00.0"},
	"0000:97:00.0": {"0000:93:00.0", "0000:94:00.0", "0000:95:00.0", "0000:96:00.0"},
	"0000:a8:00.0": {"0000:a4:00.0", "0000:a5:00.0", "0000:a6:00.0", "0000:a7:00.0"},
	"0000:b9:00.0": {"0000:b5:00.0", "0000:b6:00.0", "0000:b7:00.0", "0000:b8:00.0"},
	"0000:ca:00.0": {"0000:c6:00.0", "0000:c7:00.0", "0000:c8:00.0", "0000:c9:00.0"},
}

// TestHealthyP5: the emulated p5.48xlarge with its DMI identity and
// modules: every GPU has true P2P with its 4 switch-local NICs, the
// layout is the model's, no finding, exit 0, and one screen of text.
func TestHealthyP5(t *testing.T) {
	r := run(t, write(t, builtin(t, "p5.48xlarge"), models.WriteOptions{}), "", nodecheck.Options{})
	if r.Status != nodecheck.StatusOK || r.ExitCode != 0 || len(r.Findings) != 0 {
		t.Fatalf("status %s exit %d findings %v; want ok, 0, none", r.Status, r.ExitCode, codes(r))
	}
	if r.Host.InstanceType != "p5.48xlarge" || r.Expected == nil || !r.Expected.Match || r.Expected.Source != "dmi" {
		t.Errorf("instance type %q, expected %+v: want the p5.48xlarge model, matching", r.Host.InstanceType, r.Expected)
	}
	if len(r.Accelerators) != 8 || len(r.NICs) != 32 || len(r.Pairs) != 256 {
		t.Fatalf("%d accelerators, %d NICs, %d pairs; want 8, 32, 256", len(r.Accelerators), len(r.NICs), len(r.Pairs))
	}
	for _, a := range r.Accelerators {
		want := addrs(p5Local[a.Addr.String()]...)
		if !slices.Equal(a.LocalNICs, want) || !slices.Equal(a.LocalP2P, want) || a.LocalPath != p2p.PathPIX || !a.Certain {
			t.Errorf("%s %s: local %v p2p %v path %s certain %v; want %v, PIX, certain", a.Name, a.Addr, a.LocalNICs, a.LocalP2P, a.LocalPath, a.Certain, want)
		}
	}
	d := r.Host.EFADriver
	if d.Kind != nodecheck.DriverOutOfTree || d.Version != "2.17.3g" || d.PeerMemory == nil || *d.PeerMemory != "NVIDIA peermem" || !r.Host.DMABuf.Supported {
		t.Errorf("EFA driver %+v, dma-buf %+v", d, r.Host.DMABuf)
	}
	out := text(t, r)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > 24 {
		t.Errorf("%d lines: not one screen:\n%s", len(lines), out)
	}
	gpuLines := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "GPU") && strings.Contains(l, "P2P with 4/4 switch-local NICs") {
			gpuLines++
		}
		if len(l) > 100 {
			t.Errorf("line too wide (%d): %s", len(l), l)
		}
	}
	if gpuLines != 8 || !strings.Contains(out, "works on this node") || !strings.Contains(out, "No findings.") {
		t.Errorf("want 8 GPU lines with their 4 switch-local NICs:\n%s", out)
	}
	if got := r.Line(); got != "OK: 8 GPUs, each with true P2P to its 4 switch-local EFA NICs (p5.48xlarge)" || r.LineExitCode() != 0 {
		t.Errorf("line %q exit %d", got, r.LineExitCode())
	}
}

// TestDegraded: variants of p5.48xlarge built from its model, each with
// one thing in the way: exit 1 with the finding and its fix.
func TestDegraded(t *testing.T) {
	gpus := func() []p2p.Addr {
		var out []p2p.Addr
		for a := range p5Local {
			out = append(out, p2p.MustParseAddr(a))
		}
		return out
	}
	tests := []struct {
		name    string
		edit    func(t *testing.T, m *models.Machine) *models.Machine
		topo    func(t *testing.T, dir string) string
		code    string
		message string   // the finding's message contains it
		fix     []string // its fix names these
		also    []string // other findings expected
	}{
		{
			name: "nic-removed",
			edit: func(t *testing.T, m *models.Machine) *models.Machine {
				m, err := m.Without(addrs("0000:a6:00.0", "0000:a7:00.0")...)
				if err != nil {
					t.Fatal(err)
				}
				return m
			},
			code:    "efa-devices-missing",
			message: "expected 32 EFA devices for p5.48xlarge, found 30: 0000:a6:00.0, 0000:a7:00.0 missing",
			fix:     []string{"one EFA network interface per network card"},
			also:    []string{"local-p2p-missing"},
		},
		{
			name: "firmware-blocked-nic",
			topo: func(t *testing.T, dir string) string {
				tf := p2p.NewTopologyFile("test")
				tf.NICs = append(tf.NICs, p2p.TopoNIC{Addr: p2p.MustParseAddr("0000:4f:00.0"), PeerAccessBlocked: true})
				data, err := tf.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(t.TempDir(), "topology.json")
				if err := os.WriteFile(file, data, 0o644); err != nil {
					t.Fatal(err)
				}
				return file
			},
			code:    "p2p-refused",
			message: "GPU0 0000:53:00.0: P2P DMA refused with 1 of its 4 switch-local EFA NICs: rdmap79s0 (0000:4f:00.0)",
			fix:     []string{"firmware refuses DMA to peers", "stop and start the instance", "efap2p explain 0000:53:00.0 0000:4f:00.0"},
		},
		{
			name: "peer-memory-module-missing",
			edit: func(t *testing.T, m *models.Machine) *models.Machine {
				empty := ""
				m.Module("efa").P2P = &empty
				m.Modules = slices.DeleteFunc(m.Modules, func(mod models.Module) bool { return mod.Name == "efa_nv_peermem" })
				return m
			},
			code:    "peer-memory-missing",
			message: "has no peer-memory provider",
			fix:     []string{"modprobe efa_nv_peermem", "nvidia_peermem serves Mellanox OFED, not EFA"},
		},
		{
			name: "no-accelerator",
			edit: func(t *testing.T, m *models.Machine) *models.Machine {
				m, err := m.Without(gpus()...)
				if err != nil {
					t.Fatal(err)
				}
				return m
			},
			// no accelerator is not a problem, but the instance type's
			// model has 8: its layout finding degrades the node
			code:    "accelerators-missing",
			message: "expected 8 accelerators for p5.48xlarge, found 0",
			fix:     []string{"stop and start the instance"},
		},
		{
			name: "port-down",
			edit: func(t *testing.T, m *models.Machine) *models.Machine {
				m.Function(p2p.MustParseAddr("0000:50:00.0")).EFA.PortState = "DOWN"
				return m
			},
			code:    "efa-port-down",
			message: "1 EFA device without an active port: rdmap80s0 (0000:50:00.0; port 1 DOWN)",
			fix:     []string{"ibv_devinfo"},
		},
		{
			name: "gpu-without-driver",
			edit: func(t *testing.T, m *models.Machine) *models.Machine {
				m.Function(p2p.MustParseAddr("0000:53:00.0")).Driver = ""
				return m
			},
			code:    "accelerator-driver-missing",
			message: "1 accelerator without a driver: GPU0 0000:53:00.0",
			fix:     []string{"modprobe nvidia"},
		},
		{
			name: "nic-without-driver",
			edit: func(t *testing.T, m *models.Machine) *models.Machine {
				m.Function(p2p.MustParseAddr("0000:c9:00.0")).Driver = ""
				return m
			},
			code:    "efa-driver-missing",
			message: "1 EFA NIC without the efa driver: 0000:c9:00.0",
			fix:     []string{"modprobe efa"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := builtin(t, "p5.48xlarge")
			if tt.edit != nil {
				m = tt.edit(t, m)
			}
			dir := write(t, m, models.WriteOptions{})
			topo := ""
			if tt.topo != nil {
				topo = tt.topo(t, dir)
			}
			r := run(t, dir, topo, nodecheck.Options{})
			if r.Status != nodecheck.StatusDegraded || r.ExitCode != 1 || r.LineExitCode() != 1 {
				t.Fatalf("status %s exit %d line exit %d; want degraded, 1, 1 (findings %v)", r.Status, r.ExitCode, r.LineExitCode(), codes(r))
			}
			f := finding(r, tt.code)
			if f == nil {
				t.Fatalf("no %s finding in %v", tt.code, codes(r))
			}
			if !strings.Contains(f.Message, tt.message) {
				t.Errorf("%s: message %q; want it to say %q", tt.code, f.Message, tt.message)
			}
			for _, w := range tt.fix {
				if !strings.Contains(f.Fix, w) {
					t.Errorf("%s: fix %q does not say %q", tt.code, f.Fix, w)
				}
			}
			for _, c := range tt.also {
				if finding(r, c) == nil {
					t.Errorf("no %s finding in %v", c, codes(r))
				}
			}
			out := text(t, r)
			if !strings.Contains(out, "degraded") || !strings.Contains(out, tt.code) || !strings.Contains(out, "fix: ") {
				t.Errorf("text does not show the finding:\n%s", out)
			}
			if line := r.Line(); !strings.HasPrefix(line, "PROBLEM ") || len(line) > nodecheck.MaxLine {
				t.Errorf("line %q", line)
			}
		})
	}
}

// TestNICRemovedLocalNICs: GPU5 loses two of its switch-local NICs, and
// the comparison with the model says which.
func TestNICRemovedLocalNICs(t *testing.T) {
	m, err := builtin(t, "p5.48xlarge").Without(addrs("0000:a6:00.0", "0000:a7:00.0")...)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{})
	f := finding(r, "local-p2p-missing")
	if f == nil || !strings.Contains(f.Message, "GPU5 0000:a8:00.0: expected true P2P with its 4 switch-local EFA NICs for p5.48xlarge, has it with 2: 0000:a6:00.0 not present, 0000:a7:00.0 not present") {
		t.Fatalf("local-p2p-missing: %+v", f)
	}
	for _, a := range r.Accelerators {
		if a.Addr.String() == "0000:a8:00.0" && !slices.Equal(a.LocalP2P, addrs("0000:a4:00.0", "0000:a5:00.0")) {
			t.Errorf("GPU5 local P2P %v", a.LocalP2P)
		}
	}
	if r.Expected.Match || r.Expected.DevicesMatch || r.Expected.FoundEFADevices != 30 {
		t.Errorf("expected %+v", r.Expected)
	}
}

// TestBlockedNICPaths: the firmware-blocked NIC of a topology file
// refuses both paths of its pairs, and only those.
func TestBlockedNICPaths(t *testing.T) {
	dir := write(t, builtin(t, "p5.48xlarge"), models.WriteOptions{})
	tf := p2p.NewTopologyFile("test")
	tf.NICs = []p2p.TopoNIC{{Addr: p2p.MustParseAddr("0000:4f:00.0"), PeerAccessBlocked: true}}
	data, _ := tf.Marshal()
	file := filepath.Join(t.TempDir(), "t.json")
	os.WriteFile(file, data, 0o644)
	r := run(t, dir, file, nodecheck.Options{})
	refused := 0
	for _, p := range r.Pairs {
		if p.NIC.String() != "0000:4f:00.0" {
			if !p.P2P {
				t.Errorf("%s -> %s not P2P", p.Accelerator, p.NIC)
			}
			continue
		}
		refused++
		if p.P2P || p.DMABuf.Outcome != "refused" || p.DMABuf.Source != "topology-file" || p.PeerMemory == nil || p.PeerMemory.Outcome != "refused" || !p.Certain {
			t.Errorf("%s -> %s: %+v dmabuf %+v peer %+v", p.Accelerator, p.NIC, p, p.DMABuf, p.PeerMemory)
		}
	}
	if refused != 8 || len(r.Findings) != 1 {
		t.Errorf("%d refused pairs, findings %v; want 8 and one p2p-refused", refused, codes(r))
	}
	// The devices are the model's; one expected local pair lacks P2P.
	if e := r.Expected; !e.DevicesMatch || e.Match {
		t.Errorf("expected: devices match %v, match %v; want true, false", e.DevicesMatch, e.Match)
	}
	if out := text(t, r); !strings.Contains(out, "as expected for p5.48xlarge: 8 accelerators, 32 EFA devices; 1 expected local pair without true P2P") {
		t.Errorf("layout line:\n%s", out)
	}
	for _, n := range r.Notes {
		if strings.Contains(n, "0000:4f:00.0") {
			t.Errorf("note about the blocked NIC's other pairs: %s", n)
		}
	}
}

// TestUnprivileged: without root, config space past 64 bytes is hidden
// and the ACS state of the switch ports unknown. On p5.48xlarge that
// decides nothing (the AMD CPU rule allows the assumed detour, and NVIDIA's
// exporter does not ask the kernel): the answer is ok, every pair certain.
func TestUnprivileged(t *testing.T) {
	m := builtin(t, "p5.48xlarge")
	r := run(t, write(t, m, models.WriteOptions{ConfigBytes: 64}), "", nodecheck.Options{})
	if r.Status != nodecheck.StatusOK || r.ExitCode != 0 || r.LineExitCode() != 0 || len(r.Findings) != 0 {
		t.Fatalf("status %s exit %d line exit %d findings %v; want ok, 0, 0, none", r.Status, r.ExitCode, r.LineExitCode(), codes(r))
	}
	for _, p := range r.Pairs {
		if !p.Certain || !p.P2P {
			t.Fatalf("%s -> %s: certain %v p2p %v; want every pair certain and P2P", p.Accelerator, p.NIC, p.Certain, p.P2P)
		}
	}
	if out := text(t, r); strings.Contains(out, "uncertain") || !strings.Contains(out, "256 pairs (256 computed), all certain") {
		t.Errorf("text:\n%s", out)
	}
}

// TestUncertainWhereItMatters: on intel-acs-switch (Broadwell host bridge
// off the whitelist, no CPU rule) with Linux 6.15, the hidden ACS state of
// the switch decides between BUS_ADDR, where amdgpu keeps a pinned buffer
// in VRAM (p2p), and NOT_SUPPORTED, where it bounces: those switch-local
// pairs are uncertain, the finding names what would decide, and a
// topology file written as root makes them certain.
func TestUncertainWhereItMatters(t *testing.T) {
	m := builtin(t, "intel-acs-switch")
	dir := write(t, m, models.WriteOptions{ConfigBytes: 64})
	r := run(t, dir, "", nodecheck.Options{Kernel: "6.15.0"})
	f := finding(r, "uncertain-verdicts")
	if f == nil || f.Severity != nodecheck.SeverityUnknown || !strings.Contains(f.Message, "the ACS state of 0000:03:00.0") || !strings.Contains(f.Fix, "efap2p export") {
		t.Fatalf("uncertain-verdicts: %+v (findings %v)", f, codes(r))
	}
	uncertain := 0
	for _, p := range r.Pairs {
		if !p.Certain {
			uncertain++
			if !p.Local {
				t.Errorf("%s -> %s: uncertain, and not below the switch", p.Accelerator, p.NIC)
			}
		}
	}
	if uncertain == 0 || !strings.Contains(f.Message, fmt.Sprintf("%d of %d pairs are uncertain", uncertain, len(r.Pairs))) {
		t.Errorf("%d uncertain pairs; message %q", uncertain, f.Message)
	}
	// The fix: a topology file exported where config space is readable.
	root := write(t, m, models.WriteOptions{})
	src, _ := p2p.OpenSysfs(root)
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease("6.15.0")})
	tf := p2p.NewTopologyFile("test")
	for _, a := range r.Accelerators {
		for _, n := range r.NICs {
			v, err := o.Verdict(a.Addr, n.Addr)
			if err != nil {
				t.Fatal(err)
			}
			tf.Pairs = append(tf.Pairs, p2p.TopoPair{Provider: v.Provider, Client: v.Client, MapType: v.MapType, Distance: v.Distance, Path: v.Path, Policy: v.Policy, Outcome: v.Outcome})
		}
	}
	data, _ := tf.Marshal()
	file := filepath.Join(t.TempDir(), "topology.json")
	os.WriteFile(file, data, 0o644)
	r = run(t, dir, file, nodecheck.Options{Kernel: "6.15.0"})
	if finding(r, "uncertain-verdicts") != nil || r.Host.Sources["topology-file"] != len(r.Pairs) {
		t.Errorf("with a topology file: findings %v, sources %v; want no uncertainty, all from the file", codes(r), r.Host.Sources)
	}
}

// TestKernel: dma-buf registration needs uverbs (5.12) and, with the
// in-tree EFA driver, its dma-buf support (5.16).
func TestKernel(t *testing.T) {
	p4d := write(t, builtin(t, "p4d.24xlarge"), models.WriteOptions{})
	p5 := write(t, builtin(t, "p5.48xlarge"), models.WriteOptions{})
	tests := []struct {
		dir, kernel string
		status      nodecheck.Status
		finding     string
		note        string
	}{
		{p4d, "5.10.228-219.884.amzn2.x86_64", nodecheck.StatusDegraded, "kernel-dmabuf", ""},
		{p4d, "5.15.0-1051-aws", nodecheck.StatusDegraded, "kernel-dmabuf", ""},
		{p4d, "5.16.0", nodecheck.StatusOK, "", "in-tree EFA driver"},
		{p4d, "latest", nodecheck.StatusOK, "", ""},
		// The out-of-tree driver has dma-buf from 5.12; before, its
		// peer-memory provider ("NVIDIA peermem", which serves the
		// nvidia driver of the H100s) carries every pair.
		{p5, "5.12.0", nodecheck.StatusOK, "", ""},
		{p5, "5.10.0", nodecheck.StatusOK, "", "through the EFA driver's peer-memory provider"},
	}
	for _, tt := range tests {
		r := run(t, tt.dir, "", nodecheck.Options{Kernel: tt.kernel})
		if r.Status != tt.status || r.Host.KernelSource != "option" || r.Host.Kernel != tt.kernel {
			t.Errorf("%s: status %s (%v), kernel %s from %s; want %s", tt.kernel, r.Status, codes(r), r.Host.Kernel, r.Host.KernelSource, tt.status)
		}
		if tt.finding != "" && finding(r, tt.finding) == nil {
			t.Errorf("%s: no %s in %v", tt.kernel, tt.finding, codes(r))
		}
		if tt.note != "" && !strings.Contains(strings.Join(r.Notes, "\n"), tt.note) {
			t.Errorf("%s: notes %q do not say %q", tt.kernel, r.Notes, tt.note)
		}
	}
	r := run(t, p4d, "", nodecheck.Options{Kernel: "5.15.0-1051-aws"})
	f := finding(r, "kernel-dmabuf")
	if !strings.Contains(f.Message, "older than 5.16") || !strings.Contains(f.Fix, "5.16 or later") || !strings.Contains(f.Fix, "out-of-tree") {
		t.Errorf("kernel-dmabuf: %+v", f)
	}
	for _, p := range r.Pairs {
		if p.P2P || p.DMABuf.Outcome != "unavailable" || !slices.Contains(p.DMABuf.Blocked, "kernel-dmabuf") {
			t.Fatalf("%s -> %s: %+v", p.Accelerator, p.NIC, p.DMABuf)
		}
	}
}

// TestEFADriverKinds: in-tree and out-of-tree, told apart from
// module/efa and the p2p attribute.
func TestEFADriverKinds(t *testing.T) {
	r := run(t, write(t, builtin(t, "p4d.24xlarge"), models.WriteOptions{}), "", nodecheck.Options{})
	if d := r.Host.EFADriver; d.Kind != nodecheck.DriverInTree || d.PeerMemory != nil || d.Version != "" {
		t.Errorf("p4d: %+v; want in-tree", d)
	}
	if r.Status != nodecheck.StatusOK {
		t.Errorf("p4d: %s %v", r.Status, codes(r))
	}
	for _, p := range r.Pairs {
		if p.PeerMemory != nil {
			t.Fatalf("in-tree driver with a peer-memory path: %+v", p)
		}
	}
	// The out-of-tree driver built without peer-memory support: version
	// and taint, no p2p attribute.
	m := builtin(t, "p5.48xlarge")
	m.Module("efa").P2P = nil
	r = run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{})
	if d := r.Host.EFADriver; d.Kind != nodecheck.DriverOutOfTree || d.Version != "2.17.3g" || d.PeerMemory != nil || !strings.Contains(d.Evidence, "version") {
		t.Errorf("out-of-tree without p2p: %+v", d)
	}
	// A model without modules: the driver's kind cannot be told.
	r = run(t, write(t, builtin(t, "intel-acs-switch"), models.WriteOptions{}), "", nodecheck.Options{})
	if d := r.Host.EFADriver; d.Kind != nodecheck.DriverUnknown || r.Host.Modules != nil {
		t.Errorf("no modules: %+v, modules %v", d, r.Host.Modules)
	}
}

// TestRefusedAndBounced: intel-acs-switch's switch ports redirect (ACS)
// and its host bridge is not whitelisted: the kernel's rule refuses every
// pair; habanalabs refuses with it, amdgpu bounces instead.
func TestRefusedAndBounced(t *testing.T) {
	m := builtin(t, "intel-acs-switch")
	// GPU0 under habanalabs: the kernel's rule decides, and refuses.
	m.Function(p2p.MustParseAddr("0000:03:00.0")).Driver = "habanalabs"
	r := run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{})
	ref, bounce := finding(r, "p2p-refused"), finding(r, "p2p-bounced")
	if r.Status != nodecheck.StatusDegraded || ref == nil || bounce == nil {
		t.Fatalf("status %s findings %v; want p2p-refused and p2p-bounced", r.Status, codes(r))
	}
	if !strings.HasPrefix(ref.Message, "GPU0 0000:03:00.0: P2P DMA refused with 2 of its 2 switch-local EFA NICs: rdmap4s0 (0000:04:00.0), rdmap5s0 (0000:05:00.0)") || ref.Reason == "" || !strings.Contains(ref.Fix, "pci=disable_acs_redir=02:00.0;02:01.0") {
		t.Errorf("p2p-refused: %+v", ref)
	}
	if bounce.Severity != nodecheck.SeverityWarning || !strings.Contains(bounce.Message, "bounces") {
		t.Errorf("p2p-bounced: %+v", bounce)
	}
}

// TestExpectOption: --expect compares with a model the DMI does not name.
func TestExpectOption(t *testing.T) {
	r := run(t, write(t, builtin(t, "p4d.24xlarge"), models.WriteOptions{}), "", nodecheck.Options{Expect: builtin(t, "p5.48xlarge")})
	if r.Expected == nil || r.Expected.Model != "p5.48xlarge" || r.Expected.Source != "option" || r.Expected.Match {
		t.Fatalf("expected %+v", r.Expected)
	}
	f := finding(r, "efa-devices-missing")
	if f == nil || !strings.HasPrefix(f.Message, "expected 32 EFA devices for p5.48xlarge at its addresses, found 0 there (and 4 at other addresses): 0000:4f:00.0, ") {
		t.Errorf("efa-devices-missing: %+v", f)
	}
	if f := finding(r, "efa-devices-unexpected"); f == nil || f.Severity != nodecheck.SeverityWarning {
		t.Errorf("efa-devices-unexpected: %+v", f)
	}
	if r.ExitCode != 1 {
		t.Errorf("exit %d", r.ExitCode)
	}
}

// TestNoEFADevice: every EFA NIC gone from a p5.48xlarge. GPUDirect RDMA
// does not apply to the node as it is, and the instance type's model says
// it should have 32: degraded by the layout, with no finding about the
// dma-buf support nothing was there to use.
func TestNoEFADevice(t *testing.T) {
	m := builtin(t, "p5.48xlarge")
	var efas []p2p.Addr
	for _, f := range m.EFANICs() {
		efas = append(efas, f.Addr)
	}
	m, err := m.Without(efas...)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{})
	if r.ExitCode != 1 || finding(r, "efa-devices-missing") == nil || r.NotApplicable == nil || r.NotApplicable.Code != "no-efa-device" || r.Host.EFADriver.Kind != nodecheck.DriverNone {
		t.Errorf("findings %v exit %d not applicable %+v driver %+v", codes(r), r.ExitCode, r.NotApplicable, r.Host.EFADriver)
	}
	if r.Host.DMABuf.Judged || strings.Contains(text(t, r), "dma-buf: supported") || finding(r, "accelerator-driver-missing") != nil {
		t.Errorf("dma-buf %+v, findings %v:\n%s", r.Host.DMABuf, codes(r), text(t, r))
	}
}

// TestNotApplicable: a CPU node (no EFA device, no accelerator), and GPU
// or EFA nodes without the other half when no model expects it, as root
// and without: status not-applicable, exit 0 in every convention, no
// finding, and nothing said about dma-buf support that was not judged.
func TestNotApplicable(t *testing.T) {
	cpu := builtin(t, "cpu-node")
	p4d := builtin(t, "p4d.24xlarge")
	var efas, gpus []p2p.Addr
	for _, f := range p4d.EFANICs() {
		efas = append(efas, f.Addr)
	}
	for _, f := range p4d.Functions() {
		if f.Class>>16 == 0x03 {
			gpus = append(gpus, f.Addr)
		}
	}
	gpuOnly, err := p4d.Without(efas...)
	if err != nil {
		t.Fatal(err)
	}
	efaOnly, err := p4d.Without(gpus...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		m      *models.Machine
		code   string
		reason string
	}{
		{"cpu-node", cpu, "no-efa-device", "no EFA device and no accelerator"},
		{"gpus without EFA", gpuOnly, "no-efa-device", "no EFA device (no PCI function"},
		{"EFA without accelerators", efaOnly, "no-accelerator", "no accelerator (no PCI class 03 or 12"},
		// The Nitro VGA is class 03 and the kernel would map it (AMD CPU
		// rule): a framebuffer still is no accelerator.
		{"EFA and the hypervisor's VGA", builtin(t, "amd-efa-cpu-node"), "no-accelerator", "no accelerator"},
	} {
		for _, bytes := range []int{0, 64} {
			// --expect-less: DMI names no model for the edited machines
			opt := nodecheck.Options{}
			m := tt.m
			if m != cpu {
				m.DMI = nil
			}
			r := run(t, write(t, m, models.WriteOptions{ConfigBytes: bytes}), "", opt)
			if r.Status != nodecheck.StatusNotApplicable || r.ExitCode != 0 || r.LineExitCode() != 0 || len(r.Findings) != 0 {
				t.Errorf("%s (config %d): status %s exit %d line exit %d findings %v; want not-applicable, 0, 0, none", tt.name, bytes, r.Status, r.ExitCode, r.LineExitCode(), codes(r))
				continue
			}
			if r.NotApplicable.Code != tt.code || !strings.Contains(r.NotApplicable.Reason, tt.reason) {
				t.Errorf("%s: not applicable %+v", tt.name, r.NotApplicable)
			}
			out := text(t, r)
			if !strings.Contains(out, "GPUDirect RDMA does not apply to this node") || !strings.Contains(out, "dma-buf: not judged") || strings.Contains(out, "degraded") {
				t.Errorf("%s: text:\n%s", tt.name, out)
			}
			if line := r.Line(); !strings.HasPrefix(line, "OK: not applicable: "+tt.reason) {
				t.Errorf("%s: line %q", tt.name, line)
			}
			if r.Host.DMABuf.Judged || r.Host.DMABuf.Supported {
				t.Errorf("%s: dma-buf %+v; want not judged", tt.name, r.Host.DMABuf)
			}
		}
	}
}

func TestRunNeedsOracle(t *testing.T) {
	if _, err := nodecheck.Run(nodecheck.Options{}); err != nodecheck.ErrNoOracle {
		t.Errorf("err %v", err)
	}
}

// TestHostileTree: FIFOs, directories and links where the check reads
// attributes (DMI, module versions, the p2p attribute) are errors it
// works around, never a hang.
func TestHostileTree(t *testing.T) {
	dir := write(t, builtin(t, "p5.48xlarge"), models.WriteOptions{})
	replace := func(rel string, make func(string) error) {
		p := filepath.Join(dir, rel)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := make(p); err != nil {
			t.Fatal(err)
		}
	}
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	replace("devices/virtual/dmi/id/product_name", fifo)
	replace("module/efa/version", fifo)
	replace("module/nvidia/taint", func(p string) error { return os.Mkdir(p, 0o755) })
	replace("bus/pci/devices/0000:4f:00.0/p2p", fifo)
	done := make(chan *nodecheck.Report, 1)
	go func() { done <- run(t, dir, "", nodecheck.Options{}) }()
	select {
	case r := <-done:
		if r.Host.ProductName != "" || r.Host.InstanceType != "" || r.Expected != nil {
			t.Errorf("product name %q from a FIFO", r.Host.ProductName)
		}
		if d := r.Host.EFADriver; d.Kind != nodecheck.DriverOutOfTree || d.PeerMemory != nil {
			t.Errorf("EFA driver %+v; want out-of-tree (its taint) without a provider read from a FIFO", d)
		}
		if len(r.Pairs) != 256 {
			t.Errorf("%d pairs", len(r.Pairs))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the check hangs on a FIFO")
	}
}

// TestKernelWithoutP2PDMA: Debian 12's stock kernel has no PCI_P2PDMA.
// On debian12-stock the Gaudi2 (habanalabs) and the MI100 (amdgpu) ask
// p2pdma: the error names them and says where the configuration was read;
// with NVIDIA's exporter in their place it changes nothing (a note); a
// tree whose configuration nothing gives says it does not know.
func TestKernelWithoutP2PDMA(t *testing.T) {
	m := builtin(t, "debian12-stock")
	dir := write(t, m, models.WriteOptions{})
	r := run(t, dir, "", nodecheck.Options{Kernel: "6.1.0-57-amd64"})
	f := finding(r, "kernel-without-p2pdma")
	if f == nil || f.Severity != nodecheck.SeverityError || len(f.Subjects) != 2 ||
		!strings.Contains(f.Message, "built without PCI_P2PDMA") || !strings.Contains(f.Message, "habanalabs") || !strings.Contains(f.Fix, "CONFIG_PCI_P2PDMA=y") {
		t.Fatalf("finding %+v (findings %v)", f, codes(r))
	}
	if k := r.Host.KernelP2PDMA; k.P2PDMA != p2p.BuiltNo || !strings.HasSuffix(k.Source, kernelConfigName) {
		t.Errorf("host.kernel_p2pdma %+v", k)
	}
	for _, p := range r.Pairs {
		if p.P2P || p.DMABuf.MapType != "NOT_SUPPORTED" {
			t.Errorf("%s -> %s: p2p %v map %s; want NOT_SUPPORTED, no P2P", p.Accelerator, p.NIC, p.P2P, p.DMABuf.MapType)
		}
	}
	for _, a := range []string{"0000:03:00.0", "0000:05:00.0"} {
		f := m.Function(p2p.MustParseAddr(a))
		f.Vendor, f.Device, f.Class, f.Driver = 0x10de, 0x2331, 0x030200, "nvidia"
	}
	r = run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{Kernel: "6.1.0-57-amd64"})
	if f := finding(r, "kernel-without-p2pdma"); f != nil {
		t.Errorf("NVIDIA's exporter does not ask p2pdma, yet %+v", f)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "never ask p2pdma") }) {
		t.Errorf("notes %q lack the NVIDIA note", r.Notes)
	}
	// No kernel.config: nothing tells.
	os.Remove(filepath.Join(dir, kernelConfigName))
	r = run(t, dir, "", nodecheck.Options{Kernel: "6.1.0-57-amd64"})
	if r.Host.KernelP2PDMA.P2PDMA != p2p.BuiltUnknown || finding(r, "kernel-without-p2pdma") != nil ||
		!slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "is not known") }) {
		t.Errorf("unknown: %+v, notes %q, findings %v", r.Host.KernelP2PDMA, r.Notes, codes(r))
	}
}
