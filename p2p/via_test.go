// SPDX-License-Identifier: MIT

package p2p_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// TestEffective: one answer over both registration paths. A pair the
// dma-buf path refuses and peer memory carries (arm64-grace-peermem) is
// p2p by peer memory, which Via names; Outcome stays the dma-buf path's.
func TestEffective(t *testing.T) {
	for _, tc := range []struct {
		dmabuf, peer p2p.Outcome
		via          p2p.Registration
		effective    p2p.Outcome
		names        string
	}{
		{p2p.OutcomeP2P, p2p.OutcomeUnknown, p2p.RegDmabuf, p2p.OutcomeP2P, `["dma-buf"]`},
		{p2p.OutcomeP2P, p2p.OutcomeP2P, p2p.RegDmabuf | p2p.RegPeerMem, p2p.OutcomeP2P, `["dma-buf","peer-memory"]`},
		{p2p.OutcomeRefused, p2p.OutcomeP2P, p2p.RegPeerMem, p2p.OutcomeP2P, `["peer-memory"]`},
		{p2p.OutcomeBounced, p2p.OutcomeP2P, p2p.RegPeerMem, p2p.OutcomeP2P, `["peer-memory"]`},
		{p2p.OutcomeBounced, p2p.OutcomeRefused, 0, p2p.OutcomeBounced, `[]`},
		{p2p.OutcomeRefused, p2p.OutcomeUnknown, 0, p2p.OutcomeRefused, `[]`},
		{p2p.OutcomeUnknown, p2p.OutcomeRefused, 0, p2p.OutcomeRefused, `[]`},
		{p2p.OutcomeUnknown, p2p.OutcomeUnknown, 0, p2p.OutcomeUnknown, `[]`},
	} {
		v := &p2p.Verdict{Outcome: tc.dmabuf, PeerMem: p2p.PeerMem{Outcome: tc.peer}}
		if v.Via() != tc.via || v.Effective() != tc.effective || v.P2P() != (tc.effective == p2p.OutcomeP2P) || v.DmabufP2P() != (tc.dmabuf == p2p.OutcomeP2P) {
			t.Errorf("dma-buf %s, peer memory %s: via %s, effective %s, P2P %v", tc.dmabuf, tc.peer, v.Via(), v.Effective(), v.P2P())
		}
		b, err := json.Marshal(v.Via())
		var back p2p.Registration
		if err != nil || string(b) != tc.names || json.Unmarshal(b, &back) != nil || back != tc.via {
			t.Errorf("via %s: JSON %s (%v), read back as %s", tc.via, b, err, back)
		}
	}
	var r p2p.Registration
	if err := json.Unmarshal([]byte(`["rdma"]`), &r); err == nil {
		t.Error(`["rdma"] read as a registration path`)
	}
}

// TestFileKeepsPeerMemory: a topology file records the dma-buf path; a
// reader decides the peer-memory path as it does without the file, so
// that every pair of every built-in model gets the same answer (Via,
// Effective, the kernel decided for) from the file as computed; a NIC the
// file marks as blocking peers is refused by both paths.
func TestFileKeepsPeerMemory(t *testing.T) {
	for _, name := range models.BuiltinNames() {
		m, dir := writeModel(t, name, models.WriteOptions{})
		src, err := p2p.OpenSysfs(dir)
		if err != nil {
			t.Fatal(err)
		}
		kernel := m.KernelRelease()
		computed := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: kernel})
		tf := p2p.NewTopologyFile("test")
		var pairs []models.Pair
		seen := map[[2]p2p.Addr]bool{}
		for _, p := range m.Pairs() {
			if k := [2]p2p.Addr{p.Provider, p.Client}; !seen[k] {
				seen[k] = true
				pairs = append(pairs, p)
			}
		}
		for _, p := range pairs {
			v, err := computed.Verdict(p.Provider, p.Client)
			if err != nil {
				t.Fatal(err)
			}
			tf.Pairs = append(tf.Pairs, p2p.TopoPair{Provider: v.Provider, Client: v.Client, MapType: v.MapType, Distance: v.Distance,
				Path: v.Path, Policy: v.Policy, Outcome: v.Outcome})
		}
		if err := tf.RecordMachine(computed, false); err != nil {
			t.Fatal(err)
		}
		file := writeTopoFile(t, tf)
		fromFile := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: kernel, TopologyFile: file})
		if err := fromFile.TopologyFileError(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range pairs {
			c, _ := computed.Verdict(p.Provider, p.Client)
			f, err := fromFile.Verdict(p.Provider, p.Client)
			if err != nil {
				t.Fatal(err)
			}
			if f.Source != p2p.SourceTopologyFile || f.Via() != c.Via() || f.Effective() != c.Effective() || f.PeerMem != c.PeerMem || f.Kernel != c.Kernel || f.Note != c.Note {
				t.Errorf("%s %s -> %s: from the file %s via %s, %+v, kernel %q; computed %s via %s, %+v, kernel %q",
					name, p.Provider, p.Client, f.Effective(), f.Via(), f.PeerMem, f.Kernel, c.Effective(), c.Via(), c.PeerMem, c.Kernel)
			}
		}
		if name != "arm64-grace-peermem" {
			continue
		}
		// the model's GPU and EFA NIC: dma-buf refused, peer memory p2p
		i := slices.IndexFunc(pairs, func(p models.Pair) bool { return p.Provider != p.Client && m.Function(p.Client).EFA != nil })
		if i < 0 {
			t.Fatalf("%s: no (GPU, EFA NIC) pair among the expected ones", name)
		}
		p := pairs[i]
		if v, _ := fromFile.Verdict(p.Provider, p.Client); v.Via() != p2p.RegPeerMem || v.Outcome != p2p.OutcomeRefused {
			t.Fatalf("%s: %s via %s (dma-buf %s), want p2p by peer memory only", name, v.Effective(), v.Via(), v.Outcome)
		}
		tf.NICs = append(tf.NICs, p2p.TopoNIC{Addr: p.Client, PeerAccessBlocked: true, Note: "test"})
		blocked := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: kernel, TopologyFile: writeTopoFile(t, tf)})
		if v, _ := blocked.Verdict(p.Provider, p.Client); v.Via() != 0 || v.Effective() != p2p.OutcomeRefused {
			t.Errorf("%s with the NIC blocked: %s via %s", name, v.Effective(), v.Via())
		}
	}
}

func writeTopoFile(t *testing.T, tf *p2p.TopologyFile) string {
	t.Helper()
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

// TestDmabufRegistration: an EFA NIC registers dma-buf memory from Linux
// 5.12 (uverbs) with AWS's out-of-tree driver from its 1.16.0, and from
// 5.16 with the in-tree driver; where it cannot, the dma-buf path gives
// nothing whatever p2pdma and the exporter decide: p4d.24xlarge's own
// kernel (5.10, in-tree EFA driver) gets no true P2P, though NVIDIA's
// exporter would allow every pair.
func TestDmabufRegistration(t *testing.T) {
	for _, tc := range []struct {
		kernel    string
		outOfTree bool
		version   string
		ok        bool
	}{
		{"5.10.230-223.885.amzn2.x86_64", false, "", false},
		{"5.15.0-105-generic", false, "", false},
		{"5.16.0-rc1", false, "", true},
		{"6.8.0-1015-aws", false, "", true},
		{"5.11.22", true, "2.17.3g", false},
		{"5.12.0", true, "1.15.1", false},
		{"5.12.0", true, "1.16.0", true},
		{"5.10.0", true, "2.17.3g", false},
		{"5.15.0", true, "", true},
		{"latest", false, "", true},
	} {
		ok, why := p2p.DmabufRegistration(p2p.MustParseRelease(tc.kernel), tc.outOfTree, tc.version)
		if ok != tc.ok || why == "" {
			t.Errorf("%s, out-of-tree %v %q: %v (%s), want %v", tc.kernel, tc.outOfTree, tc.version, ok, why, tc.ok)
		}
	}
	m, dir := writeModel(t, "p4d.24xlarge", models.WriteOptions{})
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	gpu, nic := p2p.MustParseAddr("0000:10:1c.0"), p2p.MustParseAddr("0000:10:1b.0")
	for _, tc := range []struct {
		kernel    string
		via       p2p.Registration
		effective p2p.Outcome
	}{
		{m.KernelRelease().String(), 0, p2p.OutcomeRefused},
		{"6.8.0-1015-aws", p2p.RegDmabuf, p2p.OutcomeP2P},
	} {
		o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease(tc.kernel)})
		v, err := o.Verdict(gpu, nic)
		if err != nil {
			t.Fatal(err)
		}
		if v.Outcome != p2p.OutcomeP2P || v.Via() != tc.via || v.Effective() != tc.effective || (v.DmabufUnavailable != "") != (tc.via == 0) {
			t.Errorf("kernel %s: dma-buf %s (unavailable: %q), via %s, effective %s; want p2p by the exporter, via %s, %s",
				tc.kernel, v.Outcome, v.DmabufUnavailable, v.Via(), v.Effective(), tc.via, tc.effective)
		}
		if ok, _, _ := o.ReachesAccelerator(nic); ok != (tc.via != 0) {
			t.Errorf("kernel %s: P2P_DMA %v", tc.kernel, ok)
		}
	}
}
