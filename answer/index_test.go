// SPDX-License-Identifier: MIT

package answer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/efap2p/efap2p/p2p"
)

// exportTree writes the model's tree and, as efap2p export does, a
// topology file of every accelerator with every NIC and its index into
// dir/topology.json; it returns the tree and the file.
func exportTree(t testing.TB, model string) (root, file string) {
	t.Helper()
	root = tree(t, model)
	s, err := p2p.OpenSysfs(root)
	if err != nil {
		t.Fatal(err)
	}
	o := p2p.NewOracle(p2p.NewTopology(s))
	accels, err := o.Topology().Accelerators()
	if err != nil {
		t.Fatal(err)
	}
	devs, err := s.RDMADevices()
	if err != nil {
		t.Fatal(err)
	}
	tf := p2p.NewTopologyFile("test")
	for _, d := range devs {
		tf.NICs = append(tf.NICs, p2p.TopoNIC{Addr: d.Addr, IBDev: d.Name})
		for _, a := range accels {
			v, err := o.Verdict(a.Addr, d.Addr)
			if err != nil {
				t.Fatal(err)
			}
			tf.Pairs = append(tf.Pairs, p2p.TopoPair{Provider: v.Provider, Client: v.Client, MapType: v.MapType,
				Distance: v.Distance, Path: v.Path, Policy: v.Policy, Outcome: v.Outcome, Reason: v.Reason})
		}
	}
	if err := tf.RecordMachine(o, false); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(t.TempDir(), "etc", "efap2p", "topology.json")
	if err := WriteTopology(file, tf, s, p2p.Options{}); err != nil {
		t.Fatal(err)
	}
	return root, file
}

func readIndexFile(t testing.TB, file string) *Index {
	t.Helper()
	data, err := os.ReadFile(file + IndexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := ReadIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// TestIndexP5: the index of p5.48xlarge answers for its 32 NICs what the
// engine answers from the JSON file, and is bound to that file.
func TestIndexP5(t *testing.T) {
	root, file := exportTree(t, "p5.48xlarge")
	for _, f := range []string{file, file + IndexSuffix} {
		st, err := os.Stat(f)
		if err != nil || st.Mode().Perm() != 0o644 {
			t.Fatalf("%s: %v, mode %v; want 0644", f, err, st.Mode())
		}
	}
	ix := readIndexFile(t, file)
	var st syscall.Stat_t
	if err := syscall.Stat(file, &st); err != nil {
		t.Fatal(err)
	}
	ctime := uint64(st.Ctim.Sec)*1e9 + uint64(st.Ctim.Nsec)
	if ix.JSON.Size != uint64(st.Size) || ix.JSON.Ino != st.Ino || ix.JSON.CtimeNs != ctime || ix.BootBound || ix.Kernel == "" {
		t.Errorf("binding %+v, boot %v, kernel %q; the file is %d bytes, inode %d, ctime %d", ix.JSON, ix.BootBound, ix.Kernel, st.Size, st.Ino, ctime)
	}
	// a file that outlives boots, checked on this machine in this boot
	if !ix.Checked || ix.BootID != bootID() || ix.BootID == "" || ix.Tree != TreeID(root) || ix.Tree == 0 {
		t.Errorf("checked %v in boot %q on tree %#x; want this boot (%q), this tree (%#x)", ix.Checked, ix.BootID, ix.Tree, bootID(), TreeID(root))
	}
	// by hand: 8 GPUs and 32 EFA NICs, 4 NICs under each GPU's switch;
	// nvidia allows every peer in a VM, so every NIC reaches one and none
	// is refused an exporter
	if len(ix.NICs) != 32 || len(ix.Peers) != 32*8 || len(ix.Functions) != 40 {
		t.Fatalf("%d NICs, %d peers, %d functions; want 32, 256, 40", len(ix.NICs), len(ix.Peers), len(ix.Functions))
	}
	for _, n := range ix.NICs {
		if n.Flags != NICReaches {
			t.Errorf("NIC %#x: flags %#x, want reaches only", n.Key, n.Flags)
		}
	}
	e := New(root, p2p.Options{TopologyFile: file}, true)
	s, _ := p2p.OpenSysfs(root)
	devs, _ := s.RDMADevices()
	name := map[uint64]string{}
	for _, d := range devs {
		name[Key(d.Addr)] = d.Name
	}
	exporters := map[string]bool{}
	for _, d := range ix.Dmabufs {
		exporters[d.Exporter] = true
	}
	for _, want := range []string{"nv_dmabuf", "nvidia", "system", "udmabuf", "efa", "drm"} {
		if !exporters[want] {
			t.Errorf("no answer for exporter %q", want)
		}
	}
	for nic, ibdev := range name {
		for exp := range exporters {
			d, ok := ix.Dmabuf(nic, exp)
			want := e.Dmabuf(ibdev, exp)
			if want.Decision == DmabufPass {
				want = Dmabuf{Decision: DmabufPass, Err: want.Err}
			}
			if !ok || d.Dmabuf != want {
				t.Errorf("%s + %s: index %+v (%v), engine %+v", ibdev, exp, d, ok, want)
			}
		}
	}
	for _, p := range ix.Peers {
		peer := p2p.Addr{Domain: uint32(p.Peer >> 16), Bus: uint8(p.Peer >> 8), Device: uint8(p.Peer>>3) & 31, Function: uint8(p.Peer) & 7}
		want, errno := e.Peer(name[p.NIC], peer)
		if errno != 0 || p.Attr != want {
			t.Errorf("%s -> %s: index %+v, engine %+v %v", name[p.NIC], peer, p.Attr, want, errno)
		}
		if want.Attr.Source != 2 { // topology-file
			t.Errorf("%s -> %s: source %d, want the topology file's", name[p.NIC], peer, want.Attr.Source)
		}
	}
	// Marshal and ReadIndex agree.
	again, err := ReadIndex(ix.Marshal())
	if err != nil || len(again.Dmabufs) != len(ix.Dmabufs) || again.Dmabufs[3] != ix.Dmabufs[3] {
		t.Errorf("round trip: %v", err)
	}
}

// TestReadIndexRejects: every inconsistency is an error, not a crash.
func TestReadIndexRejects(t *testing.T) {
	_, file := exportTree(t, "intel-acs-switch")
	good, err := os.ReadFile(file + IndexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	put32 := func(off int, v uint32) []byte {
		b := bytes.Clone(good)
		le.PutUint32(b[off:], v)
		return b
	}
	secOff := func(kind int) int { // the section table entry of kind
		for i := 0; i < sectionKinds; i++ {
			if int(le.Uint32(good[IndexHeaderSize+i*sectionSize:])) == kind {
				return IndexHeaderSize + i*sectionSize
			}
		}
		t.Fatalf("no section %d", kind)
		return 0
	}
	strings := secOff(SectionStrings)
	nics := secOff(SectionNICs)
	nicData := int(le.Uint32(good[nics+8:]))
	noBoot := func(flags uint32) []byte {
		b := put32(24, flags)
		clear(b[136:184])
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated", good[:len(good)-1]},
		{"magic", append([]byte("EFAP2PIY"), good[8:]...)},
		{"version", put32(8, IndexVersion+1)},
		{"flags", put32(24, 4)},
		{"boot flag without boot ID", noBoot(IndexBootBound)},
		{"checked flag without boot ID", noBoot(IndexChecked)},
		{"both boot flags", put32(24, IndexBootBound|IndexChecked)},
		{"version 2 with the checked flag", put32(8, IndexVersion2)},
		{"no sections", put32(28, 0)},
		{"six sections", put32(28, 6)},
		{"kind", put32(IndexHeaderSize, 9)},
		{"strings past the end", put32(strings+12, uint32(len(good)))},
		{"misaligned", put32(strings+8, le.Uint32(good[strings+8:])+1)},
		{"record count", put32(nics+4, le.Uint32(good[nics+4:])+1)},
		{"string offset", put32(nicData+12, 1<<30)},
		{"unsorted NICs", put32(nicData, 0xffffffff)},
		{"kernel not terminated", append(append(bytes.Clone(good[:64]), bytes.Repeat([]byte("x"), 72)...), good[136:]...)},
	} {
		if _, err := ReadIndex(tc.data); !errors.Is(err, ErrIndex) {
			t.Errorf("%s: %v, want ErrIndex", tc.name, err)
		}
	}
}

func FuzzReadIndex(f *testing.F) {
	_, file := exportTree(f, "intel-acs-switch")
	good, err := os.ReadFile(file + IndexSuffix)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:IndexHeaderSize])
	small := &Index{Kernel: "6.8.0", NICs: []IndexNIC{{Key: 0x4f00, Flags: NICReaches, Summary: "s"}},
		Dmabufs: []IndexDmabuf{{NIC: 0x4f00, Exporter: "nv_dmabuf", Dmabuf: Dmabuf{Decision: DmabufAllow}}}}
	f.Add(small.Marshal())
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := ReadIndex(data)
		if err != nil {
			if !errors.Is(err, ErrIndex) {
				t.Fatalf("error %v is not ErrIndex", err)
			}
			return
		}
		if _, err := ReadIndex(ix.Marshal()); err != nil {
			t.Fatalf("an accepted index does not survive a round trip: %v", err)
		}
	})
}

// TestReadIndexVersion2: an index of the previous version, which has no
// checked flag, is still read.
func TestReadIndexVersion2(t *testing.T) {
	_, file := exportTree(t, "intel-acs-switch")
	data, err := os.ReadFile(file + IndexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	le.PutUint32(data[8:], IndexVersion2)
	le.PutUint32(data[24:], 0)
	clear(data[136:192])
	ix, err := ReadIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Checked || ix.BootID != "" || ix.Tree != 0 || len(ix.NICs) == 0 {
		t.Errorf("version 2: checked %v, boot %q, tree %#x, %d NICs", ix.Checked, ix.BootID, ix.Tree, len(ix.NICs))
	}
}
