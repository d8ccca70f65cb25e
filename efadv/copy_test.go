// SPDX-License-Identifier: MIT

package efadv_test

import (
	"encoding/json"
	"testing"

	"github.com/efap2p/efap2p/efadv"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim/simtest"
)

// spoil changes everything a caller can reach in a verdict.
func spoil(v *p2p.Verdict) {
	v.Reason, v.Hint = "changed", "changed"
	v.Outcome, v.MapType, v.Distance = p2p.OutcomeRefused, p2p.MapNotSupported, 99
	v.PeerMem.Outcome = p2p.OutcomeRefused
	for _, as := range [][]p2p.Addr{v.ACSRedirect, v.ACSUnknown, v.ACSBlocked} {
		for i := range as {
			as[i] = p2p.Addr{Domain: 0xdead}
		}
	}
	if v.CommonBridge != nil {
		v.CommonBridge.Bus ^= 0xff
	}
	if v.Whitelist != nil {
		v.Whitelist.Note = "changed"
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestQueryP2PIsTheCallers: what QueryP2P returns may be changed; the
// next answer for the pair, and the oracle's own verdict, stay as they
// were.
func TestQueryP2PIsTheCallers(t *testing.T) {
	m := simtest.Require(t)
	o, err := efadv.Oracle()
	if err != nil {
		t.Fatal(err)
	}
	nics := map[p2p.Addr]string{}
	for _, f := range m.EFANICs() {
		nics[f.Addr] = f.IBDev()
	}
	n := 0
	for _, p := range m.Pairs() {
		ib, ok := nics[p.Client]
		if !ok {
			continue
		}
		ctx := open(t, ib)
		v, err := efadv.QueryP2P(ctx, p.Provider)
		if err != nil {
			t.Fatal(err)
		}
		want := jsonOf(t, v)
		cached, err := o.Verdict(p.Provider, p.Client)
		if err != nil {
			t.Fatal(err)
		}
		if v == cached {
			t.Fatalf("%s -> %s: QueryP2P hands out the oracle's cached verdict", p.Provider, p.Client)
		}
		spoil(v)
		again, err := efadv.QueryP2P(ctx, p.Provider)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonOf(t, again); got != want {
			t.Fatalf("%s -> %s: changing an answer changed the next one:\n%s\nwant\n%s", p.Provider, p.Client, got, want)
		}
		if got := jsonOf(t, cached); got != want {
			t.Fatalf("%s -> %s: changing an answer changed the oracle's verdict:\n%s\nwant\n%s", p.Provider, p.Client, got, want)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("%s lists no expected verdict with an EFA NIC as client", m.Name)
	}
}

// TestQueryP2PDmabufIsTheCallers: the same for a dma-buf's decision: its
// verdicts are copies, and Best is one of its Candidates.
func TestQueryP2PDmabufIsTheCallers(t *testing.T) {
	m := simtest.Require(t)
	tc, ok := dmabufCases[m.Name]
	if !ok {
		t.Fatalf("no dma-buf cases for model %s", m.Name)
	}
	var owner string
	for _, c := range tc.cases {
		if c.owner != "" && c.wantErr == nil {
			owner = c.owner
			break
		}
	}
	ctx := open(t, m.Function(p2p.MustParseAddr(tc.nic)).IBDev())
	fd, err := simtest.Dmabuf(owner, "", 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer simtest.Close(fd)
	d, err := efadv.QueryP2PDmabuf(ctx, fd)
	if err != nil {
		t.Fatal(err)
	}
	want := jsonOf(t, d)
	found := false
	for _, v := range d.Candidates {
		found = found || v == d.Best
	}
	if !found {
		t.Error("Best is not one of Candidates")
	}
	for _, v := range d.Candidates {
		spoil(v)
	}
	d.Candidates = d.Candidates[:0]
	again, err := efadv.QueryP2PDmabuf(ctx, fd)
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(t, again); got != want {
		t.Fatalf("changing a decision changed the next one:\n%s\nwant\n%s", got, want)
	}
}
