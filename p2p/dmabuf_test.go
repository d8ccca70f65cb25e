// SPDX-License-Identifier: MIT

package p2p_test

import (
	"errors"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

func TestDmabufDecision(t *testing.T) {
	for _, tt := range []struct {
		model, exporter, nic string
		refuse               bool
		best                 p2p.Outcome
		candidates           int
		err                  error
	}{
		// p5.48xlarge: 8 H100s bound to nvidia; in a VM nvidia allows all.
		{"p5.48xlarge", "nv_dmabuf", "0000:4f:00.0", false, p2p.OutcomeP2P, 8, nil},
		{"p5.48xlarge", "nvidia", "0000:4f:00.0", false, p2p.OutcomeP2P, 8, nil},
		{"p5.48xlarge", "udmabuf", "0000:4f:00.0", false, 0, 0, p2p.ErrSystemMemory},
		{"p5.48xlarge", "drm", "0000:4f:00.0", false, 0, 0, p2p.ErrUnknownExporter},
		// intel-acs-switch: amdgpu GPUs ("drm"), every pair bounced.
		{"intel-acs-switch", "drm", "", false, p2p.OutcomeBounced, -1, nil},
	} {
		m, err := models.Builtin(tt.model)
		if err != nil {
			t.Fatal(err)
		}
		nic := tt.nic
		if nic == "" {
			nic = m.EFANICs()[0].Addr.String()
		}
		o := p2p.NewOracle(p2p.NewTopology(m.Source()))
		d, err := o.Dmabuf(p2p.MustParseAddr(nic), tt.exporter)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("%s %s: error %v, want %v", tt.model, tt.exporter, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s %s: %v", tt.model, tt.exporter, err)
		}
		if d.Refuse != tt.refuse || d.Best.Outcome != tt.best || (tt.candidates >= 0 && len(d.Candidates) != tt.candidates) {
			t.Errorf("%s %s: refuse %v, best %s, %d candidates", tt.model, tt.exporter, d.Refuse, d.Best.Outcome, len(d.Candidates))
		}
	}
}
