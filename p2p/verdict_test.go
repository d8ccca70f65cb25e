// SPDX-License-Identifier: MIT

package p2p_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// whitelistText is what a whitelist entry says, for comparisons.
func whitelistText(e *p2p.WhitelistEntry) string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v", *e)
}

// TestVerdictClone: a clone says what the verdict says, and changing
// everything a caller can reach in it (slices, pointers, the whitelist
// entry and its backports) leaves the oracle's cached verdict as it was.
func TestVerdictClone(t *testing.T) {
	clones := 0
	for _, name := range []string{"amd-zen-acs-switch", "intel-icelake-2rootbus", "intel-e5-same-host-bridge", "hygon-hmat-p2p"} {
		m, dir := writeModel(t, name, models.WriteOptions{})
		src, err := p2p.OpenSysfs(dir)
		if err != nil {
			t.Fatal(err)
		}
		o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: m.KernelRelease()})
		whitelisted := 0
		for _, p := range m.Pairs() {
			pr, cl := p.Provider, p.Client
			v, err := o.Verdict(pr, cl)
			if err != nil {
				t.Fatal(err)
			}
			before, _ := json.Marshal(v)
			wl := whitelistText(v.Whitelist)
			c := v.Clone()
			if c == v {
				t.Fatal("Clone returned the verdict itself")
			}
			if got, _ := json.Marshal(c); string(got) != string(before) || whitelistText(c.Whitelist) != wl {
				t.Fatalf("%s %s->%s: the clone differs:\n%s\n%s", name, pr, cl, got, before)
			}
			c.Reason, c.Outcome, c.MapType = "changed", p2p.OutcomeRefused, p2p.MapUnknown
			for _, as := range [][]p2p.Addr{c.ACSRedirect, c.ACSUnknown, c.ACSBlocked} {
				for i := range as {
					as[i] = p2p.Addr{Domain: 0xdead}
				}
			}
			c.ACSRedirect = append(c.ACSRedirect, p2p.Addr{Domain: 0xbeef})
			if c.CommonBridge != nil {
				c.CommonBridge.Bus ^= 0xff
			}
			if c.Whitelist != nil {
				c.Whitelist.Note = "changed"
				for i := range c.Whitelist.Backports {
					c.Whitelist.Backports[i].Minor = 99
				}
			}
			again, err := o.Verdict(pr, cl)
			if err != nil {
				t.Fatal(err)
			}
			after, _ := json.Marshal(again)
			if string(after) != string(before) || whitelistText(again.Whitelist) != wl {
				t.Fatalf("%s %s->%s: changing the clone changed the cache:\n%s\nwas\n%s", name, pr, cl, after, before)
			}
			clones++
			if v.Whitelist != nil {
				whitelisted++
			}
		}
		if name == "intel-icelake-2rootbus" && whitelisted == 0 {
			t.Error("no verdict by a whitelist entry to clone")
		}
	}
	if clones == 0 {
		t.Fatal("no verdict cloned")
	}
	if (*p2p.Verdict)(nil).Clone() != nil {
		t.Error("a nil verdict's clone is not nil")
	}
}

// TestHostBridgeWhitelistIsACopy: changing the entries returned, their
// backports included, changes neither the next answer nor a verdict.
func TestHostBridgeWhitelistIsACopy(t *testing.T) {
	rel := p2p.MustParseRelease("7.1.3")
	want := fmt.Sprintf("%+v", p2p.HostBridgeWhitelist(rel))
	wl := p2p.HostBridgeWhitelist(rel)
	backports := 0
	for i := range wl {
		wl[i].Vendor, wl[i].Device, wl[i].Note = 0, 0, "changed"
		for j := range wl[i].Backports {
			wl[i].Backports[j] = p2p.MustParseRelease("1.0")
			backports++
		}
	}
	if backports == 0 {
		t.Fatal("7.1.3 has no backported entry to change")
	}
	if got := fmt.Sprintf("%+v", p2p.HostBridgeWhitelist(rel)); got != want {
		t.Errorf("the whitelist changed:\n%s\nwant\n%s", got, want)
	}
	// A verdict by a backported entry still sees it.
	for _, e := range p2p.HostBridgeWhitelist(rel) {
		if len(e.Backports) > 0 && !e.In(rel) {
			t.Errorf("%04x:%04x is no longer in %s", e.Vendor, e.Device, rel)
		}
	}
}
