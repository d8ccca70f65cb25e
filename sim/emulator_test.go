// SPDX-License-Identifier: MIT

package sim

import (
	"strings"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// verdictLines parses the verdict lines of an emulator configuration:
// (NIC, owner) -> outcome.
func verdictLines(t *testing.T, conf string) map[[2]p2p.Addr]string {
	t.Helper()
	out := map[[2]p2p.Addr]string{}
	for _, line := range strings.Split(conf, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "verdict" {
			continue
		}
		if len(f) != 4 {
			t.Fatalf("malformed verdict line %q", line)
		}
		k := [2]p2p.Addr{p2p.MustParseAddr(f[1]), p2p.MustParseAddr(f[2])}
		if _, dup := out[k]; dup {
			t.Errorf("pair %s %s decided twice", f[1], f[2])
		}
		out[k] = f[3]
	}
	return out
}

// TestEmulatorDecidesEveryPair: the emulated kernel has a decision for
// every (EFA NIC, function that can own memory) pair of every built-in
// model, and a hand-listed expectation is what it decides. Before, only
// the listed pairs had one and the emulator let every other pair through
// as P2P.
func TestEmulatorDecidesEveryPair(t *testing.T) {
	for _, name := range models.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			m, err := models.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			conf, err := EmulatorConfig(m)
			if err != nil {
				t.Fatal(err)
			}
			got := verdictLines(t, conf)
			for _, nic := range m.EFANICs() {
				for _, f := range m.Functions() {
					if f.IsBridge() {
						continue
					}
					if _, ok := got[[2]p2p.Addr{nic.Addr, f.Addr}]; !ok {
						t.Errorf("no decision for NIC %s x owner %s", nic.Addr, f.Addr)
					}
				}
			}
			for _, p := range m.Pairs() {
				if g := got[[2]p2p.Addr{p.Client, p.Provider}]; g != p.ExpectedOutcome() {
					t.Errorf("NIC %s x owner %s: decided %q, expected %s", p.Client, p.Provider, g, p.ExpectedOutcome())
				}
			}
		})
	}
}

// TestEmulatorUnlistedPairs are pairs no model lists, each worked out by
// hand from the model's kernel release.
func TestEmulatorUnlistedPairs(t *testing.T) {
	tests := []struct {
		model, nic, owner string
		want              string
		why               string
	}{
		{"p4d.24xlarge", "0000:10:1b.0", "0000:00:04.0", "refused",
			"5.10, Intel CPU: no CPU rule; two root buses; bus 00's 00.0 is the i440FX 8086:1237, in no whitelist"},
		{"p4d.24xlarge", "0000:10:1b.0", "0000:00:05.0", "refused", "the ENA: as the NVMe"},
		{"intel-acs-switch", "0000:04:00.0", "0000:07:00.0", "refused",
			"6.8: the downstream ports redirect (ACS RR), so through the host bridge 8086:6f00, whitelisted only in linux-next"},
		{"intel-acs-switch", "0000:04:00.0", "0000:07:00.1", "refused", "the second mlx5 port: as the first"},
		{"intel-icelake-2rootbus", "0000:50:01.0", "0000:50:02.0", "refused",
			"6.1: both on root bus 50 with no bridge above them: through the host bridge, the bus's first device, the EFA 1d0f:efa1 itself, in no whitelist"},
		{"intel-acs-switch", "0000:05:00.0", "0000:04:00.0", "refused",
			"two EFA NICs on switch 0: ACS RR on the downstream ports, host bridge 8086:6f00 not whitelisted at 6.8"},
	}
	for _, tc := range tests {
		t.Run(tc.model+"/"+tc.owner, func(t *testing.T) {
			m, err := models.Builtin(tc.model)
			if err != nil {
				t.Fatal(err)
			}
			conf, err := EmulatorConfig(m)
			if err != nil {
				t.Fatal(err)
			}
			k := [2]p2p.Addr{p2p.MustParseAddr(tc.nic), p2p.MustParseAddr(tc.owner)}
			if g := verdictLines(t, conf)[k]; g != tc.want {
				t.Errorf("NIC %s x owner %s: decided %q, want %s (%s)", tc.nic, tc.owner, g, tc.want, tc.why)
			}
		})
	}
}

// TestEmulatorConfigKernel: the configuration names the model's kernel
// release (a model without one is the newest) and the release whose efa
// driver answers as the model's (the fields of its commands, its methods):
// the kernel's in-tree, by version for AWS's out-of-tree driver.
func TestEmulatorConfigKernel(t *testing.T) {
	tests := []struct {
		model     string
		noRel     bool // the model's release removed
		want, efa string
	}{
		{model: "p5.48xlarge", want: "6.8.0-1021-aws", efa: "6.13.0 out-of-tree 2.17.3g"},
		{model: "amd-efa-cpu-node", want: "6.8.0-1015-aws", efa: "6.8.0-1015-aws in-tree"},
		{model: "p4d.24xlarge", want: "5.10.230-223.885.amzn2.x86_64", efa: "5.10.230-223.885.amzn2.x86_64 in-tree"},
		{model: "hygon-hmat-p2p", want: "p2p-hmat", efa: "p2p-hmat in-tree"},
		{model: "amd-zen-acs-switch", want: "6.17.0-6-generic", efa: "6.17.0-6-generic in-tree"},
		{model: "p5.48xlarge", noRel: true, want: "latest", efa: "6.17.0 out-of-tree 2.17.3g"},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.want, func(t *testing.T) {
			m, err := models.Builtin(tt.model)
			if err != nil {
				t.Fatal(err)
			}
			if tt.noRel {
				m.Kernel = p2p.Release{}
			}
			conf, err := EmulatorConfig(m)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, line := range strings.Split(conf, "\n") {
				if f := strings.Fields(line); len(f) > 0 && (f[0] == "kernel" || f[0] == "efa_driver") {
					got[f[0]] = append(got[f[0]], strings.Join(f[1:], " "))
				}
			}
			if k := got["kernel"]; len(k) != 1 || k[0] != tt.want {
				t.Errorf("kernel lines %q, want one naming %q", k, tt.want)
			}
			if e := got["efa_driver"]; len(e) != 1 || e[0] != tt.efa {
				t.Errorf("efa_driver lines %q, want one: %q", e, tt.efa)
			}
		})
	}
}
