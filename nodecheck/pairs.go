// SPDX-License-Identifier: MIT

package nodecheck

// The pairs: the oracle's verdict for every (accelerator, EFA NIC) pair,
// and the refused or bounced ones among each accelerator's nearest NICs.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/efap2p/efap2p/internal/counted"
	"github.com/efap2p/efap2p/p2p"
)

// buildPairs asks the oracle for every (accelerator, EFA NIC) pair and
// puts each registration path's answer together.
func (c *checker) buildPairs() error {
	h := &c.r.Host
	// what the verdicts cannot see is the same for every pair: said once
	var notes []string
	for ai := range c.r.Accelerators {
		a := &c.r.Accelerators[ai]
		for _, n := range c.r.NICs {
			v, err := c.o.Verdict(a.Addr, n.Addr)
			if err != nil {
				return fmt.Errorf("verdict %s -> %s: %w", a.Addr, n.Addr, err)
			}
			k := pairKey{a.Addr, n.Addr}
			c.verdicts[k] = v
			p := Pair{Accelerator: a.Addr, NIC: n.Addr, Path: v.Path}
			blocked := append(append([]string{}, c.nicBlocked[n.Addr]...), c.accBlocked[a.Addr]...)
			dist := v.Distance
			p.DMABuf = PathAnswer{MapType: v.MapType.String(), Distance: &dist, Rule: v.Rule.String(), Policy: v.Policy.String(),
				Source: v.Source.String(), Certain: v.Certain, Assumed: !v.Exact, Reason: v.Reason, Hint: v.Hint, Outcome: v.Outcome.String()}
			dmBlocked := blocked
			if !h.DMABuf.Supported {
				dmBlocked = append(dmBlocked, CodeKernelDMABuf)
			}
			if len(dmBlocked) > 0 {
				p.DMABuf.Outcome, p.DMABuf.Blocked = OutcomeUnavailable, dmBlocked
			}
			if prov := h.EFADriver.PeerMemory; prov != nil {
				p.PeerMemory = c.peerPath(v, a, n.Addr, *prov, blocked)
			}
			c.decide(&p, v)
			c.r.Host.countSource(v.Source.String())
			c.r.Pairs = append(c.r.Pairs, p)
			if v.Note != "" && !slices.Contains(notes, v.Note) {
				notes = append(notes, v.Note)
			}
		}
	}
	for _, n := range notes {
		c.note("%s", n)
	}
	for i := range c.r.Pairs {
		p := &c.r.Pairs[i]
		c.pairs[pairKey{p.Accelerator, p.NIC}] = p
	}
	return nil
}

// decide sets the pair's P2P, Via and Certain from its paths.
func (c *checker) decide(p *Pair, v *p2p.Verdict) {
	pm := p.PeerMemory
	p.Via = 0
	if p.DMABuf.Outcome == p2p.OutcomeP2P.String() {
		p.Via |= p2p.RegDmabuf
	}
	if pm != nil && pm.Outcome == p2p.OutcomeP2P.String() {
		p.Via |= p2p.RegPeerMem
	}
	switch {
	case p.DMABuf.Outcome == p2p.OutcomeP2P.String():
		p.P2P, p.Certain = true, v.Certain
	case pm != nil && pm.Outcome == p2p.OutcomeP2P.String():
		p.P2P, p.Certain = true, pm.Certain
	case pm != nil && pm.Outcome == OutcomeUndecided:
		p.P2P, p.Certain = false, false
	case p.DMABuf.Outcome == OutcomeUnavailable:
		p.P2P, p.Certain = false, true
	default:
		p.P2P, p.Certain = false, v.Certain
	}
}

func (h *Host) countSource(s string) { h.Sources[s]++ }

// accelFindings works out each accelerator's local NICs and P2P NICs,
// and the refused or bounced pairs among its local ones.
func (c *checker) accelFindings() {
	var remoteRefused []pairKey
	for ai := range c.r.Accelerators {
		a := &c.r.Accelerators[ai]
		best := p2p.PathUnknown
		for _, n := range c.r.NICs {
			p := c.pairs[pairKey{a.Addr, n.Addr}]
			if p.Path != p2p.PathUnknown && (best == p2p.PathUnknown || p.Path < best) {
				best = p.Path
			}
		}
		a.LocalPath = best
		var refused, bounced []p2p.Addr
		var firstRefused, firstBounced *p2p.Verdict
		for _, n := range c.r.NICs {
			k := pairKey{a.Addr, n.Addr}
			p := c.pairs[k]
			p.Local = p.Path == best
			if !p.Certain {
				a.Certain = false
			}
			if p.P2P {
				a.P2PNICs = append(a.P2PNICs, n.Addr)
			}
			if !p.Local {
				if !p.P2P && p.Certain && p.DMABuf.Outcome == p2p.OutcomeRefused.String() && !c.blockedNICs[n.Addr] {
					remoteRefused = append(remoteRefused, k)
				}
				continue
			}
			a.LocalNICs = append(a.LocalNICs, n.Addr)
			if p.P2P {
				a.LocalP2P = append(a.LocalP2P, n.Addr)
				continue
			}
			if p.DMABuf.Outcome == OutcomeUnavailable {
				c.covered[k] = true // the finding that blocks the path explains it
				continue
			}
			if !p.Certain {
				c.covered[k] = true // refused or bounced only as assumed: uncertain-verdicts says so
				continue
			}
			switch p.DMABuf.Outcome {
			case p2p.OutcomeRefused.String():
				refused = append(refused, n.Addr)
				if firstRefused == nil {
					firstRefused = c.verdicts[k]
				}
				c.covered[k] = true
			case p2p.OutcomeBounced.String():
				bounced = append(bounced, n.Addr)
				if firstBounced == nil {
					firstBounced = c.verdicts[k]
				}
				c.covered[k] = true
			}
		}
		word := localWord(best)
		if len(refused) > 0 {
			c.add(Finding{Code: CodeP2PRefused, Severity: SeverityError, Subjects: append([]p2p.Addr{a.Addr}, refused...),
				Message: fmt.Sprintf("%s %s: P2P DMA refused with %d of its %s: %s", a.Name, a.Addr, len(refused), counted.Noun(len(a.LocalNICs), word+" EFA NIC"), c.nicList(refused)),
				Reason:  firstRefused.Reason, Fix: c.fixFor(firstRefused)})
		}
		if len(bounced) > 0 {
			c.add(Finding{Code: CodeP2PBounced, Severity: SeverityWarning, Subjects: append([]p2p.Addr{a.Addr}, bounced...),
				Message: fmt.Sprintf("%s %s: registration works with %d of its %s, but the exporter bounces the DMA through system memory: %s", a.Name, a.Addr, len(bounced), counted.Noun(len(a.LocalNICs), word+" EFA NIC"), c.nicList(bounced)),
				Reason:  firstBounced.Reason,
				Fix:     c.fixFor(firstBounced) + " amdgpu keeps the memory in VRAM only for peers the kernel allows."})
		}
	}
	if len(remoteRefused) > 0 {
		v := c.verdicts[remoteRefused[0]]
		c.note("%s beyond the accelerators' local NICs refused (e.g. %s with %s: %s); NCCL uses GPUDirect RDMA only for paths up to NCCL_NET_GDR_LEVEL (PXB by default).",
			counted.Noun(len(remoteRefused), "pair"), c.accList([]p2p.Addr{remoteRefused[0].acc}), c.nicList([]p2p.Addr{remoteRefused[0].nic}), firstSentence(v.Reason))
	}
}

// peerMemoryNote says where true P2P comes by the EFA driver's peer
// memory alone because the dma-buf path refuses or bounces the pairs: a
// program that registers accelerator memory by dma-buf only gets no
// GPUDirect RDMA there, although the check finds nothing in the way.
func (c *checker) peerMemoryNote() {
	var accs []p2p.Addr
	var first *Pair
	for i := range c.r.Accelerators {
		a := &c.r.Accelerators[i]
		only := false
		for _, n := range a.LocalP2P {
			p := c.pairs[pairKey{a.Addr, n}]
			if p.Via != p2p.RegPeerMem || p.DMABuf.Outcome == OutcomeUnavailable {
				only = false
				break
			}
			only = true
			if first == nil {
				first = p
			}
		}
		if only {
			accs = append(accs, a.Addr)
		}
	}
	if len(accs) == 0 {
		return
	}
	acc, nic := c.accIndex[first.Accelerator].Name, first.NIC.String()
	if n := c.nicIndex[first.NIC]; n != nil && n.IBDev != "" {
		nic = n.IBDev
	}
	c.note("%s %s true P2P with %s nearest EFA NICs by the EFA driver's peer memory only (ibv_reg_mr on the accelerator's memory): dma-buf registration (ibv_reg_dmabuf_mr) is %s with them, so a program that registers accelerator memory by dma-buf only gets no GPUDirect RDMA there; `efap2p explain %s %s` says why.",
		c.accList(accs), verb(len(accs), "gets", "get"), verb(len(accs), "its", "their"), first.DMABuf.Outcome, acc, nic)
}

// fixFor says what to do about a refused or bounced pair.
func (c *checker) fixFor(v *p2p.Verdict) string {
	explain := fmt.Sprintf(" `efap2p explain %s %s` says why in full.", v.Provider, v.Client)
	switch {
	case c.blockedNICs[v.Client]:
		return fmt.Sprintf("The topology file %s records that %s's firmware refuses DMA to peers: keep GPUDirect RDMA jobs off this NIC, or stop and start the instance to move to other hardware; if the record is stale, write the file again with `efap2p export` (without --peer-blocked for it).", c.opt.TopologyFile, v.Client) + explain
	case v.Hint != "":
		s := v.Hint
		return strings.ToUpper(s[:1]) + s[1:] + " (then reboot)." + explain
	case v.Rule == p2p.RuleHostBridge:
		return "The path goes through a host bridge that is not in the kernel's P2PDMA whitelist, on a CPU the kernel's rule does not trust: put the accelerator and the NIC under one PCIe switch, or use a kernel whose whitelist has this host bridge." + explain
	case v.Rule == p2p.RuleACPI:
		return "The platform firmware's ACPI P2P table does not list the pair: ask the platform vendor, or pair the accelerator with a NIC the table lists." + explain
	case v.Policy == p2p.PolicyNVIDIA:
		return "The NVIDIA driver refuses the peer by its own rule (NVreg_GrdmaPciTopoCheckOverride=1 overrides its topology check, at your own risk)." + explain
	}
	return "See the reason." + explain
}

// localWord names an accelerator's nearest NICs by their path class.
func localWord(p p2p.PathClass) string {
	switch p {
	case p2p.PathPIX, p2p.PathPXB:
		return "switch-local"
	case p2p.PathLOC:
		return "same-device"
	}
	return "nearest"
}
