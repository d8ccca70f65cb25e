// SPDX-License-Identifier: MIT

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// summary is what a topology file must carry faithfully.
type summary struct {
	MapType           p2p.MapType
	Distance          int
	Path              p2p.PathClass
	Policy            p2p.Policy
	Outcome           string
	Bandwidth, Latecy int
	ACS               []p2p.Addr
}

func summarize(v *p2p.Verdict) summary {
	return summary{v.MapType, v.Distance, v.Path, v.Policy, v.Outcome.String(), v.BandwidthMBs(), v.LatencyNs(), append([]p2p.Addr{}, v.ACSRedirect...)}
}

// TestExportRoundTrip: export, then read back: the same verdict for every
// exported pair of every model.
func TestExportRoundTrip(t *testing.T) {
	for _, name := range models.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, name)
			file := filepath.Join(t.TempDir(), "topo.json")
			if code, _, errs := runTool("export", "--sysfs", dir, "-o", file); code != 0 {
				t.Fatalf("export: exit %d: %s", code, errs)
			}
			tf, err := p2p.ReadTopologyFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(tf.Pairs) == 0 {
				t.Skip("no accelerator in this model")
			}
			src, _ := p2p.OpenSysfs(dir)
			computed := p2p.NewOracle(p2p.NewTopology(src))
			fromFile := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{TopologyFile: file})
			for _, tp := range tf.Pairs {
				a, err := computed.Verdict(tp.Provider, tp.Client)
				if err != nil {
					t.Fatal(err)
				}
				b, err := fromFile.Verdict(tp.Provider, tp.Client)
				if err != nil {
					t.Fatal(err)
				}
				if b.Source != p2p.SourceTopologyFile {
					t.Fatalf("%s -> %s: source %s", tp.Provider, tp.Client, b.Source)
				}
				if diff := cmp.Diff(summarize(a), summarize(b)); diff != "" {
					t.Errorf("%s -> %s (-computed +file):\n%s", tp.Provider, tp.Client, diff)
				}
			}
		})
	}
}

func TestExportPeerBlocked(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	file := filepath.Join(t.TempDir(), "topo.json")
	if code, _, errs := runTool("export", "--sysfs", dir, "--peer-blocked", "0000:4f:00.0", "-o", file); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, out, _ := runTool("explain", "--sysfs", dir, "--topology", file, "--json", "53:00.0", "4f:00.0")
	if code != 0 || !strings.Contains(out, `"outcome": "refused"`) || !strings.Contains(out, `"source": "topology-file"`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if code, _, errs := runTool("export", "--sysfs", dir, "--peer-blocked", "0000:53:00.0"); code != 2 || !strings.Contains(errs, "not a NIC") {
		t.Errorf("blocking a GPU: exit %d, %s", code, errs)
	}
}

func TestExportRefusesUncertain(t *testing.T) {
	m, _ := models.Builtin("p5.48xlarge")
	dir := t.TempDir()
	if err := m.Write(dir, models.WriteOptions{ConfigBytes: 64}); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runTool("export", "--sysfs", dir)
	if code != 1 || !strings.Contains(errs, "uncertain") || !strings.Contains(errs, "root") {
		t.Errorf("exit %d: %s", code, errs)
	}
	if code, out, _ := runTool("export", "--sysfs", dir, "--force"); code != 0 || !strings.Contains(out, "efap2p-topology") {
		t.Errorf("--force: exit %d", code)
	}
}

func TestBadTopologyFileWarns(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	file := filepath.Join(t.TempDir(), "topo.json")
	os.WriteFile(file, []byte("{\"format\": \"efap2p-topology\",\n \"version\": 1,\n \"pairs\": [}\n"), 0o644)
	code, out, errs := runTool("explain", "--sysfs", dir, "--topology", file, "53:00.0", "4f:00.0")
	if code != 0 || !strings.Contains(errs, file+":3:") || !strings.Contains(out, "source         computed") {
		t.Errorf("exit %d\nstderr %s\nstdout %s", code, errs, out)
	}
}
