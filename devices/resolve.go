// SPDX-License-Identifier: MIT

package devices

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/efap2p/efap2p/p2p"
)

// Resolver turns what users type into PCI addresses: an address
// (0000:53:00.0, 53:00.0), a name List gives (GPU0, ACC0, NIC3, NET0) or
// an RDMA device (rdmap79s0, mlx5_0).
type Resolver struct {
	o    *p2p.Oracle
	src  *p2p.Sysfs
	devs []Device // listed on first need
}

// NewResolver returns a Resolver of the machine o reads from src.
func NewResolver(o *p2p.Oracle, src *p2p.Sysfs) *Resolver {
	return &Resolver{o: o, src: src}
}

// topoName reports a name of the form List gives devices.
func topoName(s string) bool {
	if len(s) < 4 {
		return false
	}
	switch strings.ToUpper(s[:3]) {
	case "GPU", "ACC", "NIC", "NET":
	default:
		return false
	}
	_, err := strconv.ParseUint(s[3:], 10, 16)
	return err == nil
}

// Resolve returns the PCI address s names; the error says what s is not,
// in words for the person who typed it.
func (r *Resolver) Resolve(s string) (p2p.Addr, error) {
	if a, err := p2p.ParseAddr(s); err == nil {
		return a, nil
	}
	if topoName(s) {
		if r.devs == nil {
			devs, err := List(r.o, r.src)
			if err != nil {
				return p2p.Addr{}, err
			}
			r.devs = devs
		}
		for _, d := range r.devs {
			if strings.EqualFold(d.Name, s) {
				return d.Addr, nil
			}
		}
		if a, err := r.src.RDMADevice(s); err == nil {
			return a, nil
		}
		return p2p.Addr{}, fmt.Errorf("no device %s on this machine (it has %s)", strings.ToUpper(s), nameRanges(r.devs))
	}
	a, err := r.src.RDMADevice(s)
	if err == nil {
		return a, nil
	}
	if errors.Is(err, p2p.ErrNotPCI) {
		return p2p.Addr{}, fmt.Errorf("RDMA device %s is not a PCI function (rxe, siw): no P2P DMA to decide", s)
	}
	return p2p.Addr{}, fmt.Errorf("%q is not a PCI address (0000:53:00.0, 53:00.0), a device as 'efap2p topo' names it (GPU0, NIC3) nor an RDMA device of this machine", s)
}

// nameRanges summarizes device names: "GPU0..GPU7, NIC0..NIC31, NET0".
func nameRanges(devs []Device) string {
	var parts []string
	for i := 0; i < len(devs); {
		prefix := devs[i].Name[:3]
		j := i
		for j+1 < len(devs) && devs[j+1].Name[:3] == prefix {
			j++
		}
		if i == j {
			parts = append(parts, devs[i].Name)
		} else {
			parts = append(parts, devs[i].Name+".."+devs[j].Name)
		}
		i = j + 1
	}
	if len(parts) == 0 {
		return "no accelerator and no NIC"
	}
	return strings.Join(parts, ", ")
}
