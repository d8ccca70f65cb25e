// SPDX-License-Identifier: MIT

package nodecheck

// The registration paths: the kernel's dma-buf support and the
// out-of-tree EFA driver's peer-memory provider.

import (
	"fmt"
	"strings"

	"github.com/efap2p/efap2p/p2p"
)

// pathFindings: the kernel's dma-buf support and the out-of-tree driver's
// peer-memory provider.
func (c *checker) pathFindings() {
	h := &c.r.Host
	drv := h.EFADriver
	if drv.Kind == DriverInTree {
		c.note("The in-tree EFA driver registers accelerator memory by dma-buf only (no peer-memory provider).")
	}
	if m, ok := c.modules["nvidia_peermem"]; ok && m.Loaded {
		c.note("nvidia_peermem is loaded: it serves the peer-memory API of Mellanox OFED's ib_core; the EFA driver does not use it.")
	}
	if len(c.r.NICs) == 0 || len(c.r.Accelerators) == 0 {
		return
	}
	// Accelerator drivers whose memory the provider could register.
	served, wanting := false, []string{}
	if drv.PeerMemory != nil {
		for _, a := range c.r.Accelerators {
			provs, ok := providersFor[a.Driver]
			if !ok {
				continue
			}
			if contains(provs, *drv.PeerMemory) {
				served = true
			} else if !contains(wanting, a.Driver) {
				wanting = append(wanting, a.Driver)
			}
		}
	}
	if !h.DMABuf.Supported {
		if served {
			c.note("dma-buf registration is unavailable (%s); accelerator memory is registered through the EFA driver's peer-memory provider %q.", h.DMABuf.Reason, *drv.PeerMemory)
		} else {
			fix := "Boot a kernel of 5.16 or later (or your distribution's kernel that backports EFA dma-buf), or install AWS's out-of-tree EFA driver (the EFA installer), which also registers GPU memory through its peer-memory provider."
			if drv.Kind == DriverOutOfTree {
				fix = "Boot a kernel of 5.12 or later and the out-of-tree EFA driver 1.16.0 or later (the EFA installer), or give the driver its peer-memory provider (see peer-memory-missing)."
			}
			c.add(Finding{Code: CodeKernelDMABuf, Severity: SeverityError, Message: "dma-buf registration of accelerator memory is unavailable: " + h.DMABuf.Reason, Fix: fix})
		}
	}
	c.p2pdmaFinding()
	if drv.PeerMemory == nil || len(wanting) == 0 {
		return
	}
	sev := SeverityWarning
	if !h.DMABuf.Supported && !served {
		sev = SeverityError
	}
	if *drv.PeerMemory == "" {
		fix := "Load the peer-memory link between the EFA and the accelerator drivers: "
		if contains(wanting, "nvidia") {
			fix += "for NVIDIA GPUs, the nvidia module and then efa_nv_peermem (`modprobe efa_nv_peermem`, package efa-nv-peermem of the EFA installer; nvidia_peermem serves Mellanox OFED, not EFA). "
		}
		if contains(wanting, "neuron-driver") {
			fix += "for Neuron devices, the neuron module (aws-neuronx-dkms). "
		}
		fix += "The p2p attribute of each EFA NIC's PCI function then names the provider."
		c.add(Finding{Code: CodePeerMemoryMissing, Severity: sev, Subjects: c.nicAddrs(),
			Message: fmt.Sprintf("the out-of-tree EFA driver %s has no peer-memory provider (its p2p attribute is empty): registering %s memory by address (ibv_reg_mr, libfabric's fallback after a dma-buf failure) fails", drv.Version, strings.Join(wanting, "/")),
			Fix:     fix})
		return
	}
	c.add(Finding{Code: CodePeerMemoryMismatch, Severity: sev, Subjects: c.nicAddrs(),
		Message: fmt.Sprintf("the EFA driver's peer-memory provider is %q, which does not serve the %s accelerators of this node", *drv.PeerMemory, strings.Join(wanting, "/")),
		Fix:     "The driver names only the first provider it finds; unload the provider of the other accelerator family (or its driver), so that the driver finds the one this node needs."})
}

// peerPath is the peer-memory path's answer for a pair. The driver-level
// facts (a provider, one that serves the accelerator's driver) are read
// here; the per-pair rule is the oracle's (peerMemoryOutcome).
func (c *checker) peerPath(v *p2p.Verdict, a *Accelerator, nic p2p.Addr, provider string, blocked []string) *PathAnswer {
	pa := &PathAnswer{Provider: provider, Outcome: OutcomeUndecided, Certain: false}
	provs, known := providersFor[a.Driver]
	switch {
	case c.blockedNICs[nic]:
		pa.Outcome, pa.Certain = p2p.OutcomeRefused.String(), true
		pa.Reason = fmt.Sprintf("the topology file %s records that the NIC's firmware refuses DMA to any peer", c.opt.TopologyFile)
	case len(blocked) > 0:
		pa.Outcome, pa.Blocked, pa.Certain = OutcomeUnavailable, blocked, true
	case provider == "" && known:
		pa.Outcome, pa.Blocked, pa.Certain = OutcomeUnavailable, []string{CodePeerMemoryMissing}, true
	case known && !contains(provs, provider):
		pa.Outcome, pa.Blocked, pa.Certain = OutcomeUnavailable, []string{CodePeerMemoryMismatch}, true
	case !known:
		pa.Outcome, pa.Certain = OutcomeUnavailable, true
		pa.Reason = fmt.Sprintf("no peer-memory provider of the EFA driver registers memory of %q accelerators", a.Driver)
	default:
		if o, certain, reason, ok := peerMemoryOutcome(v); ok {
			pa.Outcome, pa.Certain, pa.Reason = o, certain, reason
		} else {
			pa.Reason = fmt.Sprintf("the provider %q registers this accelerator's memory by address; this build decides the pair by its dma-buf path only", provider)
		}
	}
	return pa
}

// peerMemoryOutcome is the oracle's per-pair verdict for the peer-memory
// path (the EFA driver's provider serves the accelerator's driver, or not),
// when the oracle gives one: not without the driver's p2p attribute.
func peerMemoryOutcome(v *p2p.Verdict) (outcome string, certain bool, reason string, ok bool) {
	pm := v.PeerMem
	if !pm.Present || pm.Outcome == p2p.OutcomeUnknown {
		return "", false, "", false
	}
	reason = fmt.Sprintf("the EFA driver's peer-memory provider %q %s memory of this accelerator's driver by address",
		pm.Provider, map[bool]string{true: "registers", false: "does not register"}[pm.Outcome == p2p.OutcomeP2P])
	return pm.Outcome.String(), true, reason, true
}

// p2pdmaFinding says what a kernel without PCI_P2PDMA does to the node's
// accelerators: an error where an exporter asks p2pdma (it falls back or
// refuses), a note where none does (NVIDIA's, Neuron's); and that it is
// not known, where nothing told.
func (c *checker) p2pdmaFinding() {
	k := c.r.Host.KernelP2PDMA
	switch k.P2PDMA {
	case p2p.BuiltYes:
		return
	case p2p.BuiltUnknown:
		c.note("Whether the kernel is built with PCI_P2PDMA is not known (%s): the verdicts are those of a kernel built with it.", k.Source)
		return
	}
	var asking []p2p.Addr
	var drivers []string
	for _, a := range c.r.Accelerators {
		switch a.Driver {
		case "nvidia", "neuron-driver":
		default:
			asking = append(asking, a.Addr)
			d := a.Driver
			if d == "" {
				d = "no driver"
			}
			if !contains(drivers, d) {
				drivers = append(drivers, d)
			}
		}
	}
	if len(asking) == 0 {
		c.note("The kernel is built without PCI_P2PDMA (%s); the accelerators' exporters (NVIDIA's, Neuron's) never ask p2pdma, so it changes nothing here.", k.Source)
		return
	}
	c.add(Finding{Code: CodeKernelNoP2PDMA, Severity: SeverityError, Subjects: asking,
		Message: fmt.Sprintf("this kernel is built without PCI_P2PDMA (%s): the kernel refuses every P2P mapping it is asked for; dma-buf exporters that ask it fall back (%s: %s)", k.Source, strings.Join(drivers, ", "), c.accList(asking)),
		Fix:     "Boot a kernel built with CONFIG_PCI_P2PDMA=y (no stock Debian 12 kernel is: build one, or use a distribution kernel that enables it); `efap2p explain ACCELERATOR NIC` names the source it was read from."})
}
