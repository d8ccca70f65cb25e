// SPDX-License-Identifier: MIT

package jobenv

import (
	"io"
	"testing"

	"github.com/efap2p/efap2p/nccltopo"
	"github.com/efap2p/efap2p/p2p"
)

// benchRun is efap2p env's work on the emulated p5.48xlarge in a fresh
// oracle each iteration: the boot-time file (or sysfs) read, the node
// check, the NCCL topology's header checked, the lines written.
func benchRun(b *testing.B, boot bool) {
	h := newHost(b, "p5.48xlarge", "", false)
	if boot {
		h.boot(b)
	}
	b.ReportAllocs()
	for b.Loop() {
		src, err := p2p.OpenSysfs(h.tree)
		if err != nil {
			b.Fatal(err)
		}
		o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: h.kernel, TopologyFiles: []string{h.bootFile()}, NoReasons: true})
		r, err := Run(Options{Oracle: o, Sysfs: src, NCCLTopoFile: nccltopo.BootFile(h.bootFile()), Kernel: h.kernel.String()})
		if err != nil || r.Answer != AnswerP2P || (r.Source == "computed") == boot {
			b.Fatalf("%v %s %s", err, r.Answer, r.Source)
		}
		if err := r.Write(io.Discard, FormatSlurm); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnvP5BootFile: from the boot-time file, as a TaskProlog runs.
func BenchmarkEnvP5BootFile(b *testing.B) { benchRun(b, true) }

// BenchmarkEnvP5Computed: without one, computed from sysfs.
func BenchmarkEnvP5Computed(b *testing.B) { benchRun(b, false) }
