// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
)

// ACPIFigures are what the ACPI P2P table gives for a reachable peer.
type ACPIFigures struct {
	LatencyNs    int
	BandwidthMBs int
}

// ACPITable is an optional Source interface: the ACPI P2P table in the
// layout proposed upstream, firmware/acpi/p2p/<bdf>/<peer-bdf>/{latency_ns,
// bandwidth_mbs}. A function with an entry reaches exactly the peers listed
// under it.
type ACPITable interface {
	// ACPIPeers returns the peers listed for a; listed is false when the
	// table has no entry for a (or there is no table).
	ACPIPeers(a Addr) (peers map[Addr]ACPIFigures, listed bool, err error)
}

// ACPIPeers implements ACPITable for a sysfs tree.
func (s *Sysfs) ACPIPeers(a Addr) (map[Addr]ACPIFigures, bool, error) {
	dir := filepath.Join(s.root, "firmware/acpi/p2p", a.String())
	s.readdirs.Add(1)
	names, err := readDirNames(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("acpi p2p table: %w", err)
	}
	peers := make(map[Addr]ACPIFigures, len(names))
	for _, name := range names {
		lat, _ := s.readAttr(filepath.Join(dir, name, "latency_ns"))
		bw, _ := s.readAttr(filepath.Join(dir, name, "bandwidth_mbs"))
		peer, fig, err := ParseACPIEntry(name, lat, bw)
		if err != nil {
			return peers, true, fmt.Errorf("acpi p2p table %s: %w", dir, err)
		}
		peers[peer] = fig
	}
	return peers, true, nil
}

// ParseACPIEntry parses one peer entry of the ACPI P2P table: its directory
// name and the contents of its latency_ns and bandwidth_mbs files.
func ParseACPIEntry(name, latency, bandwidth string) (Addr, ACPIFigures, error) {
	peer, ok := parseAddr(name)
	if !ok {
		return Addr{}, ACPIFigures{}, fmt.Errorf("peer %q is not a PCI address", name)
	}
	lat, err1 := strconv.Atoi(strings.TrimSpace(latency))
	bw, err2 := strconv.Atoi(strings.TrimSpace(bandwidth))
	if err1 != nil || err2 != nil || lat < 0 || bw < 0 {
		return peer, ACPIFigures{}, fmt.Errorf("peer %s: latency_ns %q, bandwidth_mbs %q: want non-negative integers", name, latency, bandwidth)
	}
	return peer, ACPIFigures{LatencyNs: lat, BandwidthMBs: bw}, nil
}

// acpiLookup consults the table for a pair: the client's entry first (the
// initiator's view), else the provider's. decided is false when neither
// function has an entry.
func (t *Topology) acpiLookup(p, c Addr) (fig ACPIFigures, reachable, decided bool, err error) {
	tab, ok := t.src.(ACPITable)
	if !ok {
		return fig, false, false, nil
	}
	for _, side := range [2][2]Addr{{c, p}, {p, c}} {
		peers, listed, err := tab.ACPIPeers(side[0])
		if err != nil {
			return fig, false, false, err
		}
		if listed {
			fig, reachable = peers[side[1]]
			return fig, reachable, true, nil
		}
	}
	return fig, false, false, nil
}
