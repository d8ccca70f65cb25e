// SPDX-License-Identifier: MIT

package p2p_test

import (
	"strings"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// The same trees under several kernel releases. Every expected value is
// worked out by hand from that release's drivers/pci/p2pdma.c (and, for
// amdgpu, its dma-buf pinning), as recorded in rules.go and whitelist.go:
//
//	5.4   map types, REQ_SAME_HOST_BRIDGE; whitelist AMD 1450, Intel
//	      3c00/3c01/2f00/2f01; the host bridge is devfn 00.0 only; no CPU rule
//	5.15  + CPU rule (5.9, AMD entries gone), Skylake-E 2030/2020 (5.6) and
//	      2031-2033 (5.7)
//	6.1   + Ice Lake 09a2 (5.18), a Root Port first on its bus counts at any
//	      devfn (5.19)
//	6.8   no change to these (amdgpu still moves pinned buffers to GTT)
//	7.1   + Google (any device); 7.1.3/7.2: + Intel DSA/IAX/QAT
//	latest + amdgpu keeps pinned buffers in VRAM (6.15) + the PCI tree and
//	      linux-next entries (Broadwell 6f00 with REQ_SAME_HOST_BRIDGE, ...)

type relWant struct {
	mapType p2p.MapType
	outcome p2p.Outcome
	rule    p2p.Rule
	reason  string // a substring of the reason, when set
}

var (
	thru = p2p.MapThruHostBridge
	nots = p2p.MapNotSupported
	bus  = p2p.MapBusAddr
	pp   = p2p.OutcomeP2P
	bnc  = p2p.OutcomeBounced
	ref  = p2p.OutcomeRefused
)

// skylakeRootPorts: an Intel Skylake-SP root bus whose first device is its
// Root Port C (8086:2032) at 02.0, Root Ports A and B absent (the layout
// commit 1af7c26c59eb was written for); an xe GPU under it, an EFA under
// Root Port D (2033) at 03.0.
const skylakeRootPorts = `{
  "format": 1, "name": "skylake-root-ports", "description": "test", "provenance": "test",
  "cpu": {"arch": "x86", "vendor": "Intel", "family": "06", "model": "55"},
  "root_buses": [{"domain": "0000", "bus": "17", "numa_node": 0, "functions": [
    {"addr": "0000:17:02.0", "kind": "root_port", "vendor": "8086", "device": "2032", "class": "060400", "children": [
      {"addr": "0000:18:00.0", "kind": "endpoint", "vendor": "8086", "device": "e20b", "class": "030000", "driver": "xe"}]},
    {"addr": "0000:17:03.0", "kind": "root_port", "vendor": "8086", "device": "2033", "class": "060400", "children": [
      {"addr": "0000:19:00.0", "kind": "endpoint", "vendor": "1d0f", "device": "efa1", "class": "020000", "driver": "efa", "efa": {}}]}
  ]}]
}`

// qatRootBus: an Intel Sapphire Rapids host whose QAT 4xxx (8086:4940) is
// the first device of a root bus of its own (80), an EFA under a root port
// of root bus 00 (first device 8086:09a2 at 00.0).
const qatRootBus = `{
  "format": 1, "name": "qat-root-bus", "description": "test", "provenance": "test",
  "cpu": {"arch": "x86", "vendor": "Intel", "family": "06", "model": "8f"},
  "root_buses": [
    {"domain": "0000", "bus": "00", "numa_node": 0, "functions": [
      {"addr": "0000:00:00.0", "kind": "integrated", "vendor": "8086", "device": "09a2", "class": "088000"},
      {"addr": "0000:00:01.0", "kind": "root_port", "vendor": "8086", "device": "352a", "class": "060400", "children": [
        {"addr": "0000:01:00.0", "kind": "endpoint", "vendor": "1d0f", "device": "efa1", "class": "020000", "driver": "efa", "efa": {}}]}]},
    {"domain": "0000", "bus": "80", "numa_node": 0, "functions": [
      {"addr": "0000:80:00.0", "kind": "integrated", "vendor": "8086", "device": "4940", "class": "0b4000", "driver": "4xxx"}]}
  ]
}`

// vfioSwitch: a GPU bound to vfio-pci and an EFA under one PCIe switch
// without ACS (BUS_ADDR in every release): what the EFA's pinned dma-buf
// MR gets is vfio-pci's rule alone.
const vfioSwitch = `{
  "format": 1, "name": "vfio-switch", "description": "test", "provenance": "test",
  "cpu": {"arch": "x86", "vendor": "Intel", "family": "06", "model": "8f"},
  "root_buses": [{"domain": "0000", "bus": "00", "numa_node": 0, "functions": [
    {"addr": "0000:00:00.0", "kind": "host_bridge", "vendor": "8086", "device": "09a2", "class": "060000"},
    {"addr": "0000:00:01.0", "kind": "root_port", "vendor": "8086", "device": "352a", "class": "060400", "children": [
      {"addr": "0000:01:00.0", "kind": "switch_upstream", "vendor": "1000", "device": "c030", "class": "060400", "children": [
        {"addr": "0000:02:00.0", "kind": "switch_downstream", "vendor": "1000", "device": "c030", "class": "060400", "children": [
          {"addr": "0000:03:00.0", "kind": "endpoint", "vendor": "10de", "device": "27b8", "class": "030200", "driver": "vfio-pci"}]},
        {"addr": "0000:02:01.0", "kind": "switch_downstream", "vendor": "1000", "device": "c030", "class": "060400", "children": [
          {"addr": "0000:04:00.0", "kind": "endpoint", "vendor": "1d0f", "device": "efa1", "class": "020000", "driver": "efa", "efa": {}}]}]}]}
  ]}]
}`

func TestRulesByRelease(t *testing.T) {
	cases := []struct {
		model, json      string
		provider, client string
		want             map[string]relWant
	}{{
		// GPU 19:00.0 (root bus 16, under a switch) and EFA 1e:00.0 (root
		// port of the same root bus): no common ancestor, through the
		// host bridge whose first device is 16:00.0 8086:09a2. The GPU is
		// xe's: refused by the kernel, xe bounces; allowed, it bounces a
		// buffer the EFA pins before 6.19 and keeps it in VRAM after.
		model: "intel-icelake-2rootbus", provider: "0000:19:00.0", client: "0000:1e:00.0",
		want: map[string]relWant{
			"5.4.0-216-generic":  {nots, bnc, p2p.RuleHostBridge, "8086:09a2"},
			"5.15.0-131-generic": {nots, bnc, p2p.RuleHostBridge, "8086:09a2"},
			"6.1.0-28-amd64":     {thru, bnc, p2p.RuleWhitelist, "Ice Lake"},
			"6.8.0-51-generic":   {thru, bnc, p2p.RuleWhitelist, "6.19 (df636bf28366)"},
			"6.18.3":             {thru, bnc, p2p.RuleWhitelist, ""},
			"6.19.0":             {thru, pp, p2p.RuleWhitelist, "keeps it in VRAM"},
			"latest":             {thru, pp, p2p.RuleWhitelist, ""},
		},
	}, {
		// Under one switch with no ACS: BUS_ADDR whatever the release;
		// xe keeps the pinned buffer in VRAM from 6.19.
		model: "intel-icelake-2rootbus", provider: "0000:19:00.0", client: "0000:1a:00.0",
		want: map[string]relWant{
			"5.4.0": {bus, bnc, p2p.RuleCommonBridge, ""}, "5.15.0": {bus, bnc, p2p.RuleCommonBridge, ""},
			"6.1.0": {bus, bnc, p2p.RuleCommonBridge, ""}, "6.8.0": {bus, bnc, p2p.RuleCommonBridge, ""},
			"6.19.0": {bus, pp, p2p.RuleCommonBridge, ""}, "latest": {bus, pp, p2p.RuleCommonBridge, ""},
		},
	}, {
		// AMD Zen 2 (host bridge 1022:1480), amdgpu GPU 03:00.0 behind a
		// switch with ACS redirect, EFA 08:00.0 under another root port.
		model: "amd-zen-acs-switch", provider: "0000:03:00.0", client: "0000:08:00.0",
		want: map[string]relWant{
			// 5.4: no CPU rule, and 1480 is not the whitelisted 1450:
			// refused, and amdgpu bounces.
			"5.4.0-216-generic": {nots, bnc, p2p.RuleHostBridge, "no CPU rule"},
			// 5.9+: the CPU rule allows; amdgpu before 6.15 moves the
			// buffer EFA pins to system memory.
			"5.15.0-131-generic": {thru, bnc, p2p.RuleCPU, "6.15"},
			"6.1.0-28-amd64":     {thru, bnc, p2p.RuleCPU, ""},
			"6.8.0-51-generic":   {thru, bnc, p2p.RuleCPU, ""},
			"6.14.11":            {thru, bnc, p2p.RuleCPU, ""},
			"6.15.0":             {thru, pp, p2p.RuleCPU, ""},
			"latest":             {thru, pp, p2p.RuleCPU, ""},
		},
	}, {
		// Broadwell-EP 8086:6f00 at 00:00.0; amdgpu 03:00.0 and EFA
		// 04:00.0 under ACS-redirecting ports of one switch below root
		// bus 00: one host bridge.
		model: "intel-acs-switch", provider: "0000:03:00.0", client: "0000:04:00.0",
		want: map[string]relWant{
			"5.4.0":            {nots, bnc, p2p.RuleHostBridge, "8086:6f00"},
			"5.15.0":           {nots, bnc, p2p.RuleHostBridge, ""},
			"6.1.0":            {nots, bnc, p2p.RuleHostBridge, ""},
			"6.8.0-51-generic": {nots, bnc, p2p.RuleHostBridge, ""},
			// linux-next adds 6f00 with REQ_SAME_HOST_BRIDGE, satisfied
			// here; the newest amdgpu keeps the buffer in VRAM.
			"latest":                  {thru, pp, p2p.RuleWhitelist, "Broadwell"},
			"7.4.0-rc1-next-20261201": {thru, pp, p2p.RuleWhitelist, ""},
		},
	}, {
		// The same host, GPU 83:00.0 on root bus 80 (first device the
		// root port 80:02.0 8086:6f04): two host bridges, and 6f00 is only
		// whitelisted within one.
		model: "intel-acs-switch", provider: "0000:83:00.0", client: "0000:04:00.0",
		want: map[string]relWant{
			"5.4.0": {nots, bnc, p2p.RuleHostBridge, "devfn 00.0"},
			// 5.19+: the root port 80:02.0 stands for the host bridge,
			// and 8086:6f04 is in no whitelist.
			"6.8.0":  {nots, bnc, p2p.RuleHostBridge, "8086:6f04"},
			"latest": {nots, bnc, p2p.RuleHostBridge, ""},
		},
	}, {
		// Google host bridges (1ae0, device 0030 at 80:00.0): H100 80:01.0
		// and gVNIC 80:02.0 on root bus 80; nvidia allows in a VM anyway.
		model: "google-whitelisted", provider: "0000:80:01.0", client: "0000:80:02.0",
		want: map[string]relWant{
			"5.15.0": {nots, pp, p2p.RuleHostBridge, "passthrough VM"},
			"6.8.0":  {nots, pp, p2p.RuleHostBridge, ""},
			"7.0.9":  {nots, pp, p2p.RuleHostBridge, ""},
			"7.1.0":  {thru, pp, p2p.RuleWhitelist, "Google"},
			"latest": {thru, pp, p2p.RuleWhitelist, ""},
		},
	}, {
		// Domains 0000 and 0001, each root bus first 8086:09a2 at 00.0:
		// amdgpu 0000:01:00.0 and EFA 0001:02:00.0.
		model: "multi-domain", provider: "0000:01:00.0", client: "0001:02:00.0",
		want: map[string]relWant{
			"5.15.0": {nots, bnc, p2p.RuleHostBridge, ""},
			"6.1.0":  {thru, bnc, p2p.RuleWhitelist, ""},
			"6.8.0":  {thru, bnc, p2p.RuleWhitelist, ""},
			"latest": {thru, pp, p2p.RuleWhitelist, ""},
		},
	}, {
		// The VMD domain 10000 (root bus below the VMD function), first
		// device its root port 10000:00:02.0 8086:347a: before 5.19 it is
		// no host-bridge device at all, from 5.19 a root port that is not
		// whitelisted. NVMe (kernel policy: no exporter rule) to EFA.
		model: "multi-domain", provider: "10000:01:00.0", client: "0000:02:00.0",
		want: map[string]relWant{
			"5.4.0":  {nots, ref, p2p.RuleHostBridge, "not devfn 00.0"},
			"5.15.0": {nots, ref, p2p.RuleHostBridge, "not devfn 00.0"},
			"6.1.0":  {nots, ref, p2p.RuleHostBridge, "8086:347a"},
			"6.8.0":  {nots, ref, p2p.RuleHostBridge, "8086:347a"},
			"latest": {nots, ref, p2p.RuleHostBridge, "8086:347a"},
		},
	}, {
		// Devicetree host controllers whose root ports (1ae0 at 00.0)
		// stand for the host bridges: Google's entry arrives in 7.1. The
		// GPU is vfio-pci's, whose BAR dma-bufs (6.19) never go to an
		// importer that pins, as the EFA does: refused in every release.
		model: "arm64-devicetree", provider: "0000:01:00.0", client: "0001:01:00.0",
		want: map[string]relWant{
			"5.4.0":  {nots, ref, p2p.RuleHostBridge, ""},
			"6.1.0":  {nots, ref, p2p.RuleHostBridge, ""},
			"6.8.0":  {nots, ref, p2p.RuleHostBridge, "vfio-pci exports BAR memory as dma-bufs from Linux 6.19"},
			"6.19.0": {nots, ref, p2p.RuleHostBridge, ""},
			"7.1.3":  {thru, ref, p2p.RuleWhitelist, "revoke their mappings"},
			"latest": {thru, ref, p2p.RuleWhitelist, ""},
		},
	}, {
		// The same pair in 6.19: the path is refused by the kernel, and
		// vfio-pci refuses the pinned importer anyway (its pin fails).
		model: "arm64-devicetree", provider: "0000:01:00.0", client: "0000:01:00.0",
		want: map[string]relWant{
			"6.8.0":  {bus, ref, p2p.RuleSameFunction, "exports none"},
			"6.19.0": {bus, pp, p2p.RuleSameFunction, "maps it for a peer"},
		},
	}, {
		// vfio-pci exports BAR dma-bufs from 6.19-rc1 (5d74781ebc86) and
		// refuses importers that pin from 6.19-rc8 (61ceaf236115): in rc1
		// to rc7 the EFA's pin succeeds and the switch path is P2P.
		json: vfioSwitch, provider: "0000:03:00.0", client: "0000:04:00.0",
		want: map[string]relWant{
			"6.18.7":     {bus, ref, p2p.RuleCommonBridge, "exports none"},
			"6.19.0-rc1": {bus, pp, p2p.RuleCommonBridge, "lets an importer pin it"},
			"6.19.0-rc5": {bus, pp, p2p.RuleCommonBridge, "from 6.19-rc8 it refuses"},
			"6.19.0-rc8": {bus, ref, p2p.RuleCommonBridge, "61ceaf236115"},
			"6.19.0":     {bus, ref, p2p.RuleCommonBridge, "61ceaf236115"},
			"7.0.0-rc3":  {bus, ref, p2p.RuleCommonBridge, "revoke"},
			"latest":     {bus, ref, p2p.RuleCommonBridge, "revoke"},
		},
	}, {
		// Skylake-SP Root Port C first on its root bus, at devfn 02.0;
		// xe bounces what the EFA pins until 6.19.
		json: skylakeRootPorts, provider: "0000:18:00.0", client: "0000:19:00.0",
		want: map[string]relWant{
			"5.4.0":  {nots, bnc, p2p.RuleHostBridge, "not devfn 00.0"},
			"5.15.0": {nots, bnc, p2p.RuleHostBridge, "not devfn 00.0"},
			"5.19.0": {thru, bnc, p2p.RuleWhitelist, "Root Port C"},
			"6.1.0":  {thru, bnc, p2p.RuleWhitelist, ""},
			"6.8.0":  {thru, bnc, p2p.RuleWhitelist, ""},
			"latest": {thru, pp, p2p.RuleWhitelist, ""},
		},
	}, {
		// QAT first on its own root bus: whitelisted from 7.2, and in
		// 7.1.3 as a stable backport, not in 7.1.0.
		json: qatRootBus, provider: "0000:80:00.0", client: "0000:01:00.0",
		want: map[string]relWant{
			"6.8.0":  {nots, ref, p2p.RuleHostBridge, "8086:4940"},
			"7.1.0":  {nots, ref, p2p.RuleHostBridge, "8086:4940"},
			"7.1.3":  {thru, pp, p2p.RuleWhitelist, "QAT"},
			"7.2.0":  {thru, pp, p2p.RuleWhitelist, ""},
			"latest": {thru, pp, p2p.RuleWhitelist, ""},
		},
	}, {
		// AMD Milan (p5): the nvidia exporter allows in a VM whatever the
		// map type; 5.4 has neither the CPU rule nor 1022:1480.
		model: "p5.48xlarge", provider: "0000:53:00.0", client: "0000:c6:00.0",
		want: map[string]relWant{
			"5.4.0":  {nots, pp, p2p.RuleHostBridge, "passthrough VM"},
			"5.15.0": {thru, pp, p2p.RuleCPU, ""},
			"6.1.0":  {thru, pp, p2p.RuleCPU, ""},
			"6.8.0":  {thru, pp, p2p.RuleCPU, ""},
			"latest": {thru, pp, p2p.RuleCPU, ""},
		},
	}, {
		// Only the HMAT allows it: the series (p2p-hmat) against latest.
		model: "hygon-hmat-p2p", provider: "0000:01:00.0", client: "0000:41:00.0",
		want: map[string]relWant{
			"6.8.0":    {nots, bnc, p2p.RuleHostBridge, ""},
			"latest":   {nots, bnc, p2p.RuleHostBridge, "not in the P2PDMA whitelist"},
			"p2p-hmat": {thru, pp, p2p.RuleACPI, "reachable ordered P2P path"},
		},
	}}
	for _, tc := range cases {
		var m *models.Machine
		var err error
		if tc.json != "" {
			m, err = models.Parse([]byte(tc.json), "test.json")
		} else {
			m, err = models.Builtin(tc.model)
		}
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := m.Write(dir, models.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		for rel, w := range tc.want {
			t.Run(m.Name+"/"+tc.provider+"/"+rel, func(t *testing.T) {
				src, err := p2p.OpenSysfs(dir)
				if err != nil {
					t.Fatal(err)
				}
				r := p2p.MustParseRelease(rel)
				o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: r})
				v, err := o.Verdict(p2p.MustParseAddr(tc.provider), p2p.MustParseAddr(tc.client))
				if err != nil {
					t.Fatal(err)
				}
				if v.MapType != w.mapType || v.Outcome != w.outcome || v.Rule != w.rule || !v.Certain {
					t.Errorf("got %s %s %s certain=%v, want %s %s %s\nreason: %s", v.MapType, v.Outcome, v.Rule, v.Certain, w.mapType, w.outcome, w.rule, v.Reason)
				}
				if w.reason != "" && !strings.Contains(v.Reason, w.reason) {
					t.Errorf("reason does not say %q: %s", w.reason, v.Reason)
				}
				if v.Kernel != r {
					t.Errorf("decided for %s, asked for %s", v.Kernel, r)
				}
			})
		}
	}
}

func TestParseRelease(t *testing.T) {
	for _, tc := range []struct {
		in, str string
		ok      bool
	}{
		{"6.1.0-28-amd64", "6.1.0-28-amd64", true},
		{"5.15.0-105-generic", "5.15.0-105-generic", true},
		{"6.8", "6.8.0", true},
		{"7.4.0-rc1-next-20261201", "7.4.0-rc1-next-20261201", true},
		{"5.10.230-223.885.amzn2.x86_64", "5.10.230-223.885.amzn2.x86_64", true},
		{" latest\n", "latest", true},
		{"p2p-hmat", "p2p-hmat", true},
		{"", "", false}, {"6", "", false}, {"x.y", "", false}, {"0.1", "", false},
		{"6.1.0.1.2", "", false}, {"-6.1", "", false}, {"6.99999", "", false},
	} {
		r, err := p2p.ParseRelease(tc.in)
		if (err == nil) != tc.ok || err == nil && r.String() != tc.str {
			t.Errorf("ParseRelease(%q) = %q, %v", tc.in, r, err)
		}
	}
	// a release candidate before the release it leads to, in rc order
	order := []string{"5.4.0", "5.4.290", "5.15.0-1-aws", "6.1", "6.19.0-rc1", "6.19.0-rc5+", "6.19.0-rc8-00042-gabcdef123456",
		"6.19.0-rc10", "6.19.0", "6.19.2-rc1", "6.19.2", "7.1.0", "7.1.3", "7.2.0-rc1", "7.4.0-rc1-next-20261201", "latest", "p2p-hmat"}
	for i := range order {
		for j := range order {
			a, b := p2p.MustParseRelease(order[i]), p2p.MustParseRelease(order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
	for in, rc := range map[string]int{"6.19.0-rc5": 5, "6.19.0-rc5-next-20260110": 5, "6.19.0": 0, "6.1.0-28-amd64": 0, "6.19.0-rcx": 0, "6.19.0-rc": 0} {
		if r := p2p.MustParseRelease(in); r.RC != rc {
			t.Errorf("ParseRelease(%q).RC = %d, want %d", in, r.RC, rc)
		}
	}
	var r p2p.Release
	if err := r.UnmarshalText([]byte("6.8.0-1021-aws")); err != nil || r.Minor != 8 {
		t.Errorf("UnmarshalText: %v %+v", err, r)
	}
	if err := r.UnmarshalText([]byte("six")); err == nil {
		t.Error("UnmarshalText accepted six")
	}
}

// TestWhitelistProvenance: every entry of every release carries a commit,
// and the release tables grow as the history says.
func TestWhitelistProvenance(t *testing.T) {
	count := func(rel string) int { return len(p2p.HostBridgeWhitelist(p2p.MustParseRelease(rel))) }
	for _, tc := range []struct {
		rel  string
		want int
	}{
		{"5.4.0", 5},   // AMD 1450, Intel 3c00 3c01 2f00 2f01
		{"5.8.0", 12},  // + 2030 2020 (5.6), 2031-2033 (5.7), AMD 15d0 1630 (5.8)
		{"5.15.0", 9},  // the three AMD entries gone (5.9)
		{"6.1.0", 10},  // + 09a2
		{"7.1.0", 11},  // + Google
		{"7.1.3", 21},  // + DSA/IAX/QAT backported
		{"7.2.0", 21},  // the same in mainline
		{"latest", 33}, // + 6f00, 0c08, NVIDIA x4, Zhaoxin x5, Alibaba
	} {
		if got := count(tc.rel); got != tc.want {
			t.Errorf("%s: %d whitelist entries, want %d", tc.rel, got, tc.want)
		}
	}
	for _, e := range p2p.HostBridgeWhitelist(p2p.MustParseRelease("latest")) {
		if e.Commit == "" || e.Note == "" {
			t.Errorf("%04x:%x has no provenance", e.Vendor, e.Device)
		}
	}
}
