// SPDX-License-Identifier: MIT

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/internal/pciclass"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// checkKernel pins the kernel release judged, so that the answers do not
// depend on the machine the tests run on.
const checkKernel = "--kernel=6.8.0-1015-aws"

// checkTrees writes the emulated hosts the check tests use: the healthy
// p5.48xlarge, variants built from its model, and its tree as a non-root
// reader sees it.
func checkTrees(t *testing.T) map[string]string {
	t.Helper()
	trees := map[string]string{}
	put := func(name string, m *models.Machine, opt models.WriteOptions) {
		dir := t.TempDir()
		if err := m.Write(dir, opt); err != nil {
			t.Fatal(err)
		}
		trees[name] = dir
	}
	p5 := func() *models.Machine {
		m, err := models.Builtin("p5.48xlarge")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	put("healthy", p5(), models.WriteOptions{})
	put("unprivileged", p5(), models.WriteOptions{ConfigBytes: 64})
	m, err := p5().Without(p2p.MustParseAddr("0000:a6:00.0"), p2p.MustParseAddr("0000:a7:00.0"))
	if err != nil {
		t.Fatal(err)
	}
	put("nic-removed", m, models.WriteOptions{})
	var gpus []p2p.Addr
	for _, f := range p5().Functions() {
		if pciclass.IsAccelerator(uint32(f.Class), uint16(f.Vendor), uint16(f.Device)) {
			gpus = append(gpus, f.Addr)
		}
	}
	if m, err = p5().Without(gpus...); err != nil {
		t.Fatal(err)
	}
	put("no-accelerator", m, models.WriteOptions{})
	m = p5()
	empty := ""
	m.Module("efa").P2P = &empty
	m.Modules = slices.DeleteFunc(m.Modules, func(mod models.Module) bool { return mod.Name == "efa_nv_peermem" })
	put("peer-memory-missing", m, models.WriteOptions{})
	m = p5()
	m.Function(p2p.MustParseAddr("0000:50:00.0")).EFA.PortState = "DOWN"
	put("port-down", m, models.WriteOptions{})
	cpu, err := models.Builtin("cpu-node")
	if err != nil {
		t.Fatal(err)
	}
	put("cpu-node", cpu, models.WriteOptions{})
	put("cpu-node-unprivileged", cpu, models.WriteOptions{ConfigBytes: 64})
	// Where the hidden ACS state decides (with --kernel 6.15.0: amdgpu
	// keeps VRAM for a peer the kernel allows, Broadwell is off the list).
	acs, err := models.Builtin("intel-acs-switch")
	if err != nil {
		t.Fatal(err)
	}
	put("uncertain", acs, models.WriteOptions{ConfigBytes: 64})
	return trees
}

// uncertainKernel makes the "uncertain" tree's hidden ACS state matter.
const uncertainKernel = "--kernel=6.15.0"

func TestCheckExitCodes(t *testing.T) {
	trees := checkTrees(t)
	tests := []struct {
		tree string
		args []string
		code int
		want []string // in stdout
	}{
		{"healthy", nil, 0, []string{"GPUDirect RDMA works on this node", "8 GPUs, each with true P2P to its 4 switch-local EFA NICs (p5.48xlarge)", "GPU7  ca:00.0 nvidia  P2P with 4/4 switch-local NICs: rdmap198s0 rdmap199s0 rdmap200s0 rdmap201s0", "No findings."}},
		{"nic-removed", nil, 1, []string{"expected 32 EFA devices for p5.48xlarge, found 30: 0000:a6:00.0, 0000:a7:00.0 missing", "fix: "}},
		// no accelerator is not a problem; missing the model's 8 is
		{"no-accelerator", nil, 1, []string{"error accelerators-missing", "expected 8 accelerators for p5.48xlarge, found 0", "dma-buf: not judged"}},
		{"peer-memory-missing", nil, 1, []string{"warning peer-memory-missing", "modprobe efa_nv_peermem"}},
		{"port-down", nil, 1, []string{"error efa-port-down", "rdmap80s0 (0000:50:00.0; port 1 DOWN)", "GPU0  53:00.0 nvidia  P2P with 3/4 switch-local NICs"}},
		// without root the ACS state is hidden, and decides nothing here
		{"unprivileged", nil, 0, []string{"GPUDirect RDMA works on this node", "256 pairs (256 computed), all certain", "No findings."}},
		{"uncertain", []string{uncertainKernel}, 3, []string{"could not tell", "unknown uncertain-verdicts", "the ACS state of 0000:03:00.0", "P2P (uncertain)"}},
		{"cpu-node", nil, 0, []string{"GPUDirect RDMA does not apply to this node", "not applicable: no EFA device and no accelerator", "dma-buf: not judged", "No findings."}},
		{"cpu-node-unprivileged", nil, 0, []string{"GPUDirect RDMA does not apply to this node"}},
		// a p5 is no p4d: its 8 GPUs are not where a p4d has its 8, which
		// the message says rather than "expected 8, found 8: ... missing"
		{"healthy", []string{"--expect", "p4d.24xlarge"}, 1, []string{"expected 8 accelerators for p4d.24xlarge at its addresses, found 0 there (and 8 at other addresses): 0000:10:1c.0",
			"8 accelerators at addresses the model of p4d.24xlarge does not have: 0000:53:00.0", "differs from p4d.24xlarge: 8 accelerators (the model has 8; 0 at its addresses), 32 EFA devices (the model has 4; 0 at its addresses)"}},
		// before dma-buf registration (5.12), the out-of-tree EFA driver's
		// peer-memory provider carries every pair
		{"healthy", []string{"--kernel", "5.10.0"}, 0, []string{"GPUDirect RDMA works on this node", "registered through the EFA driver's peer-memory"}},
	}
	for _, tt := range tests {
		args := append([]string{"check", "--sysfs", trees[tt.tree], checkKernel}, tt.args...)
		code, out, errs := runTool(args...)
		if code != tt.code {
			t.Errorf("%s %v: exit %d, want %d\n%s%s", tt.tree, tt.args, code, tt.code, out, errs)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s %v: output does not say %q:\n%s", tt.tree, tt.args, w, out)
			}
		}
	}
	// Bad usage is 2; a machine that cannot be read is 3.
	for _, args := range [][]string{{"--format", "yaml"}, {"--expect", "nonesuch"}, {"--json", "--format", "line"}, {"extra"}} {
		if code, _, errs := runTool(append([]string{"check", "--sysfs", trees["healthy"]}, args...)...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 with a message", args, code, errs)
		}
	}
	code, _, errs := runTool("check", "--sysfs", filepath.Join(trees["healthy"], "missing"))
	if code != 3 || !strings.Contains(errs, "could not tell") || !strings.Contains(errs, "missing") {
		t.Errorf("missing tree: exit %d, %s", code, errs)
	}
	// The textfile then says so, rather than going stale.
	code, out, _ := runTool("check", "--sysfs", filepath.Join(trees["healthy"], "missing"), "--format", "prometheus")
	if code != 3 || !strings.Contains(out, "\nefap2p_check_status 3\n") {
		t.Errorf("missing tree, prometheus: exit %d:\n%s", code, out)
	}
}

// TestCheckFirmwareBlockedNIC: a NIC recorded as firmware-blocked by
// `efap2p export --peer-blocked` makes check exit 1, naming the NIC, the
// file and the fix.
func TestCheckFirmwareBlockedNIC(t *testing.T) {
	dir := checkTrees(t)["healthy"]
	file := filepath.Join(t.TempDir(), "topology.json")
	if code, _, errs := runTool("export", "--sysfs", dir, "--peer-blocked", "0000:93:00.0", "-o", file, checkKernel); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	code, out, errs := runTool("check", "--sysfs", dir, "--topology", file, checkKernel)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	for _, w := range []string{"error p2p-refused", "GPU4 0000:97:00.0: P2P DMA refused with 1 of its 4 switch-local EFA NICs: rdmap147s0 (0000:93:00.0)", "firmware refuses DMA to peers", file} {
		if !strings.Contains(out, w) {
			t.Errorf("output does not say %q:\n%s", w, out)
		}
	}
	if !strings.Contains(out, "256 topology-file") {
		t.Errorf("verdicts not from the topology file:\n%s", out)
	}
}

// TestCheckKernelEnv: $EFAP2P_KERNEL, which the verdicts follow, is the
// release every finding judges too (p4d.24xlarge's in-tree EFA driver
// registers dma-buf memory from 5.16); --kernel still wins.
func TestCheckKernelEnv(t *testing.T) {
	m, err := models.Builtin("p4d.24xlarge")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EFAP2P_KERNEL", "5.10.0")
	code, out, errs := runTool("check", "--sysfs", dir, "--json")
	if code != 1 || !strings.Contains(out, `"kernel": "5.10.0"`) || !strings.Contains(out, `"kernel_source": "environment"`) || !strings.Contains(out, `"code": "kernel-dmabuf"`) {
		t.Errorf("EFAP2P_KERNEL=5.10.0: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runTool("check", "--sysfs", dir, "--json", "--kernel", "6.8.0-1015-aws")
	if strings.Contains(out, `"code": "kernel-dmabuf"`) || !strings.Contains(out, `"kernel_source": "option"`) {
		t.Errorf("--kernel over EFAP2P_KERNEL: exit %d\n%s", code, out)
	}
}

// TestCheckOutputFile: -o creates the folder, as export -o does; a file
// that cannot be written is "could not tell" (3, or node-problem-detector's
// unknown, 2, in line mode, with its UNKNOWN line on stdout), never 1,
// which would report the node as degraded.
func TestCheckOutputFile(t *testing.T) {
	tree := checkTrees(t)["healthy"]
	tmp := t.TempDir()
	blocker := filepath.Join(tmp, "not-a-folder")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format, file string
		code         int
		stdout       string
	}{
		{"prometheus", filepath.Join(tmp, "new", "textfile_collector", "efap2p.prom"), 0, ""},
		{"nfd", filepath.Join(tmp, "features.d", "efap2p"), 0, ""},
		{"line", filepath.Join(tmp, "line", "efap2p.line"), 0, ""},
		{"prometheus", filepath.Join(blocker, "efap2p.prom"), 3, ""},
		{"nfd", filepath.Join(blocker, "efap2p"), 3, ""},
		{"json", filepath.Join(blocker, "report.json"), 3, ""},
		{"line", filepath.Join(blocker, "efap2p.line"), 2, "UNKNOWN: efap2p check: check: could not write " + blocker},
	} {
		code, out, errs := runTool("check", "--sysfs", tree, checkKernel, "--format", tc.format, "-o", tc.file)
		if code != tc.code || !strings.HasPrefix(out, tc.stdout) || tc.stdout == "" && out != "" {
			t.Errorf("--format %s -o %s: exit %d (want %d), stdout %q, stderr %q", tc.format, tc.file, code, tc.code, out, errs)
			continue
		}
		if tc.code != 0 {
			if !strings.Contains(errs, "could not write "+tc.file) {
				t.Errorf("--format %s -o %s: stderr %q does not name the file", tc.format, tc.file, errs)
			}
			continue
		}
		if st, err := os.Stat(tc.file); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("--format %s -o %s: %v", tc.format, tc.file, err)
		}
	}
}
