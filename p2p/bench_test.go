// SPDX-License-Identifier: MIT

package p2p_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// BenchmarkWarmVerdict is a cached pair lookup (target: <= 50 ns, 0 allocs).
func BenchmarkWarmVerdict(b *testing.B) {
	_, dir := writeModel(b, "p5.48xlarge", models.WriteOptions{})
	o, _ := openOracle(b, dir)
	if _, err := o.Verdict(p5GPU, p5NIC); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		o.Verdict(p5GPU, p5NIC)
	}
}

// BenchmarkColdP5AllNICs is the first P2P answer for every EFA NIC of
// p5.48xlarge from a fresh oracle, sysfs reads included (target: <= 2 ms),
// and counts the config dwords read per function on the paths.
func BenchmarkColdP5AllNICs(b *testing.B) {
	m, dir := writeModel(b, "p5.48xlarge", models.WriteOptions{})
	nics := m.EFANICs()
	var st p2p.SysfsStats
	for b.Loop() {
		o, src := openOracle(b, dir)
		for _, n := range nics {
			if ok, _, err := o.ReachesAccelerator(n.Addr); err != nil || !ok {
				b.Fatalf("%s: %v %v", n.Addr, ok, err)
			}
		}
		st = src.Stats()
	}
	b.ReportMetric(float64(st.ConfigDwords), "dwords/op")
	b.ReportMetric(float64(st.ConfigDwords)/float64(st.ConfigOpens), "dwords/function")
	b.ReportMetric(float64(st.AttrReads), "attr-reads/op")
}

// BenchmarkColdP5AllNICsNoReasons is BenchmarkColdP5AllNICs with an
// oracle that keeps no reasons, as the library's core makes it below the
// info log level.
func BenchmarkColdP5AllNICsNoReasons(b *testing.B) {
	m, dir := writeModel(b, "p5.48xlarge", models.WriteOptions{})
	nics := m.EFANICs()
	for b.Loop() {
		src, err := p2p.OpenSysfs(dir)
		if err != nil {
			b.Fatal(err)
		}
		o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{NoReasons: true})
		for _, n := range nics {
			if ok, _, err := o.ReachesAccelerator(n.Addr); err != nil || !ok {
				b.Fatalf("%s: %v %v", n.Addr, ok, err)
			}
		}
	}
}

// BenchmarkColdP5GPUNICPairs is every GPU-NIC pair of p5.48xlarge from a
// fresh oracle, sysfs reads included.
func BenchmarkColdP5GPUNICPairs(b *testing.B) {
	m, dir := writeModel(b, "p5.48xlarge", models.WriteOptions{})
	var gpus, nics []p2p.Addr
	for _, f := range m.Functions() {
		switch {
		case f.EFA != nil:
			nics = append(nics, f.Addr)
		case f.Class>>16 == 0x03:
			gpus = append(gpus, f.Addr)
		}
	}
	var st p2p.SysfsStats
	for b.Loop() {
		o, src := openOracle(b, dir)
		for _, g := range gpus {
			for _, n := range nics {
				if _, err := o.Verdict(g, n); err != nil {
					b.Fatal(err)
				}
			}
		}
		st = src.Stats()
	}
	b.ReportMetric(float64(st.ConfigDwords), "dwords/op")
}

// BenchmarkMatrix4096 is the full verdict matrix (every ordered pair) of a
// 4096-function synthetic machine read from its sysfs tree, from a fresh
// oracle (target: <= 1 s, <= 256 MiB).
func BenchmarkMatrix4096(b *testing.B) {
	m := models.Synthetic(4096)
	dir := b.TempDir()
	if err := m.Write(dir, models.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	var addrs []p2p.Addr
	for _, f := range m.Functions() {
		addrs = append(addrs, f.Addr)
	}
	b.ReportAllocs()
	for b.Loop() {
		o, _ := openOracle(b, dir)
		mx, err := o.Matrix(addrs)
		if err != nil {
			b.Fatal(err)
		}
		if len(mx.Addrs) != len(addrs) {
			b.Fatal("short matrix")
		}
	}
	b.ReportMetric(float64(len(addrs)), "functions")
}

// topologyFile4000 writes the benchmarks' topology file of 4,000 pairs
// with a reason each (the layout export writes: version 3).
func topologyFile4000(b *testing.B) (dir, file string, data []byte) {
	_, dir = writeModel(b, "p5.48xlarge", models.WriteOptions{})
	tf := p2p.NewTopologyFile("bench")
	for i := 0; i < 4000; i++ {
		tf.Pairs = append(tf.Pairs, p2p.TopoPair{
			Provider: p2p.Addr{Domain: 1 + uint32(i>>8), Bus: uint8(i), Device: 0, Function: 0},
			Client:   p5NIC, MapType: p2p.MapBusAddr, Distance: 4, Path: p2p.PathPIX, Outcome: p2p.OutcomeP2P,
			Reason: fmt.Sprintf("pair %d, recorded for the benchmark, with a reason as long as export writes them, give or take", i)})
	}
	tf.Pairs = append(tf.Pairs, p2p.TopoPair{Provider: p5GPU, Client: p5NIC, MapType: p2p.MapBusAddr,
		Distance: 4, Path: p2p.PathPIX, Outcome: p2p.OutcomeP2P})
	data, err := tf.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	file = b.TempDir() + "/topology.json"
	if err := os.WriteFile(file, data, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir, file, data
}

// BenchmarkPlainJSON4000 decodes BenchmarkTopologyFile4000's file with
// encoding/json into generic values and checks nothing: the floor of
// reading it.
func BenchmarkPlainJSON4000(b *testing.B) {
	_, _, data := topologyFile4000(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTopologyFile4000 is what a topology file of 4,000 pairs costs
// the first answer: reading and checking the file, building the oracle,
// the first verdict (target: < 50 ms).
func BenchmarkTopologyFile4000(b *testing.B) {
	dir, file, data := topologyFile4000(b)
	src, err := p2p.OpenSysfs(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{TopologyFile: file})
		if v, err := o.Verdict(p5GPU, p5NIC); err != nil || v.Source != p2p.SourceTopologyFile {
			b.Fatalf("%v %v", v, err)
		}
	}
}
