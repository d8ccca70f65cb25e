// SPDX-License-Identifier: MIT

package devices

import "github.com/efap2p/efap2p/p2p"

// Cell is the verdict of one pair of devices.
type Cell struct {
	Provider p2p.Addr      `json:"provider"`
	Client   p2p.Addr      `json:"client"`
	Path     p2p.PathClass `json:"path"`
	MapType  p2p.MapType   `json:"map_type"`
	Distance int           `json:"distance"`
	Policy   p2p.Policy    `json:"policy"`
	// Outcome is the dma-buf path's, PeerMem the peer-memory path's;
	// Effective and Via are the pair's answer over both (p2p.Verdict's),
	// P2P whether that is true P2P.
	Outcome      p2p.Outcome       `json:"outcome"`
	PeerMem      p2p.Outcome       `json:"peer_mem_outcome"`
	PeerMemPath  bool              `json:"peer_mem_present"`
	Effective    p2p.Outcome       `json:"effective_outcome"`
	Via          p2p.Registration  `json:"p2p_via"`
	P2P          bool              `json:"p2p"`
	Certain      bool              `json:"certain"`
	BandwidthMBs int               `json:"bandwidth_mbs"`
	LatencyNs    int               `json:"latency_ns"`
	Source       p2p.VerdictSource `json:"source"`
}

// Matrix is the verdict of every ordered pair of the machine's
// accelerators and NICs (List): Matrix[i][j] for row Devices[i] and column
// Devices[j]. A NIC's row reads as that NIC doing DMA into the column's
// memory: the accelerator is the provider of an (accelerator, NIC) pair
// whichever way it is read.
type Matrix struct {
	Kernel  p2p.Release `json:"kernel"`
	Devices []Device    `json:"devices"`
	Matrix  [][]Cell    `json:"matrix"`
}

// BuildMatrix lists the machine's devices and asks the oracle for every
// pair.
func BuildMatrix(o *p2p.Oracle, src *p2p.Sysfs) (*Matrix, error) {
	devs, err := List(o, src)
	if err != nil {
		return nil, err
	}
	m := &Matrix{Kernel: o.Kernel(), Devices: devs}
	for _, r := range m.Devices {
		row := make([]Cell, len(m.Devices))
		for j, c := range m.Devices {
			provider, client := r.Addr, c.Addr
			if r.Kind == KindNIC && c.Kind == KindAccelerator {
				provider, client = c.Addr, r.Addr
			}
			v, err := o.Verdict(provider, client)
			if err != nil {
				return nil, err
			}
			row[j] = Cell{Provider: provider, Client: client, Path: v.Path, MapType: v.MapType, Distance: v.Distance,
				Policy: v.Policy, Outcome: v.Outcome, PeerMem: v.PeerMem.Outcome, PeerMemPath: v.PeerMem.Present,
				Effective: v.Effective(), Via: v.Via(), P2P: v.P2P(), Certain: v.Certain,
				BandwidthMBs: v.BandwidthMBs(), LatencyNs: v.LatencyNs(), Source: v.Source}
		}
		m.Matrix = append(m.Matrix, row)
	}
	return m, nil
}
