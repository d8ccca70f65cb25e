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
)

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
			t.Fatal("promtool is missing in CI: `make test-deps` installs the prometheus package")
		}
		t.Skip("promtool not installed (Debian package prometheus; make test-deps)")
	}
	trees := checkTrees(t)
	for _, name := range []string{"healthy", "nic-removed", "unprivileged", "no-accelerator"} {
		file := filepath.Join(t.TempDir(), "efap2p.prom")
		code, out, errs := runTool("check", "--sysfs", trees[name], "--format", "prometheus", "-o", file, checkKernel)
		if out != "" || (code != 0) != (name == "nic-removed" || name == "no-accelerator") {
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
			// every pair is OK: no pair series unless asked for
			if strings.Contains(text, "efap2p_check_pair_") || !strings.Contains(text, "\nefap2p_check_pairs_p2p 256\n") {
				t.Errorf("healthy: pair series written, or the count missing:\n%s", text)
			}
			code, all, _ := runTool("check", "--sysfs", trees[name], "--format", "prometheus", "--all-pairs", checkKernel)
			if code != 0 || strings.Count(all, "\nefap2p_check_pair_p2p{") != 256 || !strings.Contains(all, `efap2p_check_pair_p2p{accelerator="0000:53:00.0",accelerator_name="GPU0",nic="0000:4f:00.0",ibdev="rdmap79s0"} 1`) {
				t.Errorf("healthy --all-pairs: exit %d, pair gauges missing:\n%s", code, all)
			}
			if !strings.Contains(text, "\nefap2p_check_status 0\n") || !strings.Contains(text, `efap2p_check_info{version="devel",kernel="6.8.0-1015-aws",instance_type="p5.48xlarge",efa_driver="out-of-tree"} 1`) ||
				!strings.Contains(text, `efap2p_check_accelerator_local_p2p_nics{accelerator="0000:53:00.0",accelerator_name="GPU0"} 4`) {
				t.Errorf("healthy: status, info or accelerator gauges missing:\n%s", text)
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
		{[]string{"--sysfs", trees["no-accelerator"]}, 1, "PROBLEM accelerators-missing: expected 8 accelerators for p5.48xlarge, found 0"},
		{[]string{"--sysfs", trees["unprivileged"]}, 0, "OK: 8 GPUs, each with true P2P to its 4 switch-local EFA NICs (p5.48xlarge)"},
		{[]string{"--sysfs", trees["uncertain"], uncertainKernel}, 2, "UNKNOWN uncertain-verdicts: "},
		{[]string{"--sysfs", trees["cpu-node"]}, 0, "OK: not applicable: no EFA device and no accelerator"},
		{[]string{"--sysfs", trees["cpu-node-unprivileged"]}, 0, "OK: not applicable: no EFA device and no accelerator"},
		{[]string{"--sysfs", trees["port-down"]}, 1, "PROBLEM efa-port-down: 1 EFA device without an active port"},
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
	for tree, want := range map[string]int{"healthy": 0, "nic-removed": 1, "uncertain": 2, "cpu-node": 0} {
		cmd := exec.Command(bin, "check", "--format", "line", "--sysfs", trees[tree], checkKernel, uncertainKernel)
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
