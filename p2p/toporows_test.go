// SPDX-License-Identifier: MIT

package p2p_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

const v3Topology = `{
  "format": "efap2p-topology",
  "version": 3,
  "machine": {"kernel": "6.8.0", "functions": [{"addr": "0000:53:00.0", "id": "10de:2330"}, {"addr": "0000:4f:00.0", "id": "1d0f:efa1"}]},
  "nics": [{"addr": "0000:4f:00.0", "peer_access_blocked": true}],
  "accelerators": [],
  "pairs": [
    [0, 1, "BUS_ADDR", 4, "PIX", "kernel", "p2p", 25600, 280],
    [0, "0000:50:00.0", "THRU_HOST_BRIDGE", 4, "PIX", "nvidia", "p2p", 25600, 280, ["0000:46:05.0", 0], 0]
  ],
  "reasons": ["a reason"]
}
`

// TestParseTopologyFileV3: rows name functions by index or address and
// reasons by index or text; every malformed row is an error naming the
// file, the line and the pair.
func TestParseTopologyFileV3(t *testing.T) {
	tf, err := p2p.ParseTopologyFile([]byte(v3Topology), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	gpu, nic := p2p.MustParseAddr("0000:53:00.0"), p2p.MustParseAddr("0000:4f:00.0")
	want := []p2p.TopoPair{
		{Provider: gpu, Client: nic, MapType: p2p.MapBusAddr, Distance: 4, Path: p2p.PathPIX, Policy: p2p.PolicyKernel,
			Outcome: p2p.OutcomeP2P, BandwidthMBs: 25600, LatencyNs: 280},
		{Provider: gpu, Client: p2p.MustParseAddr("0000:50:00.0"), MapType: p2p.MapThruHostBridge, Distance: 4, Path: p2p.PathPIX,
			Policy: p2p.PolicyNVIDIA, Outcome: p2p.OutcomeP2P, BandwidthMBs: 25600, LatencyNs: 280,
			ACSRedirect: []p2p.Addr{p2p.MustParseAddr("0000:46:05.0"), gpu}, Reason: "a reason"},
	}
	if d := cmp.Diff(want, tf.Pairs); d != "" {
		t.Fatalf("pairs (-want +got):\n%s", d)
	}
	row := func(old, new string) string { return strings.Replace(v3Topology, old, new, 1) }
	for _, tt := range []struct{ name, data, want string }{
		{"short row", row(`25600, 280],`, `25600],`), "t.json:8: pairs[0]: 8 columns, want at least 9"},
		{"long row", row(`0], 0]`, `0], 0, 1]`), "t.json:9: pairs[1]: more than 11 columns"},
		{"index past the functions", row(`[0, 1,`, `[0, 2,`), "t.json:8: pairs[0]: client 2 is not the index of one of the 2 machine.functions"},
		{"negative index", row(`[0, 1,`, `[-1, 1,`), "pairs[0]: provider -1 is not the index"},
		{"bad address", row(`"0000:50:00.0"`, `"0000:50:00"`), "t.json:9: pairs[1]: client: "},
		{"bad map type", row(`"BUS_ADDR"`, `"MAYBE"`), "t.json:8: pairs[0]: unknown map type \"MAYBE\""},
		{"map type not a string", row(`"BUS_ADDR"`, `2`), "pairs[0]: map_type is 2, not a string"},
		{"distance not a number", row(`"BUS_ADDR", 4,`, `"BUS_ADDR", "4",`), "pairs[0]: distance is \"4\", not a number"},
		{"fractional distance", row(`"BUS_ADDR", 4,`, `"BUS_ADDR", 4.5,`), "pairs[0]: distance 4.5 is not an integer"},
		{"missing outcome", row(`"kernel", "p2p", 25600`, `"kernel", "unknown", 25600`), "t.json:8: pairs[0]: outcome is missing"},
		{"reason past the list", row(`0], 0]`, `0], 1]`), "pairs[1]: reason 1 is not the index of one of the 1 reasons"},
		{"acs not a list", row(`["0000:46:05.0", 0]`, `"0000:46:05.0"`), "pairs[1]: acs_redirect is not a list"},
		{"row not a list", row(`[0, 1, "BUS_ADDR", 4, "PIX", "kernel", "p2p", 25600, 280]`, `{"provider": 0}`), "t.json:8: pairs[0]: a pair is a row"},
		{"duplicate", row(`"0000:50:00.0"`, `1`), "t.json:9: pairs[1]: 0000:53:00.0 -> 0000:4f:00.0 listed twice"},
		{"unknown field", row(`"accelerators": [],`, `"accelerators": [], "colour": 1,`), "t.json:6: json: unknown field \"colour\""},
		{"unknown nested field", row(`"peer_access_blocked": true`, `"peer_access_blocked": true, "speed": 1`), "t.json:5: json: unknown field \"speed\""},
		{"version 2 with reasons", row(`"version": 3`, `"version": 2`), "unknown field \"reasons\""},
		{"version 4", row(`"version": 3`, `"version": 4`), "t.json:1: version 4 is not supported (this build reads versions 2 and 3"},
		{"not an object", "[1]", "t.json:1: the topology is not a JSON object"},
	} {
		_, err := p2p.ParseTopologyFile([]byte(tt.data), "t.json")
		if !errors.Is(err, p2p.ErrTopologyFile) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v; want one containing %q", tt.name, err, tt.want)
		}
	}
}

// TestDocumentedRows: the example of docs/topology-file.md reads as it
// says.
func TestDocumentedRows(t *testing.T) {
	doc := `{"format": "efap2p-topology", "version": 3,
    "machine": {"kernel": "6.8.0-1015-aws", "functions": [{"addr": "0000:53:00.0", "id": "10de:2330"}, {"addr": "0000:4f:00.0", "id": "1d0f:efa1"}]},
    "pairs": [
      [0, 1, "BUS_ADDR", 4, "PIX", "nvidia", "p2p", 31507, 280],
      [0, "0000:50:00.0", "THRU_HOST_BRIDGE", 8, "PHB", "nvidia", "refused", 31507, 810, [], "measured: the firmware blocks it"]
    ]}`
	tf, err := p2p.ParseTopologyFile([]byte(doc), "doc.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(tf.Pairs) != 2 || tf.Pairs[0].Client != p2p.MustParseAddr("0000:4f:00.0") || tf.Pairs[1].Outcome != p2p.OutcomeRefused ||
		tf.Pairs[1].Reason != "measured: the firmware blocks it" || tf.Pairs[1].Path != p2p.PathPHB {
		t.Errorf("%+v", tf.Pairs)
	}
}

// TestTopologyFileV3RoundTrip: what Marshal writes reads back as it was,
// each function and each reason written once.
func TestTopologyFileV3RoundTrip(t *testing.T) {
	tf := p2p.NewTopologyFile("h")
	gpu, nic, sw := p2p.MustParseAddr("0000:53:00.0"), p2p.MustParseAddr("0000:4f:00.0"), p2p.MustParseAddr("0000:46:05.0")
	tf.Machine = p2p.TopoMachine{Kernel: "6.8.0", BootID: "b", Functions: []p2p.TopoFunction{{Addr: gpu, ID: "10de:2330"}, {Addr: nic, ID: "1d0f:efa1"}}}
	tf.NICs = []p2p.TopoNIC{{Addr: nic, IBDev: "rdmap79s0", Note: "a \"quoted\" note"}}
	tf.Accelerators = []p2p.TopoAccelerator{{Addr: gpu, Driver: "nvidia", Vendor: "10de", Device: "2330"}}
	shared := "the same reason, \"quoted\", with a\nnewline"
	tf.Pairs = []p2p.TopoPair{
		{Provider: gpu, Client: nic, MapType: p2p.MapBusAddr, Distance: 4, Path: p2p.PathPIX, Policy: p2p.PolicyKernel, Outcome: p2p.OutcomeP2P, BandwidthMBs: 1, LatencyNs: 2, Reason: shared},
		{Provider: nic, Client: gpu, MapType: p2p.MapThruHostBridge, Distance: 4, Path: p2p.PathPIX, Outcome: p2p.OutcomeRefused, ACSRedirect: []p2p.Addr{sw}, Reason: shared},
		{Provider: gpu, Client: sw, MapType: p2p.MapNotSupported, Distance: 8, Path: p2p.PathSYS, Policy: p2p.PolicyAMDGPU, Outcome: p2p.OutcomeBounced},
	}
	data, err := tf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `the same reason`); n != 1 {
		t.Errorf("the shared reason is written %d times, want once:\n%s", n, data)
	}
	if _, rows, _ := strings.Cut(string(data), `"pairs"`); strings.Contains(rows, `"0000:53:00.0"`) || !strings.Contains(rows, `"0000:46:05.0"`) {
		t.Errorf("the pairs name the functions of machine.functions by address, or the others by index:\n%s", rows)
	}
	back, err := p2p.ParseTopologyFile(data, "rt.json")
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if back.Version != p2p.TopologyFileVersion {
		t.Errorf("version %d", back.Version)
	}
	tf.Version = p2p.TopologyFileVersion
	if d := cmp.Diff(tf, back); d != "" {
		t.Errorf("round trip (-wrote +read):\n%s", d)
	}
}

// TestTopologyFileLimitFromMachine: a topology file past 64 MiB is read on
// a machine with enough PCI functions to need one, and refused on a small
// one; the bound is the machine's, not a constant an export can exceed.
func TestTopologyFileLimitFromMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 65 MiB file")
	}
	big := t.TempDir()
	if err := models.Synthetic(300).Write(big, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, small := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	tf := p2p.NewTopologyFile("h")
	tf.Machine.Kernel = ""
	tf.Pairs = []p2p.TopoPair{{Provider: p5GPU, Client: p5NIC, MapType: p2p.MapBusAddr, Distance: 4, Path: p2p.PathPIX,
		Outcome: p2p.OutcomeP2P, Reason: strings.Repeat("a", 65<<20)}}
	data, err := tf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	data = nil
	for _, tt := range []struct {
		dir  string
		read bool
	}{{big, true}, {small, false}} {
		src, err := p2p.OpenSysfs(tt.dir)
		if err != nil {
			t.Fatal(err)
		}
		o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{TopologyFile: file, Kernel: p2p.MustParseRelease("latest")})
		err = o.TopologyFileError()
		switch {
		case tt.read && err != nil:
			t.Errorf("a 65 MiB file on a machine of 300 functions: %v", err)
		case !tt.read && (err == nil || !strings.Contains(err.Error(), "too large")):
			t.Errorf("a 65 MiB file on p5.48xlarge (124 functions): %v, want too large", err)
		}
	}
}
