// SPDX-License-Identifier: MIT

package nccltopo

import (
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

func TestPathType(t *testing.T) {
	for c, want := range map[p2p.PathClass]string{
		p2p.PathUnknown: "", p2p.PathLOC: "LOC", p2p.PathPIX: "PIX", p2p.PathPXB: "PXB",
		p2p.PathPHB: "PHB", p2p.PathNODE: "PHB", p2p.PathSYS: "SYS",
	} {
		if got := PathType(c); got != want {
			t.Errorf("PathType(%s) = %q, want %q", c, got, want)
		}
	}
}

// TestParent: on p5.48xlarge NCCL skips the downstream port and the
// root port: EFA 4f:00.0 -> switch 45:00.0 -> CPU. On p4d.24xlarge the
// functions sit on root buses: straight to the CPU.
func TestParent(t *testing.T) {
	for _, tc := range []struct {
		machine, addr string
		want          []string
	}{
		{"p5.48xlarge", "0000:4f:00.0", []string{"0000:45:00.0"}},
		{"p5.48xlarge", "0000:53:00.0", []string{"0000:45:00.0"}},
		{"p5.48xlarge", "0000:45:00.0", nil},
		{"p4d.24xlarge", "0000:10:1c.0", nil},
		// The nested switch: 1d:00.0 below switch 1b:00.0 below switch 17:00.0.
		{"intel-icelake-2rootbus", "0000:1d:00.0", []string{"0000:1b:00.0", "0000:17:00.0"}},
	} {
		m, err := models.Builtin(tc.machine)
		if err != nil {
			t.Fatal(err)
		}
		topo := p2p.NewTopology(m.Source())
		f, err := topo.Function(p2p.MustParseAddr(tc.addr))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for p := parent(f); p != nil; p = parent(p) {
			got = append(got, p.Addr.String())
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s %s: NCCL parents %v, want %v", tc.machine, tc.addr, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s %s: NCCL parents %v, want %v", tc.machine, tc.addr, got, tc.want)
				break
			}
		}
	}
	if parent(nil) != nil {
		t.Error("parent(nil) != nil")
	}
}
