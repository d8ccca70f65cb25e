// SPDX-License-Identifier: MIT

package kerneltruth

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/p2p"
)

// minPairs is how many recorded pairs the fixtures must hold in all: a
// fixture set that shrank is a regression of the proof.
const minPairs = 3000

func fixtureFiles(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob("fixtures/*.kt")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no fixtures in fixtures/ (make kernel-truth writes them)")
	}
	return names
}

// TestReplay decides every pair every booted kernel answered, from that
// boot's sysfs dump alone, and holds the oracle to the kernel's answer.
func TestReplay(t *testing.T) {
	total := 0
	builds := map[string]bool{}
	for _, name := range fixtureFiles(t) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			fx, err := ReadFixtureFile(name)
			if err != nil {
				t.Fatal(err)
			}
			builds[fx.Build] = true
			// The probe sits on calc_map_type_and_dist, which only a
			// kernel with p2pdma has.
			if fx.Report.Probed != fx.P2PDMA {
				t.Errorf("probe placed: %v, but built with PCI_P2PDMA: %v", fx.Report.Probed, fx.P2PDMA)
			}
			for _, m := range CheckACS(fx) {
				t.Errorf("sysfs dump: %s", m)
			}
			res, err := Replay(fx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Mismatches {
				t.Errorf("%s", m)
			}
			if !res.OK() {
				t.Errorf("%s (%s on %s)", res, fx.Scenario, fx.Kernel)
			}
			total += res.Pairs
		})
	}
	if total < minPairs {
		t.Errorf("the fixtures hold %d pairs, want at least %d", total, minPairs)
	}
	for _, b := range []string{"6.1", "6.12", "debian-stock"} {
		if !builds[b] {
			t.Errorf("no fixture of the %s kernel", b)
		}
	}
}

// TestReplayFailsOnDisagreement changes one recorded kernel verdict of a
// real fixture and expects the replay to name that pair, and only it.
func TestReplayFailsOnDisagreement(t *testing.T) {
	name := fixtureFiles(t)[0]
	for _, tc := range []struct {
		name   string
		change func(*KernelPair)
	}{
		{"map type", func(kp *KernelPair) {
			if kp.MapType == p2p.MapBusAddr {
				kp.MapType = p2p.MapThruHostBridge
			} else {
				kp.MapType = p2p.MapBusAddr
			}
		}},
		{"distance", func(kp *KernelPair) { kp.Dist++ }},
		{"pci_p2pdma_distance", func(kp *KernelPair) {
			if kp.Ret < 0 {
				kp.Ret = kp.Dist
			} else {
				kp.Ret = -1
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx, err := ReadFixtureFile(name)
			if err != nil {
				t.Fatal(err)
			}
			i := len(fx.Report.Pairs) / 2
			kp := &fx.Report.Pairs[i]
			if !kp.Probed && tc.name != "pci_p2pdma_distance" {
				t.Skip("the first fixture's kernel has no probe")
			}
			tc.change(kp)
			res, err := Replay(fx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() || len(res.Mismatches) != 1 || !strings.Contains(res.Mismatches[0], kp.Provider.String()) {
				t.Fatalf("a changed kernel verdict gave %s, mismatches %q; want the one pair named", res, res.Mismatches)
			}
		})
	}
}

// TestFixtureRoundTrip: a fixture writes back as it reads.
func TestFixtureRoundTrip(t *testing.T) {
	name := fixtureFiles(t)[0]
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	fx, err := ReadFixture(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := fx.Write(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), data) {
		t.Error("the fixture does not write back byte for byte")
	}
}

func TestParseReportRejects(t *testing.T) {
	head := "kt 1 6.1.192-kt\nprobe ok\n"
	fn := "fn 0000:00:03.0 1b36 000c 060400 01 bridge=1 up=- acs=148:005f:001d\n"
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "empty"},
		{"no header", "probe ok\n", "kt 1 RELEASE"},
		{"cut short", head + fn, "no end line"},
		{"bad count", head + "pair 0000:00:01.0 0000:00:01.0 0 BUS_ADDR 0\nend 2\n", "counted 2"},
		{"bad map type", head + "pair 0000:00:01.0 0000:00:01.0 0 FAST 0\nend 1\n", "map type"},
		{"bad address", head + "pair 0000:00:01 0000:00:01.0 0 BUS_ADDR 0\nend 1\n", "PCI address"},
		{"acs below 0x100", head + "fn 0000:00:03.0 1b36 000c 060400 01 bridge=1 up=- acs=48:005f:001d\nend 0\n", "below extended"},
		{"unknown line", head + "hello\nend 0\n", "unknown line"},
		{"after end", head + "end 0\nprobe ok\n", "after the end"},
		{"distance without map", head + "pair 0000:00:01.0 0000:00:01.0 0 - 4\nend 1\n", "without a map type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseReport(strings.NewReader(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseReport = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	a := p2p.MustParseAddr("0000:01:00.0")
	b := p2p.MustParseAddr("0000:02:00.0")
	rep := &Report{Probed: true, Pairs: []KernelPair{
		{Provider: a, Client: b, Ret: -1, Probed: true, MapType: p2p.MapNotSupported, Dist: 4},
		{Provider: b, Client: a, Ret: 4, Probed: true, MapType: p2p.MapThruHostBridge, Dist: 4},
	}}
	for _, tc := range []struct {
		name    string
		answers []Answer
		matches int
		bad     int
	}{
		{"agree", []Answer{{a, b, p2p.MapNotSupported, 4}, {b, a, p2p.MapThruHostBridge, 4}}, 2, 0},
		{"wrong map", []Answer{{a, b, p2p.MapThruHostBridge, 4}, {b, a, p2p.MapThruHostBridge, 4}}, 1, 1},
		{"wrong distance", []Answer{{a, b, p2p.MapNotSupported, 2}, {b, a, p2p.MapThruHostBridge, 4}}, 1, 1},
		{"missing", []Answer{{b, a, p2p.MapThruHostBridge, 4}}, 1, 1},
		{"extra", []Answer{{a, b, p2p.MapNotSupported, 4}, {b, a, p2p.MapThruHostBridge, 4}, {a, a, p2p.MapBusAddr, 0}}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compare(rep, tc.answers)
			if res.Matches != tc.matches || len(res.Mismatches) != tc.bad || res.Pairs != 2 {
				t.Fatalf("Compare = %+v, want %d matches and %d mismatches of 2", res, tc.matches, tc.bad)
			}
		})
	}
	// Without p2pdma the kernel's only answer is the stub's -1.
	stub := &Report{Pairs: []KernelPair{{Provider: a, Client: b, Ret: -1}}}
	if res := Compare(stub, []Answer{{a, b, p2p.MapNotSupported, 4}}); !res.OK() {
		t.Errorf("NOT_SUPPORTED against the stub: %+v", res)
	}
	if res := Compare(stub, []Answer{{a, b, p2p.MapBusAddr, 4}}); res.OK() {
		t.Errorf("BUS_ADDR against the stub passes: %+v", res)
	}
}

// TestRunReplayOnly runs what docs/kernel-releases.md shows for checking
// the recorded boots again without booting: KT_REPLAY_ONLY=1
// kerneltruth/run.sh, which builds efap2p from this tree and runs
// `efap2p explain --all --sysfs DUMP --kernel RELEASE` on every dump.
func TestRunReplayOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tools")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	cmd := exec.Command("bash", "kerneltruth/run.sh")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "KT_REPLAY_ONLY=1", "KT_CACHE="+t.TempDir())
	if gobin, err := exec.LookPath("go"); err == nil {
		cmd.Env = append(cmd.Env, "GO="+gobin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"all boots, efap2p --sysfs DUMP:", "every recorded pair matches the kernel"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
