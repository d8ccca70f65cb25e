// SPDX-License-Identifier: MIT

package nodecheck_test

import (
	"strings"
	"testing"

	"github.com/efap2p/efap2p/answer"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/nodecheck"
	"github.com/efap2p/efap2p/p2p"
)

// TestPeerMemoryOnlyAnswer: on arm64-grace-peermem the GPU's dma-buf is
// refused to the NIC (NVIDIA's driver flags the Grace chipset) and the EFA
// driver's peer memory carries the pair: the check says GPUDirect RDMA
// works, the pair's p2p_via is peer memory, the GPU's line says so, and a
// note says what a program that registers by dma-buf only gets.
func TestPeerMemoryOnlyAnswer(t *testing.T) {
	m := builtin(t, "arm64-grace-peermem")
	r := run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{Kernel: m.KernelRelease().String()})
	if r.Status != nodecheck.StatusOK || len(r.Pairs) != 1 {
		t.Fatalf("status %s, %d pairs, findings %v; want ok and one pair", r.Status, len(r.Pairs), codes(r))
	}
	p := r.Pairs[0]
	if !p.P2P || p.Via != p2p.RegPeerMem || p.DMABuf.Outcome != "refused" || p.PeerMemory == nil || p.PeerMemory.Outcome != "p2p" {
		t.Errorf("pair: p2p %v via %s, dma-buf %s, peer memory %+v; want p2p by peer memory only", p.P2P, p.Via, p.DMABuf.Outcome, p.PeerMemory)
	}
	out := text(t, r)
	for _, w := range []string{
		"1 GPU, with true P2P to its nearest EFA NIC",
		"layout    1 accelerator, 1 EFA device (no machine model compared)",
		"verdicts  1 pair (1 computed), all certain",
		"GPU0  01:00.0 nvidia  P2P by peer memory only with 1/1 nearest NICs: rdmaP1p1s0",
		"by the EFA driver's peer memory only",
		"`efap2p explain GPU0 rdmaP1p1s0` says why",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(w), " ")) {
			t.Errorf("text does not say %q:\n%s", w, out)
		}
	}
	for _, bad := range []string{"1 GPUs", "1 accelerators", "1 EFA devices", "1 pairs"} {
		if strings.Contains(out, bad) {
			t.Errorf("text says %q:\n%s", bad, out)
		}
	}
}

// TestCertainAsExportSeesIt: without root the p5.48xlarge's outcomes are
// all certain, and the map types of the switch-local pairs are assumed:
// the check says both, with the count export refuses for.
func TestCertainAsExportSeesIt(t *testing.T) {
	m := builtin(t, "p5.48xlarge")
	dir := write(t, m, models.WriteOptions{ConfigBytes: 64})
	r := run(t, dir, "", nodecheck.Options{})
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease(newKernel)})
	_, err = answer.Export(o, src, answer.ExportOptions{})
	if err == nil || !strings.Contains(err.Error(), "for 32 of ") {
		t.Fatalf("export without root: %v; want it to refuse 32 pairs", err)
	}
	assumed := 0
	for _, p := range r.Pairs {
		if p.DMABuf.Assumed {
			assumed++
		}
	}
	if out := text(t, r); assumed != 32 || !strings.Contains(out, "256 pairs (256 computed), all certain; 32 with the map type assumed") {
		t.Errorf("%d pairs assumed; text:\n%s", assumed, out)
	}
}

// TestExpectAnotherModel: a p5.48xlarge compared with the p4d.24xlarge
// model has as many GPUs as the model, none where the model has them: the
// findings and the layout line say where, never "expected 8, found 8:
// ... missing".
func TestExpectAnotherModel(t *testing.T) {
	p4d := builtin(t, "p4d.24xlarge")
	r := run(t, write(t, builtin(t, "p5.48xlarge"), models.WriteOptions{}), "", nodecheck.Options{Expect: p4d})
	for code, want := range map[string]string{
		nodecheck.CodeAccelsMissing:    "expected 8 accelerators for p4d.24xlarge at its addresses, found 0 there (and 8 at other addresses): 0000:10:1c.0, ",
		nodecheck.CodeAccelsUnexpected: "8 accelerators at addresses the model of p4d.24xlarge does not have: 0000:53:00.0, ",
		nodecheck.CodeEFAMissing:       "expected 4 EFA devices for p4d.24xlarge at its addresses, found 0 there (and 32 at other addresses): ",
		nodecheck.CodeEFAUnexpected:    "32 EFA devices at addresses the model of p4d.24xlarge does not have: ",
	} {
		if f := finding(r, code); f == nil || !strings.HasPrefix(f.Message, want) {
			t.Errorf("%s: %+v; want %q...", code, f, want)
		}
	}
	if e := r.Expected; e.MatchingAccelerators != 0 || e.MatchingEFADevices != 0 || e.FoundAccelerators != 8 {
		t.Errorf("expected %+v", e)
	}
	if out := text(t, r); !strings.Contains(out, "differs from p4d.24xlarge: 8 accelerators (the model has 8; 0 at its addresses), 32 EFA devices (the model has 4; 0 at its addresses)") {
		t.Errorf("layout line:\n%s", out)
	}
	// where every device found is one of the model's, the count says it
	m := builtin(t, "p5.48xlarge")
	m, err := m.Without(p2p.MustParseAddr("0000:a6:00.0"))
	if err != nil {
		t.Fatal(err)
	}
	r = run(t, write(t, m, models.WriteOptions{}), "", nodecheck.Options{})
	if f := finding(r, nodecheck.CodeEFAMissing); f == nil || f.Message != "expected 32 EFA devices for p5.48xlarge, found 31: 0000:a6:00.0 missing" {
		t.Errorf("one NIC removed: %+v", f)
	}
}
