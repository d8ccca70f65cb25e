// SPDX-License-Identifier: MIT

package nodecheck_test

import (
	"io"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/nodecheck"
	"github.com/efap2p/efap2p/p2p"
)

// BenchmarkCheckP5Cold: the whole check of the emulated p5.48xlarge in a
// fresh oracle each iteration (every sysfs read included), and its text.
func BenchmarkCheckP5Cold(b *testing.B) {
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		src, err := p2p.OpenSysfs(dir)
		if err != nil {
			b.Fatal(err)
		}
		r, err := nodecheck.Run(nodecheck.Options{Oracle: p2p.NewOracle(p2p.NewTopology(src)), Root: dir, Kernel: "6.8.0"})
		if err != nil || r.Status != nodecheck.StatusOK {
			b.Fatalf("%v %v", err, r.Status)
		}
		if err := r.WriteText(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
