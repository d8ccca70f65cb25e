// SPDX-License-Identifier: MIT

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSysfsTreeTopologyFiles: a tree given with --sysfs is another
// machine: the commands read its own topology files (below it, where
// efap2p sim puts them), never this host's.
func TestSysfsTreeTopologyFiles(t *testing.T) {
	tree := writeTree(t, "p5.48xlarge")
	// this host's default places hold a file that describes another machine
	host := t.TempDir()
	other := writeTree(t, "p4d.24xlarge")
	if code, _, errs := runTool("export", "--sysfs", other, "-o", filepath.Join(host, "etc/efap2p/topology.json")); code != 0 {
		t.Fatalf("export of the p4d tree: exit %d, %s", code, errs)
	}
	t.Setenv("EFAP2P_TOPOLOGY_ROOT", host)
	t.Setenv("EFAP2P_TOPOLOGY", filepath.Join(host, "etc/efap2p/topology.json"))
	t.Setenv("SYSFS_PATH", "")

	code, out, errs := runTool("check", "--sysfs", tree)
	if code != 0 || strings.Contains(out+errs, "another machine") || strings.Contains(out+errs, host) {
		t.Errorf("check --sysfs TREE with this host's file in place: exit %d\n%s%s\nwant the tree judged alone, exit 0", code, out, errs)
	}

	// the tree's own operator's file: a blocked NIC
	own := filepath.Join(tree, "etc/efap2p/topology.json")
	if code, _, errs := runTool("export", "--sysfs", tree, "--peer-blocked", "0000:4f:00.0", "-o", own); code != 0 {
		t.Fatalf("export of the p5 tree: exit %d, %s", code, errs)
	}
	code, out, errs = runTool("explain", "--sysfs", tree, "GPU0", "NIC0")
	if code != 0 || !strings.Contains(out, "refused") || !strings.Contains(out, own) {
		t.Errorf("explain --sysfs TREE with the tree's own %s: exit %d\n%s%s\nwant the pair refused by that file", own, code, out, errs)
	}
	// --topology still names any file
	code, out, _ = runTool("explain", "--sysfs", tree, "--topology", filepath.Join(host, "etc/efap2p/topology.json"), "GPU0", "NIC0")
	if code != 0 || strings.Contains(out, own) {
		t.Errorf("explain --sysfs TREE --topology FILE: exit %d, read the tree's file instead:\n%s", code, out)
	}
}

// TestMissingTopologyFile: a topology file named and missing gets one
// answer, through --topology and through $EFAP2P_TOPOLOGY alike.
func TestMissingTopologyFile(t *testing.T) {
	tree := writeTree(t, "p5.48xlarge")
	missing := filepath.Join(t.TempDir(), "none.json")
	t.Setenv("SYSFS_PATH", tree)
	t.Setenv("EFAP2P_TOPOLOGY_ROOT", t.TempDir())
	for _, args := range [][]string{{"check", "--format", "line"}, {"check"}, {"topo"}} {
		t.Setenv("EFAP2P_TOPOLOGY", "")
		flagCode, flagOut, flagErr := runTool(append(args, "--topology", missing)...)
		t.Setenv("EFAP2P_TOPOLOGY", missing)
		envCode, envOut, envErr := runTool(args...)
		if flagCode != envCode || flagOut != envOut || flagErr != envErr {
			t.Errorf("efap2p %s with a missing file:\n--topology: exit %d\n%s%s\nEFAP2P_TOPOLOGY: exit %d\n%s%s", strings.Join(args, " "),
				flagCode, flagOut, flagErr, envCode, envOut, envErr)
		}
		if !strings.Contains(envOut+envErr, missing) {
			t.Errorf("efap2p %s with EFAP2P_TOPOLOGY=%s: nothing says it is missing:\n%s%s", strings.Join(args, " "), missing, envOut, envErr)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("the missing file was written")
	}
}
