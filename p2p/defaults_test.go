// SPDX-License-Identifier: MIT

package p2p_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// placeFile copies the topology file from to the place to, as root or the
// user would write it there.
func placeFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNewOracleDefaults: NewOracle takes what the library and the tool
// take on the same machine (the boot-time topology file, else the
// operator's, and the release $EFAP2P_KERNEL names), and Defaults turns
// each off; NewOracleWith takes only its Options.
func TestNewOracleDefaults(t *testing.T) {
	defer p2p.SetBootIDForTest("boot-a")()
	_, tree := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	root := t.TempDir() // this machine's default places are below it
	operator := filepath.Join(root, p2p.OperatorTopologyFile)
	boot := filepath.Join(root, p2p.BootTopologyFile)
	placeFile(t, p5File(t, tree, false), operator)
	t.Setenv("SYSFS_PATH", tree) // the tree is this machine's sysfs
	t.Setenv("EFAP2P_TOPOLOGY_ROOT", root)
	t.Setenv("EFAP2P_TOPOLOGY", "")
	t.Setenv(p2p.KernelEnv, testKernel) // the release the files were written for
	src, err := p2p.OpenSysfs(tree)
	if err != nil {
		t.Fatal(err)
	}
	topo := func() *p2p.Topology { return p2p.NewTopology(src) }

	o := p2p.NewOracle(topo())
	usesFile(t, o, operator)
	if got := o.Kernel().String(); got != testKernel {
		t.Errorf("NewOracle decides for %s; want %s, as %s says", got, testKernel, p2p.KernelEnv)
	}
	if f, _ := p2p.NewOracleWith(topo(), p2p.Options{Kernel: p2p.MustParseRelease(testKernel)}).TopologyFileInUse(); f != "" {
		t.Errorf("NewOracleWith without files read %s", f)
	}
	if f, _ := p2p.NewOracleWith(topo(), p2p.Defaults{NoOperatorFile: true}.Options(topo())).TopologyFileInUse(); f != "" {
		t.Errorf("without the operator's file: read %s", f)
	}
	if f, _ := p2p.NewOracleWith(topo(), p2p.Defaults{NoTopologyEnv: true}.Options(topo())).TopologyFileInUse(); f == operator {
		t.Errorf("without the environment: read %s, below $EFAP2P_TOPOLOGY_ROOT", f)
	}
	run, err := p2p.RunningRelease()
	if err != nil {
		t.Fatal(err)
	}
	if got := p2p.NewOracleWith(topo(), p2p.Defaults{NoKernelEnv: true}.Options(topo())).Kernel(); got.String() != run.String() {
		t.Errorf("without %s: decides for %s, want the running kernel's %s", p2p.KernelEnv, got, run)
	}

	// the boot-time file comes first
	placeFile(t, p5File(t, tree, true), boot)
	usesFile(t, p2p.NewOracle(topo()), boot)
	usesFile(t, p2p.NewOracleWith(topo(), p2p.Defaults{NoBootFile: true}.Options(topo())), operator)

	// $EFAP2P_TOPOLOGY names the file instead, and a missing one is said
	missing := filepath.Join(t.TempDir(), "none.json")
	t.Setenv("EFAP2P_TOPOLOGY", missing)
	o = p2p.NewOracle(topo())
	if f, _ := o.TopologyFileInUse(); f != "" || o.TopologyFileError() == nil {
		t.Errorf("with EFAP2P_TOPOLOGY=%s (missing): reads %q, error %v; want none, and why", missing, f, o.TopologyFileError())
	}
	t.Setenv("EFAP2P_TOPOLOGY", "")

	// another machine's tree has its own files: this machine's are not read
	t.Setenv("SYSFS_PATH", "")
	usesFile(t, p2p.NewOracle(topo()), "")
	own := filepath.Join(tree, p2p.OperatorTopologyFile)
	placeFile(t, operator, own)
	usesFile(t, p2p.NewOracle(topo()), own)

	// a machine model in memory is no machine's with files
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := p2p.NewOracle(p2p.NewTopology(m.Source())).TopologyFileInUse(); f != "" {
		t.Errorf("a model in memory read %s", f)
	}
}

// TestNewOracleBadKernelEnv: a $EFAP2P_KERNEL that is no release is said
// once, and the running kernel's rules decide.
func TestNewOracleBadKernelEnv(t *testing.T) {
	_, tree := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	src, err := p2p.OpenSysfs(tree)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(p2p.KernelEnv, "not-a-release")
	var warnings []string
	opts := p2p.Defaults{}.Options(p2p.NewTopology(src))
	opts.Warnf = func(f string, a ...any) { warnings = append(warnings, f) }
	o := p2p.NewOracleWith(p2p.NewTopology(src), opts)
	run, err := p2p.RunningRelease()
	if err != nil {
		t.Fatal(err)
	}
	if o.Kernel().String() != run.String() || len(warnings) != 1 {
		t.Errorf("with %s=not-a-release: decides for %s, warnings %q; want %s and one warning", p2p.KernelEnv, o.Kernel(), warnings, run)
	}
}
