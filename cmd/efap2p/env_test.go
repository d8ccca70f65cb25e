// SPDX-License-Identifier: MIT

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnv: efap2p env's lines in each format, on a healthy emulated
// p5.48xlarge and on one whose NICs are all firmware-blocked; the reason
// in the node check's words.
func TestEnv(t *testing.T) {
	cleanEnv(t)
	healthy := writeTree(t, "p5.48xlarge")
	if code, _, errs := runTool("export", "--sysfs", healthy, "--boot", checkKernel); code != 0 {
		t.Fatalf("export --boot: %s", errs)
	}
	blocked := writeTree(t, "p5.48xlarge")
	if code, _, errs := runTool("export", "--sysfs", blocked, "--boot", "--peer-blocked", p5NICList(t, blocked), checkKernel); code != 0 {
		t.Fatalf("export --boot --peer-blocked: %s", errs)
	}
	nccl := func(tree string) string { return tree + "/run/efap2p/nccl-topology.xml" }
	_, report, _ := runTool("check", "--sysfs", blocked, "--json", checkKernel)
	var check struct {
		Findings []struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(report), &check); err != nil || len(check.Findings) != 8 {
		t.Fatalf("check --json: %v, %d findings", err, len(check.Findings))
	}
	why := "efap2p env: no GPUDirect RDMA for this task (efap2p check: p2p-refused: " + check.Findings[0].Message + " (+7 more)): " +
		"FI_HMEM_DISABLE_P2P=1 spares libfabric its CUDA probe; aws-ofi-nccl requires GPUDirect RDMA on p5.48xlarge and will not run there\n"

	for _, tc := range []struct {
		name       string
		tree       string
		args       []string
		out, errs  string
		outHas     []string
		shellValue string // what NCCL_TOPO_FILE and FI_HMEM_DISABLE_P2P are after eval
	}{
		{name: "healthy, shell", tree: healthy,
			out: "# efap2p env: GPUDirect RDMA works for this task: 256 of its 256 GPU-EFA NIC\n" +
				"# pairs have true P2P DMA (verdicts from\n" +
				"# " + healthy + "/run/efap2p/topology.json).\n" +
				"# NCCL takes each GPU's and NIC's gdr attribute from efap2p's NCCL topology:\n" +
				"export NCCL_TOPO_FILE=" + nccl(healthy) + "\n" +
				"export EFAP2P_ENV=NCCL_TOPO_FILE    # what efap2p env set\n",
			shellValue: nccl(healthy) + ",unset"},
		{name: "healthy, slurm", tree: healthy, args: []string{"--format", "slurm"},
			out: "export NCCL_TOPO_FILE=" + nccl(healthy) + "\nexport EFAP2P_ENV=NCCL_TOPO_FILE\n"},
		{name: "healthy, libfabric.conf", tree: healthy, args: []string{"--format", "libfabric-conf"}, out: ""},
		{name: "healthy, json", tree: healthy, args: []string{"--json"}, outHas: []string{`"answer": "p2p"`, `"pairs": 256`, `"p2p_pairs": 256`, `"gdr_required": true`}},
		{name: "blocked, shell", tree: blocked, errs: why,
			out: "# efap2p env: no GPUDirect RDMA for this task: none of its 256 GPU-EFA NIC pairs\n" +
				"# has true P2P DMA (verdicts from\n" +
				"# " + blocked + "/run/efap2p/topology.json).\n" +
				"# libfabric 2.x skips its CUDA probe and knows P2P is off:\n" +
				"export FI_HMEM_DISABLE_P2P=1\n" +
				"# NCCL takes each GPU's and NIC's gdr attribute from efap2p's NCCL topology:\n" +
				"export NCCL_TOPO_FILE=" + nccl(blocked) + "\n" +
				"export EFAP2P_ENV=FI_HMEM_DISABLE_P2P,NCCL_TOPO_FILE    # what efap2p env set\n",
			shellValue: nccl(blocked) + ",1"},
		{name: "blocked, slurm", tree: blocked, args: []string{"--format", "slurm"}, errs: why,
			out: "export FI_HMEM_DISABLE_P2P=1\nexport NCCL_TOPO_FILE=" + nccl(blocked) + "\nexport EFAP2P_ENV=FI_HMEM_DISABLE_P2P,NCCL_TOPO_FILE\n" +
				"print efap2p: " + strings.TrimSuffix(strings.TrimPrefix(why, "efap2p env: "), "\n") + "\n"},
		{name: "blocked, libfabric.conf", tree: blocked, args: []string{"--format", "libfabric-conf"}, errs: why, out: "FI_HMEM_DISABLE_P2P=1\n"},
		{name: "blocked, json", tree: blocked, args: []string{"--format", "json"}, errs: why, outHas: []string{`"answer": "no-p2p"`, `"p2p_pairs": 0`, `"name": "FI_HMEM_DISABLE_P2P"`}},
		{name: "blocked, one GPU", tree: blocked, args: []string{"--gpus", "7", "--format", "slurm"},
			outHas: []string{"export FI_HMEM_DISABLE_P2P=1\n", "print efap2p: no GPUDirect RDMA for this task (efap2p check: p2p-refused: GPU7 0000:ca:00.0: P2P DMA refused with 4 of its 4 switch-local EFA NICs: rdmap198s0 (0000:c6:00.0), rdmap199s0 (0000:c7:00.0), rdmap200s0 (0000:c8:00.0), rdmap201s0 (0000:c9:00.0)): "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runTool(append([]string{"env", "--sysfs", tc.tree, checkKernel}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if tc.outHas == nil && out != tc.out {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, tc.out)
			}
			for _, w := range tc.outHas {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if tc.outHas == nil && errs != tc.errs {
				t.Errorf("stderr:\n%q\nwant:\n%q", errs, tc.errs)
			}
			if tc.shellValue != "" {
				// the lines are sh: eval'd, they set what they say
				got, err := exec.Command("sh", "-c", `eval "$1" && echo "$NCCL_TOPO_FILE,${FI_HMEM_DISABLE_P2P-unset}"`, "sh", out).Output()
				if err != nil || strings.TrimSpace(string(got)) != tc.shellValue {
					t.Errorf("eval: %q, %v; want %q", got, err, tc.shellValue)
				}
			}
		})
	}

	// a tree named by a relative path: NCCL_TOPO_FILE is absolute, for
	// the task's programs in any folder
	wd, _ := os.Getwd()
	if rel, err := filepath.Rel(wd, healthy); err == nil {
		if _, out, _ := runTool("env", "--sysfs", rel, checkKernel, "--format", "slurm"); !strings.HasPrefix(out, "export NCCL_TOPO_FILE="+nccl(healthy)+"\n") {
			t.Errorf("--sysfs %s: %q; want NCCL_TOPO_FILE=%s", rel, out, nccl(healthy))
		}
	}

	// the environment: the user's variable kept (libfabric.conf is for
	// everyone: no one's environment counts)
	t.Setenv("FI_HMEM_DISABLE_P2P", "0")
	_, out, _ := runTool("env", "--sysfs", blocked, checkKernel, "--format", "slurm")
	if strings.Contains(out, "export FI_HMEM_DISABLE_P2P") {
		t.Errorf("the user's FI_HMEM_DISABLE_P2P=0 is replaced:\n%s", out)
	}
	if _, out, _ := runTool("env", "--sysfs", blocked, checkKernel, "--format", "libfabric-conf"); out != "FI_HMEM_DISABLE_P2P=1\n" {
		t.Errorf("libfabric.conf follows the environment: %q", out)
	}
	t.Setenv("EFAP2P_ENV", "FI_HMEM_DISABLE_P2P")
	t.Setenv("FI_HMEM_DISABLE_P2P", "1")
	if _, out, _ := runTool("env", "--sysfs", healthy, checkKernel, "--format", "slurm"); !strings.HasPrefix(out, "unset FI_HMEM_DISABLE_P2P\nexport NCCL_TOPO_FILE=") {
		t.Errorf("an earlier efap2p env's FI_HMEM_DISABLE_P2P on a healthy node is not unset:\n%s", out)
	}
}

// TestEnvErrors: bad usage is exit 2 with the hint; a device that is not
// the task's kind is exit 2 naming it; a tree without boot-time files is
// computed, and stderr says so.
func TestEnvErrors(t *testing.T) {
	cleanEnv(t)
	tree := writeTree(t, "p5.48xlarge")
	for _, tc := range []struct {
		args []string
		code int
		errs string
	}{
		{[]string{"--format", "yaml"}, 2, `efap2p env: --format "yaml": want shell, slurm, json, libfabric-conf` + "\nTry 'efap2p env --help'"},
		{[]string{"--json", "--format", "slurm"}, 2, "--json and --format slurm exclude each other"},
		{[]string{"GPU0"}, 2, "env takes no arguments"},
		{[]string{"--gpus", "0,8"}, 2, `efap2p: accelerator "GPU8": no device GPU8 on this machine`},
		{[]string{"--nics", "GPU0"}, 2, "efap2p: EFA NIC 0000:53:00.0: not an EFA NIC of this node\n"},
		{[]string{}, 0, "efap2p env: no topology file answered: the verdicts were computed from sysfs"},
	} {
		code, out, errs := runTool(append([]string{"env", "--sysfs", tree, checkKernel}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.errs) {
			t.Errorf("env %q: exit %d, stderr %q; want %d, %q", tc.args, code, errs, tc.code, tc.errs)
		}
		if code != 0 && out != "" {
			t.Errorf("env %q: exit %d and stdout %q", tc.args, code, out)
		}
	}
}
