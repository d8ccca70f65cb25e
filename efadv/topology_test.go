// SPDX-License-Identifier: MIT

package efadv_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/efap2p/efap2p/efadv"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim/simtest"
)

// TestTopologyFile: the oracle reads $EFAP2P_TOPOLOGY, else the default
// places, whose facts take precedence; a file it cannot use (malformed,
// another kernel's) is set aside for the computed answers.
func TestTopologyFile(t *testing.T) {
	m := simtest.Require(t)
	pairs := map[string][2]string{ // NIC, its GPU
		"p5.48xlarge":      {"0000:4f:00.0", "0000:53:00.0"},
		"intel-acs-switch": {"0000:04:00.0", "0000:03:00.0"},
		"multi-domain":     {"0000:02:00.0", "0000:01:00.0"},
		"arm64-devicetree": {"0001:01:00.0", "0000:01:00.0"},
		"hyperv-vpci":      {"0003:00:00.0", "0001:00:00.0"},
	}
	pair, ok := pairs[m.Name]
	if !ok {
		t.Fatalf("no NIC chosen for model %s", m.Name)
	}
	nic, gpu := p2p.MustParseAddr(pair[0]), p2p.MustParseAddr(pair[1])
	src, err := p2p.OpenSysfs(p2p.SysfsRoot())
	if err != nil {
		t.Fatal(err)
	}
	blocked := p2p.NewTopologyFile("test")
	blocked.NICs = append(blocked.NICs, p2p.TopoNIC{Addr: nic, PeerAccessBlocked: true, Note: "test"})
	rel, err := p2p.ReleaseFromEnv() // the release efadv decides for
	if err != nil {
		t.Fatal(err)
	}
	if err := blocked.RecordMachine(p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: rel}), false); err != nil {
		t.Fatal(err)
	}
	data, err := blocked.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	other := blocked
	other.Machine.Kernel = "0.0-another-kernel"
	otherData, err := other.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		content    []byte
		place      string // "": named by EFAP2P_TOPOLOGY; else a default place under EFAP2P_TOPOLOGY_ROOT
		wantP2P    bool
		wantSource p2p.VerdictSource
		wantOut    p2p.Outcome // OutcomeUnknown: not checked
		fileErr    bool
	}{
		{"NIC blocking peer access", data, "", false, p2p.SourceTopologyFile, p2p.OutcomeRefused, false},
		{"malformed file", []byte("{\n"), "", p2pDMA[m.Name], p2p.SourceComputed, p2p.OutcomeUnknown, true},
		{"boot-time default place", data, p2p.BootTopologyFile, false, p2p.SourceTopologyFile, p2p.OutcomeRefused, false},
		{"operator's default place", data, p2p.OperatorTopologyFile, false, p2p.SourceTopologyFile, p2p.OutcomeRefused, false},
		{"another kernel's file", otherData, p2p.BootTopologyFile, p2pDMA[m.Name], p2p.SourceComputed, p2p.OutcomeUnknown, true},
	}
	ctx := open(t, m.Function(nic).IBDev())
	t.Cleanup(efadv.ResetOracle)
	t.Setenv("EFAP2P_LOG", "off")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			name := filepath.Join(root, "topology.json")
			t.Setenv("EFAP2P_TOPOLOGY", name)
			if tc.place != "" {
				name = filepath.Join(root, tc.place)
				t.Setenv("EFAP2P_TOPOLOGY", "")
				t.Setenv("EFAP2P_TOPOLOGY_ROOT", root)
			}
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			efadv.ResetOracle()
			o, err := efadv.Oracle()
			if err != nil {
				t.Fatal(err)
			}
			if got := o.TopologyFileError() != nil; got != tc.fileErr {
				t.Errorf("TopologyFileError() = %v, want an error: %v", o.TopologyFileError(), tc.fileErr)
			}
			attr, err := efadv.QueryDevice(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if attr.Caps.Has(efadv.CapP2PDMA) != tc.wantP2P {
				t.Errorf("caps %v, want P2P_DMA %v", attr.Caps, tc.wantP2P)
			}
			v, err := efadv.QueryP2P(ctx, gpu)
			if err != nil {
				t.Fatal(err)
			}
			if v.Source != tc.wantSource {
				t.Errorf("verdict source %q, want %q (%s)", v.Source, tc.wantSource, v.Reason)
			}
			if tc.wantOut != p2p.OutcomeUnknown && v.Outcome != tc.wantOut {
				t.Errorf("outcome %v, want %v", v.Outcome, tc.wantOut)
			}
		})
	}
}
