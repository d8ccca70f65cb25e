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
// exportTree exports the tree dir to a file and reads it back.
func exportTree(t *testing.T, dir string) (string, *p2p.TopologyFile) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "topo.json")
	if code, _, errs := runTool("export", "--sysfs", dir, "-o", file); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	tf, err := p2p.ReadTopologyFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return file, tf
}

func TestExportRoundTrip(t *testing.T) {
	for _, name := range models.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, name)
			file, tf := exportTree(t, dir)
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
	// the outcomes are certain, the map types of 32 pairs assumed: the
	// file would record the guess as the kernel's
	if code != 1 || !strings.Contains(errs, "for 32 of 320 pairs the map type rests on what this user cannot read") || !strings.Contains(errs, "run export as root, or pass --force") {
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

// TestExportReasons: a pair's reason is written only with --reasons, and
// then it is the oracle's; without, a reader of the file still explains
// the pair by what the file records.
func TestExportReasons(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	plain, full := filepath.Join(t.TempDir(), "plain.json"), filepath.Join(t.TempDir(), "full.json")
	if code, _, errs := runTool("export", "--sysfs", dir, "-o", plain); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	if code, _, errs := runTool("export", "--sysfs", dir, "--reasons", "-o", full); code != 0 {
		t.Fatalf("export --reasons: exit %d: %s", code, errs)
	}
	a, err := p2p.ReadTopologyFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p2p.ReadTopologyFile(full)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := p2p.OpenSysfs(dir)
	o := p2p.NewOracle(p2p.NewTopology(src))
	for i := range a.Pairs {
		if a.Pairs[i].Reason != "" {
			t.Fatalf("without --reasons, pair %d has a reason: %q", i, a.Pairs[i].Reason)
		}
		v, err := o.Verdict(b.Pairs[i].Provider, b.Pairs[i].Client)
		if err != nil {
			t.Fatal(err)
		}
		if b.Pairs[i].Reason != v.Reason {
			t.Fatalf("--reasons: pair %d's reason %q, the oracle's %q", i, b.Pairs[i].Reason, v.Reason)
		}
	}
	sa, _ := os.Stat(plain)
	sb, _ := os.Stat(full)
	if sa.Size()*4 > sb.Size() {
		t.Errorf("the file is %d bytes, %d with reasons: the reasons should be most of it", sa.Size(), sb.Size())
	}
	code, out, errs := runTool("explain", "--sysfs", dir, "--topology", plain, "GPU0", "NIC0")
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "records this pair's dma-buf path as p2p") {
		t.Errorf("explain from the file without reasons: exit %d, %s%s", code, out, errs)
	}
}

// TestExportSynthetic: a synthetic machine written by 'efap2p sim write
// --machine synthetic-N' exports every accelerator's pairs in a few dozen
// bytes each, and the file reads back.
func TestExportSynthetic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	if code, _, errs := runSimCmd(t, "write", "--machine", "synthetic-512", dir); code != 0 {
		t.Fatalf("sim write: exit %d: %s", code, errs)
	}
	file, tf := exportTree(t, dir)
	m := models.Synthetic(512)
	accels, nics := 0, 0
	for _, f := range m.Functions() {
		switch f.Class >> 16 {
		case 0x03:
			accels++
		case 0x02:
			nics++
		}
	}
	if want := accels * (accels + nics - 1); len(tf.Pairs) != want {
		t.Errorf("%d pairs, want %d: every accelerator with every other device", len(tf.Pairs), want)
	}
	st, _ := os.Stat(file)
	if per := st.Size() / int64(len(tf.Pairs)); per > 100 {
		t.Errorf("%d bytes a pair (%d pairs in %d bytes), want at most 100", per, len(tf.Pairs), st.Size())
	}
	for _, bad := range []string{"synthetic-0", "synthetic-x", "synthetic-070"} {
		if code, _, errs := runSimCmd(t, "write", "--machine", bad, filepath.Join(t.TempDir(), "t")); code != 2 || !strings.Contains(errs, "synthetic-N") {
			t.Errorf("sim write --machine %s: exit %d, %q; want 2 and what synthetic-N takes", bad, code, errs)
		}
	}
}
