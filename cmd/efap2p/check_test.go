// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

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
		if pciclass.IsAccelerator(uint32(f.Class)) {
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
	return trees
}

func TestCheckExitCodes(t *testing.T) {
	trees := checkTrees(t)
	tests := []struct {
		tree string
		args []string
		code int
		want []string // in stdout
	}{
		{"healthy", nil, 0, []string{"GPUDirect RDMA works on this node", "8 GPUs, each with true P2P to its 4 switch-local EFA NICs (p5.48xlarge)", "GPU7  ca:00.0 nvidia  P2P with 4/4 switch-local NICs: c6:00.0 c7:00.0 c8:00.0 c9:00.0", "No findings."}},
		{"nic-removed", nil, 1, []string{"expected 32 EFA devices for p5.48xlarge, found 30: 0000:a6:00.0, 0000:a7:00.0 missing", "fix: "}},
		{"no-accelerator", nil, 1, []string{"error no-accelerator", "no accelerator on this node"}},
		{"peer-memory-missing", nil, 1, []string{"warning peer-memory-missing", "modprobe efa_nv_peermem"}},
		{"unprivileged", nil, 3, []string{"could not tell", "unknown uncertain-verdicts", "P2P (uncertain)"}},
		{"healthy", []string{"--expect", "p4d.24xlarge"}, 1, []string{"expected 8 accelerators for p4d.24xlarge, found 8: 0000:10:1c.0"}},
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
	if code != 3 || !strings.Contains(out, `efap2p_check_status{status="unknown",instance_type="",kernel=""} 3`) {
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
	for _, w := range []string{"error p2p-refused", "GPU4 0000:97:00.0: P2P DMA is refused with 1 of its 4 switch-local EFA NICs:", "firmware refuses DMA to peers", file} {
		if !strings.Contains(out, w) {
			t.Errorf("output does not say %q:\n%s", w, out)
		}
	}
	if !strings.Contains(out, "256 topology-file") {
		t.Errorf("verdicts not from the topology file:\n%s", out)
	}
}

// TestCheckJSONSchema: --json validates against docs/check-report.schema.json
// on every emulated host.
func TestCheckJSONSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	schema, err := c.Compile(filepath.Join("..", "..", "docs", "check-report.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	trees := checkTrees(t)
	var names []string
	for n := range trees {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		code, out, errs := runTool("check", "--sysfs", trees[name], "--json", checkKernel)
		var doc any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%s: exit %d, not JSON: %v\n%s%s", name, code, err, out, errs)
		}
		if err := schema.Validate(doc); err != nil {
			t.Errorf("%s: does not validate: %v", name, err)
		}
		var r struct {
			ExitCode int `json:"exit_code"`
		}
		json.Unmarshal([]byte(out), &r)
		if r.ExitCode != code {
			t.Errorf("%s: exit_code %d, exit status %d", name, r.ExitCode, code)
		}
	}
	// The schema is strict: a field it does not document fails.
	var doc map[string]any
	_, out, _ := runTool("check", "--sysfs", trees["healthy"], "--json", checkKernel)
	json.Unmarshal([]byte(out), &doc)
	doc["surprise"] = 1
	if schema.Validate(doc) == nil {
		t.Error("an undocumented field validates")
	}
}

// TestCheckPrometheus: --format prometheus passes `promtool check metrics`
// (Debian package prometheus); -o writes the file atomically.
func TestCheckPrometheus(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is missing in CI: `make deps` installs the prometheus package")
		}
		t.Skip("promtool not installed (Debian package prometheus; make deps)")
	}
	trees := checkTrees(t)
	for _, name := range []string{"healthy", "nic-removed", "unprivileged", "no-accelerator"} {
		file := filepath.Join(t.TempDir(), "efap2p.prom")
		code, out, errs := runTool("check", "--sysfs", trees[name], "--format", "prometheus", "-o", file, checkKernel)
		if out != "" || (code != 0) != (name != "healthy") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", name, code, out, errs)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".*tmp*")); len(left) > 0 {
			t.Errorf("%s: temporary files left: %v", name, left)
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(data)
		if res, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: promtool check metrics: %v\n%s\n%s", name, err, res, data)
		}
		text := string(data)
		switch name {
		case "healthy":
			if strings.Count(text, "\nefap2p_check_pair_p2p{") != 256 || !strings.Contains(text, `efap2p_check_pair_p2p{accelerator="0000:53:00.0",accelerator_name="GPU0",nic="0000:4f:00.0",ibdev="rdmap79s0",path="PIX",local="true",certain="true",dmabuf="p2p",peer_memory="p2p"} 1`) ||
				!strings.Contains(text, `efap2p_check_status{status="ok",instance_type="p5.48xlarge",kernel="6.8.0-1015-aws"} 0`) {
				t.Errorf("healthy: pair gauges missing:\n%s", text)
			}
		case "nic-removed":
			if !strings.Contains(text, `efap2p_check_finding{code="efa-devices-missing",severity="error",subjects="0000:a6:00.0, 0000:a7:00.0"} 1`) {
				t.Errorf("nic-removed: finding gauge missing:\n%s", text)
			}
		}
	}
}

// TestCheckLineProtocol: --format line follows node-problem-detector's
// custom plugin protocol: exit 0 OK, 1 problem, 2 unknown, a short
// message on stdout.
func TestCheckLineProtocol(t *testing.T) {
	trees := checkTrees(t)
	tests := []struct {
		args   []string
		code   int
		prefix string
	}{
		{[]string{"--sysfs", trees["healthy"]}, 0, "OK: 8 GPUs, each with true P2P to its 4 switch-local EFA NICs (p5.48xlarge)"},
		{[]string{"--sysfs", trees["nic-removed"]}, 1, "PROBLEM efa-devices-missing: expected 32 EFA devices for p5.48xlarge, found 30"},
		{[]string{"--sysfs", trees["peer-memory-missing"]}, 1, "PROBLEM peer-memory-missing: "},
		{[]string{"--sysfs", trees["no-accelerator"]}, 1, "PROBLEM no-accelerator: "},
		{[]string{"--sysfs", trees["unprivileged"]}, 2, "UNKNOWN uncertain-verdicts: "},
		{[]string{"--sysfs", filepath.Join(trees["healthy"], "missing")}, 2, "UNKNOWN: "},
		{[]string{"--sysfs", trees["healthy"], "--expect", "nonesuch"}, 2, "UNKNOWN: efap2p check: "},
		{[]string{"--sysfs", trees["healthy"], "--bogus"}, 2, "UNKNOWN: efap2p check: "},
	}
	for _, tt := range tests {
		for _, form := range [][]string{{"--format", "line"}, {"--format=line"}} {
			args := append(append([]string{"check", checkKernel}, form...), tt.args...)
			code, out, _ := runTool(args...)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if code != tt.code || len(lines) != 1 || !strings.HasPrefix(lines[0], tt.prefix) || len(lines[0]) > 120 || !strings.HasSuffix(out, "\n") {
				t.Errorf("%v: exit %d, stdout %q; want exit %d and one line of at most 120 bytes starting %q", args, code, out, tt.code, tt.prefix)
			}
		}
	}
}

// TestCheckBinary runs the built tool as node-problem-detector runs a
// plugin: a separate process, its exit status and stdout, bounded in time.
func TestCheckBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tool")
	}
	bin := filepath.Join(t.TempDir(), "efap2p")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	trees := checkTrees(t)
	for tree, want := range map[string]int{"healthy": 0, "nic-removed": 1, "unprivileged": 2} {
		cmd := exec.Command(bin, "check", "--format", "line", "--sysfs", trees[tree], checkKernel)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%s: efap2p check did not finish in 30 s", tree)
		}
		if got := cmd.ProcessState.ExitCode(); got != want || strings.Count(out.String(), "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q; want %d and one line", tree, got, out.String(), want)
		}
	}
}
