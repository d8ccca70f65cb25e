// SPDX-License-Identifier: MIT

//go:build cgo

package indexfuzz

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/efap2p/efap2p/answer"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// seed writes a model's tree and its topology file with index, as export
// does, and returns the index's bytes.
func seed(t testing.TB, model string) []byte {
	t.Helper()
	m, err := models.Builtin(model)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "sys")
	if err := m.Write(root, models.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := p2p.OpenSysfs(root)
	if err != nil {
		t.Fatal(err)
	}
	o := p2p.NewOracle(p2p.NewTopology(s))
	accels, _ := o.Topology().Accelerators()
	devs, _ := s.RDMADevices()
	tf := p2p.NewTopologyFile("seed")
	for _, d := range devs {
		tf.NICs = append(tf.NICs, p2p.TopoNIC{Addr: d.Addr, IBDev: d.Name})
		for _, a := range accels {
			v, err := o.Verdict(a.Addr, d.Addr)
			if err != nil {
				t.Fatal(err)
			}
			tf.Pairs = append(tf.Pairs, p2p.TopoPair{Provider: v.Provider, Client: v.Client,
				MapType: v.MapType, Distance: v.Distance, Path: v.Path, Outcome: v.Outcome, Reason: v.Reason})
		}
	}
	if err := tf.RecordMachine(o, false); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "topology.json")
	if err := answer.WriteTopology(file, tf, s, p2p.Options{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file + answer.IndexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// agree checks that the C parser and the Go reader take or refuse data
// alike, and answer every lookup alike.
func agree(t *testing.T, data []byte) {
	gix, gerr := answer.ReadIndex(data)
	cix := Parse(data)
	if (gerr == nil) != (cix != nil) {
		t.Fatalf("Go reader: %v; C parser accepts: %v", gerr, cix != nil)
	}
	if cix == nil {
		return
	}
	defer cix.Free()
	// read as the front reads a file, the head first, it is accepted too
	head := HeadLen(data)
	if head == 0 || head > len(data) {
		t.Fatalf("head of %d bytes in an index of %d the parser accepts", head, len(data))
	}
	lazy := ParseLazy(data, head)
	if lazy == nil || !lazy.Attach(head) {
		t.Fatalf("the parser accepts the index whole, not its head of %d bytes and then the rest", head)
	}
	lazy.Free()
	for _, n := range gix.NICs {
		flags, summary, ok := cix.NIC(n.Key)
		if !ok || flags != n.Flags || summary != n.Summary {
			t.Fatalf("NIC %#x: C %v %#x %q, Go %#x %q", n.Key, ok, flags, summary, n.Flags, n.Summary)
		}
	}
	for _, d := range gix.Dmabufs {
		dec, errno, reason, ok := cix.Dmabuf(d.NIC, d.Exporter)
		want, _ := gix.Dmabuf(d.NIC, d.Exporter)
		if !ok || dec != want.Decision || errno != int(want.Err) || reason != want.Best.Reason {
			t.Fatalf("dma-buf %#x %q: C %v %d %d %q, Go %+v", d.NIC, d.Exporter, ok, dec, errno, reason, want)
		}
	}
	for _, p := range gix.Peers {
		outcome, reason, ok := cix.Peer(p.NIC, p.Peer)
		if !ok || outcome != p.Attr.Attr.Outcome || reason != p.Attr.Reason {
			t.Fatalf("peer %#x %#x: C %v %d %q, Go %d %q", p.NIC, p.Peer, ok, outcome, reason, p.Attr.Attr.Outcome, p.Attr.Reason)
		}
	}
	if _, _, ok := cix.NIC(^uint64(0) - 1); ok {
		t.Fatal("C finds a NIC the index does not have")
	}
}

// TestCAgreesWithGo on the indexes of the built-in models.
func TestCAgreesWithGo(t *testing.T) {
	for _, model := range []string{"p5.48xlarge", "intel-acs-switch", "multi-domain"} {
		data := seed(t, model)
		if Parse(data) == nil {
			t.Fatalf("%s: the C parser refuses a written index", model)
		}
		agree(t, data)
	}
}

// small is an index of one record of each kind, a seed the fuzzer can
// mutate quickly.
func small() []byte {
	ix := &answer.Index{Kernel: "6.8.0", Functions: []answer.IndexFunction{{Key: 0x5300, Vendor: 0x10de, Device: 0x2330}},
		NICs: []answer.IndexNIC{{Key: 0x4f00, Flags: answer.NICReaches, Summary: "s"}},
		Dmabufs: []answer.IndexDmabuf{{NIC: 0x4f00, Exporter: "nv_dmabuf",
			Dmabuf: answer.Dmabuf{Decision: answer.DmabufAllow, AllAllowed: true, Best: answer.Attr{Reason: "r"}}}},
		Peers: []answer.IndexPeer{{NIC: 0x4f00, Peer: 0x5300, Attr: answer.Attr{Reason: "r"}}}}
	return ix.Marshal()
}

// TestLazyAttach: read as the front reads a file (the head first, the
// dma-buf and peer records when first needed), the index answers as the
// Go reader does; before the records are attached, it answers nothing
// about dma-bufs or peers, and a corrupt record section is refused.
func TestLazyAttach(t *testing.T) {
	data := seed(t, "p5.48xlarge")
	gix, err := answer.ReadIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	head := sectionOffset(t, data, answer.SectionDmabufs)
	if got := HeadLen(data); got != head {
		t.Fatalf("the front reads a head of %d bytes, want the %d before the dma-buf records", got, head)
	}
	x := ParseLazy(data, head)
	if x == nil {
		t.Fatal("the head alone is refused")
	}
	defer x.Free()
	for _, n := range gix.NICs {
		if flags, _, ok := x.NIC(n.Key); !ok || flags != n.Flags {
			t.Fatalf("NIC %#x from the head: %v %#x", n.Key, ok, flags)
		}
	}
	d := gix.Dmabufs[0]
	if _, _, _, ok := x.Dmabuf(d.NIC, d.Exporter); ok {
		t.Fatal("a dma-buf record answered before the records were attached")
	}
	if !x.Attach(head) {
		t.Fatal("the records are refused")
	}
	if dec, _, _, ok := x.Dmabuf(d.NIC, d.Exporter); !ok || dec != d.Decision {
		t.Fatalf("dma-buf %#x %q after attaching: %v %d", d.NIC, d.Exporter, ok, dec)
	}
	// a corrupt decision in the first dma-buf record
	bad := append([]byte(nil), data...)
	bad[head+40] = 7
	y := ParseLazy(bad, head)
	if y == nil {
		t.Fatal("the head alone is refused")
	}
	defer y.Free()
	if y.Attach(head) {
		t.Fatal("a dma-buf record with decision 7 is attached")
	}
}

// TestFailedAttachKeepsNothing: when a section of the records read on
// demand fails its check, none of the sections read with it are used (the
// front frees what it read): a NIC record that came after the dma-buf
// ones, in a well-formed section, is not found either.
func TestFailedAttachKeepsNothing(t *testing.T) {
	data := reorder(t, seed(t, "p5.48xlarge"), answer.SectionFunctions, answer.SectionDmabufs,
		answer.SectionNICs, answer.SectionPeers, answer.SectionStrings)
	gix, err := answer.ReadIndex(data)
	if err != nil {
		t.Fatalf("reordered: %v", err)
	}
	// the first two peer records swapped: the peers are not sorted
	peers := sectionOffset(t, data, answer.SectionPeers)
	const peerSize = 80
	a, b := data[peers:peers+peerSize], data[peers+peerSize:peers+2*peerSize]
	tmp := append([]byte(nil), a...)
	copy(a, b)
	copy(b, tmp)
	head := HeadLen(data)
	if want := sectionOffset(t, data, answer.SectionDmabufs); head != want {
		t.Fatalf("head of %d bytes, want the %d before the dma-buf records", head, want)
	}
	x := ParseLazy(data, head)
	if x == nil {
		t.Fatal("the head alone is refused")
	}
	defer x.Free()
	if x.Attach(head) {
		t.Fatal("unsorted peer records are attached")
	}
	for _, n := range gix.NICs {
		if _, _, ok := x.NIC(n.Key); ok {
			t.Fatalf("NIC %#x is found in records whose read failed", n.Key)
		}
	}
	for _, d := range gix.Dmabufs {
		if _, _, _, ok := x.Dmabuf(d.NIC, d.Exporter); ok {
			t.Fatalf("dma-buf %#x %q is found in records whose read failed", d.NIC, d.Exporter)
		}
	}
}

// reorder rewrites an index with its sections in the given order (a
// well-formed index: the table may name them in any order, the strings
// last).
func reorder(t *testing.T, data []byte, order ...int) []byte {
	t.Helper()
	le := binary.LittleEndian
	n := int(le.Uint32(data[28:]))
	type section struct{ count, body []byte }
	secs := map[int]section{}
	for i := 0; i < n; i++ {
		e := data[answer.IndexHeaderSize+16*i:]
		off, size := le.Uint32(e[8:]), le.Uint32(e[12:])
		secs[int(le.Uint32(e))] = section{e[4:8], data[off : off+size]}
	}
	out := append([]byte(nil), data[:answer.IndexHeaderSize+16*n]...)
	for i, k := range order {
		for len(out)%8 != 0 {
			out = append(out, 0)
		}
		e := out[answer.IndexHeaderSize+16*i:]
		le.PutUint32(e, uint32(k))
		copy(e[4:8], secs[k].count)
		le.PutUint32(e[8:], uint32(len(out)))
		le.PutUint32(e[12:], uint32(len(secs[k].body)))
		out = append(out, secs[k].body...)
	}
	le.PutUint64(out[16:], uint64(len(out)))
	return out
}

// sectionOffset is where the index's section of kind starts.
func sectionOffset(t *testing.T, data []byte, kind int) int {
	t.Helper()
	le := binary.LittleEndian
	for i := 0; i < int(le.Uint32(data[28:])); i++ {
		e := data[answer.IndexHeaderSize+16*i:]
		if int(le.Uint32(e)) == kind {
			return int(le.Uint32(e[8:]))
		}
	}
	t.Fatalf("no section of kind %d", kind)
	return 0
}

func FuzzCIndex(f *testing.F) {
	f.Add(small())
	data := seed(f, "intel-acs-switch")
	f.Add(data)
	f.Add(data[:answer.IndexHeaderSize+16])
	f.Fuzz(agree)
}
