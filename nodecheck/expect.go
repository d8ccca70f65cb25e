// SPDX-License-Identifier: MIT

package nodecheck

import (
	"fmt"
	"sort"
	"strings"

	"github.com/efap2p/efap2p/internal/counted"
	"github.com/efap2p/efap2p/internal/pciclass"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// LookupModel returns the built-in machine model of an EC2 instance type
// (p5.48xlarge, p4d.24xlarge, ...), or nil when efap2p has none.
func LookupModel(instanceType string) *models.Machine {
	for _, n := range models.BuiltinNames() {
		if n == instanceType {
			m, err := models.Builtin(n)
			if err == nil {
				return m
			}
		}
	}
	return nil
}

// modelLayout is what a model says the machine should have: its
// accelerators, its EFA NICs, and each accelerator's local EFA NICs with
// true P2P, taken from the model's hand-worked expected verdicts.
type modelLayout struct {
	accels, efas []p2p.Addr
	local        map[p2p.Addr]ExpectedLocal
}

func layoutOf(m *models.Machine) modelLayout {
	l := modelLayout{local: map[p2p.Addr]ExpectedLocal{}}
	isEFA := map[p2p.Addr]bool{}
	for _, f := range m.EFANICs() {
		l.efas = append(l.efas, f.Addr)
		isEFA[f.Addr] = true
	}
	for _, f := range m.Functions() {
		if pciclass.IsAccelerator(uint32(f.Class), uint16(f.Vendor), uint16(f.Device)) {
			l.accels = append(l.accels, f.Addr)
		}
	}
	// The nearest path class among an accelerator's expected EFA pairs,
	// then the NICs at that class the model expects true P2P with.
	best := map[p2p.Addr]p2p.PathClass{}
	pairs := m.Pairs()
	for _, p := range pairs {
		if !isEFA[p.Client] || p.Path == p2p.PathUnknown {
			continue
		}
		if b, ok := best[p.Provider]; !ok || p.Path < b {
			best[p.Provider] = p.Path
		}
	}
	for _, p := range pairs {
		b, ok := best[p.Provider]
		if !ok || !isEFA[p.Client] || p.Path != b || p.ExpectedOutcome() != models.OutcomeP2P {
			continue
		}
		e := l.local[p.Provider]
		e.Accelerator, e.Path = p.Provider, b
		if !containsAddr(e.NICs, p.Client) {
			e.NICs = append(e.NICs, p.Client)
		}
		l.local[p.Provider] = e
	}
	return l
}

// compare checks the machine against the model the instance type names,
// or the one asked for.
func (c *checker) compare() {
	m, source := c.opt.Expect, "option"
	if m == nil {
		source = "dmi"
		if it := c.r.Host.InstanceType; it != "" {
			m = LookupModel(it)
			if m == nil {
				c.note("EC2 instance type %s has no built-in machine model: the layout was not compared (--expect MODEL compares with another).", it)
			}
		}
	}
	if m == nil {
		return
	}
	l := layoutOf(m)
	e := &Expected{Model: m.Name, Source: source, Accelerators: len(l.accels), EFADevices: len(l.efas),
		FoundAccelerators: len(c.r.Accelerators), FoundEFADevices: len(c.r.NICs), LocalNICs: []ExpectedLocal{}, DevicesMatch: true, Match: true}
	c.r.Expected = e
	haveAcc := map[p2p.Addr]bool{}
	for _, a := range c.r.Accelerators {
		haveAcc[a.Addr] = true
	}
	haveNIC := map[p2p.Addr]bool{}
	for _, n := range c.r.NICs {
		haveNIC[n.Addr] = true
	}
	e.MatchingAccelerators, e.MatchingEFADevices = matching(l.accels, haveAcc), matching(l.efas, haveNIC)
	if c.countFinding("accelerator", m.Name, l.accels, haveAcc, CodeAccelsMissing, CodeAccelsUnexpected,
		"An accelerator the instance type has is not visible: `dmesg` shows whether it fell off the bus (NVIDIA Xid 79); stop and start the instance to move to healthy hardware.") {
		e.Match, e.DevicesMatch = false, false
	}
	if c.countFinding("EFA device", m.Name, l.efas, haveNIC, CodeEFAMissing, CodeEFAUnexpected,
		"Launch the instance with one EFA network interface per network card (InterfaceType efa or efa-only in the launch template); a device that is attached but not listed needs the instance stopped and started.") {
		e.Match, e.DevicesMatch = false, false
	}
	accs := make([]p2p.Addr, 0, len(l.local))
	for a := range l.local {
		accs = append(accs, a)
	}
	sort.Slice(accs, func(i, j int) bool { return accs[i].Less(accs[j]) })
	for _, acc := range accs {
		want := l.local[acc]
		sort.Slice(want.NICs, func(i, j int) bool { return want.NICs[i].Less(want.NICs[j]) })
		want.Missing = []p2p.Addr{}
		var why []string
		for _, nic := range want.NICs {
			p := c.pairs[pairKey{acc, nic}]
			if p != nil && p.P2P {
				continue
			}
			want.Missing = append(want.Missing, nic)
			if !haveAcc[acc] || c.covered[pairKey{acc, nic}] {
				continue // a finding already says why
			}
			switch {
			case !haveNIC[nic]:
				why = append(why, nic.String()+" not present")
			case p != nil:
				why = append(why, fmt.Sprintf("%s %s (%s)", c.nicList([]p2p.Addr{nic}), p.DMABuf.Outcome, p.Path))
			}
		}
		if len(want.Missing) > 0 {
			e.Match = false
		}
		e.LocalNICs = append(e.LocalNICs, want)
		if len(why) == 0 {
			continue
		}
		name := acc.String()
		if a := c.accIndex[acc]; a != nil {
			name = a.Name + " " + acc.String()
		}
		c.add(Finding{Code: CodeLocalP2PMissing, Severity: SeverityError, Subjects: append([]p2p.Addr{acc}, want.Missing...),
			Message: fmt.Sprintf("%s: expected true P2P with %s for %s, has it with %d: %s",
				name, its(len(want.NICs), localWord(want.Path)+" EFA NIC"), m.Name, len(want.NICs)-len(want.Missing), strings.Join(why, ", ")),
			Fix: "The machine differs from the instance type's layout: a NIC that is not present needs its EFA interface attached (one per network card) or the instance stopped and started; `efap2p explain ACCELERATOR NIC` says why a present one is not P2P."})
	}
}

// matching counts the model's addresses that the node has a device at.
func matching(want []p2p.Addr, have map[p2p.Addr]bool) int {
	n := 0
	for _, a := range want {
		if have[a] {
			n++
		}
	}
	return n
}

// countFinding compares one kind of device (what, singular) with the
// model and reports what is missing (error) and unexpected (warning). Where
// every device the node has is at one of the model's addresses, the
// missing ones are the difference in count ("expected 32 EFA devices for
// p5.48xlarge, found 30: A, B missing"); where some are elsewhere, the
// count alone would contradict the list, so the message says where. It
// returns whether anything differs.
func (c *checker) countFinding(what, model string, want []p2p.Addr, have map[p2p.Addr]bool, missingCode, extraCode, fix string) bool {
	wanted := map[p2p.Addr]bool{}
	var missing, extra []p2p.Addr
	for _, a := range want {
		wanted[a] = true
		if !have[a] {
			missing = append(missing, a)
		}
	}
	for a := range have {
		if !wanted[a] {
			extra = append(extra, a)
		}
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i].Less(extra[j]) })
	plural := what + "s"
	if len(missing) > 0 {
		msg := fmt.Sprintf("expected %d %s for %s, found %d: %s missing", len(want), plural, model, len(have), addrList(missing))
		if len(extra) > 0 {
			msg = fmt.Sprintf("expected %d %s for %s at its addresses, found %d there (and %d at other addresses): %s missing",
				len(want), plural, model, len(want)-len(missing), len(extra), addrList(missing))
		}
		c.add(Finding{Code: missingCode, Severity: SeverityError, Subjects: missing, Message: msg, Fix: fix})
	}
	if len(extra) > 0 {
		c.add(Finding{Code: extraCode, Severity: SeverityWarning, Subjects: extra,
			Message: fmt.Sprintf("%s at addresses the model of %s does not have: %s", counted.Noun(len(extra), what), model, addrList(extra)),
			Fix:     "The machine is not laid out as the model says: check the instance type (DMI product_name), or compare with the right model (--expect MODEL)."})
	}
	return len(missing) > 0 || len(extra) > 0
}

func containsAddr(as []p2p.Addr, a p2p.Addr) bool {
	for _, x := range as {
		if x == a {
			return true
		}
	}
	return false
}
