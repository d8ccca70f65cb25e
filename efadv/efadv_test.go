// SPDX-License-Identifier: MIT

package efadv_test

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/efap2p/efap2p/efadv"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim/simtest"
	"github.com/efap2p/efap2p/verbs"
)

// p2pDMA is, per model, whether every EFA NIC gets the P2P_DMA cap: each
// p5.48xlarge NIC shares a switch with an H100 (nvidia, passthrough VM:
// p2p); no intel-acs-switch NIC reaches a GPU other than through system
// memory (amdgpu bounces what the kernel refuses). multi-domain: each
// NIC reaches both MI210s outside the VMD domain through whitelisted
// 8086:09a2 host bridges (amdgpu, PCIe: p2p). arm64-devicetree: the path
// to the L4 bound to vfio-pci is allowed (Google root ports 1ae0:2000,
// whitelisted by vendor in 7.1), but vfio-pci's BAR dma-bufs never go to
// an importer that pins, as EFA's MRs do (7.0: only revocable
// importers): no P2P_DMA.
// hyperv-vpci: each NIC reaches an H100 (nvidia, in a VM: p2p).
var p2pDMA = map[string]bool{
	"p5.48xlarge":      true,
	"intel-acs-switch": false,
	"multi-domain":     true,
	"arm64-devicetree": false,
	"hyperv-vpci":      true,
}

func open(t testing.TB, name string) *verbs.Context {
	t.Helper()
	ctx, err := verbs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

// TestQueryDevice checks every NIC of the model: libefa's attributes
// unchanged, the model's limits, and P2P_DMA as the model says.
func TestQueryDevice(t *testing.T) {
	m := simtest.Require(t)
	want, ok := p2pDMA[m.Name]
	if !ok {
		t.Fatalf("no expectation for model %s", m.Name)
	}
	nics := m.EFANICs()
	if len(nics) == 0 {
		t.Fatalf("%s has no EFA NIC", m.Name)
	}
	for _, f := range nics {
		t.Run(f.IBDev(), func(t *testing.T) {
			ctx := open(t, f.IBDev())
			raw, err := efadv.QueryRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := efadv.QueryDevice(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.Caps.Has(efadv.CapP2PDMA) != want {
				t.Errorf("%s (%s): caps %v, P2P_DMA want %v", f.IBDev(), f.Addr, got.Caps, want)
			}
			if raw.Caps.Has(efadv.CapP2PDMA) {
				t.Errorf("libefa itself set P2P_DMA: %v", raw.Caps)
			}
			wantAttr := raw
			if want {
				wantAttr.Caps |= efadv.CapP2PDMA
			}
			if diff := cmp.Diff(wantAttr, got); diff != "" {
				t.Errorf("QueryDevice differs from libefa beyond P2P_DMA (-want +got):\n%s", diff)
			}
			e := m.EFAAttrs(f)
			model := efadv.DeviceAttr{MaxSQWR: e.MaxSQWR, MaxRQWR: e.MaxRQWR, MaxSQSGE: e.MaxSQSGE, MaxRQSGE: e.MaxRQSGE,
				InlineBufSize: e.InlineBuf, MaxRDMASize: e.MaxRDMASize}
			limits := got
			limits.CompMask, limits.InlineBufSizeEx, limits.Caps = 0, 0, 0
			if diff := cmp.Diff(model, limits); diff != "" {
				t.Errorf("limits differ from the model's (-want +got):\n%s", diff)
			}
			if !got.Caps.Has(efadv.CapRDMARead) {
				t.Errorf("caps %v lack RDMA_READ, which every model NIC has", got.Caps)
			}
		})
	}
}

func TestQueryDeviceClosed(t *testing.T) {
	m := simtest.Require(t)
	ctx, err := verbs.Open(m.EFANICs()[0].IBDev())
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := efadv.QueryDevice(ctx); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("QueryDevice after Close = %v, want ErrClosed", err)
	}
	if _, err := efadv.QueryP2P(ctx, m.EFANICs()[0].Addr); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("QueryP2P after Close = %v, want ErrClosed", err)
	}
	if _, err := efadv.QueryP2PDmabuf(ctx, 0); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("QueryP2PDmabuf after Close = %v, want ErrClosed", err)
	}
}

// verdict is the part of a verdict the models state by hand.
type verdict struct {
	MapType  p2p.MapType
	Distance int
	Path     p2p.PathClass
	Outcome  string
	Policy   p2p.Policy
}

// TestQueryP2PExpected asks, for every expected pair of the model whose
// client is an EFA NIC, through the NIC's context.
func TestQueryP2PExpected(t *testing.T) {
	m := simtest.Require(t)
	nics := map[p2p.Addr]*models.Function{}
	for _, f := range m.EFANICs() {
		nics[f.Addr] = f
	}
	ctxs := map[p2p.Addr]*verbs.Context{}
	n := 0
	for _, p := range m.Pairs() {
		f, ok := nics[p.Client]
		if !ok {
			continue
		}
		n++
		ctx := ctxs[p.Client]
		if ctx == nil {
			ctx = open(t, f.IBDev())
			ctxs[p.Client] = ctx
		}
		v, err := efadv.QueryP2P(ctx, p.Provider)
		if err != nil {
			t.Errorf("%s -> %s: %v", p.Provider, p.Client, err)
			continue
		}
		want := verdict{p.MapType, p.Distance, p.Path, p.ExpectedOutcome(), p.Policy}
		got := verdict{v.MapType, v.Distance, v.Path, v.Outcome.String(), v.Policy}
		if want.Path == p2p.PathUnknown {
			got.Path = p2p.PathUnknown
		}
		if want.Policy == p2p.PolicyUnknown {
			got.Policy = p2p.PolicyUnknown
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: provider %s, client %s (%s) (-want +got):\n%s\nwhy (model): %s\nreason: %s", m.Name, p.Provider, p.Client, f.IBDev(), diff, p.Why, v.Reason)
		}
	}
	if n == 0 {
		t.Fatalf("%s lists no expected verdict with an EFA NIC as client", m.Name)
	}
}

func TestQueryP2PErrors(t *testing.T) {
	m := simtest.Require(t)
	ctx := open(t, m.EFANICs()[0].IBDev())
	if _, err := efadv.QueryP2P(ctx, p2p.MustParseAddr("0000:ff:1f.7")); !errors.Is(err, p2p.ErrNoFunction) {
		t.Errorf("QueryP2P of an absent peer = %v, want ErrNoFunction", err)
	}
}

// dmabufCase is one dma-buf query: a buffer made by the emulator (owner,
// exporter name), or a descriptor of another kind.
type dmabufCase struct {
	name     string
	owner    string // PCI function owning the buffer; "" for system memory
	expName  string // "" for the owner's driver
	fd       func(t *testing.T) int
	exporter string // want
	best     string // want: the best candidate
	outcome  p2p.Outcome
	refuse   bool // want: the library refuses without asking the kernel
	wantErr  error
}

// dmabufCases are per model, for its first NIC with an expected pair.
var dmabufCases = map[string]struct {
	nic   string
	cases []dmabufCase
}{
	"p5.48xlarge": {"0000:4f:00.0", []dmabufCase{
		{name: "own switch's H100", owner: "0000:53:00.0", exporter: "nvidia", best: "0000:53:00.0", outcome: p2p.OutcomeP2P},
		// The exporter name does not say which GPU: the nearest wins.
		{name: "other socket's H100", owner: "0000:ca:00.0", exporter: "nvidia", best: "0000:53:00.0", outcome: p2p.OutcomeP2P},
		{name: "open nvidia modules' name", owner: "0000:53:00.0", expName: "nv_dmabuf", exporter: "nv_dmabuf", best: "0000:53:00.0", outcome: p2p.OutcomeP2P},
		{name: "system heap", expName: "system", wantErr: p2p.ErrSystemMemory},
		{name: "udmabuf", expName: "udmabuf", wantErr: p2p.ErrSystemMemory},
		{name: "unknown exporter", owner: "0000:53:00.0", expName: "mystery", wantErr: p2p.ErrUnknownExporter},
	}},
	"intel-acs-switch": {"0000:04:00.0", []dmabufCase{
		{name: "amdgpu on the same switch", owner: "0000:03:00.0", exporter: "amdgpu", best: "0000:03:00.0", outcome: p2p.OutcomeBounced},
		{name: "DRM PRIME name", owner: "0000:06:00.0", expName: "drm", exporter: "drm", best: "0000:03:00.0", outcome: p2p.OutcomeBounced},
		{name: "system heap", expName: "system", wantErr: p2p.ErrSystemMemory},
		{name: "unknown exporter", owner: "0000:03:00.0", expName: "mystery", wantErr: p2p.ErrUnknownExporter},
	}},
	// Both MI210s outside VMD are p2p from 0000:02:00.0; the one on the
	// NIC's NUMA node (PHB, not SYS) is the most favourable.
	"multi-domain": {"0000:02:00.0", []dmabufCase{
		{name: "MI210 of the other domain", owner: "0001:01:00.0", exporter: "amdgpu", best: "0000:01:00.0", outcome: p2p.OutcomeP2P},
		{name: "system heap", expName: "system", wantErr: p2p.ErrSystemMemory},
	}},
	"arm64-devicetree": {"0001:01:00.0", []dmabufCase{
		// The path is allowed, but vfio-pci refuses the NIC's pinned
		// registration: refused without asking the kernel.
		{name: "vfio-pci BAR", owner: "0000:01:00.0", expName: "vfio_pci_core", exporter: "vfio_pci_core", best: "0000:01:00.0", outcome: p2p.OutcomeRefused, refuse: true},
	}},
	// The H100 on the NIC's NUMA node 0 (NODE) beats the one on node 1 (SYS).
	"hyperv-vpci": {"0003:00:00.0", []dmabufCase{
		{name: "H100 on the other node", owner: "0002:00:00.0", exporter: "nvidia", best: "0001:00:00.0", outcome: p2p.OutcomeP2P},
		{name: "amdgpu in a VM", owner: "0005:00:00.0", exporter: "amdgpu", best: "0005:00:00.0", outcome: p2p.OutcomeBounced},
	}},
}

// commonDmabufCases hold in every model.
var commonDmabufCases = []dmabufCase{
	{name: "closed descriptor", fd: func(t *testing.T) int {
		fd, err := simtest.Dmabuf("", "system", 4096)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Dup2(fd, 901); err != nil {
			t.Fatal(err)
		}
		simtest.Close(fd)
		simtest.Close(901)
		return 901
	}, wantErr: syscall.EBADF},
	{name: "negative descriptor", fd: func(*testing.T) int { return -1 }, wantErr: syscall.EBADF},
	{name: "regular file", fd: func(t *testing.T) int {
		f, err := os.CreateTemp(t.TempDir(), "plain")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return int(f.Fd())
	}, wantErr: syscall.EINVAL},
	{name: "pipe", fd: func(t *testing.T) int {
		var p [2]int
		if err := unix.Pipe(p[:]); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
		return p[0]
	}, wantErr: syscall.EINVAL},
}

// TestQueryP2PDmabuf identifies buffers made by the emulator's fake
// exporters: the emulator answers only libc's fstatfs and fdinfo, so these
// pass only if the package goes through libc.
func TestQueryP2PDmabuf(t *testing.T) {
	m := simtest.Require(t)
	mc, ok := dmabufCases[m.Name]
	if !ok {
		t.Fatalf("no dma-buf cases for model %s", m.Name)
	}
	ctx := open(t, m.Function(p2p.MustParseAddr(mc.nic)).IBDev())
	for _, tc := range append(mc.cases, commonDmabufCases...) {
		t.Run(tc.name, func(t *testing.T) {
			var fd int
			if tc.fd != nil {
				fd = tc.fd(t)
			} else {
				var err error
				if fd, err = simtest.Dmabuf(tc.owner, tc.expName, 2<<20); err != nil {
					t.Fatal(err)
				}
				defer simtest.Close(fd)
			}
			d, err := efadv.QueryP2PDmabuf(ctx, fd)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("QueryP2PDmabuf = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if d.Exporter != tc.exporter || d.Best.Provider.String() != tc.best || d.Best.Outcome != tc.outcome || d.Refuse != tc.refuse {
				t.Errorf("decision: exporter %s, best %s %s, refuse %v; want %s, %s %s, %v", d.Exporter, d.Best.Provider, d.Best.Outcome, d.Refuse, tc.exporter, tc.best, tc.outcome, tc.refuse)
			}
			if len(d.Candidates) == 0 {
				t.Errorf("no candidates")
			}
		})
	}
}

func TestCapsString(t *testing.T) {
	tests := []struct {
		caps efadv.Caps
		want string
	}{
		{0, "0"},
		{efadv.CapRDMARead | efadv.CapRNRRetry, "RDMA_READ|RNR_RETRY"},
		{efadv.CapRDMARead | efadv.CapP2PDMA, "RDMA_READ|P2P_DMA"},
		{efadv.CapCompCntr | 1<<20, "COMP_CNTR|0x100000"},
	}
	for _, tc := range tests {
		if got := tc.caps.String(); got != tc.want {
			t.Errorf("Caps(%#x).String() = %q, want %q", uint32(tc.caps), got, tc.want)
		}
	}
	if !(efadv.CapRDMARead | efadv.CapP2PDMA).Has(efadv.CapP2PDMA) || efadv.CapRDMARead.Has(efadv.CapRDMARead|efadv.CapP2PDMA) {
		t.Errorf("Has is wrong")
	}
}
