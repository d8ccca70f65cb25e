// SPDX-License-Identifier: MIT

package p2p_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

var (
	hygonGPU  = p2p.MustParseAddr("0000:01:00.0")
	hygonNIC  = p2p.MustParseAddr("0000:41:00.0") // HMAT: 11 -> 10 reachable
	hygonNIC2 = p2p.MustParseAddr("0000:81:00.0") // HMAT: 12 -> 10 zero (UIO only)
)

func hygonOracle(t *testing.T, kernel p2p.Release, edit func(dir string)) *p2p.Oracle {
	t.Helper()
	_, dir := writeModel(t, "hygon-hmat-p2p", models.WriteOptions{})
	if edit != nil {
		edit(dir)
	}
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: kernel})
}

// TestHMATSeriesDecision: on a host where only the HMAT allows a path
// through the host bridges, the series (p2p-hmat) allows it with the
// table's figures, from the binary HMAT and SRAT the writer wrote and the
// host bridges' firmware_node; the newest rules without it refuse.
func TestHMATSeriesDecision(t *testing.T) {
	o := hygonOracle(t, p2p.MustParseRelease("p2p-hmat"), nil)
	v, err := o.Verdict(hygonGPU, hygonNIC)
	if err != nil {
		t.Fatal(err)
	}
	if v.MapType != p2p.MapThruHostBridge || v.Rule != p2p.RuleACPI || v.Source != p2p.SourceACPI || !v.Certain || v.Outcome != p2p.OutcomeP2P {
		t.Fatalf("got %s %s %s certain=%v %s: %s", v.MapType, v.Rule, v.Source, v.Certain, v.Outcome, v.Reason)
	}
	if v.BandwidthMBs() != 18000 || v.LatencyNs() != 950 {
		t.Errorf("figures %d MB/s %d ns, want the HMAT's 18000 and 950", v.BandwidthMBs(), v.LatencyNs())
	}
	for _, s := range []string{"proximity domain 11", "proximity domain 10", "reachable ordered P2P path"} {
		if !strings.Contains(v.Reason, s) {
			t.Errorf("reason does not say %q: %s", s, v.Reason)
		}
	}
	v, _ = o.Verdict(hygonGPU, hygonNIC2)
	if v.MapType != p2p.MapNotSupported || v.Outcome != p2p.OutcomeBounced || !v.Certain || !strings.Contains(v.Reason, "unreachable") {
		t.Errorf("UIO-only path: %s %s certain=%v: %s", v.MapType, v.Outcome, v.Certain, v.Reason)
	}

	// Without the series: refused, but the HMAT still describes the
	// path's figures.
	o = hygonOracle(t, p2p.MustParseRelease("latest"), nil)
	v, _ = o.Verdict(hygonGPU, hygonNIC)
	if v.MapType != p2p.MapNotSupported || v.Source != p2p.SourceComputed || v.BandwidthMBs() != 18000 || v.LatencyNs() != 950 {
		t.Errorf("latest: %s from %s, %d MB/s %d ns", v.MapType, v.Source, v.BandwidthMBs(), v.LatencyNs())
	}
}

// TestHMATUnreadable: tables that cannot be read (a non-root process gets
// EACCES; here a directory stands where the table belongs) leave the
// series' decision uncertain, and say why; a missing firmware_node leaves
// it certain (the host bridge has no ACPI companion).
func TestHMATUnreadable(t *testing.T) {
	o := hygonOracle(t, p2p.MustParseRelease("p2p-hmat"), func(dir string) {
		hmat := filepath.Join(dir, "firmware/acpi/tables/HMAT")
		if err := os.Remove(hmat); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(hmat, 0o755); err != nil {
			t.Fatal(err)
		}
	})
	v, err := o.Verdict(hygonGPU, hygonNIC)
	if err != nil {
		t.Fatal(err)
	}
	if v.MapType != p2p.MapNotSupported || v.Certain || !strings.Contains(v.Reason, "readable by root only") {
		t.Errorf("got %s certain=%v: %s", v.MapType, v.Certain, v.Reason)
	}

	o = hygonOracle(t, p2p.MustParseRelease("p2p-hmat"), func(dir string) {
		if err := os.Remove(filepath.Join(dir, "devices/pci0000:40/firmware_node")); err != nil {
			t.Fatal(err)
		}
	})
	v, _ = o.Verdict(hygonGPU, hygonNIC)
	if v.MapType != p2p.MapNotSupported || !v.Certain || !strings.Contains(v.Reason, "no ACPI companion") {
		t.Errorf("no firmware_node: %s certain=%v: %s", v.MapType, v.Certain, v.Reason)
	}
}

// egressModel: one switch below a non-whitelisted Intel host bridge whose
// downstream ports have ACS Egress Control (each with a port number and an
// Egress Control Vector).
const egressModel = `{
  "format": 1, "name": "egress", "description": "test", "provenance": "test",
  "cpu": {"arch": "x86", "vendor": "Intel", "family": "06", "model": "8f"},
  "root_buses": [{"domain": "0000", "bus": "00", "numa_node": 0, "functions": [
    {"addr": "0000:00:00.0", "kind": "host_bridge", "vendor": "8086", "device": "1237", "class": "060000"},
    {"addr": "0000:00:01.0", "kind": "root_port", "vendor": "8086", "device": "352a", "class": "060400", "children": [
      {"addr": "0000:01:00.0", "kind": "switch_upstream", "vendor": "1000", "device": "c010", "class": "060400", "children": [
        {"addr": "0000:02:00.0", "kind": "switch_downstream", "vendor": "1000", "device": "c010", "class": "060400", "port_number": 1,
         "acs": {"capability": ["SV", "RR", "CR", "EC"], "control": ["EC"], "egress_vector": ["0"]},
         "children": [{"addr": "0000:03:00.0", "kind": "endpoint", "vendor": "8086", "device": "e20b", "class": "030000", "driver": "xe"}]},
        {"addr": "0000:02:01.0", "kind": "switch_downstream", "vendor": "1000", "device": "c010", "class": "060400", "port_number": 2,
         "acs": {"capability": ["SV", "RR", "CR", "EC"], "control": ["EC"], "egress_vector": ["2"]},
         "children": [{"addr": "0000:04:00.0", "kind": "endpoint", "vendor": "1d0f", "device": "efa1", "class": "020000", "driver": "efa", "efa": {}}]},
        {"addr": "0000:02:02.0", "kind": "switch_downstream", "vendor": "1000", "device": "c010", "class": "060400", "port_number": 3,
         "acs": {"capability": ["SV", "RR", "CR", "EC"], "control": ["EC"], "egress_vector": ["1"]},
         "children": [{"addr": "0000:05:00.0", "kind": "endpoint", "vendor": "144d", "device": "a80a", "class": "010802", "driver": "nvme"}]},
        {"addr": "0000:02:03.0", "kind": "switch_downstream", "vendor": "1000", "device": "c010", "class": "060400", "port_number": 4,
         "acs": {"capability": ["SV", "RR", "CR", "EC"], "control": ["EC", "RR"], "egress_vector": ["2"]},
         "children": [{"addr": "0000:06:00.0", "kind": "endpoint", "vendor": "1d0f", "device": "efa1", "class": "020000", "driver": "efa", "efa": {}}]},
        {"addr": "0000:02:04.0", "kind": "switch_downstream", "vendor": "1000", "device": "c010", "class": "060400", "port_number": 40,
         "acs": {"capability": ["SV", "RR", "CR", "EC"], "control": [], "egress_vector": ["0"]},
         "children": [{"addr": "0000:07:00.0", "kind": "endpoint", "vendor": "1d0f", "device": "efa1", "class": "020000", "driver": "efa", "efa": {}}]}
      ]}
    ]}
  ]}]
}`

// TestACSEgressControl: the series decides ACS per port with the egress
// port on the other side (PCIe r7.0 table 6-11); the older rules count
// Egress Control as a redirect wherever it is set. By hand, for each pair
// (provider -> client), the two downstream ports where the paths diverge:
func TestACSEgressControl(t *testing.T) {
	m, err := models.Parse([]byte(egressModel), "egress.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	a := p2p.MustParseAddr
	for _, tc := range []struct {
		name             string
		provider, client string
		hmat, latest     p2p.MapType
		redirect         []string // under p2p-hmat
		blocked          []string
	}{
		// 02:00.0 (vector 0) towards port 2: bit clear, no CR: direct.
		// 02:01.0 (vector 0x2) towards port 1: bit set, no RR: blocked.
		{"blocked at the client's port", "0000:03:00.0", "0000:04:00.0", p2p.MapNotSupported, p2p.MapNotSupported, nil, []string{"0000:02:01.0"}},
		{"blocked at the provider's port", "0000:04:00.0", "0000:03:00.0", p2p.MapNotSupported, p2p.MapNotSupported, nil, []string{"0000:02:01.0"}},
		// 02:00.0 towards port 3: clear; 02:02.0 (vector 0x1) towards port
		// 1: clear: direct both: BUS_ADDR. The older rules see EC on both
		// and route through the (non-whitelisted) host bridge.
		{"egress allowed both ways", "0000:03:00.0", "0000:05:00.0", p2p.MapBusAddr, p2p.MapNotSupported, nil, nil},
		// 02:03.0 (EC|RR, vector 0x2) towards port 1: bit set, RR:
		// redirect; 02:00.0 towards port 4: clear: direct.
		{"redirected by RR", "0000:06:00.0", "0000:03:00.0", p2p.MapNotSupported, p2p.MapNotSupported, []string{"0000:02:03.0"}, nil},
		// 02:00.0 towards port 40: past its 32-port vector: blocked;
		// 02:04.0 has EC capability but no EC in Control: direct.
		{"port past the vector", "0000:03:00.0", "0000:07:00.0", p2p.MapNotSupported, p2p.MapNotSupported, nil, []string{"0000:02:00.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, rel := range []p2p.Release{p2p.MustParseRelease("p2p-hmat"), p2p.MustParseRelease("latest")} {
				for _, src := range []p2p.Source{m.Source(), mustSysfs(t, dir)} {
					o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: rel})
					v, err := o.Verdict(a(tc.provider), a(tc.client))
					if err != nil {
						t.Fatal(err)
					}
					want := tc.latest
					if rel.HMAT() {
						want = tc.hmat
						if got := addrs(v.ACSRedirect); got != strings.Join(tc.redirect, " ") {
							t.Errorf("%s: redirect %q, want %q", rel, got, tc.redirect)
						}
						if got := addrs(v.ACSBlocked); got != strings.Join(tc.blocked, " ") {
							t.Errorf("%s: blocked %q, want %q", rel, got, tc.blocked)
						}
					}
					if v.MapType != want || !v.Certain {
						t.Errorf("%s: %s certain=%v, want %s: %s", rel, v.MapType, v.Certain, want, v.Reason)
					}
				}
			}
		})
	}
}

func mustSysfs(t *testing.T, dir string) *p2p.Sysfs {
	t.Helper()
	s, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func addrs(as []p2p.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, " ")
}
