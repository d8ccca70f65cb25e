// SPDX-License-Identifier: MIT

package p2p

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Topology file format: what `efap2p export` writes, run once as root, and
// every process reads instead of computing (and instead of needing config
// space). See docs/topology-file.md.
const (
	TopologyFileFormat  = "efap2p-topology"
	TopologyFileVersion = 1
)

// TopologyFile is a machine's precomputed P2P verdicts and the facts sysfs
// cannot show.
type TopologyFile struct {
	Format      string `json:"format"`
	Version     int    `json:"version"`
	GeneratedBy string `json:"generated_by,omitempty"`
	Generated   string `json:"generated,omitempty"` // RFC 3339
	Host        string `json:"host,omitempty"`
	// NICs records per-NIC facts; PeerAccessBlocked marks a NIC whose
	// firmware refuses DMA to every peer.
	NICs []TopoNIC `json:"nics"`
	// Accelerators lists the functions to treat as accelerators, beyond
	// PCI classes 03 and 12.
	Accelerators []TopoAccelerator `json:"accelerators"`
	Pairs        []TopoPair        `json:"pairs"`
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

// MaxTopologyFileSize bounds what a reader reads of a topology file; the
// file of a 4096-function machine stays well below it.
const MaxTopologyFileSize = 64 << 20

// ErrTopologyFile is wrapped by every error about a topology file.
var ErrTopologyFile = errors.New("bad topology file")

// ReadTopologyFile reads and validates a topology file. Errors name the
// file and line.
func ReadTopologyFile(name string) (*TopologyFile, error) {
	data, err := readFileLimited(name, MaxTopologyFileSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTopologyFile, err)
	}
	return ParseTopologyFile(data, name)
}

// ParseTopologyFile decodes and validates a topology file's contents; name
// is used in errors.
func ParseTopologyFile(data []byte, name string) (*TopologyFile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var tf TopologyFile
	if err := dec.Decode(&tf); err != nil {
		return nil, fmt.Errorf("%w: %s:%d: %w", ErrTopologyFile, name, jsonLine(data, dec.InputOffset(), err), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: %s:%d: data after the topology", ErrTopologyFile, name, jsonLine(data, dec.InputOffset(), nil))
	}
	if tf.Format != TopologyFileFormat {
		return nil, fmt.Errorf("%w: %s:1: format %q is not %q", ErrTopologyFile, name, tf.Format, TopologyFileFormat)
	}
	if tf.Version != TopologyFileVersion {
		return nil, fmt.Errorf("%w: %s:1: version %d is not supported (this build reads version %d; write a new one with `efap2p export`)", ErrTopologyFile, name, tf.Version, TopologyFileVersion)
	}
	seen := map[pair]bool{}
	for i, p := range tf.Pairs {
		line := lineOfIndex(data, "pairs", i)
		if !p.MapType.Supported() && p.MapType != MapNotSupported {
			return nil, fmt.Errorf("%w: %s:%d: pairs[%d]: map_type is missing", ErrTopologyFile, name, line, i)
		}
		if p.Outcome == OutcomeUnknown {
			return nil, fmt.Errorf("%w: %s:%d: pairs[%d]: outcome is missing (p2p, bounced or refused)", ErrTopologyFile, name, line, i)
		}
		if p.Distance < 0 {
			return nil, fmt.Errorf("%w: %s:%d: pairs[%d]: negative distance", ErrTopologyFile, name, line, i)
		}
		k := pair{p.Provider, p.Client}
		if seen[k] {
			return nil, fmt.Errorf("%w: %s:%d: pairs[%d]: %s -> %s listed twice", ErrTopologyFile, name, line, i, p.Provider, p.Client)
		}
		seen[k] = true
	}
	return &tf, nil
}

// JSONErrorLine returns the 1-based line a JSON decoding error points at:
// the offset a syntax or type error names; for an unknown field or a value
// its type rejected, the first place the quoted name or value the error
// quotes appears; else the decoder's offset.
func JSONErrorLine(data []byte, off int64, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case err != nil:
		msg := err.Error()
		if i := strings.IndexByte(msg, '"'); i >= 0 {
			if j := strings.IndexByte(msg[i+1:], '"'); j >= 0 {
				if k := bytes.Index(data, []byte(msg[i:i+j+2])); k >= 0 {
					off = int64(k)
				}
			}
		}
	}
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

func jsonLine(data []byte, off int64, err error) int { return JSONErrorLine(data, off, err) }

// lineOfIndex finds the line of the i-th element of the top-level array
// key, for errors found after decoding. It returns 1 when it cannot tell.
func lineOfIndex(data []byte, key string, i int) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	depth := 0
	inKey := false
	idx := -1
	for {
		tok, err := dec.Token()
		if err != nil {
			return 1
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				if inKey && depth == 2 && v == '{' {
					idx++
					if idx == i {
						return jsonLine(data, dec.InputOffset(), nil)
					}
				}
				depth++
			} else {
				depth--
				if depth == 1 {
					inKey = false
				}
			}
		case string:
			if depth == 1 && v == key {
				inKey = true
			}
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

// verdict turns a recorded pair into a Verdict.
func (ix *topoIndex) verdict(tp *TopoPair) *Verdict {
	v := &Verdict{
		Provider: tp.Provider, Client: tp.Client,
		MapType: tp.MapType, Distance: tp.Distance, Path: tp.Path,
		Rule: RuleTopologyFile, ACSRedirect: append([]Addr{}, tp.ACSRedirect...),
		Certain: true, Policy: tp.Policy, Outcome: tp.Outcome,
		Source: SourceTopologyFile, fig: fixedFigures(tp.BandwidthMBs, tp.LatencyNs),
	}
	v.Reason = fmt.Sprintf("The topology file %s records this pair as %s (%s, distance %d).", ix.name, tp.Outcome, tp.MapType, tp.Distance)
	if tp.Reason != "" {
		v.addReason("Recorded reason: " + tp.Reason)
	}
	if n, ok := ix.blocked[tp.Client]; ok && v.Outcome != OutcomeRefused {
		v.Outcome = OutcomeRefused
		v.addReason(blockedReason(ix.name, n))
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
