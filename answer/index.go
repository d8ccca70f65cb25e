// SPDX-License-Identifier: MIT

package answer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/efap2p/efap2p/internal/dmabuf"
	"github.com/efap2p/efap2p/p2p"
)

// The topology file's index (FILE.idx beside FILE) holds, for every NIC of
// the machine, what libefap2p's C front asks, in a form C reads without a
// parser: fixed-size little-endian records, sorted for binary search, and
// strings by offset into one NUL-separated blob. The C reader is
// shim/front/precomp.c; its checks and ReadIndex's are the same, and both
// are fuzzed. docs/topology-file.md describes the layout.
//
//	header (192 bytes)
//	  0  magic "EFAP2PIX"          8  version (u32)       12  header size (u32, 192)
//	 16  file size (u64)          24  flags (u32)         28  sections (u32)
//	 32  JSON size (u64)          40  JSON mtime, ns (u64) 48  JSON inode (u64)
//	 56  JSON ctime, ns (u64)
//	 64  kernel release (char[72], NUL-terminated)
//	136  boot ID (char[48], NUL-terminated; "" unless boot-bound or checked)
//	184  sysfs tree (u64; checked indexes: TreeID of the tree export read)
//	section table: one {kind, count, offset, size} (u32 each) per section
//	sections, 8-byte aligned, in table order, the strings last: functions,
//	NICs, dma-bufs, peers, strings
//
// A reader can read the header and the records at once and the strings
// (reasons and log lines, most of the file) only when it needs one. A
// dma-buf record whose NIC is AnyNIC holds the answer for every NIC of the
// index (an exporter of system memory, or one that owns no function).
//
// An index written for a file that outlives boots (an operator's) records
// the boot and the sysfs tree export read the machine in (IndexChecked):
// in that boot, on that tree, a reader takes its functions as checked and
// its NICs' names as this boot's, as for a boot-time index; in any other,
// it checks every function (version 2 indexes, which lack it, always do).
// A device hot-plugged after the export within that boot is not seen:
// export again, or enable the boot unit, whose file the udev rule rewrites.
//
// The index is bound to its JSON file by the JSON's inode, size,
// modification time and status-change time: a JSON file edited or
// replaced after the index was written makes the index stale, and the Go
// core then reads the JSON. The status-change time is what no one can set
// back (touch -d sets the modification time, and changes this one): an
// edit that keeps the size and restores the modification time is still
// seen. A copy (even cp -p) is stale too; export writes both files again.
// A hash of the JSON would bind it as well, but a reader would then read
// the whole JSON at every start, which the index is there to spare.
const (
	IndexMagic   = "EFAP2PIX"
	IndexVersion = 3
	// IndexVersion2 is the previous version (no checked flag), still read.
	IndexVersion2   = 2
	IndexHeaderSize = 192
	// IndexSuffix is appended to the topology file's name.
	IndexSuffix = ".idx"
)

// Header flags.
const (
	IndexBootBound = 1 << 0 // written at boot: the boot ID binds it
	IndexChecked   = 1 << 1 // written on this machine in boot BootID, on sysfs tree Tree
)

// Bounds on an index: a reader reads any up to MinIndexLimit, and past that
// what one for a machine of its size can hold (IndexLimit), so that no
// index export writes is refused on its machine; offsets are 32 bits.
const (
	MinIndexLimit = 16 << 20
	maxIndexSize  = 1<<32 - 1
)

// IndexLimit is the most a reader reads of an index on a machine of n PCI
// functions: each NIC's records for as many exporters as a front keeps
// (64) and a peer record, with its strings, for every ordered pair of
// functions. The C front applies the same formula.
func IndexLimit(n int) uint64 {
	return max(MinIndexLimit, 1<<20+uint64(n)*64*(dmabufSize+64)+uint64(n)*uint64(n)*256)
}

// TreeID names the sysfs tree at root as a checked index records it: a
// hash of the device and inode of its bus/pci/devices directory (the C
// front computes the same). 0 when it cannot be read.
func TreeID(root string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat(root+"/bus/pci/devices", &st); err != nil {
		return 0
	}
	var b [16]byte
	le.PutUint64(b[:], st.Dev)
	le.PutUint64(b[8:], st.Ino)
	h := uint64(14695981039346656037) // FNV-1a
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// Section kinds.
const (
	SectionStrings   = 1
	SectionFunctions = 2
	SectionNICs      = 3
	SectionDmabufs   = 4
	SectionPeers     = 5
	sectionKinds     = 5
)

// Record sizes.
const (
	sectionSize  = 16
	functionSize = 16
	nicSize      = 16 + nicNameLen
	nicNameLen   = 32
	attrSize     = 64
	dmabufSize   = 56 + attrSize
	peerSize     = 16 + attrSize

	kernelOff, kernelLen = 64, 72
	bootOff, bootLen     = 136, 48
	// MaxExporterName is the longest exporter name a dma-buf record
	// holds (inline, so that a lookup needs no string).
	MaxExporterName = 31
)

var recordSize = [sectionKinds + 1]int{SectionFunctions: functionSize, SectionNICs: nicSize, SectionDmabufs: dmabufSize, SectionPeers: peerSize}

// NIC flags.
const (
	NICReaches   = 1 << 0
	NICRefusable = 1 << 1
)

// JSONIdentity is what binds an index to its JSON file.
type JSONIdentity struct {
	Size    uint64
	MtimeNs uint64
	Ino     uint64
	CtimeNs uint64
}

// Index is a decoded index.
type Index struct {
	JSON      JSONIdentity
	BootBound bool
	// Checked: written on this machine in boot BootID, on the sysfs tree
	// Tree (TreeID), for a file that outlives boots.
	Checked   bool
	Tree      uint64
	Kernel    string
	BootID    string
	Functions []IndexFunction
	NICs      []IndexNIC
	Dmabufs   []IndexDmabuf
	Peers     []IndexPeer
}

// IndexFunction is a PCI function the index covers, with its IDs.
type IndexFunction struct {
	Key            uint64
	Vendor, Device uint16
}

// IndexNIC is a NIC's P2P_DMA bit and whether its registrations can be
// refused.
type IndexNIC struct {
	Key     uint64
	Flags   uint32
	Summary string
	// Name is the RDMA device's name when the index was written ("" if
	// longer than 31 bytes). A boot-bound index's names are this boot's:
	// the front maps a device to its record by name, without reading its
	// sysfs link (the udev rule rewrites the file when RDMA devices come,
	// go or are renamed).
	Name string
}

// IndexDmabuf is the registration decision for a (NIC, exporter) pair.
type IndexDmabuf struct {
	NIC      uint64
	Exporter string
	Dmabuf
}

// IndexPeer is the attr of a (NIC, peer) pair.
type IndexPeer struct {
	NIC, Peer uint64
	Attr
}

// AnyNIC is the NIC key of a dma-buf record that holds for every NIC.
const AnyNIC = ^uint64(0)

// Key packs a PCI address as the index (and the C front) key it:
// domain << 16 | bus << 8 | devfn.
func Key(a p2p.Addr) uint64 {
	return uint64(a.Domain)<<16 | uint64(a.Bus)<<8 | uint64(a.DevFn())
}

// BuildIndex works out the index for the topology file tf, read by the
// engine e (whose oracle reads tf), bound to the JSON file's identity id.
func BuildIndex(e *Engine, tf *p2p.TopologyFile, id JSONIdentity) (*Index, error) {
	return buildIndex(e, &tf.Machine, peersOf(tf), id)
}

// peersOf lists the providers of the file's pairs by client.
func peersOf(tf *p2p.TopologyFile) map[p2p.Addr][]p2p.Addr {
	out := map[p2p.Addr][]p2p.Addr{}
	for i := range tf.Pairs {
		p := &tf.Pairs[i]
		out[p.Client] = append(out[p.Client], p.Provider)
	}
	return out
}

// buildIndex is BuildIndex for the file's machine and its pairs' providers
// by client.
func buildIndex(e *Engine, m *p2p.TopoMachine, peersOf map[p2p.Addr][]p2p.Addr, id JSONIdentity) (*Index, error) {
	if e.Err() != nil {
		return nil, e.Err()
	}
	ix := &Index{JSON: id, BootBound: m.BootID != "", Kernel: m.Kernel, BootID: m.BootID}
	for _, f := range m.Functions {
		var v, d uint16
		if _, err := fmt.Sscanf(f.ID, "%04x:%04x", &v, &d); err != nil {
			return nil, fmt.Errorf("machine function %s: id %q: %w", f.Addr, f.ID, err)
		}
		ix.Functions = append(ix.Functions, IndexFunction{Key(f.Addr), v, d})
	}
	devs, err := e.sysfs.RDMADevices()
	if err != nil {
		return nil, err
	}
	drivers, err := e.sysfs.Drivers()
	if err != nil {
		return nil, err
	}
	exporters := map[string]bool{}
	for _, n := range dmabuf.ExporterNames() {
		exporters[n] = true
	}
	for _, d := range drivers {
		if d != "pcieport" {
			exporters[d] = true
		}
	}
	for n := range exporters {
		if len(n) > MaxExporterName || strings.IndexByte(n, 0) >= 0 {
			delete(exporters, n) // not covered: the core answers
		}
	}
	if len(ix.Kernel) >= kernelLen || len(ix.BootID) >= bootLen {
		return nil, fmt.Errorf("kernel release %q or boot ID %q too long for an index", ix.Kernel, ix.BootID)
	}
	names := make([]string, 0, len(exporters))
	for n := range exporters {
		names = append(names, n)
	}
	sort.Strings(names)
	// The NICs are independent: worked out side by side, kept in order.
	results := make([]nicRecords, len(devs))
	each(len(devs), func(i int) { results[i] = e.nicRecords(devs[i], names, peersOf[devs[i].Addr]) })
	perNIC := map[string][]IndexDmabuf{}
	for i := range results {
		r := &results[i]
		if !r.ok {
			continue // not covered: the core answers
		}
		ix.NICs = append(ix.NICs, r.nic)
		for j, exp := range names {
			perNIC[exp] = append(perNIC[exp], r.dmabufs[j])
		}
		ix.Peers = append(ix.Peers, r.peers...)
	}
	for exp, ds := range perNIC {
		if uniform(ds) {
			ix.Dmabufs = append(ix.Dmabufs, IndexDmabuf{NIC: AnyNIC, Exporter: exp, Dmabuf: ds[0].Dmabuf})
		} else {
			ix.Dmabufs = append(ix.Dmabufs, ds...)
		}
	}
	ix.sort()
	return ix, nil
}

// nicRecords are one NIC's records: its own, one for each exporter (in
// the order of the names asked for) and one for each peer.
type nicRecords struct {
	ok      bool
	nic     IndexNIC
	dmabufs []IndexDmabuf
	peers   []IndexPeer
}

// nicRecords works out the records of the RDMA device dev for the
// exporters names and the peers of its pairs in the file.
func (e *Engine) nicRecords(dev p2p.RDMADev, names []string, peers []p2p.Addr) nicRecords {
	nic, errno := e.NICAt(dev.Name, dev.Addr)
	if errno != 0 {
		return nicRecords{}
	}
	r := nicRecords{ok: true, nic: IndexNIC{Key: Key(dev.Addr), Summary: nic.Summary}}
	n := &r.nic
	if len(dev.Name) < nicNameLen && strings.IndexByte(dev.Name, 0) < 0 {
		n.Name = dev.Name
	}
	if nic.Reaches {
		n.Flags |= NICReaches
	}
	// each (NIC, exporter) decision once: the refusable flag and the
	// records read the same ones
	type decision struct {
		d   *p2p.DmabufDecision
		err error
	}
	decided := map[string]decision{}
	decide := func(exp string) (*p2p.DmabufDecision, error) {
		d, ok := decided[exp]
		if !ok {
			d.d, d.err = e.oracle.Dmabuf(dev.Addr, exp)
			decided[exp] = d
		}
		return d.d, d.err
	}
	if e.refusableWith(decide) {
		n.Flags |= NICRefusable
	}
	for _, exp := range names {
		dd, err := decide(exp)
		d := e.dmabufOf(dev.Name, dev.Addr, exp, dd, err)
		if d.Decision == DmabufPass {
			// what the front does with a pass: the real function, or
			// the errno; the rest is for nobody
			d = Dmabuf{Decision: DmabufPass, Err: d.Err}
		}
		r.dmabufs = append(r.dmabufs, IndexDmabuf{NIC: n.Key, Exporter: exp, Dmabuf: d})
	}
	for _, peer := range peers {
		if a, errno := e.PeerAt(dev.Addr, peer); errno == 0 {
			r.peers = append(r.peers, IndexPeer{NIC: n.Key, Peer: Key(peer), Attr: a})
		}
	}
	return r
}

// each calls f(0) to f(n-1), on as many goroutines as the process has Ps.
func each(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// uniform reports whether every NIC gets the same pass.
func uniform(ds []IndexDmabuf) bool {
	for _, d := range ds {
		if d.Decision != DmabufPass || d.Dmabuf != ds[0].Dmabuf {
			return false
		}
	}
	return len(ds) > 0
}

// Dmabuf returns the record for (nic, exp): the NIC's own, else the one
// for any NIC.
func (ix *Index) Dmabuf(nic uint64, exp string) (*IndexDmabuf, bool) {
	for _, k := range []uint64{nic, AnyNIC} {
		i := sort.Search(len(ix.Dmabufs), func(i int) bool {
			d := &ix.Dmabufs[i]
			return d.NIC > k || (d.NIC == k && d.Exporter >= exp)
		})
		if i < len(ix.Dmabufs) && ix.Dmabufs[i].NIC == k && ix.Dmabufs[i].Exporter == exp {
			return &ix.Dmabufs[i], true
		}
	}
	return nil, false
}

func (ix *Index) sort() {
	sort.Slice(ix.Functions, func(i, j int) bool { return ix.Functions[i].Key < ix.Functions[j].Key })
	sort.Slice(ix.NICs, func(i, j int) bool { return ix.NICs[i].Key < ix.NICs[j].Key })
	sort.Slice(ix.Dmabufs, func(i, j int) bool { return dmabufLess(&ix.Dmabufs[i], &ix.Dmabufs[j]) })
	sort.Slice(ix.Peers, func(i, j int) bool {
		a, b := &ix.Peers[i], &ix.Peers[j]
		return a.NIC < b.NIC || (a.NIC == b.NIC && a.Peer < b.Peer)
	})
}

func dmabufLess(a, b *IndexDmabuf) bool {
	return a.NIC < b.NIC || (a.NIC == b.NIC && strings.Compare(a.Exporter, b.Exporter) < 0)
}

// strtab collects strings once each; offset 0 is "".
type strtab struct {
	buf bytes.Buffer
	at  map[string]uint32
}

func (t *strtab) ref(s string) uint32 {
	if t.at == nil {
		t.at = map[string]uint32{"": 0}
		t.buf.WriteByte(0)
	}
	if off, ok := t.at[s]; ok {
		return off
	}
	off := uint32(t.buf.Len())
	t.buf.WriteString(s)
	t.buf.WriteByte(0)
	t.at[s] = off
	return off
}

var le = binary.LittleEndian

func putAttr(b []byte, a *Attr, strs *strtab) {
	at := &a.Attr
	for i, v := range []uint32{at.MapType, uint32(at.Distance), at.Path, at.Outcome, at.Policy, at.Source,
		at.BandwidthMBs, at.LatencyNs, at.Flags, at.PeerDomain} {
		le.PutUint32(b[4*i:], v)
	}
	b[40], b[41] = at.PeerBus, at.PeerDevFn
	le.PutUint32(b[44:], strs.ref(a.Reason))
	le.PutUint32(b[48:], at.PeerMemOutcome)
	le.PutUint32(b[52:], at.PeerMemProvider)
	le.PutUint32(b[56:], strs.ref(a.Kernel))
}

func getAttr(b []byte, strs []byte) (Attr, error) {
	var a Attr
	at := &a.Attr
	for i, p := range []*uint32{&at.MapType, nil, &at.Path, &at.Outcome, &at.Policy, &at.Source,
		&at.BandwidthMBs, &at.LatencyNs, &at.Flags, &at.PeerDomain} {
		if p != nil {
			*p = le.Uint32(b[4*i:])
		}
	}
	at.Distance = int32(le.Uint32(b[4:]))
	at.PeerBus, at.PeerDevFn = b[40], b[41]
	at.PeerMemOutcome, at.PeerMemProvider = le.Uint32(b[48:]), le.Uint32(b[52:])
	var err error
	if a.Reason, err = str(strs, le.Uint32(b[44:])); err != nil {
		return a, err
	}
	a.Kernel, err = str(strs, le.Uint32(b[56:]))
	return a, err
}

// Marshal encodes the index.
func (ix *Index) Marshal() []byte {
	var strs strtab
	strs.ref("")
	var secs [sectionKinds + 1][]byte
	counts := [sectionKinds + 1]int{}
	for _, f := range ix.Functions {
		b := make([]byte, functionSize)
		le.PutUint64(b, f.Key)
		le.PutUint16(b[8:], f.Vendor)
		le.PutUint16(b[10:], f.Device)
		secs[SectionFunctions] = append(secs[SectionFunctions], b...)
	}
	for _, n := range ix.NICs {
		b := make([]byte, nicSize)
		le.PutUint64(b, n.Key)
		le.PutUint32(b[8:], n.Flags)
		le.PutUint32(b[12:], strs.ref(n.Summary))
		copy(b[16:16+nicNameLen-1], n.Name)
		secs[SectionNICs] = append(secs[SectionNICs], b...)
	}
	for i := range ix.Dmabufs {
		d := &ix.Dmabufs[i]
		b := make([]byte, dmabufSize)
		le.PutUint64(b, d.NIC)
		copy(b[8:40], d.Exporter)
		le.PutUint32(b[40:], uint32(int32(d.Decision)))
		le.PutUint32(b[44:], uint32(d.Err))
		if d.AllAllowed {
			le.PutUint32(b[48:], 1)
		}
		le.PutUint32(b[52:], strs.ref(d.Summary))
		putAttr(b[56:], &d.Best, &strs)
		secs[SectionDmabufs] = append(secs[SectionDmabufs], b...)
	}
	for i := range ix.Peers {
		p := &ix.Peers[i]
		b := make([]byte, peerSize)
		le.PutUint64(b, p.NIC)
		le.PutUint64(b[8:], p.Peer)
		putAttr(b[16:], &p.Attr, &strs)
		secs[SectionPeers] = append(secs[SectionPeers], b...)
	}
	secs[SectionStrings] = strs.buf.Bytes()
	counts[SectionFunctions], counts[SectionNICs] = len(ix.Functions), len(ix.NICs)
	counts[SectionDmabufs], counts[SectionPeers] = len(ix.Dmabufs), len(ix.Peers)

	off := IndexHeaderSize + sectionKinds*sectionSize
	order := []int{SectionFunctions, SectionNICs, SectionDmabufs, SectionPeers, SectionStrings}
	out := make([]byte, off)
	copy(out, IndexMagic)
	le.PutUint32(out[8:], IndexVersion)
	le.PutUint32(out[12:], IndexHeaderSize)
	var flags uint32
	if ix.BootBound {
		flags |= IndexBootBound
	}
	if ix.Checked {
		flags |= IndexChecked
	}
	le.PutUint32(out[24:], flags)
	le.PutUint64(out[184:], ix.Tree)
	le.PutUint32(out[28:], sectionKinds)
	le.PutUint64(out[32:], ix.JSON.Size)
	le.PutUint64(out[40:], ix.JSON.MtimeNs)
	le.PutUint64(out[48:], ix.JSON.Ino)
	le.PutUint64(out[56:], ix.JSON.CtimeNs)
	copy(out[kernelOff:kernelOff+kernelLen-1], ix.Kernel)
	copy(out[bootOff:bootOff+bootLen-1], ix.BootID)
	for i, k := range order {
		for len(out)%8 != 0 {
			out = append(out, 0)
		}
		t := out[IndexHeaderSize+i*sectionSize:]
		le.PutUint32(t, uint32(k))
		le.PutUint32(t[4:], uint32(counts[k]))
		le.PutUint32(t[8:], uint32(len(out)))
		le.PutUint32(t[12:], uint32(len(secs[k])))
		out = append(out, secs[k]...)
	}
	le.PutUint64(out[16:], uint64(len(out)))
	return out
}

// ErrIndex is wrapped by every error about a malformed index.
var ErrIndex = errors.New("malformed topology index")

func indexErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrIndex, fmt.Sprintf(format, args...))
}

// str returns the NUL-terminated string at off in the blob.
func str(strs []byte, off uint32) (string, error) {
	if uint64(off) >= uint64(len(strs)) {
		return "", indexErr("string offset %d past the strings (%d bytes)", off, len(strs))
	}
	end := bytes.IndexByte(strs[off:], 0)
	return string(strs[off : int(off)+end]), nil
}

// inline returns the NUL-terminated string of a fixed field.
func inline(b []byte) (string, error) {
	n := bytes.IndexByte(b, 0)
	if n < 0 {
		return "", indexErr("a %d-byte name is not NUL-terminated", len(b))
	}
	return string(b[:n]), nil
}

// ReadIndex decodes and checks an index of version 3 or 2, as the C front
// does: every offset, length and count within the file, records sorted,
// strings terminated. It never reads out of bounds, whatever data holds.
// How much of a file to read is the reader's (IndexLimit).
func ReadIndex(data []byte) (*Index, error) {
	if len(data) < IndexHeaderSize || uint64(len(data)) > maxIndexSize {
		return nil, indexErr("%d bytes", len(data))
	}
	if string(data[:8]) != IndexMagic {
		return nil, indexErr("no %s magic", IndexMagic)
	}
	version := le.Uint32(data[8:])
	if version != IndexVersion && version != IndexVersion2 {
		return nil, indexErr("version %d, this build reads %d and %d", version, IndexVersion2, IndexVersion)
	}
	if le.Uint32(data[12:]) != IndexHeaderSize || le.Uint64(data[16:]) != uint64(len(data)) {
		return nil, indexErr("header or file size does not match the file")
	}
	flags := le.Uint32(data[24:])
	n := le.Uint32(data[28:])
	known := uint32(IndexBootBound | IndexChecked)
	if version == IndexVersion2 {
		known = IndexBootBound
	}
	if flags&^known != 0 || flags == IndexBootBound|IndexChecked || n == 0 || n > sectionKinds {
		return nil, indexErr("flags %#x, %d sections", flags, n)
	}
	tableEnd := uint64(IndexHeaderSize) + uint64(n)*sectionSize
	if tableEnd > uint64(len(data)) {
		return nil, indexErr("section table past the end")
	}
	var secs [sectionKinds + 1][]byte
	var counts [sectionKinds + 1]int
	end := tableEnd // sections follow each other in table order
	for i := uint32(0); i < n; i++ {
		t := data[IndexHeaderSize+i*sectionSize:]
		kind, count, off, size := le.Uint32(t), le.Uint32(t[4:]), uint64(le.Uint32(t[8:])), uint64(le.Uint32(t[12:]))
		if kind == 0 || kind > sectionKinds || secs[kind] != nil || (kind == SectionStrings) != (i == n-1) {
			return nil, indexErr("section %d: kind %d (the strings come last)", i, kind)
		}
		if off%8 != 0 || off < end || off+size > uint64(len(data)) {
			return nil, indexErr("section %d: %d bytes at %d", kind, size, off)
		}
		end = off + size
		if kind == SectionStrings {
			if count != 0 || size == 0 || data[off] != 0 || data[off+size-1] != 0 {
				return nil, indexErr("strings: %d bytes, not NUL-delimited", size)
			}
		} else if uint64(count)*uint64(recordSize[kind]) != size {
			return nil, indexErr("section %d: %d records in %d bytes", kind, count, size)
		}
		secs[kind], counts[kind] = data[off:off+size:off+size], int(count)
	}
	strs := secs[SectionStrings]
	if strs == nil {
		return nil, indexErr("no strings")
	}
	ix := &Index{BootBound: flags&IndexBootBound != 0, Checked: flags&IndexChecked != 0,
		JSON: JSONIdentity{le.Uint64(data[32:]), le.Uint64(data[40:]), le.Uint64(data[48:]), le.Uint64(data[56:])}}
	var err error
	if ix.Kernel, err = inline(data[kernelOff : kernelOff+kernelLen]); err != nil {
		return nil, err
	}
	if ix.BootID, err = inline(data[bootOff : bootOff+bootLen]); err != nil {
		return nil, err
	}
	if (ix.BootBound || ix.Checked) != (ix.BootID != "") {
		return nil, indexErr("boot flags and boot ID disagree")
	}
	if version != IndexVersion2 {
		ix.Tree = le.Uint64(data[184:])
	}
	for i := 0; i < counts[SectionFunctions]; i++ {
		b := secs[SectionFunctions][i*functionSize:]
		f := IndexFunction{le.Uint64(b), le.Uint16(b[8:]), le.Uint16(b[10:])}
		if i > 0 && f.Key <= ix.Functions[i-1].Key {
			return nil, indexErr("functions not sorted")
		}
		ix.Functions = append(ix.Functions, f)
	}
	for i := 0; i < counts[SectionNICs]; i++ {
		b := secs[SectionNICs][i*nicSize:]
		nic := IndexNIC{Key: le.Uint64(b), Flags: le.Uint32(b[8:])}
		if nic.Summary, err = str(strs, le.Uint32(b[12:])); err != nil {
			return nil, err
		}
		if nic.Name, err = inline(b[16 : 16+nicNameLen]); err != nil {
			return nil, err
		}
		if nic.Flags&^(NICReaches|NICRefusable) != 0 || (i > 0 && nic.Key <= ix.NICs[i-1].Key) {
			return nil, indexErr("NIC %d: flags %#x or not sorted", i, nic.Flags)
		}
		ix.NICs = append(ix.NICs, nic)
	}
	for i := 0; i < counts[SectionDmabufs]; i++ {
		b := secs[SectionDmabufs][i*dmabufSize:]
		d := IndexDmabuf{NIC: le.Uint64(b)}
		if d.Exporter, err = inline(b[8:40]); err != nil {
			return nil, err
		}
		d.Decision = int(int32(le.Uint32(b[40:])))
		d.Err = errnoFrom(le.Uint32(b[44:]))
		d.AllAllowed = le.Uint32(b[48:]) != 0
		if d.Summary, err = str(strs, le.Uint32(b[52:])); err != nil {
			return nil, err
		}
		if d.Best, err = getAttr(b[56:], strs); err != nil {
			return nil, err
		}
		if d.Exporter == "" || d.Decision < DmabufPass || d.Decision > DmabufAllow || (i > 0 && !dmabufLess(&ix.Dmabufs[i-1], &d)) {
			return nil, indexErr("dma-buf %d: decision %d or not sorted", i, d.Decision)
		}
		ix.Dmabufs = append(ix.Dmabufs, d)
	}
	for i := 0; i < counts[SectionPeers]; i++ {
		b := secs[SectionPeers][i*peerSize:]
		p := IndexPeer{NIC: le.Uint64(b), Peer: le.Uint64(b[8:])}
		if p.Attr, err = getAttr(b[16:], strs); err != nil {
			return nil, err
		}
		if i > 0 {
			q := &ix.Peers[i-1]
			if p.NIC < q.NIC || (p.NIC == q.NIC && p.Peer <= q.Peer) {
				return nil, indexErr("peers not sorted")
			}
		}
		ix.Peers = append(ix.Peers, p)
	}
	return ix, nil
}

// errnoFrom reads a stored errno; one past the kernel's range (4095) is
// malformed and read as EIO.
func errnoFrom(v uint32) syscall.Errno {
	if v > 4095 {
		return syscall.EIO
	}
	return syscall.Errno(v)
}
