// SPDX-License-Identifier: MIT

package p2p

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/efap2p/efap2p/internal/jsonline"
)

// Topology file format: what `efap2p export` writes, run as root (once by
// an operator, or at every boot by efap2p-topology.service), and every
// process reads instead of computing (and instead of needing config
// space). See docs/topology-file.md.
const (
	TopologyFileFormat  = "efap2p-topology"
	TopologyFileVersion = 2
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

// maxTopologyFileSize bounds what a reader reads of a topology file; the
// file of a 4096-function machine stays well below it.
const maxTopologyFileSize = 64 << 20

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

// ReadTopologyFile reads and validates a topology file. Errors name the
// file and line.
func ReadTopologyFile(name string) (*TopologyFile, error) {
	data, err := readFileLimited(name, maxTopologyFileSize)
	if err != nil {
		return nil, topoErrorf(nil, "%w", err)
	}
	return ParseTopologyFile(data, name)
}

// ParseTopologyFile decodes and validates a topology file's contents; name
// is used in errors. It takes time linear in the size of data.
func ParseTopologyFile(data []byte, name string) (*TopologyFile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var tf TopologyFile
	if err := dec.Decode(&tf); err != nil {
		return nil, topoErrorf(nil, "%s:%d: %w", name, jsonline.Line(data, dec.InputOffset(), err), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, topoErrorf(nil, "%s:%d: data after the topology", name, jsonline.Line(data, dec.InputOffset(), nil))
	}
	if tf.Format != TopologyFileFormat {
		return nil, topoErrorf(nil, "%s:1: format %q is not %q", name, tf.Format, TopologyFileFormat)
	}
	if tf.Version != TopologyFileVersion {
		return nil, topoErrorf(nil, "%s:1: version %d is not supported (this build reads version %d; write a new one with `efap2p export`)", name, tf.Version, TopologyFileVersion)
	}
	for i, f := range tf.Machine.Functions {
		if _, _, ok := parseDeviceID(f.ID); !ok {
			return nil, topoErrorf(nil, "%s:%d: machine.functions[%d]: id %q is not vendor:device in hex", name, lineOfIndex(data, "machine", "functions", i), i, f.ID)
		}
	}
	seen := make(map[pair]bool, len(tf.Pairs))
	for i, p := range tf.Pairs {
		var why string
		k := pair{p.Provider, p.Client}
		switch {
		case !p.MapType.Supported() && p.MapType != MapNotSupported:
			why = "map_type is missing"
		case p.Outcome == OutcomeUnknown:
			why = "outcome is missing (p2p, bounced or refused)"
		case p.Distance < 0:
			why = "negative distance"
		case seen[k]:
			why = fmt.Sprintf("%s -> %s listed twice", p.Provider, p.Client)
		}
		if why != "" {
			return nil, topoErrorf(nil, "%s:%d: pairs[%d]: %s", name, lineOfIndex(data, "", "pairs", i), i, why)
		}
		seen[k] = true
	}
	return &tf, nil
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
					if d == '{' && at() && !top.object && top.elems == i {
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

// Marshal returns the file as indented JSON.
func (tf *TopologyFile) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// index is a topology file ready for lookups.
type topoIndex struct {
	name    string
	pairs   map[pair]*TopoPair
	blocked map[Addr]*TopoNIC
	accels  []Addr
}

func newTopoIndex(tf *TopologyFile, name string) *topoIndex {
	ix := &topoIndex{name: name, pairs: map[pair]*TopoPair{}, blocked: map[Addr]*TopoNIC{}}
	for i := range tf.Pairs {
		p := &tf.Pairs[i]
		ix.pairs[pair{p.Provider, p.Client}] = p
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
		Certain: true, Policy: tp.Policy, Outcome: tp.Outcome,
		Source: SourceTopologyFile, fig: fixedFigures(tp.BandwidthMBs, tp.LatencyNs), explain: explain,
	}
	if explain {
		v.Reason = fmt.Sprintf("The topology file %s records this pair as %s (%s, distance %d).", ix.name, tp.Outcome, tp.MapType, tp.Distance)
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
