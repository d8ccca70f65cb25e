// SPDX-License-Identifier: MIT

package jobenv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/efap2p/efap2p/answer"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/nccltopo"
	"github.com/efap2p/efap2p/p2p"
)

// host is an emulated host: a machine model's sysfs tree, the kernel its
// verdicts are decided for, and its boot-time files once written.
type host struct {
	tree   string
	kernel p2p.Release
}

func newHost(t testing.TB, model string, kernel string, hidden bool) *host {
	t.Helper()
	m, err := models.Builtin(model)
	if err != nil {
		t.Fatal(err)
	}
	opt := models.WriteOptions{}
	if hidden {
		opt.ConfigBytes = 64
	}
	h := &host{tree: t.TempDir(), kernel: m.KernelRelease()}
	if kernel != "" {
		h.kernel = p2p.MustParseRelease(kernel)
	}
	if err := m.Write(h.tree, opt); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *host) src(t testing.TB) *p2p.Sysfs {
	t.Helper()
	src, err := p2p.OpenSysfs(h.tree)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func (h *host) bootFile() string { return h.tree + p2p.BootTopologyFile }

// boot writes the boot-time topology file and the NCCL topology beside
// it, as efap2p export --boot does, with blocked NICs' firmware blocking
// peers.
func (h *host) boot(t testing.TB, blocked ...p2p.Addr) {
	t.Helper()
	src := h.src(t)
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: h.kernel})
	tf, err := answer.Export(o, src, answer.ExportOptions{PeerBlocked: blocked, Boot: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := answer.WriteTopology(h.bootFile(), tf, src, p2p.Options{Kernel: h.kernel}); err != nil {
		t.Fatal(err)
	}
	data, err := nccltopo.Marshal(o, src, nccltopo.Options{PeerBlocked: blocked, BootID: p2p.CurrentBootID()})
	if err != nil {
		t.Fatal(err)
	}
	if err := answer.WriteFileAtomic(nccltopo.BootFile(h.bootFile()), data); err != nil {
		t.Fatal(err)
	}
}

// run runs efap2p env's logic on the host, its default places read as
// the tool reads them, in environment env.
func (h *host) run(t testing.TB, gpus, nics []string, env map[string]string) (*Result, error) {
	t.Helper()
	src := h.src(t)
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: h.kernel, TopologyFiles: []string{h.bootFile()}})
	return Run(Options{Oracle: o, Sysfs: src, NCCLTopoFile: nccltopo.BootFile(h.bootFile()), Accelerators: gpus, NICs: nics,
		Kernel: h.kernel.String(), Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
}

func names(vs []Var) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.Name+"="+v.Value)
	}
	return out
}

// p5NICs are the EFA NICs of p5.48xlarge, every one of which the
// firmware-blocked scenarios block.
func p5NICs(t testing.TB, h *host) []p2p.Addr {
	t.Helper()
	var out []p2p.Addr
	ents, err := os.ReadDir(filepath.Join(h.tree, "class", "infiniband"))
	if err != nil {
		t.Fatal(err)
	}
	src := h.src(t)
	for _, e := range ents {
		a, err := src.RDMADevice(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	if len(out) != 32 {
		t.Fatalf("p5.48xlarge has %d EFA NICs, want 32", len(out))
	}
	return out
}

// TestRun: the answer and the variables for each kind of node and task,
// worked out from the models' layouts: p5.48xlarge's NVIDIA GPUs get true
// P2P with every EFA NIC; GPU4 (0000:97:00.0) shares its switch with
// 0000:93:00.0-96:00.0; intel-acs-switch's amdgpu GPUs bounce; without
// root its ACS state is hidden, and with Linux 6.15 it decides outcomes.
func TestRun(t *testing.T) {
	healthy := newHost(t, "p5.48xlarge", "", false)
	healthy.boot(t)
	nccl := nccltopo.BootFile(healthy.bootFile())

	blocked := newHost(t, "p5.48xlarge", "", false)
	blocked.boot(t, p5NICs(t, blocked)...)

	// GPU4's switch-local NICs blocked, and no other
	gpu4 := newHost(t, "p5.48xlarge", "", false)
	gpu4NICs := []p2p.Addr{p2p.MustParseAddr("0000:93:00.0"), p2p.MustParseAddr("0000:94:00.0"), p2p.MustParseAddr("0000:95:00.0"), p2p.MustParseAddr("0000:96:00.0")}
	gpu4.boot(t, gpu4NICs...)

	computed := newHost(t, "p5.48xlarge", "", false) // no boot-time files
	bounced := newHost(t, "intel-acs-switch", "", true)
	uncertain := newHost(t, "intel-acs-switch", "6.15.0", true)
	cpu := newHost(t, "cpu-node", "", false)
	cpu.boot(t)
	cpuNCCL := nccltopo.BootFile(cpu.bootFile())
	computedNotes := []string{"no topology file answered: the verdicts were computed from sysfs", "NCCL_TOPO_FILE is not set: no NCCL topology of this boot at "}

	for _, tc := range []struct {
		name       string
		h          *host
		gpus, nics []string
		env        map[string]string
		answer     Answer
		pairs, p2p int
		set, unset []string
		kept       []string
		why        []string // what Why says, in this order
		notes      []string
	}{
		{name: "healthy p5", h: healthy, answer: AnswerP2P, pairs: 256, p2p: 256,
			set: []string{"NCCL_TOPO_FILE=" + nccl, "EFAP2P_ENV=NCCL_TOPO_FILE"}},
		{name: "every NIC firmware-blocked", h: blocked, answer: AnswerNoP2P, pairs: 256,
			set: []string{"FI_HMEM_DISABLE_P2P=1", "NCCL_TOPO_FILE=" + nccltopo.BootFile(blocked.bootFile()), "EFAP2P_ENV=FI_HMEM_DISABLE_P2P,NCCL_TOPO_FILE"},
			why: []string{"no GPUDirect RDMA for this task (efap2p check: p2p-refused: GPU0 0000:53:00.0: P2P DMA refused with 4 of its 4 switch-local EFA NICs", "(+7 more)",
				"aws-ofi-nccl requires GPUDirect RDMA on p5.48xlarge and will not run there"}},
		{name: "GPU4 with its blocked switch", h: gpu4, gpus: []string{"4"}, nics: []string{"93:00.0", "0000:94:00.0", "rdmap149s0", "0000:96:00.0"},
			answer: AnswerNoP2P, pairs: 4, set: []string{"FI_HMEM_DISABLE_P2P=1", "NCCL_TOPO_FILE=" + nccltopo.BootFile(gpu4.bootFile()), "EFAP2P_ENV=FI_HMEM_DISABLE_P2P,NCCL_TOPO_FILE"},
			why: []string{"(efap2p check: p2p-refused: GPU4 0000:97:00.0: P2P DMA refused with 4 of its 4 switch-local EFA NICs: rdmap147s0 (0000:93:00.0), rdmap148s0 (0000:94:00.0), rdmap149s0 (0000:95:00.0), rdmap150s0 (0000:96:00.0)):"}},
		{name: "GPU4 and the node's NICs", h: gpu4, gpus: []string{"GPU4"}, answer: AnswerP2P, pairs: 32, p2p: 28,
			set: []string{"NCCL_TOPO_FILE=" + nccltopo.BootFile(gpu4.bootFile()), "EFAP2P_ENV=NCCL_TOPO_FILE"}},
		{name: "other GPUs of that node", h: gpu4, gpus: []string{"0", "1"}, nics: []string{"0000:93:00.0", "0000:4f:00.0"}, answer: AnswerP2P, pairs: 4, p2p: 2,
			set: []string{"NCCL_TOPO_FILE=" + nccltopo.BootFile(gpu4.bootFile()), "EFAP2P_ENV=NCCL_TOPO_FILE"}},
		{name: "computed", h: computed, answer: AnswerP2P, pairs: 256, p2p: 256, set: []string{},
			notes: []string{"no topology file answered: the verdicts were computed from sysfs", "NCCL_TOPO_FILE is not set: no NCCL topology of this boot at " + nccltopo.BootFile(computed.bootFile())}},
		{name: "bounced", h: bounced, answer: AnswerNoP2P, pairs: 12, set: []string{"FI_HMEM_DISABLE_P2P=1", "EFAP2P_ENV=FI_HMEM_DISABLE_P2P"}, notes: computedNotes,
			why: []string{"p2p-bounced: GPU0 0000:03:00.0: registration works with 2 of its 2 switch-local EFA NICs, but the exporter bounces the DMA through system memory", "NCCL runs without GPUDirect RDMA, through host memory"}},
		{name: "uncertain", h: uncertain, answer: AnswerUncertain, pairs: 12, set: []string{}, notes: computedNotes,
			why: []string{"cannot tell whether GPUDirect RDMA works for this task (efap2p check: uncertain-verdicts: 5 of 12 pairs are uncertain", "FI_HMEM_DISABLE_P2P is not set, libfabric probes as before"}},
		{name: "cpu node", h: cpu, answer: AnswerNotApplicable, set: []string{"NCCL_TOPO_FILE=" + cpuNCCL, "EFAP2P_ENV=NCCL_TOPO_FILE"}},
		{name: "no GPU in the task", h: blocked, gpus: []string{}, answer: AnswerNotApplicable, set: []string{"NCCL_TOPO_FILE=" + nccltopo.BootFile(blocked.bootFile()), "EFAP2P_ENV=NCCL_TOPO_FILE"}},

		// the environment: the user's variables kept, efap2p's own decided again
		{name: "the user's NCCL_TOPO_FILE", h: healthy, env: map[string]string{"NCCL_TOPO_FILE": "/home/u/topo.xml"}, answer: AnswerP2P, pairs: 256, p2p: 256,
			set: []string{}, kept: []string{"NCCL_TOPO_FILE=/home/u/topo.xml"}},
		{name: "the user's FI_HMEM_DISABLE_P2P", h: healthy, env: map[string]string{"FI_HMEM_DISABLE_P2P": "1"}, answer: AnswerP2P, pairs: 256, p2p: 256,
			set:   []string{"NCCL_TOPO_FILE=" + nccl, "EFAP2P_ENV=NCCL_TOPO_FILE"},
			notes: []string{"FI_HMEM_DISABLE_P2P=1 was set before efap2p env and is kept: libfabric takes it, although a pair of this task has true P2P DMA"}},
		{name: "an earlier efap2p env's FI_HMEM_DISABLE_P2P", h: healthy,
			env:    map[string]string{"FI_HMEM_DISABLE_P2P": "1", "NCCL_TOPO_FILE": "/run/efap2p/nccl-topology.xml", "EFAP2P_ENV": "FI_HMEM_DISABLE_P2P,NCCL_TOPO_FILE"},
			answer: AnswerP2P, pairs: 256, p2p: 256, set: []string{"NCCL_TOPO_FILE=" + nccl, "EFAP2P_ENV=NCCL_TOPO_FILE"}, unset: []string{"FI_HMEM_DISABLE_P2P"}},
		{name: "an earlier efap2p env's, nothing to set", h: cpu, env: map[string]string{"FI_HMEM_DISABLE_P2P": "1", "EFAP2P_ENV": "FI_HMEM_DISABLE_P2P"},
			answer: AnswerNotApplicable, set: []string{"NCCL_TOPO_FILE=" + cpuNCCL, "EFAP2P_ENV=NCCL_TOPO_FILE"}, unset: []string{"FI_HMEM_DISABLE_P2P"}},
		{name: "an earlier efap2p env's, nothing left", h: bounced, gpus: []string{}, env: map[string]string{"FI_HMEM_DISABLE_P2P": "1", "EFAP2P_ENV": "FI_HMEM_DISABLE_P2P"},
			answer: AnswerNotApplicable, set: []string{}, unset: []string{"FI_HMEM_DISABLE_P2P", "EFAP2P_ENV"}, notes: computedNotes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.h.run(t, tc.gpus, tc.nics, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if r.Answer != tc.answer || r.Pairs != tc.pairs || r.P2PPairs != tc.p2p {
				t.Errorf("answer %s, %d pairs, %d with P2P; want %s, %d, %d (%s)", r.Answer, r.Pairs, r.P2PPairs, tc.answer, tc.pairs, tc.p2p, r.Summary)
			}
			if got := names(r.Set); !slices.Equal(got, tc.set) {
				t.Errorf("set %q, want %q", got, tc.set)
			}
			if tc.unset == nil {
				tc.unset = []string{}
			}
			if !slices.Equal(r.Unset, tc.unset) {
				t.Errorf("unset %q, want %q", r.Unset, tc.unset)
			}
			if tc.kept == nil {
				tc.kept = []string{}
			}
			if got := names(r.Kept); !slices.Equal(got, tc.kept) {
				t.Errorf("kept %q, want %q", got, tc.kept)
			}
			at := 0
			for _, w := range tc.why {
				i := strings.Index(r.Why[at:], w)
				if i < 0 {
					t.Errorf("why %q\nlacks (after %d) %q", r.Why, at, w)
					break
				}
				at += i + len(w)
			}
			if len(tc.why) == 0 && r.Why != "" {
				t.Errorf("why %q, want none", r.Why)
			}
			if len(r.Notes) != len(tc.notes) {
				t.Errorf("notes %q, want %d", r.Notes, len(tc.notes))
			}
			for i, n := range tc.notes {
				if i < len(r.Notes) && !strings.HasPrefix(r.Notes[i], n) {
					t.Errorf("note %d %q, want it to start %q", i, r.Notes[i], n)
				}
			}
		})
	}
}

// TestNCCLFileRefused: NCCL_TOPO_FILE names the boot-time NCCL topology
// only when root or this user wrote it, nobody else can write it, and it
// was written in this boot.
func TestNCCLFileRefused(t *testing.T) {
	h := newHost(t, "p5.48xlarge", "", false)
	h.boot(t)
	file := nccltopo.BootFile(h.bootFile())
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T)
		note  string
	}{
		{"writable by others", func(t *testing.T) { os.Chmod(file, 0o666) }, "is not trusted: writable by group and others (mode 0666)"},
		{"another boot", func(t *testing.T) {
			os.WriteFile(file, bytes.Replace(good, []byte(p2p.CurrentBootID()), []byte("00000000-0000-0000-0000-000000000000"), 1), 0o644)
		}, "was written during boot 00000000-0000-0000-0000-000000000000, this is boot " + p2p.CurrentBootID()},
		{"no boot ID", func(t *testing.T) {
			os.WriteFile(file, bytes.Replace(good, []byte("Boot ID "), []byte("Booted "), 1), 0o644)
		}, "no boot ID in its header: not written by efap2p export --boot"},
		{"a FIFO", func(t *testing.T) {
			os.Remove(file)
			if err := syscall.Mkfifo(file, 0o644); err != nil {
				t.Skip(err)
			}
		}, "not a regular file (a FIFO)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(file)
			if err := os.WriteFile(file, good, 0o644); err != nil {
				t.Fatal(err)
			}
			if r, err := h.run(t, nil, nil, nil); err != nil || !slices.Contains(names(r.Set), "NCCL_TOPO_FILE="+file) {
				t.Fatalf("before: %v %q", err, names(r.Set))
			}
			tc.setup(t)
			r, err := h.run(t, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(r.Set, func(v Var) bool { return v.Name == VarNCCLTopoFile }) {
				t.Errorf("NCCL_TOPO_FILE set: %q", names(r.Set))
			}
			if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], tc.note) {
				t.Errorf("notes %q, want one saying %q", r.Notes, tc.note)
			}
		})
	}
}

// TestSelectionErrors: what names no accelerator, or no EFA NIC, of the
// node is an error that says so.
func TestSelectionErrors(t *testing.T) {
	h := newHost(t, "p5.48xlarge", "", false)
	for _, tc := range []struct {
		gpus, nics []string
		is         error
		want       string
	}{
		{gpus: []string{"8"}, is: ErrSelection, want: `accelerator "GPU8": no device GPU8 on this machine (it has GPU0..GPU7`},
		{gpus: []string{"0000:4f:00.0"}, is: ErrNotAccelerator, want: "accelerator 0000:4f:00.0: not an accelerator of this node"},
		{nics: []string{"GPU0"}, is: ErrNotEFANIC, want: "EFA NIC 0000:53:00.0: not an EFA NIC of this node"},
		{nics: []string{"mlx5_9"}, is: ErrSelection, want: `EFA NIC "mlx5_9": "mlx5_9" is not a PCI address`},
		{gpus: []string{"GPU-5f2a0c5e-0000-0000-0000-000000000000"}, is: ErrSelection, want: "a GPU UUID cannot be matched to a PCI function"},
	} {
		_, err := h.run(t, tc.gpus, tc.nics, nil)
		if !errors.Is(err, tc.is) || !errors.Is(err, ErrSelection) || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--gpus %q --nics %q: %v; want %v saying %q", tc.gpus, tc.nics, err, tc.is, tc.want)
		}
	}
}

// TestGDRRequired: the instance types on which aws-ofi-nccl refuses to
// run without GPUDirect RDMA.
func TestGDRRequired(t *testing.T) {
	for _, tc := range []struct {
		t    string
		want bool
	}{
		{"p4d.24xlarge", true}, {"p4de.24xlarge", true}, {"p3dn.24xlarge", false},
		{"p5.48xlarge", true}, {"p5.4xlarge", false}, {"p5e.48xlarge", true}, {"p5en.48xlarge", true},
		{"p6-b200.48xlarge", true}, {"p6-b300.48xlarge", true}, {"p10.48xlarge", true},
		{"g5.48xlarge", false}, {"g6.48xlarge", false}, {"g7e.8xlarge", false}, {"g7e.48xlarge", true}, {"g7e.2xlarge", false},
		{"trn1.32xlarge", true}, {"trn2.48xlarge", true}, {"inf2.48xlarge", true},
		{"", false}, {"p", false}, {"Standard_ND96asr_v4", false},
	} {
		if got := GDRRequired(tc.t); got != tc.want {
			t.Errorf("GDRRequired(%q) = %v, want %v", tc.t, got, tc.want)
		}
	}
}
