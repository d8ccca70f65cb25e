// SPDX-License-Identifier: MIT

package nodecheck

// The answers the check cannot vouch for.

import (
	"fmt"
	"strings"

	"github.com/efap2p/efap2p/internal/counted"
	"github.com/efap2p/efap2p/p2p"
)

// uncertainty adds the findings for answers the check cannot vouch for:
// pairs whose outcome would differ under another value of what this user
// cannot read (an unknown ACS state that does not change the outcome is
// not one), naming what would decide them.
func (c *checker) uncertainty() {
	acsHidden, other, undecided := 0, 0, 0
	var acs []p2p.Addr
	var unread []string
	for i := range c.r.Pairs {
		p := &c.r.Pairs[i]
		if p.Certain {
			continue
		}
		v := c.verdicts[pairKey{p.Accelerator, p.NIC}]
		switch {
		case p.PeerMemory != nil && p.PeerMemory.Outcome == OutcomeUndecided && !p.P2P:
			undecided++
			continue
		case len(v.ACSUnknown) > 0:
			acsHidden++
		default:
			other++
		}
		for _, a := range v.ACSUnknown {
			if !containsAddr(acs, a) {
				acs = append(acs, a)
			}
		}
		for _, u := range v.Unread {
			if !strings.HasPrefix(u, "the ACS state of ") && !contains(unread, u) {
				unread = append(unread, u)
			}
		}
	}
	total := len(c.r.Pairs)
	if acsHidden+other > 0 {
		var what []string
		if len(acs) > 0 {
			const shown = 4
			s := "the ACS state of " + addrList(acs[:min(len(acs), shown)])
			if len(acs) > shown {
				s += fmt.Sprintf(" and %d more bridges", len(acs)-shown)
			}
			what = append(what, s)
		}
		what = append(what, unread...)
		msg := fmt.Sprintf("%d of %s %s uncertain: their outcome depends on %s, which this user cannot read", acsHidden+other, counted.Noun(total, "pair"), verb(acsHidden+other, "is", "are"), strings.Join(what, "; "))
		if acsHidden > 0 {
			msg += " (PCI config space past 64 bytes is hidden without root"
			if c.opt.TopologyFile == "" || c.r.Host.TopologyFileError != "" {
				msg += ", and no topology file is in use"
			}
			msg += ")"
		}
		c.add(Finding{Code: CodeUncertain, Severity: SeverityUnknown, Subjects: acs,
			Message: msg,
			Fix:     "Run efap2p check as root, or write a topology file once as root (`sudo efap2p export -o /etc/efap2p/topology.json`) and give it with --topology or EFAP2P_TOPOLOGY."})
	}
	if undecided > 0 {
		c.add(Finding{Code: CodePeerMemoryUndecided, Severity: SeverityUnknown,
			Message: fmt.Sprintf("%d of %s %s on the EFA driver's peer-memory path (their dma-buf path is not P2P), which this build does not decide pair by pair", undecided, counted.Noun(total, "pair"), verb(undecided, "depends", "depend")),
			Fix:     "Make the dma-buf path work (a kernel of 5.12 or later with the out-of-tree driver, 5.16 with the in-tree one); `efap2p explain ACCELERATOR NIC` shows the dma-buf verdict."})
	}
}

// verb is one for a count of 1, many otherwise.
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
