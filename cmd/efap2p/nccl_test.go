// SPDX-License-Identifier: MIT

package main

import (
	"strings"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/nccltopo"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim"
)

// TestExportNCCL: export --format nccl prints what package nccltopo
// writes for the tree, with the model named in the header; --peer-blocked
// of a function that is no NIC is a usage error (exit 2); uncertain
// verdicts fail (exit 1) unless --force. (nccltopo's tests check the XML.)
func TestExportNCCL(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	code, out, errs := runTool("export", "--sysfs", dir, "--format", "nccl", "--peer-blocked", "4f:00.0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := p2p.ReleaseFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: rel})
	want, err := nccltopo.Marshal(o, src, nccltopo.Options{
		PeerBlocked: []p2p.Addr{p2p.MustParseAddr("0000:4f:00.0")},
		Model:       "p5.48xlarge", GeneratedBy: "efap2p export -format nccl",
	})
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("export --format nccl differs from nccltopo.Marshal:\n%s\nwant:\n%s", out, want)
	}
	if !strings.Contains(out, "NCCL topology of machine model p5.48xlarge (an emulated sysfs tree written by efap2p sim write),\n  written by efap2p export -format nccl.") {
		t.Errorf("header:\n%s", out)
	}

	code, _, errs = runTool("export", "--sysfs", dir, "--format", "nccl", "--peer-blocked", "53:00.0")
	if wantErr := "efap2p export: --peer-blocked 0000:53:00.0: not a NIC of this machine\n"; code != 2 || !strings.HasPrefix(errs, wantErr) {
		t.Errorf("blocking a GPU: exit %d, %q; want 2, %q", code, errs, wantErr)
	}

	// Without root the ACS state of p5.48xlarge's switches is hidden, and
	// decides no outcome (the AMD CPU rule, NVIDIA's exporter): written.
	m, _ := models.Builtin("p5.48xlarge")
	hidden := t.TempDir()
	if err := sim.WriteTree(m, hidden, sim.TreeOptions{WriteOptions: models.WriteOptions{ConfigBytes: 64}}); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runTool("export", "--sysfs", hidden, "--format", "nccl"); code != 0 || !strings.Contains(out, "<system version=\"1\">") {
		t.Errorf("unprivileged p5.48xlarge: exit %d: %s", code, errs)
	}
	// Below intel-acs-switch's Broadwell switch with Linux 6.15 it decides
	// whether amdgpu keeps VRAM: uncertain, refused without --force.
	m, _ = models.Builtin("intel-acs-switch")
	hidden = t.TempDir()
	if err := sim.WriteTree(m, hidden, sim.TreeOptions{WriteOptions: models.WriteOptions{ConfigBytes: 64}}); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runTool("export", "--sysfs", hidden, "--format", "nccl", "--kernel", "6.15.0")
	if wantErr := "efap2p: some verdicts are uncertain ("; code != 1 || !strings.HasPrefix(errs, wantErr) || !strings.Contains(errs, "run export as root, or pass --force") {
		t.Errorf("uncertain: exit %d, %q; want 1, %q...", code, errs, wantErr)
	}
	if code, out, errs := runTool("export", "--sysfs", hidden, "--format", "nccl", "--force", "--kernel", "6.15.0"); code != 0 || !strings.Contains(out, "<system version=\"1\">") {
		t.Errorf("--force: exit %d: %s", code, errs)
	}
}
