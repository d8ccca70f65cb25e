// SPDX-License-Identifier: MIT

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExplainKernel: --kernel chooses the release whose rules decide, and
// EFAP2P_KERNEL is the default. intel-acs-switch's MI100 03:00.0 and EFA
// 04:00.0 are redirected (ACS RR) to the host bridge 8086:6f00, which only
// the PCI tree's newest whitelist lists (REQ_SAME_HOST_BRIDGE, both behind
// it): NOT_SUPPORTED and bounced by amdgpu at 6.8 and 5.4, THRU_HOST_BRIDGE
// and p2p with the newest rules.
func TestExplainKernel(t *testing.T) {
	dir := writeTree(t, "intel-acs-switch")
	tests := []struct {
		args            []string
		env             string
		mapType, kernel string
		outcome         string
	}{
		{[]string{"--kernel", "6.8.0-51-generic"}, "", "NOT_SUPPORTED", "6.8.0-51-generic", "bounced"},
		{[]string{"--kernel", "5.4"}, "", "NOT_SUPPORTED", "5.4.0", "bounced"},
		{[]string{"--kernel", "latest"}, "", "THRU_HOST_BRIDGE", "latest", "p2p"},
		{nil, "latest", "THRU_HOST_BRIDGE", "latest", "p2p"},
		{[]string{"--kernel", "6.1.0-28-amd64"}, "latest", "NOT_SUPPORTED", "6.1.0-28-amd64", "bounced"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " ")+" env "+tc.env, func(t *testing.T) {
			t.Setenv("EFAP2P_KERNEL", tc.env)
			args := append([]string{"explain", "--sysfs", dir, "--json"}, tc.args...)
			code, out, errs := runTool(append(args, "0000:03:00.0", "0000:04:00.0")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var v struct {
				MapType string `json:"map_type"`
				Kernel  string `json:"kernel"`
				Outcome string `json:"outcome"`
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if v.MapType != tc.mapType || v.Kernel != tc.kernel || v.Outcome != tc.outcome {
				t.Errorf("map type %s, kernel %s, outcome %s; want %s, %s, %s", v.MapType, v.Kernel, v.Outcome, tc.mapType, tc.kernel, tc.outcome)
			}
		})
	}
	for _, bad := range []string{"bogus", "", "6", "-1.2"} {
		code, _, errs := runTool("explain", "--sysfs", dir, "--kernel", bad, "0000:03:00.0", "0000:04:00.0")
		if code != 2 || !strings.Contains(errs, "--kernel") {
			t.Errorf("--kernel %q: exit %d, %q; want 2 and a message naming --kernel", bad, code, errs)
		}
	}
}

// TestExplainPeerMemory: on arm64-grace-peermem, whose EFA driver's p2p
// attribute names the NVIDIA provider, explain shows both registration
// paths: dma-buf refused (no CPU rule on arm64, Grace root ports not
// whitelisted; NVIDIA's flagged-chipset rule) and peer memory p2p.
func TestExplainPeerMemory(t *testing.T) {
	dir := writeTree(t, "arm64-grace-peermem")
	code, out, errs := runTool("explain", "--sysfs", dir, "--kernel", "6.8.0-1021-nvidia-64k", "0000:01:00.0", "0001:01:00.0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"refused (dma-buf", `peer memory   p2p (provider "NVIDIA"`, "kernel        6.8.0-1021-nvidia-64k"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runTool("explain", "--sysfs", dir, "--json", "0000:01:00.0", "0001:01:00.0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v struct {
		Outcome string `json:"outcome"`
		PeerMem *struct {
			Provider string `json:"provider"`
			Present  bool   `json:"present"`
			Outcome  string `json:"outcome"`
		} `json:"peer_mem"`
		P2P bool `json:"p2p"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if v.Outcome != "refused" || v.PeerMem == nil || v.PeerMem.Provider != "NVIDIA" || !v.PeerMem.Present || v.PeerMem.Outcome != "p2p" || !v.P2P {
		t.Errorf("got %+v (peer_mem %+v)", v, v.PeerMem)
	}
}

// TestExplainAll: --all answers every ordered pair of functions that are
// not bridges, as the man page shows (efap2p explain --all --json). The
// debian12-stock model has 11 functions, 6 of them PCI-to-PCI bridges (two
// root ports, a switch's upstream and three downstream ports; the host
// bridge at 00.0 is not one): 5 ends, 25 pairs, each the stub's
// NOT_SUPPORTED on its kernel without PCI_P2PDMA.
func TestExplainAll(t *testing.T) {
	dir := writeTree(t, "debian12-stock")
	cfg := dir + "/kernel.config"
	code, out, errs := runTool("explain", "--all", "--json", "--sysfs", dir, "--kernel", "6.1.0-57-amd64", "--kernel-config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 25 {
		t.Fatalf("%d lines, want 25 (5 functions that are not bridges, squared):\n%s", len(lines), out)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		var v struct {
			Provider, Client, MapType, Rule, KernelP2PDMA string
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(l), &raw); err != nil {
			t.Fatalf("not a JSON object a line: %v\n%s", err, l)
		}
		v.Provider, v.Client = raw["provider"].(string), raw["client"].(string)
		v.MapType, v.Rule, v.KernelP2PDMA = raw["map_type"].(string), raw["rule"].(string), raw["kernel_p2pdma"].(string)
		seen[v.Provider+" "+v.Client] = true
		if v.MapType != "NOT_SUPPORTED" || v.Rule != "kernel-without-p2pdma" || v.KernelP2PDMA != "n" {
			t.Errorf("%s -> %s: %s %s p2pdma %s; want the stub's NOT_SUPPORTED", v.Provider, v.Client, v.MapType, v.Rule, v.KernelP2PDMA)
		}
	}
	if len(seen) != 25 || !seen["0000:00:00.0 0000:06:00.0"] || seen["0000:00:01.1 0000:04:00.0"] {
		t.Errorf("pairs %v: want every ordered pair of the 5 non-bridge functions, no bridge", seen)
	}
	// Text: a header and one line a pair; the p2pdma line of a single
	// explain says where the configuration was read.
	code, out, _ = runTool("explain", "--all", "--sysfs", dir, "--kernel", "6.1.0-57-amd64", "--kernel-config", cfg)
	if code != 0 || strings.Count(out, "\n") != 26 || !strings.HasPrefix(out, "PROVIDER") {
		t.Errorf("text: exit %d, %d lines:\n%s", code, strings.Count(out, "\n"), out)
	}
	code, out, _ = runTool("explain", "--sysfs", dir, "--kernel", "6.1.0-57-amd64", "--kernel-config", cfg, "0000:05:00.0", "0000:04:00.0")
	if code != 0 || !strings.Contains(out, "p2pdma         built without PCI_P2PDMA ("+cfg+")") || !strings.Contains(out, "bounced") {
		t.Errorf("explain: exit %d:\n%s", code, out)
	}
	for _, bad := range [][]string{{"--all", "0000:05:00.0"}, {"--kernel-config", dir + "/nope", "0000:05:00.0", "0000:04:00.0"}} {
		if code, _, errs := runTool(append([]string{"explain", "--sysfs", dir}, bad...)...); code != 2 || errs == "" {
			t.Errorf("explain %v: exit %d, %q; want 2 and a message", bad, code, errs)
		}
	}
	// EFAP2P_KERNEL_CONFIG is the default.
	t.Setenv("EFAP2P_KERNEL_CONFIG", cfg)
	code, out, _ = runTool("explain", "--json", "--sysfs", dir, "--kernel", "6.1.0-57-amd64", "0000:03:00.0", "0000:04:00.0")
	if code != 0 || !strings.Contains(out, `"kernel_p2pdma": "n"`) || !strings.Contains(out, `"outcome": "refused"`) {
		t.Errorf("EFAP2P_KERNEL_CONFIG: exit %d:\n%s", code, out)
	}
}
