// SPDX-License-Identifier: MIT

package p2p_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// testKernel is the release the tests' files are written for.
const testKernel = "6.8.0-1015-aws"

// p5File writes a topology file for the p5.48xlarge tree at dir (one pair,
// the GPU 53:00.0 and its switch-local NIC) stamped as export stamps it,
// for testKernel.
func p5File(t *testing.T, dir string, boot bool) string {
	t.Helper()
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	tf := p2p.NewTopologyFile("test")
	tf.Pairs = append(tf.Pairs, p2p.TopoPair{Provider: p5GPU, Client: p5NIC, MapType: p2p.MapBusAddr,
		Distance: 4, Path: p2p.PathPIX, Outcome: p2p.OutcomeRefused, Reason: "measured"})
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease(testKernel)})
	if err := tf.RecordMachine(o, boot); err != nil {
		t.Fatal(err)
	}
	data, err := tf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "topology.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// readWith opens an oracle over the tree at dir, deciding for testKernel,
// reading the given files as the default places, and returns its warnings.
func readWith(t *testing.T, dir string, files ...string) (*p2p.Oracle, []string) {
	t.Helper()
	return readFor(t, dir, testKernel, files...)
}

func readFor(t *testing.T, dir, kernel string, files ...string) (*p2p.Oracle, []string) {
	t.Helper()
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{TopologyFiles: files, Kernel: p2p.MustParseRelease(kernel),
		Warnf: func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) }})
	return o, warnings
}

func usesFile(t *testing.T, o *p2p.Oracle, want string) {
	t.Helper()
	got, why := o.TopologyFileInUse()
	if got != want {
		t.Fatalf("topology file in use %q, want %q", got, want)
	}
	if want != "" {
		v, err := o.Verdict(p5GPU, p5NIC)
		if err != nil || v.Source != p2p.SourceTopologyFile || v.Outcome != p2p.OutcomeRefused {
			t.Fatalf("verdict %+v, %v: want the file's (refused, topology-file)", v, err)
		}
		if why == "" {
			t.Error("no reason why the file was trusted")
		}
	}
}

// TestTopologyFileDescribesAnotherMachine: a file stamped on p5.48xlarge is
// not used on another model, nor on a p5 whose GPU has another device ID,
// nor under another kernel; each says why once, and the computed verdicts
// answer.
func TestTopologyFileDescribesAnotherMachine(t *testing.T) {
	defer p2p.SetBootIDForTest("boot-a")()
	_, p5 := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	file := p5File(t, p5, false)

	o, warnings := readWith(t, p5, file)
	usesFile(t, o, file)
	if len(warnings) != 0 {
		t.Errorf("warnings on the right machine: %v", warnings)
	}

	_, p4d := writeModel(t, "p4d.24xlarge", models.WriteOptions{})
	h100 := mutated(t, func(m *models.Machine) { m.Function(p5GPU).Device = 0x2324 })
	for _, tc := range []struct {
		name, dir, kernel, want string
	}{
		{"other model", p4d, "6.8.0-1015-aws", "describes another machine: 0000:53:00.0 is 10de:2330 there, absent here"},
		{"other GPU", h100, "6.8.0-1015-aws", "describes another machine: 0000:53:00.0 is 10de:2330 there, 10de:2324 here"},
		{"other kernel", p5, "6.1.0-28-amd64", "was written for kernel 6.8.0-1015-aws, this is 6.1.0-28-amd64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, warnings := readFor(t, tc.dir, tc.kernel, file)
			usesFile(t, o, "")
			if len(warnings) != 1 || !strings.HasPrefix(warnings[0], file+" "+tc.want) {
				t.Errorf("warnings %q, want one saying %q", warnings, tc.want)
			}
			if !errors.Is(o.TopologyFileError(), p2p.ErrOtherMachine) || !errors.Is(o.TopologyFileError(), p2p.ErrTopologyFile) {
				t.Errorf("error %v is not ErrOtherMachine", o.TopologyFileError())
			}
		})
	}
}

// mutated writes p5.48xlarge changed by f.
func mutated(t *testing.T, f func(*models.Machine)) string {
	t.Helper()
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	f(m)
	dir := t.TempDir()
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBootTopologyFile: a file written at boot is used in that boot only,
// and its functions are not read again (the boot ID proves them).
func TestBootTopologyFile(t *testing.T) {
	restore := p2p.SetBootIDForTest("boot-a")
	_, p5 := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	file := p5File(t, p5, true)
	restore()

	func() {
		defer p2p.SetBootIDForTest("boot-a")()
		o, warnings := readWith(t, p5, file)
		usesFile(t, o, file)
		if len(warnings) != 0 {
			t.Errorf("warnings: %v", warnings)
		}
	}()
	defer p2p.SetBootIDForTest("boot-b")()
	o, warnings := readWith(t, p5, file)
	usesFile(t, o, "")
	if len(warnings) != 1 || !strings.Contains(warnings[0], "written during boot boot-a, this is boot boot-b") {
		t.Errorf("warnings %q", warnings)
	}
}

// TestUntrustedTopologyFile: a file others could have written is not used.
func TestUntrustedTopologyFile(t *testing.T) {
	defer p2p.SetBootIDForTest("boot-a")()
	_, p5 := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	for _, tc := range []struct {
		name  string
		apply func(file string) error
		want  string
	}{
		{"group-writable", func(f string) error { return os.Chmod(f, 0o664) }, "not trusted: writable by its group (mode 0664)"},
		{"world-writable", func(f string) error { return os.Chmod(f, 0o646) }, "not trusted: writable by others (mode 0646)"},
		{"another owner", func(f string) error {
			if os.Geteuid() != 0 {
				return errSkip
			}
			return os.Chown(f, 4242, 4242)
		}, "not trusted: owned by uid 4242, neither root nor this user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := p5File(t, p5, false)
			if err := tc.apply(file); errors.Is(err, errSkip) {
				t.Skip("needs root to give the file away")
			} else if err != nil {
				t.Fatal(err)
			}
			o, warnings := readWith(t, p5, file)
			usesFile(t, o, "")
			if len(warnings) != 1 || !strings.Contains(warnings[0], tc.want) || !errors.Is(o.TopologyFileError(), p2p.ErrUntrusted) {
				t.Errorf("warnings %q, error %v; want %q", warnings, o.TopologyFileError(), tc.want)
			}
		})
	}
}

var errSkip = errors.New("skip")

// TestTopologyFilePlaces: the first usable default place wins; a
// missing one is skipped silently, an unusable one is reported and the
// next one is read.
func TestTopologyFilePlaces(t *testing.T) {
	defer p2p.SetBootIDForTest("boot-a")()
	_, p5 := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	good := p5File(t, p5, false)
	other := p5File(t, p5, false)
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.json")

	o, w := readWith(t, p5, missing, good)
	usesFile(t, o, good)
	if len(w) != 0 {
		t.Errorf("a missing default place was reported: %v", w)
	}
	o, w = readWith(t, p5, bad, good)
	usesFile(t, o, good)
	if len(w) != 1 || !strings.Contains(w[0], bad+":1:") {
		t.Errorf("warnings %q, want one about %s", w, bad)
	}
	o, _ = readWith(t, p5, good, other)
	usesFile(t, o, good)

	// this machine's default places, as Defaults names them
	t.Setenv("SYSFS_PATH", p5)
	t.Setenv("EFAP2P_TOPOLOGY", "")
	t.Setenv("EFAP2P_TOPOLOGY_ROOT", "/x/")
	src, err := p2p.OpenSysfs(p5)
	if err != nil {
		t.Fatal(err)
	}
	topo := p2p.NewTopology(src)
	if got := (p2p.Defaults{}).Options(topo); strings.Join(got.TopologyFiles, " ") != "/x/run/efap2p/topology.json /x/etc/efap2p/topology.json" || got.TopologyFile != "" {
		t.Errorf("default places under EFAP2P_TOPOLOGY_ROOT: %q, %q", got.TopologyFiles, got.TopologyFile)
	}
	t.Setenv("EFAP2P_TOPOLOGY", good)
	if got := (p2p.Defaults{}).Options(topo); got.TopologyFile != good || len(got.TopologyFiles) != 0 {
		t.Errorf("with EFAP2P_TOPOLOGY: %q, %q", got.TopologyFile, got.TopologyFiles)
	}
}

// TestTopologyFileErrorLineDeep: an error in the last of 4000 pairs names
// its line (the line is found in one pass, after decoding).
func TestTopologyFileErrorLineDeep(t *testing.T) {
	var b strings.Builder
	b.WriteString("{\n\"format\": \"efap2p-topology\",\n\"version\": 2,\n\"machine\": {\"kernel\": \"\", \"functions\": []},\n\"nics\": [],\n\"accelerators\": [],\n\"pairs\": [\n")
	const n = 4000
	for i := 0; i < n; i++ {
		outcome := `, "outcome": "p2p"`
		if i == n-1 {
			outcome = ""
		}
		fmt.Fprintf(&b, "{\"provider\": \"0000:%02x:%02x.0\", \"client\": \"0000:4f:00.0\", \"map_type\": \"BUS_ADDR\", \"distance\": 4, \"path\": \"PIX\"%s}", i/32, i%32, outcome)
		if i < n-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n}\n")
	_, err := p2p.ParseTopologyFile([]byte(b.String()), "big.json")
	want := fmt.Sprintf("big.json:%d: pairs[%d]: outcome is missing", 7+n, n-1)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}
