// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"

	"github.com/efap2p/efap2p/internal/pcicfg"
)

// ACS Egress Control, as the HMAT P2P series decides it (p2p-hmat only):
// drivers/pci/p2pdma.c pci_acs_p2pdma_decision and pci_acs_egress_ctrl_set
// in Leon Romanovsky's series, PCIe r7.0 section 6.12.3, table 6-11.

// errNoConfig is returned by Topology.config for a source without config
// space access.
var errNoConfig = errors.New("the source has no config space access")

// config opens a function's config space through the source.
func (t *Topology) config(a Addr) (cs pcicfg.Space, done func(), err error) {
	if src, ok := t.ext.(configSource); ok {
		return src.Config(a)
	}
	return nil, nil, errNoConfig
}

type acsState uint8

const (
	acsDirect acsState = iota
	acsRedirect
	acsBlocked
	acsUnknown
)

// acsDecision is pci_acs_p2pdma_decision: how a P2P request entering a
// port with ACS Control ctrl routes, given whether the egress port is known
// and that port's Egress Control Vector bit (negative: unreadable).
func acsDecision(ctrl uint16, hasTarget bool, egress int) acsState {
	if !hasTarget || ctrl&pcicfg.ACSEgressControl == 0 {
		if ctrl&(pcicfg.ACSRequestRedirect|pcicfg.ACSCompletionRedirect) != 0 {
			return acsRedirect
		}
		return acsDirect
	}
	switch {
	case egress < 0:
		return acsBlocked
	case egress > 0:
		if ctrl&pcicfg.ACSRequestRedirect != 0 {
			return acsRedirect
		}
		return acsBlocked
	}
	if ctrl&pcicfg.ACSCompletionRedirect != 0 {
		return acsRedirect
	}
	return acsDirect
}

// egressBit is pci_acs_egress_ctrl_set: bit <target's Port Number> of f's
// Egress Control Vector; negative when f does not support Egress Control,
// either port is not a Root Port or Switch Downstream Port, the port number
// is past the vector, or config space cannot be read (readable false).
func (t *Topology) egressBit(f, target *Function, acs ACS) (bit int, readable bool) {
	if acs.Capability&pcicfg.ACSEgressControl == 0 {
		return -1, true
	}
	ft, fok := t.portType(f.Addr)
	tt, tok := t.portType(target.Addr)
	if !fok || !tok {
		return -1, false
	}
	isPort := func(pt int) bool { return pt == pcicfg.PortTypeRootPort || pt == pcicfg.PortTypeDownPort }
	if !isPort(ft) || !isPort(tt) {
		return -1, true
	}
	port, ok := t.portNumber(target.Addr)
	if !ok {
		return -1, false
	}
	size := int(acs.Capability>>pcicfg.ACSVectorSizePos) & 0xff
	if size == 0 {
		size = 256
	}
	if port >= size {
		return -1, true
	}
	cs, done, err := t.config(f.Addr)
	if err != nil {
		return -1, false
	}
	defer done()
	off, known, err := pcicfg.FindExtCap(cs, pcicfg.ExtCapIDACS)
	if err != nil || !known || off == 0 {
		return -1, false
	}
	v, ok, err := cs.ReadDword(off + pcicfg.ACSEgressVector + 4*(port/32))
	if err != nil || !ok {
		return -1, false
	}
	return int(v>>(port%32)) & 1, true
}

// portType reads a function's PCIe Device/Port Type; ok is false when it
// cannot be read.
func (t *Topology) portType(a Addr) (int, bool) {
	cs, done, err := t.config(a)
	if err != nil {
		return -1, false
	}
	defer done()
	pt, known, err := pcicfg.PortType(cs)
	return pt, known && err == nil
}

// portNumber reads a port's Port Number (Link Capabilities bits 31:24).
func (t *Topology) portNumber(a Addr) (int, bool) {
	cs, done, err := t.config(a)
	if err != nil {
		return 0, false
	}
	defer done()
	return pcicfg.PortNumber(cs)
}

// acsStateOf decides one function on the path; target is the egress port
// on the other side when f is where the two paths diverge.
func (t *Topology) acsStateOf(f, target *Function) acsState {
	acs := f.ACS()
	if !acs.Known {
		return acsUnknown
	}
	if !acs.Present {
		return acsDirect
	}
	egress := 0
	if target != nil && acs.Control&pcicfg.ACSEgressControl != 0 {
		var readable bool
		if egress, readable = t.egressBit(f, target, acs); !readable {
			return acsUnknown
		}
	}
	return acsDecision(acs.Control, target != nil, egress)
}

// noteACSEgress walks the path as the series' __calc_map_type_and_dist
// does: the provider's side up to and including the common ancestor lca,
// then the client's side below it, each function decided with the egress
// port on the other side where the paths diverge.
func (t *Topology) noteACSEgress(v *Verdict, p, c, lca *Function) {
	var aChild, bChild *Function
	for f := p; f != nil && f != lca; f = f.Upstream {
		aChild = f
	}
	for f := c; f != nil && f != lca; f = f.Upstream {
		bChild = f
	}
	note := func(f, target *Function) {
		switch t.acsStateOf(f, target) {
		case acsRedirect:
			v.ACSRedirect = append(v.ACSRedirect, f.Addr)
		case acsBlocked:
			v.ACSBlocked = append(v.ACSBlocked, f.Addr)
		case acsUnknown:
			v.ACSUnknown = append(v.ACSUnknown, f.Addr)
		}
	}
	for f := p; ; f = f.Upstream {
		var target *Function
		if f == aChild {
			target = bChild
		}
		note(f, target)
		if f == lca {
			break
		}
	}
	for f := c; f != lca; f = f.Upstream {
		var target *Function
		if f == bChild {
			target = aChild
		}
		note(f, target)
	}
}
