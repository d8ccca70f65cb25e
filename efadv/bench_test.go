// SPDX-License-Identifier: MIT

package efadv_test

import (
	"testing"

	"github.com/efap2p/efap2p/abi"
	"github.com/efap2p/efap2p/efadv"
	"github.com/efap2p/efap2p/internal/dl"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim/simtest"
	"github.com/efap2p/efap2p/verbs"
)

// benchNIC opens the model's first NIC with an accelerator among its
// expected peers, and returns that peer.
func benchNIC(b *testing.B) (*verbs.Context, p2p.Addr) {
	m := simtest.Require(b)
	nics := map[p2p.Addr]string{}
	for _, f := range m.EFANICs() {
		nics[f.Addr] = f.IBDev()
	}
	for _, p := range m.Pairs() {
		if name, ok := nics[p.Client]; ok && p.Provider != p.Client {
			return open(b, name), p.Provider
		}
	}
	b.Fatalf("%s: no expected pair with an EFA client", m.Name)
	return nil, p2p.Addr{}
}

// BenchmarkPuregoCall is the floor: a purego call of libc's getpid.
func BenchmarkPuregoCall(b *testing.B) {
	fn, err := dl.Global("getpid")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		dl.Call(fn)
	}
}

// BenchmarkQueryDeviceBare is libefa's efadv_query_device through purego,
// nothing else: the baseline of QueryDevice.
func BenchmarkQueryDeviceBare(b *testing.B) {
	ctx, _ := benchNIC(b)
	attr := new(abi.EFADeviceAttr)
	for b.Loop() {
		if r := efadv.BareQuery(ctx, attr); r != 0 {
			b.Fatal(r)
		}
	}
}

// BenchmarkQueryDeviceLibefa is the Go wrapper of efadv_query_device
// without the P2P part: the context check, the call, the Go attribute.
func BenchmarkQueryDeviceLibefa(b *testing.B) {
	ctx, _ := benchNIC(b)
	for b.Loop() {
		if _, err := efadv.QueryRaw(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryDeviceCold is the first QueryDevice of every EFA NIC of
// the model with a new oracle: sysfs reads and verdicts included (the
// contexts are open already).
func BenchmarkQueryDeviceCold(b *testing.B) {
	m := simtest.Require(b)
	var ctxs []*verbs.Context
	for _, f := range m.EFANICs() {
		ctxs = append(ctxs, open(b, f.IBDev()))
	}
	for b.Loop() {
		efadv.ResetOracle()
		for _, ctx := range ctxs {
			if _, err := efadv.QueryDevice(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(ctxs)), "NICs")
	efadv.ResetOracle()
}

// BenchmarkQueryDevice is QueryDevice warm: the libefa call, the Go
// attribute, and the cached P2P_DMA decision.
func BenchmarkQueryDevice(b *testing.B) {
	ctx, _ := benchNIC(b)
	if _, err := efadv.QueryDevice(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := efadv.QueryDevice(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryP2P is QueryP2P warm: a cached verdict, copied for the
// caller.
func BenchmarkQueryP2P(b *testing.B) {
	ctx, peer := benchNIC(b)
	if _, err := efadv.QueryP2P(ctx, peer); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := efadv.QueryP2P(ctx, peer); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryP2PDmabuf is QueryP2PDmabuf warm: fstatfs and the fdinfo
// read through libc (four purego calls and the emulator's work), then
// cached verdicts.
func BenchmarkQueryP2PDmabuf(b *testing.B) {
	ctx, peer := benchNIC(b)
	fd, err := simtest.Dmabuf(peer.String(), "", 2<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer simtest.Close(fd)
	if _, err := efadv.QueryP2PDmabuf(ctx, fd); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := efadv.QueryP2PDmabuf(ctx, fd); err != nil {
			b.Fatal(err)
		}
	}
}
