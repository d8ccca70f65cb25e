// SPDX-License-Identifier: MIT

package models

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/efap2p/efap2p/internal/pcicfg"
	"github.com/efap2p/efap2p/p2p"
)

func TestSyntheticShape(t *testing.T) {
	for _, n := range []int{-5, 1, 2, 23, 24, 25, 100, 139, 140, 557, 1000, 4096, 5000} {
		m := Synthetic(n)
		want := max(n, 1)
		fns := m.Functions()
		// Exact by construction; the contract is "about n".
		if len(fns) != want {
			t.Errorf("Synthetic(%d): %d functions", n, len(fns))
		}
		for _, f := range fns {
			if p := f.Parent(); p != nil && (f.Addr.Bus <= p.Addr.Bus || f.Addr.Domain != p.Addr.Domain) {
				t.Errorf("Synthetic(%d): %s under %s", n, f.Addr, p.Addr)
			}
		}
		// What Synthetic returns is what a model file would give.
		b, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(b, m.Name); err != nil {
			t.Errorf("Synthetic(%d) does not survive a round trip: %v", n, err)
		}
	}
	m := Synthetic(4096)
	var gpus, efas, domains, acs int
	seenDomain := map[uint32]bool{}
	for _, f := range m.Functions() {
		if f.Class>>8 == 0x0302 {
			gpus++
		}
		if f.EFA != nil {
			efas++
		}
		if !seenDomain[f.Addr.Domain] {
			seenDomain[f.Addr.Domain] = true
			domains++
		}
		if _, ctrl, ok := f.ACSBits(); ok && ctrl&pcicfg.ACSRedirectMask != 0 && f.Kind == KindSwitchDownstream {
			acs++
		}
	}
	if gpus < 100 || efas < 100 || domains < 3 || acs < 100 {
		t.Errorf("Synthetic(4096): %d GPUs, %d EFAs, %d domains, %d redirecting downstream ports", gpus, efas, domains, acs)
	}
	if len(m.Pairs()) != 8 {
		t.Errorf("Synthetic(4096) lists %d expected pairs, want 8", len(m.Pairs()))
	}
}

func TestSyntheticDeterministic(t *testing.T) {
	a, _ := Synthetic(777).Marshal()
	b, _ := Synthetic(777).Marshal()
	if !bytes.Equal(a, b) {
		t.Error("two Synthetic(777) differ")
	}
}

// TestSyntheticVerdicts checks the verdicts stated by construction against
// the oracle, on the model and on a written sysfs tree.
func TestSyntheticVerdicts(t *testing.T) {
	for _, n := range []int{600, 4096} {
		m := Synthetic(n)
		srcs := map[string]p2p.Source{"model": m.Source()}
		if n <= 600 {
			dir := t.TempDir()
			if err := m.Write(dir, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if got, _ := filepath.Glob(filepath.Join(dir, "bus/pci/devices/*")); len(got) != n {
				t.Errorf("Synthetic(%d) wrote %d functions", n, len(got))
			}
			if _, err := os.Stat(filepath.Join(dir, "devices/pci0000:00")); err != nil {
				t.Error(err)
			}
			s, err := p2p.OpenSysfs(dir)
			if err != nil {
				t.Fatal(err)
			}
			srcs["sysfs"] = s
		}
		for name, src := range srcs {
			o := p2p.NewOracle(p2p.NewTopology(src))
			for _, p := range m.Pairs() {
				v, err := o.Verdict(p.Provider, p.Client)
				if err != nil {
					t.Fatalf("%s %s -> %s: %v", name, p.Provider, p.Client, err)
				}
				want := []any{p.MapType, p.Distance, p.Path, append([]p2p.Addr{}, p.ACSRedirect...)}
				got := []any{v.MapType, v.Distance, v.Path, v.ACSRedirect}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Synthetic(%d) from %s: %s -> %s (-want +got):\n%s\nwhy: %s\noracle: %s", n, name, p.Provider, p.Client, diff, p.Why, v.Reason)
				}
			}
		}
	}
}

func BenchmarkSynthetic4096(b *testing.B) {
	for b.Loop() {
		Synthetic(4096)
	}
}
