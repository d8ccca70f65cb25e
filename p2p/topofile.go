// SPDX-License-Identifier: MIT

package p2p

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/efap2p/efap2p/internal/jsonline"
)

// Topology file format: what `efap2p export` writes, run as root (once by
// an operator, or at every boot by efap2p-topology.service), and every
// process reads instead of computing (and instead of needing config
// space). See docs/topology-file.md.
const (
	TopologyFileFormat  = "efap2p-topology"
	TopologyFileVersion = 3
	// TopologyFileVersion2 is the previous version (pairs as objects),
	// still read.
	TopologyFileVersion2 = 2
)

// TopologyFile is a machine's precomputed P2P verdicts and the facts sysfs
// cannot show.
type TopologyFile struct {
	Format      string `json:"format"`
	Version     int    `json:"version"`
	GeneratedBy string `json:"generated_by,omitempty"`
	Generated   string `json:"generated,omitempty"` // RFC 3339
	Host        string `json:"host,omitempty"`
	// Machine records what the verdicts were computed from, so that a
	// reader can tell a file that does not describe its machine.
	Machine TopoMachine `json:"machine"`
	// NICs records per-NIC facts; PeerAccessBlocked marks a NIC whose
	// firmware refuses DMA to every peer.
	NICs []TopoNIC `json:"nics"`
	// Accelerators lists the functions to treat as accelerators, beyond
	// PCI classes 03 and 12.
	Accelerators []TopoAccelerator `json:"accelerators"`
	Pairs        []TopoPair        `json:"pairs"`
}

// TopoMachine is the machine a topology file describes.
type TopoMachine struct {
	// Kernel is the kernel release the verdicts were decided for (uname
	// -r); "" for a file meant for any kernel.
	Kernel string `json:"kernel"`
	// KernelConfig is whether that kernel has PCI_P2PDMA, as the writer
	// found out (absent when it could not tell).
	KernelConfig *KernelConfig `json:"kernel_config,omitempty"`
	// BootID binds a file written at boot to that boot
	// (/proc/sys/kernel/random/boot_id): a reader of another boot ignores
	// it. "" for an operator's file, which outlives boots.
	BootID string `json:"boot_id,omitempty"`
	// Functions are the PCI functions the file speaks of, with their IDs:
	// a file whose functions are absent or different here is not used.
	Functions []TopoFunction `json:"functions"`
}

// TopoFunction is one PCI function a topology file covers.
type TopoFunction struct {
	Addr Addr `json:"addr"`
	// ID is "vendor:device" in hex, as lspci -n prints it ("10de:2330").
	ID string `json:"id"`
}

// TopoNIC is one NIC of a topology file.
type TopoNIC struct {
	Addr              Addr   `json:"addr"`
	IBDev             string `json:"ibdev,omitempty"`
	PeerAccessBlocked bool   `json:"peer_access_blocked"`
	Note              string `json:"note,omitempty"`
}

// TopoAccelerator is one accelerator of a topology file.
type TopoAccelerator struct {
	Addr   Addr   `json:"addr"`
	Driver string `json:"driver,omitempty"`
	Vendor string `json:"vendor,omitempty"`
	Device string `json:"device,omitempty"`
}

// TopoPair is one verdict of a topology file.
type TopoPair struct {
	Provider     Addr      `json:"provider"`
	Client       Addr      `json:"client"`
	MapType      MapType   `json:"map_type"`
	Distance     int       `json:"distance"`
	Path         PathClass `json:"path"`
	Policy       Policy    `json:"policy,omitempty"`
	Outcome      Outcome   `json:"outcome"`
	BandwidthMBs int       `json:"bandwidth_mbs,omitempty"`
	LatencyNs    int       `json:"latency_ns,omitempty"`
	ACSRedirect  []Addr    `json:"acs_redirect,omitempty"`
	Reason       string    `json:"reason,omitempty"`
}

// Bounds on what a reader reads of a topology file. Every file up to
// minTopologyFileLimit is read; beyond it, the limit is what a file of a
// machine of this size can hold: a pair for every ordered pair of its PCI
// functions, each with a long reason, so that no file export writes for a
// machine is ever refused on it, however large the machine.
const (
	minTopologyFileLimit = 64 << 20
	maxPairBytes         = 4 << 10
)

// topologyFileLimit is the most a reader reads of a topology file on a
// machine of n PCI functions.
func topologyFileLimit(n int) int {
	return max(minTopologyFileLimit, 1<<20+n*maxPairBytes+n*(n-1)*maxPairBytes)
}

// sysfsFunctions counts the PCI functions of the machine at SysfsRoot, 0
// when it cannot be read.
func sysfsFunctions() int {
	s, err := OpenSysfs(SysfsRoot())
	if err != nil {
		return 0
	}
	fns, _ := s.Functions()
	return len(fns)
}

// ErrTopologyFile is wrapped by every error about a topology file.
var ErrTopologyFile = errors.New("bad topology file")

// topoError is an error about a topology file: its text starts with the
// file's name (and line), and it wraps ErrTopologyFile and its kind.
type topoError struct {
	msg  string
	errs []error
}

func (e *topoError) Error() string   { return e.msg }
func (e *topoError) Unwrap() []error { return e.errs }

// topoErrorf returns a topoError of the given kind (nil for a malformed
// file); %w verbs in format are wrapped too.
func topoErrorf(kind error, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	errs := []error{ErrTopologyFile}
	if kind != nil {
		errs = append(errs, kind)
	}
	if inner := errors.Unwrap(err); inner != nil {
		errs = append(errs, inner)
	}
	return &topoError{msg: err.Error(), errs: errs}
}

// ReadTopologyFile reads and validates a topology file, of version 3 or
// 2. Errors name the file and line. A file is read up to what one of this
// machine's (SysfsRoot's) size can hold.
func ReadTopologyFile(name string) (*TopologyFile, error) {
	data, err := readTopologyData(name, sysfsFunctions)
	if err != nil {
		return nil, topoErrorf(nil, "%w", err)
	}
	return ParseTopologyFile(data, name)
}

// readTopologyData reads a topology file up to 64 MiB, or, past that, up
// to what a machine of functions() PCI functions can hold.
func readTopologyData(name string, functions func() int) ([]byte, error) {
	data, _, err := readTopologyFileStat(name, functions)
	return data, err
}

func readTopologyFileStat(name string, functions func() int) ([]byte, syscall.Stat_t, error) {
	fd, st, err := openStat(name, false)
	if err != nil {
		return nil, st, err
	}
	defer syscall.Close(fd)
	limit := minTopologyFileLimit
	if st.Size > int64(limit) {
		limit = topologyFileLimit(functions())
	}
	data, err := readAll(fd, name, st.Size, limit)
	return data, st, err
}

// lineAt is the 1-based line of offset off.
func lineAt(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

// decodeMember decodes the member m of the document data into dst,
// refusing unknown fields; an error starts with the line ("12: ...").
func decodeMember(data []byte, m *member, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(m.val))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%d: %w", lineAt(data, m.off)-1+jsonline.Line(m.val, dec.InputOffset(), err), err)
	}
	return nil
}

// ParseTopologyFile decodes and validates a topology file's contents, of
// version 3 or 2; name is used in errors. It takes time linear in the size
// of data.
func ParseTopologyFile(data []byte, name string) (*TopologyFile, error) {
	// A decoder copies what it reads into a buffer of its own, and the
	// pairs are most of the file: its members are found where they lie,
	// each decoded strictly on its own, the pairs by version.
	if !json.Valid(data) {
		dec := json.NewDecoder(bytes.NewReader(data))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, topoErrorf(nil, "%s:%d: %w", name, jsonline.Line(data, dec.InputOffset(), err), err)
		}
		return nil, topoErrorf(nil, "%s:%d: data after the topology", name, jsonline.Line(data, dec.InputOffset(), nil))
	}
	members, ok := objectMembers(data)
	if !ok {
		return nil, topoErrorf(nil, "%s:1: the topology is not a JSON object", name)
	}
	tf := &TopologyFile{}
	var reasons []string
	var pairs *member
	for i := range members {
		m := &members[i]
		var dst any
		switch m.key {
		case "format":
			dst = &tf.Format
		case "version":
			dst = &tf.Version
		case "generated_by":
			dst = &tf.GeneratedBy
		case "generated":
			dst = &tf.Generated
		case "host":
			dst = &tf.Host
		case "machine":
			dst = &tf.Machine
		case "nics":
			dst = &tf.NICs
		case "accelerators":
			dst = &tf.Accelerators
		case "reasons":
			dst = &reasons
		case "pairs":
			pairs = m
			continue
		default:
			return nil, topoErrorf(nil, "%s:%d: json: unknown field %q", name, lineAt(data, m.off), m.key)
		}
		if err := decodeMember(data, m, dst); err != nil {
			return nil, topoErrorf(nil, "%s:%w", name, err)
		}
	}
	if tf.Format != TopologyFileFormat {
		return nil, topoErrorf(nil, "%s:1: format %q is not %q", name, tf.Format, TopologyFileFormat)
	}
	switch tf.Version {
	case TopologyFileVersion:
		if pairs != nil && !bytes.Equal(pairs.val, []byte("null")) {
			p, err := readRows(pairs.val, tf.Machine.Functions, reasons)
			var re *rowError
			if errors.As(err, &re) {
				return nil, topoErrorf(nil, "%s:%d: %v", name, lineOfIndex(data, "", "pairs", re.row), err)
			}
			if err != nil {
				return nil, topoErrorf(nil, "%s:%d: %v", name, lineAt(data, pairs.off), err)
			}
			tf.Pairs = p
		}
	case TopologyFileVersion2:
		if reasons != nil {
			return nil, topoErrorf(nil, "%s:1: json: unknown field \"reasons\" (a version %d field)", name, TopologyFileVersion)
		}
		if pairs != nil {
			if err := decodeMember(data, pairs, &tf.Pairs); err != nil {
				return nil, topoErrorf(nil, "%s:%w", name, err)
			}
		}
	default:
		return nil, topoErrorf(nil, "%s:1: version %d is not supported (this build reads versions %d and %d; write a new one with `efap2p export`)", name, tf.Version, TopologyFileVersion2, TopologyFileVersion)
	}
	for i, f := range tf.Machine.Functions {
		if _, _, ok := parseDeviceID(f.ID); !ok {
			return nil, topoErrorf(nil, "%s:%d: machine.functions[%d]: id %q is not vendor:device in hex", name, lineOfIndex(data, "machine", "functions", i), i, f.ID)
		}
	}
	if k := tf.Machine.KernelConfig; k != nil && k.P2PDMA == BuiltUnknown {
		return nil, topoErrorf(nil, "%s:%d: machine.kernel_config: pci_p2pdma is \"y\" or \"n\" (leave kernel_config out when it is not known)", name, lineOfIndex(data, "", "machine", 0))
	}
	// a 64-bit key hashes fast: a file may hold hundreds of thousands
	seen := make(map[uint64]struct{}, len(tf.Pairs))
	wide := map[pair]struct{}{}
	twice := func(p *TopoPair) bool {
		if k, narrow := pairKey(p.Provider, p.Client); narrow {
			_, dup := seen[k]
			seen[k] = struct{}{}
			return dup
		}
		k := pair{p.Provider, p.Client}
		_, dup := wide[k]
		wide[k] = struct{}{}
		return dup
	}
	for i := range tf.Pairs {
		p := &tf.Pairs[i]
		var why string
		switch {
		case !p.MapType.Supported() && p.MapType != MapNotSupported:
			why = "map_type is missing"
		case p.Outcome == OutcomeUnknown:
			why = "outcome is missing (p2p, bounced or refused)"
		case p.Distance < 0:
			why = "negative distance"
		case twice(p):
			why = fmt.Sprintf("%s -> %s listed twice", p.Provider, p.Client)
		}
		if why != "" {
			return nil, topoErrorf(nil, "%s:%d: pairs[%d]: %s", name, lineOfIndex(data, "", "pairs", i), i, why)
		}
	}
	return tf, nil
}

// parseDeviceID parses "10de:2330".
func parseDeviceID(s string) (vendor, device uint16, ok bool) {
	v, d, found := strings.Cut(s, ":")
	if !found || len(v) != 4 || len(d) != 4 {
		return 0, 0, false
	}
	vv, err1 := strconv.ParseUint(v, 16, 16)
	dd, err2 := strconv.ParseUint(d, 16, 16)
	return uint16(vv), uint16(dd), err1 == nil && err2 == nil
}

// lineOfIndex finds the line of the i-th element of the array key, a
// member of the top-level object (parent "") or of its member object
// parent, for an error found after decoding: one pass over the file, made
// only once an error is known. It returns 1 when it cannot tell.
func lineOfIndex(data []byte, parent, key string, i int) int {
	type frame struct {
		object    bool
		expectKey bool
		key       string // objects: the member being read
		name      string // the member this value is in its parent ("" at the top)
		elems     int    // arrays: elements opened so far
	}
	want := []string{key}
	if parent != "" {
		want = []string{parent, key}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []frame
	// at reports whether the frames name exactly the path want.
	at := func() bool {
		if len(stack) != len(want)+1 || !stack[0].object {
			return false
		}
		for j, w := range want {
			if stack[j+1].name != w {
				return false
			}
		}
		return true
	}
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return 1
		}
		d, isDelim := tok.(json.Delim)
		switch {
		case isDelim && (d == '{' || d == '['):
			name := ""
			if n := len(stack); n > 0 {
				top := &stack[n-1]
				if top.object {
					name = top.key
				} else {
					if at() && !top.object && top.elems == i {
						return jsonline.Line(data, dec.InputOffset(), nil)
					}
					top.elems++
				}
			}
			stack = append(stack, frame{object: d == '{', expectKey: d == '{', name: name})
		case isDelim:
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			n := len(stack)
			if n > 0 && stack[n-1].object && stack[n-1].expectKey {
				stack[n-1].key, stack[n-1].expectKey = tok.(string), false
				continue
			}
			valueDone()
		}
	}
}

// Marshal returns the file in the current version's layout: one line per
// PCI function, NIC and accelerator, one row per pair, then the reasons
// (when any pair has one), each listed once.
func (tf *TopologyFile) Marshal() ([]byte, error) {
	head := struct {
		Format      string `json:"format"`
		Version     int    `json:"version"`
		GeneratedBy string `json:"generated_by,omitempty"`
		Generated   string `json:"generated,omitempty"`
		Host        string `json:"host,omitempty"`
	}{tf.Format, TopologyFileVersion, tf.GeneratedBy, tf.Generated, tf.Host}
	hb, err := json.MarshalIndent(head, "", "  ")
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 4096+64*len(tf.Machine.Functions)+80*len(tf.Pairs))
	b = append(b, hb[:len(hb)-2]...) // without the closing brace
	b = append(b, ",\n  \"machine\": {\n    \"kernel\": "...)
	b = strconv.AppendQuote(b, tf.Machine.Kernel)
	if k := tf.Machine.KernelConfig; k != nil {
		kb, err := json.MarshalIndent(k, "    ", "  ")
		if err != nil {
			return nil, err
		}
		b = append(append(b, ",\n    \"kernel_config\": "...), kb...)
	}
	if tf.Machine.BootID != "" {
		b = append(b, ",\n    \"boot_id\": "...)
		b = strconv.AppendQuote(b, tf.Machine.BootID)
	}
	b = append(b, ",\n    \"functions\": "...)
	if b, err = appendList(b, "      ", tf.Machine.Functions); err != nil {
		return nil, err
	}
	b = append(b, "\n  },\n  \"nics\": "...)
	if b, err = appendList(b, "    ", tf.NICs); err != nil {
		return nil, err
	}
	b = append(b, ",\n  \"accelerators\": "...)
	if b, err = appendList(b, "    ", tf.Accelerators); err != nil {
		return nil, err
	}
	// the rows first, the reasons they name after them: rows go straight
	// into the file as they are made
	var reasons []string
	b = append(b, ",\n  \"pairs\": "...)
	b = appendRows(b, tf, &reasons)
	if len(reasons) > 0 {
		b = append(b, ",\n  \"reasons\": "...)
		if b, err = appendList(b, "    ", reasons); err != nil {
			return nil, err
		}
	}
	return append(b, "\n}\n"...), nil
}

// appendList writes a list one compact element a line.
func appendList[T any](b []byte, indent string, list []T) ([]byte, error) {
	b = append(b, '[')
	for i := range list {
		e, err := json.Marshal(list[i])
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		b = append(b, indent...)
		b = append(b, e...)
	}
	if len(list) > 0 {
		b = append(b, '\n')
		b = append(b, indent[:len(indent)-2]...)
	}
	return append(b, ']'), nil
}

// index is a topology file ready for lookups.
type topoIndex struct {
	name string
	tf   *TopologyFile
	// the pairs, by pairKey (a small key hashes fast: a file may hold
	// hundreds of thousands), and those with a domain past 16 bits
	pairs   map[uint64]int32
	wide    map[pair]int32
	blocked map[Addr]*TopoNIC
	accels  []Addr
	// the functions some pair has as provider: most questions (a
	// dma-buf's candidates, of every driver) have none, and a small map
	// answers them before the large one is hashed into
	providers map[Addr]struct{}
	kconfig   *KernelConfig // what the writer knew of the kernel's config
}

// pair returns the recorded pair (provider, client), or nil.
func (ix *topoIndex) pair(provider, client Addr) *TopoPair {
	if _, ok := ix.providers[provider]; !ok {
		return nil
	}
	i, ok := int32(0), false
	if k, narrow := pairKey(provider, client); narrow {
		i, ok = ix.pairs[k]
	} else {
		i, ok = ix.wide[pair{provider, client}]
	}
	if !ok {
		return nil
	}
	return &ix.tf.Pairs[i]
}

func newTopoIndex(tf *TopologyFile, name string) *topoIndex {
	ix := &topoIndex{name: name, tf: tf, pairs: make(map[uint64]int32, len(tf.Pairs)), wide: map[pair]int32{},
		blocked: map[Addr]*TopoNIC{}, providers: map[Addr]struct{}{}, kconfig: tf.Machine.KernelConfig}
	for i := range tf.Pairs {
		p := &tf.Pairs[i]
		ix.providers[p.Provider] = struct{}{}
		if k, narrow := pairKey(p.Provider, p.Client); narrow {
			ix.pairs[k] = int32(i)
		} else {
			ix.wide[pair{p.Provider, p.Client}] = int32(i)
		}
	}
	for i := range tf.NICs {
		if tf.NICs[i].PeerAccessBlocked {
			ix.blocked[tf.NICs[i].Addr] = &tf.NICs[i]
		}
	}
	for _, a := range tf.Accelerators {
		ix.accels = append(ix.accels, a.Addr)
	}
	return ix
}

// verdict turns a recorded pair into a Verdict; explain writes its Reason.
func (ix *topoIndex) verdict(tp *TopoPair, explain bool) *Verdict {
	v := &Verdict{
		Provider: tp.Provider, Client: tp.Client,
		MapType: tp.MapType, Distance: tp.Distance, Path: tp.Path,
		Rule: RuleTopologyFile, ACSRedirect: append([]Addr{}, tp.ACSRedirect...),
		Exact: true, Certain: true, Policy: tp.Policy, Outcome: tp.Outcome,
		Source: SourceTopologyFile, fig: fixedFigures(tp.BandwidthMBs, tp.LatencyNs), explain: explain,
	}
	if ix.kconfig != nil {
		v.KernelP2PDMA = ix.kconfig.P2PDMA
	}
	if explain {
		v.Reason = fmt.Sprintf("The topology file %s records this pair's dma-buf path as %s (%s, distance %d).", ix.name, tp.Outcome, tp.MapType, tp.Distance)
		if tp.Reason != "" {
			v.addReason("Recorded reason: " + tp.Reason)
		}
	}
	if n, ok := ix.blocked[tp.Client]; ok && v.Outcome != OutcomeRefused {
		v.Outcome = OutcomeRefused
		if explain {
			v.addReason(blockedReason(ix.name, n))
		}
	}
	return v
}

func blockedReason(file string, n *TopoNIC) string {
	s := fmt.Sprintf("The topology file %s marks NIC %s as blocking peer access (its firmware refuses DMA to any peer), so the pair is refused.", file, n.Addr)
	if n.Note != "" {
		s += " Note: " + n.Note
	}
	return s
}

// NewTopologyFile returns an empty topology file stamped for writing now.
func NewTopologyFile(host string) *TopologyFile {
	return &TopologyFile{
		Format: TopologyFileFormat, Version: TopologyFileVersion,
		GeneratedBy: "efap2p export", Generated: time.Now().UTC().Format(time.RFC3339), Host: host,
		NICs: []TopoNIC{}, Accelerators: []TopoAccelerator{}, Pairs: []TopoPair{},
	}
}
