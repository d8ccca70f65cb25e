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
