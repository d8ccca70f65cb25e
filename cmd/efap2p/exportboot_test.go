// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/nccltopo"
	"github.com/efap2p/efap2p/p2p"
)

// cleanEnv leaves the test without the variables efap2p env decides, as
// a fresh job has them (restored after the test).
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{"NCCL_TOPO_FILE", "FI_HMEM_DISABLE_P2P", "EFAP2P_ENV", "EFAP2P_TOPOLOGY", "EFAP2P_TOPOLOGY_ROOT"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
}

// p5NICList is every EFA NIC of the emulated p5.48xlarge tree, for
// --peer-blocked.
func p5NICList(t *testing.T, tree string) string {
	t.Helper()
	src, err := p2p.OpenSysfs(tree)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(tree, "class", "infiniband"))
	if err != nil {
		t.Fatal(err)
	}
	var nics []string
	for _, e := range ents {
		a, err := src.RDMADevice(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		nics = append(nics, a.String())
	}
	return strings.Join(nics, ",")
}

// TestExportBootNCCL: export --boot writes the NCCL topology beside the
// boot-time file, mode 0644, bound to this boot, with the same elements
// as export --format nccl (the blocked NICs' gdr 0 included).
func TestExportBootNCCL(t *testing.T) {
	cleanEnv(t)
	tree := writeTree(t, "p5.48xlarge")
	code, _, errs := runTool("export", "--sysfs", tree, "--boot", "--peer-blocked", "0000:93:00.0", checkKernel)
	file := tree + "/run/efap2p/" + nccltopo.BootFileName
	if code != 0 || !strings.Contains(errs, "efap2p: wrote "+file+"\n") {
		t.Fatalf("export --boot: exit %d: %s", code, errs)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("%s: %v, mode %v", file, err, st.Mode())
	}
	data, _ := os.ReadFile(file)
	if id, err := nccltopo.ReadBootID(bytes.NewReader(data)); err != nil || id != p2p.CurrentBootID() {
		t.Errorf("boot ID %q, %v; want this boot's, %q", id, err, p2p.CurrentBootID())
	}
	_, plain, _ := runTool("export", "--sysfs", tree, "--format", "nccl", "--peer-blocked", "0000:93:00.0", checkKernel)
	body := func(s string) string { return s[strings.Index(s, "<system"):] }
	if body(string(data)) != body(plain) {
		t.Errorf("the boot-time NCCL topology differs from export --format nccl:\n%s\nwant:\n%s", body(string(data)), body(plain))
	}
	if !strings.Contains(string(data), `<net name="rdmap147s0" `) || !strings.Contains(body(string(data)), `gdr="0"`) {
		t.Errorf("the blocked NIC rdmap147s0 (0000:93:00.0) is not there with gdr 0:\n%s", data)
	}
}
