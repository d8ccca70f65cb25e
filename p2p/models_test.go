// SPDX-License-Identifier: MIT

package p2p_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// got is the part of a verdict the machine models state by hand.
type got struct {
	MapType     p2p.MapType
	Distance    int
	Path        p2p.PathClass
	ACSRedirect []p2p.Addr
	Outcome     string
	Policy      p2p.Policy
	PeerMem     string
}

func want(p models.Pair) got {
	w := got{MapType: p.MapType, Distance: p.Distance, Path: p.Path, ACSRedirect: p.ACSRedirect, Outcome: p.ExpectedOutcome(), Policy: p.Policy, PeerMem: p.PeerMem}
	if w.ACSRedirect == nil {
		w.ACSRedirect = []p2p.Addr{}
	}
	return w
}

// checkModel compares every expected pair of m with the oracle's verdict.
func checkModel(t *testing.T, m *models.Machine, o *p2p.Oracle) {
	t.Helper()
	pairs := m.Pairs()
	if len(pairs) == 0 {
		t.Fatalf("model %s lists no expected verdicts", m.Name)
	}
	for _, p := range pairs {
		v, err := o.Verdict(p.Provider, p.Client)
		if err != nil {
			t.Errorf("%s -> %s: %v", p.Provider, p.Client, err)
			continue
		}
		g := got{v.MapType, v.Distance, v.Path, v.ACSRedirect, v.Outcome.String(), v.Policy, v.PeerMem.Outcome.String()}
		w := want(p)
		if w.Path == p2p.PathUnknown {
			g.Path = p2p.PathUnknown
		}
		if w.Policy == p2p.PolicyUnknown {
			g.Policy = p2p.PolicyUnknown
		}
		if w.PeerMem == "" {
			g.PeerMem = ""
		}
		if v.Kernel != m.KernelRelease() {
			t.Errorf("%s -> %s: decided for kernel %s, the model's is %s", p.Provider, p.Client, v.Kernel, m.KernelRelease())
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s: provider %s, client %s (-want +got):\n%s\nwhy (model): %s\nreason (oracle): %s", m.Name, p.Provider, p.Client, diff, p.Why, v.Reason)
		}
		if !v.Certain {
			t.Errorf("%s -> %s: verdict is uncertain on a fully readable tree", p.Provider, p.Client)
		}
	}
}

// TestModelsFromSysfs writes every built-in model as a sysfs tree and
// checks the oracle reading it against the model's hand-worked verdicts.
func TestModelsFromSysfs(t *testing.T) {
	for _, name := range models.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			m, err := models.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := m.Write(dir, models.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			src, err := p2p.OpenSysfs(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkModel(t, m, p2p.NewOracleWith(p2p.NewTopology(src), m.OracleOptions()))
		})
	}
}

// TestModelsInMemory checks the same verdicts on the model itself, without
// sysfs: the two sources must agree.
func TestModelsInMemory(t *testing.T) {
	for _, name := range models.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			m, err := models.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			checkModel(t, m, p2p.NewOracleWith(p2p.NewTopology(m.Source()), m.OracleOptions()))
		})
	}
}
