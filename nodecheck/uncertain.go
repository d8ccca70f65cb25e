// SPDX-License-Identifier: MIT

package nodecheck

// The answers the check cannot vouch for.

import "fmt"

// uncertainty adds the findings for answers the check cannot vouch for.
func (c *checker) uncertainty() {
	acsHidden, other, undecided := 0, 0, 0
	for i := range c.r.Pairs {
		p := &c.r.Pairs[i]
		if p.Certain {
			continue
		}
		v := c.verdicts[pairKey{p.Accelerator, p.NIC}]
		switch {
		case p.PeerMemory != nil && p.PeerMemory.Outcome == OutcomeUndecided && !p.P2P:
			undecided++
		case len(v.ACSUnknown) > 0:
			acsHidden++
		default:
			other++
		}
	}
	total := len(c.r.Pairs)
	if acsHidden+other > 0 {
		msg := fmt.Sprintf("%d of %d pairs are uncertain", acsHidden+other, total)
		if acsHidden > 0 {
			msg += ": PCI config space past 64 bytes is hidden from this user, so the ACS state of the bridges on their paths is unknown"
			if c.opt.TopologyFile == "" || c.r.Host.TopologyFileError != "" {
				msg += ", and no topology file is in use"
			}
		} else {
			msg += ": something the kernel's rule needs (the CPU, a host bridge) could not be read"
		}
		c.add(Finding{Code: CodeUncertain, Severity: SeverityUnknown,
			Message: msg,
			Fix:     "Run efap2p check as root, or write a topology file once as root (`sudo efap2p export -o /etc/efap2p/topology.json`) and give it with --topology or EFAP2P_TOPOLOGY."})
	}
	if undecided > 0 {
		c.add(Finding{Code: CodePeerMemoryUndecided, Severity: SeverityUnknown,
			Message: fmt.Sprintf("%d of %d pairs depend on the EFA driver's peer-memory path (their dma-buf path is not P2P), which this build does not decide pair by pair", undecided, total),
			Fix:     "Make the dma-buf path work (a kernel of 5.12 or later with the out-of-tree driver, 5.16 with the in-tree one); `efap2p explain ACCELERATOR NIC` shows the dma-buf verdict."})
	}
}
