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

// TestNVIDIAInVMAllowsWhatTheKernelRefuses: p4d.24xlarge's GPUs and EFA
// share a root bus with no host-bridge device, so the kernel's rule
// refuses; NVIDIA's exporter allows any peer in a passthrough VM.
func TestNVIDIAInVMAllowsWhatTheKernelRefuses(t *testing.T) {
	_, dir := writeModel(t, "p4d.24xlarge", models.WriteOptions{})
	o, _ := openOracle(t, dir)
	v, err := o.Verdict(p2p.MustParseAddr("0000:10:1c.0"), p2p.MustParseAddr("0000:10:1b.0"))
	if err != nil {
		t.Fatal(err)
	}
	if v.MapType != p2p.MapNotSupported || v.Outcome != p2p.OutcomeP2P || v.Policy != p2p.PolicyNVIDIA || !v.P2P() {
		t.Fatalf("got %s / %s / %s; want NOT_SUPPORTED by the kernel, p2p by nvidia", v.MapType, v.Policy, v.Outcome)
	}
	if !strings.Contains(v.Reason, "passthrough VM") || !strings.Contains(v.Reason, "not in the P2PDMA whitelist") && !strings.Contains(v.Reason, "neither 00.0 nor a root port") {
		t.Errorf("reason does not explain both rules: %s", v.Reason)
	}
	ok, best, err := o.ReachesAccelerator(p2p.MustParseAddr("0000:10:1b.0"))
	if err != nil || !ok || best.Provider.Bus != 0x10 {
		t.Errorf("ReachesAccelerator = %v, %+v, %v; want a GPU on bus 10", ok, best, err)
	}
}

// TestAMDGPUBounces: amdgpu does not refuse, it bounces.
func TestAMDGPUBounces(t *testing.T) {
	m, dir := writeModel(t, "intel-acs-switch", models.WriteOptions{})
	o, _ := openOracle(t, dir)
	var checked int
	for _, nic := range m.EFANICs() {
		ok, v, err := o.ReachesAccelerator(nic.Addr)
		if err != nil {
			t.Fatal(err)
		}
		if ok || v == nil || v.Outcome != p2p.OutcomeBounced || v.Policy != p2p.PolicyAMDGPU {
			t.Errorf("%s: reaches %v, nearest %+v; want bounced by amdgpu", nic.Addr, ok, v)
			continue
		}
		if !strings.Contains(v.Reason, "system memory") {
			t.Errorf("reason does not say the buffer moves to system memory: %s", v.Reason)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("the model has no EFA NIC")
	}
}

// blockedP5 returns p5.48xlarge with NIC 4f:00.0's firmware blocking peers.
func blockedP5(t *testing.T) *models.Machine {
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	m.Function(p5NIC).EFA.PeerAccessBlocked = true
	return m
}

// TestBlockedNIC: a NIC whose firmware blocks peer access is refused only
// when a topology file says so (sysfs and the ACPI tables cannot show it).
func TestBlockedNIC(t *testing.T) {
	m := blockedP5(t)
	dir := t.TempDir()
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	o, _ := openOracle(t, dir)
	v, err := o.Verdict(p5GPU, p5NIC)
	if err != nil {
		t.Fatal(err)
	}
	if v.Outcome != p2p.OutcomeP2P || v.Source != p2p.SourceComputed || !strings.Contains(v.Note, "efap2p export") {
		t.Fatalf("without a file: %s from %s, note %q; want p2p, computed, a note pointing at efap2p export", v.Outcome, v.Source, v.Note)
	}
	if strings.Contains(v.Reason, "firmware") {
		t.Errorf("the reason %q says what the note says: a report of many pairs would repeat it", v.Reason)
	}

	file := filepath.Join(t.TempDir(), "topo.json")
	tf := p2p.NewTopologyFile("test")
	tf.NICs = append(tf.NICs, p2p.TopoNIC{Addr: p5NIC, PeerAccessBlocked: true})
	writeTopology(t, dir, file, tf)
	src, _ := p2p.OpenSysfs(dir)
	o = p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{TopologyFile: file})
	v, _ = o.Verdict(p5GPU, p5NIC)
	if v.Outcome != p2p.OutcomeRefused || v.Source != p2p.SourceTopologyFile || !strings.Contains(v.Reason, "blocking peer access") {
		t.Errorf("with a topology file: %s from %s (%s)", v.Outcome, v.Source, v.Reason)
	}
	if ok, _, _ := o.ReachesAccelerator(p5NIC); ok {
		t.Error("a blocked NIC reaches an accelerator")
	}
	if ok, _, _ := o.ReachesAccelerator(p2p.MustParseAddr("0000:50:00.0")); !ok {
		t.Error("its neighbour, not blocked, does not reach one")
	}
}

// writeTopology writes tf to file as export does: stamped with the
// machine of the sysfs tree at dir.
func writeTopology(t *testing.T, dir, file string, tf *p2p.TopologyFile) {
	t.Helper()
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := tf.RecordMachine(p2p.NewOracle(p2p.NewTopology(src)), false); err != nil {
		t.Fatal(err)
	}
	data, err := tf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPrecedence: the topology file wins over the computed verdict (the
// ACPI tables' place is in hmat_test.go).
func TestPrecedence(t *testing.T) {
	m := blockedP5(t)
	dir := t.TempDir()
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "topo.json")
	tf := p2p.NewTopologyFile("test")
	tf.Pairs = append(tf.Pairs, p2p.TopoPair{Provider: p5GPU, Client: p5NIC, MapType: p2p.MapBusAddr, Distance: 4, Path: p2p.PathPIX, Outcome: p2p.OutcomeP2P, BandwidthMBs: 1, LatencyNs: 2})
	writeTopology(t, dir, file, tf)
	src, _ := p2p.OpenSysfs(dir)
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{TopologyFile: file})
	if v, _ := o.Verdict(p5GPU, p5NIC); v.Source != p2p.SourceTopologyFile || v.Outcome != p2p.OutcomeP2P || v.BandwidthMBs() != 1 {
		t.Errorf("file vs computed: %s %s", v.Source, v.Outcome)
	}
	if v, _ := o.Verdict(p5GPU, p2p.MustParseAddr("0000:50:00.0")); v.Source != p2p.SourceComputed {
		t.Errorf("a pair neither lists: source %s", v.Source)
	}
}

// TestBadTopologyFileFallsBack: a malformed file is reported once, by file
// and line, and the other sources answer.
func TestBadTopologyFileFallsBack(t *testing.T) {
	_, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	file := filepath.Join(t.TempDir(), "topo.json")
	os.WriteFile(file, []byte("{\n  \"format\": \"efap2p-topology\",\n  \"version\": 9\n}\n"), 0o644)
	var warnings []string
	src, _ := p2p.OpenSysfs(dir)
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{TopologyFile: file, Warnf: func(f string, a ...any) {
		warnings = append(warnings, f)
	}})
	for i := 0; i < 3; i++ {
		if v, err := o.Verdict(p5GPU, p5NIC); err != nil || v.Source != p2p.SourceComputed {
			t.Fatalf("verdict %v, %v", v, err)
		}
	}
	if len(warnings) != 1 || o.TopologyFileError() == nil || !strings.Contains(o.TopologyFileError().Error(), file+":1: version 9") {
		t.Errorf("warnings %v, error %v", warnings, o.TopologyFileError())
	}
}
