// SPDX-License-Identifier: MIT

package p2p_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/efap2p/efap2p/internal/pciclass"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// TestNoReasons: an oracle made with NoReasons gives every expected pair of
// every model the verdict an explaining oracle gives, without its Reason
// and Hint, and Explain gives them back, sentence for sentence.
func TestNoReasons(t *testing.T) {
	ignore := cmpopts.IgnoreUnexported(p2p.Verdict{}, p2p.Release{})
	for _, name := range models.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			m, err := models.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			opts := p2p.Options{Kernel: m.KernelRelease()}
			full := p2p.NewOracleWith(p2p.NewTopology(m.Source()), opts)
			opts.NoReasons = true
			terse := p2p.NewOracleWith(p2p.NewTopology(m.Source()), opts)
			for _, pr := range m.Pairs() {
				want, err := full.Verdict(pr.Provider, pr.Client)
				if err != nil {
					t.Fatal(err)
				}
				if want.Reason == "" {
					t.Fatalf("%s -> %s: the explaining oracle gives no reason", pr.Provider, pr.Client)
				}
				v, err := terse.Verdict(pr.Provider, pr.Client)
				if err != nil {
					t.Fatal(err)
				}
				if v.Reason != "" || v.Hint != "" {
					t.Errorf("%s -> %s: NoReasons verdict has reason %q, hint %q", pr.Provider, pr.Client, v.Reason, v.Hint)
				}
				bare := want.Clone()
				bare.Reason, bare.Hint = "", ""
				if d := cmp.Diff(bare, v, ignore); d != "" {
					t.Errorf("%s -> %s: NoReasons changes the verdict (-explained +terse):\n%s", pr.Provider, pr.Client, d)
				}
				ex, err := terse.Explain(pr.Provider, pr.Client)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, ex, ignore); d != "" {
					t.Errorf("%s -> %s: Explain differs from the explaining oracle (-want +got):\n%s", pr.Provider, pr.Client, d)
				}
				if ex.BandwidthMBs() != want.BandwidthMBs() || ex.LatencyNs() != want.LatencyNs() {
					t.Errorf("%s -> %s: Explain's figures %d MB/s %d ns, want %d %d", pr.Provider, pr.Client,
						ex.BandwidthMBs(), ex.LatencyNs(), want.BandwidthMBs(), want.LatencyNs())
				}
				if again, _ := terse.Verdict(pr.Provider, pr.Client); again != v {
					t.Errorf("%s -> %s: Explain replaced the cached verdict", pr.Provider, pr.Client)
				}
			}
		})
	}
}

// TestAcceleratorScanReadsClassesOnly: finding a machine's accelerators
// reads each function's class by its bus/pci/devices link, and its IDs
// only where the class does not decide (a display controller may be a
// framebuffer), and places in the tree (one readlink each) only the
// accelerators, not every function.
func TestAcceleratorScanReadsClassesOnly(t *testing.T) {
	m, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	o, src := openOracle(t, dir)
	accels, err := o.Topology().Accelerators()
	if err != nil {
		t.Fatal(err)
	}
	var want []p2p.Addr
	reads := 0
	for _, f := range m.Functions() {
		reads++
		if _, decided := pciclass.ByClass(uint32(f.Class)); !decided {
			reads += 2 // vendor and device
		}
		if pciclass.IsAccelerator(uint32(f.Class), uint16(f.Vendor), uint16(f.Device)) {
			want = append(want, f.Addr)
		}
	}
	var got []p2p.Addr
	for _, f := range accels {
		got = append(got, f.Addr)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("accelerators (-want +got):\n%s", d)
	}
	st := src.Stats()
	if st.Readlinks != int64(len(want)) {
		t.Errorf("the scan read %d links, want %d (one per accelerator)", st.Readlinks, len(want))
	}
	if st.AttrReads != int64(reads) {
		t.Errorf("the scan read %d attributes, want %d (each function's class, and IDs where it does not decide)", st.AttrReads, reads)
	}
}
