// SPDX-License-Identifier: MIT

package verbs_test

import (
	"errors"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim/simtest"
	"github.com/efap2p/efap2p/verbs"
)

// fixture is, per model, a NIC and an accelerator whose buffers it
// registers, and what the emulated kernel answers for remote write.
type fixture struct {
	nic, gpu    p2p.Addr
	remoteWrite error // registering with REMOTE_WRITE: the NIC lacks RDMA_WRITE
	// unlisted owns memory in a pair the model lists no expectation for:
	// the emulated kernel decides it by the rule (unlistedErr, by hand).
	unlisted    p2p.Addr
	unlistedErr error
}

var fixtures = map[string]fixture{
	// The NVMe 00:04.0 is on root bus 00: through the host bridge, which
	// the AMD Zen 3 CPU allows (cpu_supports_p2pdma, 6.8).
	"p5.48xlarge": {nic: p2p.MustParseAddr("0000:4f:00.0"), gpu: p2p.MustParseAddr("0000:53:00.0"),
		unlisted: p2p.MustParseAddr("0000:00:04.0")},
	// The ConnectX-6 Dx 07:00.0 is on the NIC's switch, whose downstream
	// ports redirect (ACS RR): through the host bridge 8086:6f00, which no
	// 6.8 whitelist lists, on an Intel CPU: refused.
	"intel-acs-switch": {nic: p2p.MustParseAddr("0000:04:00.0"), gpu: p2p.MustParseAddr("0000:03:00.0"), remoteWrite: syscall.EOPNOTSUPP,
		unlisted: p2p.MustParseAddr("0000:07:00.0"), unlistedErr: syscall.EOPNOTSUPP},
	// Below, the NICs have the default caps (no RDMA_WRITE). The NVMe
	// 10000:02:00.0 is behind VMD: its root bus's first device, the root
	// port 8086:347a, is in no whitelist, on an Intel CPU (6.17): refused.
	"multi-domain": {nic: p2p.MustParseAddr("0000:02:00.0"), gpu: p2p.MustParseAddr("0000:01:00.0"), remoteWrite: syscall.EOPNOTSUPP,
		unlisted: p2p.MustParseAddr("10000:02:00.0"), unlistedErr: syscall.EOPNOTSUPP},
	// The L4's memory is vfio-pci's, which never goes to an importer that
	// pins (refused): the memory that registers here is the NIC's own,
	// one function, distance 0, BUS_ADDR: p2p (and in no expectation).
	"arm64-devicetree": {nic: p2p.MustParseAddr("0001:01:00.0"), gpu: p2p.MustParseAddr("0001:01:00.0"), remoteWrite: syscall.EOPNOTSUPP,
		unlisted: p2p.MustParseAddr("0001:01:00.0")},
	// The other vPCI EFA 0004:00:00.0: its root bus's first device is the
	// EFA itself, in no whitelist, on an Intel CPU (6.8): refused.
	"hyperv-vpci": {nic: p2p.MustParseAddr("0003:00:00.0"), gpu: p2p.MustParseAddr("0001:00:00.0"), remoteWrite: syscall.EOPNOTSUPP,
		unlisted: p2p.MustParseAddr("0004:00:00.0"), unlistedErr: syscall.EOPNOTSUPP},
}

func setup(t *testing.T) (*models.Machine, fixture) {
	t.Helper()
	m := simtest.Require(t)
	fx, ok := fixtures[m.Name]
	if !ok {
		t.Fatalf("no fixture for model %s", m.Name)
	}
	return m, fx
}

func open(t *testing.T, m *models.Machine, nic p2p.Addr) *verbs.Context {
	t.Helper()
	f := m.Function(nic)
	if f == nil {
		t.Fatalf("%s: no function %s", m.Name, nic)
	}
	ctx, err := verbs.Open(f.IBDev())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

func dmabuf(t *testing.T, owner, expName string, size uint64) int {
	t.Helper()
	fd, err := simtest.Dmabuf(owner, expName, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { simtest.Close(fd) })
	return fd
}

type dev struct {
	Name      string
	PCI       p2p.Addr
	Node      verbs.NodeType
	Transport verbs.TransportType
}

// TestDevices lists the model's EFA NICs with their PCI functions.
func TestDevices(t *testing.T) {
	m := simtest.Require(t)
	var want []dev
	for _, f := range m.EFANICs() {
		want = append(want, dev{f.IBDev(), f.Addr, verbs.NodeUnspecified, verbs.TransportUnspecified})
	}
	ds, err := verbs.Devices()
	if err != nil {
		t.Fatal(err)
	}
	var got []dev
	for _, d := range ds {
		a, err := d.PCIAddr()
		if err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
		if d.KernelName == "" || d.DevPath == "" || d.IBDevPath == "" {
			t.Errorf("%s: empty names: %+v", d.Name, d)
		}
		got = append(got, dev{d.Name, a, d.NodeType, d.Transport})
	}
	byName := func(s []dev) { sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name }) }
	byName(want)
	byName(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: devices (-want +got):\n%s", m.Name, diff)
	}
}

func TestOpen(t *testing.T) {
	m, fx := setup(t)
	tests := []struct {
		name    string
		dev     string
		wantErr error
	}{
		{"EFA NIC", m.Function(fx.nic).IBDev(), nil},
		{"unknown", "mlx5_0", syscall.ENODEV},
		{"empty", "", syscall.ENODEV},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, err := verbs.Open(tc.dev)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Open(%q) = %v, want %v", tc.dev, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			defer ctx.Close()
			if ctx.Name() != tc.dev {
				t.Errorf("Name() = %q, want %q", ctx.Name(), tc.dev)
			}
			if a, err := ctx.PCIAddr(); err != nil || a != fx.nic {
				t.Errorf("PCIAddr() = %v, %v; want %v", a, err, fx.nic)
			}
		})
	}
}

// TestRegDmabufMR registers fake dma-bufs as an application registers GPU
// memory, and checks the errno of each refusal.
func TestRegDmabufMR(t *testing.T) {
	m, fx := setup(t)
	const size = 2 << 20
	ctx := open(t, m, fx.nic)
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	regular, err := os.CreateTemp(t.TempDir(), "notdmabuf")
	if err != nil {
		t.Fatal(err)
	}
	defer regular.Close()
	if err := regular.Truncate(size); err != nil {
		t.Fatal(err)
	}
	gpu := dmabuf(t, fx.gpu.String(), "", size)
	sysmem := dmabuf(t, "", "system", size)
	unlisted := dmabuf(t, fx.unlisted.String(), "", size)
	// A closed descriptor: closed the way a C program closes it, at a
	// number nothing else opens during the test.
	closed := dmabuf(t, fx.gpu.String(), "", size)
	if err := unix.Dup2(closed, 900); err != nil {
		t.Fatal(err)
	}
	if err := simtest.Close(900); err != nil {
		t.Fatal(err)
	}
	closed = 900
	rw := verbs.AccessLocalWrite | verbs.AccessRemoteRead
	tests := []struct {
		name           string
		fd             int
		offset, length uint64
		access         verbs.Access
		wantErr        error
	}{
		{"GPU memory", gpu, 0, size, rw, nil},
		{"GPU memory, offset", gpu, 4096, 1 << 20, verbs.AccessLocalWrite, nil},
		{"GPU memory, remote write", gpu, 0, size, rw | verbs.AccessRemoteWrite, fx.remoteWrite},
		{"system memory", sysmem, 0, size, rw, nil},
		{"memory of a pair no expectation lists", unlisted, 0, size, rw, fx.unlistedErr},
		{"closed fd", closed, 0, size, rw, syscall.EBADF},
		{"regular file", int(regular.Fd()), 0, size, rw, syscall.EINVAL},
		{"past the end", gpu, 4096, size, rw, syscall.EINVAL},
		{"remote write without local write", gpu, 0, size, verbs.AccessRemoteWrite, syscall.EINVAL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const iova = 0x7f0000000000
			mr, err := pd.RegDmabufMR(tc.offset, tc.length, iova, tc.fd, tc.access)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("RegDmabufMR: %v", err)
				}
				// libibverbs reports a dma-buf region's offset as its address.
				if mr.Length() != tc.length || mr.Addr() != tc.offset || mr.PD() != pd {
					t.Errorf("MR length %d addr %#x, want %d %#x", mr.Length(), mr.Addr(), tc.length, tc.offset)
				}
				if mr.LKey() == 0 && mr.RKey() == 0 {
					t.Errorf("MR has no keys")
				}
				if err := mr.Dereg(); err != nil {
					t.Errorf("Dereg: %v", err)
				}
				if err := mr.Dereg(); !errors.Is(err, verbs.ErrClosed) {
					t.Errorf("second Dereg = %v, want ErrClosed", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("RegDmabufMR = %v, want %v", err, tc.wantErr)
			}
			if mr != nil {
				t.Errorf("RegDmabufMR returned an MR with an error")
			}
		})
	}
}

func TestRegMR(t *testing.T) {
	m, fx := setup(t)
	ctx := open(t, m, fx.nic)
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	mapped, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mapped)
	tests := []struct {
		name    string
		buf     []byte
		wantErr error
	}{
		{"Go heap", make([]byte, 1<<16), nil},
		{"mmap", mapped, nil},
		{"empty", nil, syscall.EINVAL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mr, err := pd.RegMR(tc.buf, verbs.AccessLocalWrite)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("RegMR = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if mr.Length() != uint64(len(tc.buf)) {
				t.Errorf("Length() = %d, want %d", mr.Length(), len(tc.buf))
			}
			if err := mr.Dereg(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestLifecycle: PDs busy while MRs use them, second release calls, use
// after close, and Close releasing what is left.
func TestLifecycle(t *testing.T) {
	m, fx := setup(t)
	ctx, err := verbs.Open(m.Function(fx.nic).IBDev())
	if err != nil {
		t.Fatal(err)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	fd := dmabuf(t, fx.gpu.String(), "", 1<<20)
	mr, err := pd.RegDmabufMR(0, 1<<20, 0, fd, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := pd.Dealloc(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("Dealloc with a live MR = %v, want EBUSY", err)
	}
	if err := mr.Dereg(); err != nil {
		t.Fatal(err)
	}
	if err := pd.Dealloc(); err != nil {
		t.Fatalf("Dealloc: %v", err)
	}
	if err := pd.Dealloc(); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("second Dealloc = %v, want ErrClosed", err)
	}
	if _, err := pd.RegDmabufMR(0, 1<<20, 0, fd, verbs.AccessLocalWrite); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("RegDmabufMR on a deallocated PD = %v, want ErrClosed", err)
	}

	// Left for Close.
	pd2, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	mr2, err := pd2.RegDmabufMR(0, 1<<20, 0, fd, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatalf("Close with a live PD and MR: %v", err)
	}
	for name, err := range map[string]error{
		"second Close":      ctx.Close(),
		"Dereg after":       mr2.Dereg(),
		"Dealloc after":     pd2.Dealloc(),
		"AllocPD after":     second(ctx.AllocPD()),
		"PCIAddr after":     second(ctx.PCIAddr()),
		"Acquire after":     second(ctx.Acquire()),
		"RegMR after":       second(pd2.RegMR(make([]byte, 64), verbs.AccessLocalWrite)),
		"RegDmabufMR after": second(pd2.RegDmabufMR(0, 1<<20, 0, fd, verbs.AccessLocalWrite)),
	} {
		if !errors.Is(err, verbs.ErrClosed) {
			t.Errorf("%s: %v, want ErrClosed", name, err)
		}
	}
	if ctx.Name() != m.Function(fx.nic).IBDev() {
		t.Errorf("Name() after Close = %q", ctx.Name())
	}
}

func second[T any](_ T, err error) error { return err }

// TestConcurrentClose closes a context while other goroutines use it:
// every call either works or reports ErrClosed.
func TestConcurrentClose(t *testing.T) {
	m, fx := setup(t)
	ctx, err := verbs.Open(m.Function(fx.nic).IBDev())
	if err != nil {
		t.Fatal(err)
	}
	fd := dmabuf(t, fx.gpu.String(), "", 1<<20)
	var wg sync.WaitGroup
	var done atomic.Int64
	errs := make(chan error, 64)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				pd, err := ctx.AllocPD()
				if err != nil {
					errs <- err
					return
				}
				mr, err := pd.RegDmabufMR(0, 4096, 0, fd, verbs.AccessLocalWrite)
				if err == nil {
					err = mr.Dereg()
				}
				if err == nil {
					err = pd.Dealloc()
				}
				if err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		}()
	}
	// until 100 rounds are done, or every goroutine has stopped on an
	// error (a refused registration must fail the test, not hang it)
	for done.Load() < 100 && len(errs) < 8 {
		runtime.Gosched()
	}
	if err := ctx.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
	close(errs)
	if len(errs) != 8 {
		t.Errorf("%d goroutines saw the context closed, want 8", len(errs))
	}
	for err := range errs {
		if !errors.Is(err, verbs.ErrClosed) {
			t.Errorf("during Close: %v, want nil or ErrClosed", err)
		}
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{verbs.NodeUnspecified.String(), "unspecified"},
		{verbs.NodeCA.String(), "CA"},
		{verbs.NodeType(42).String(), "NodeType(42)"},
		{verbs.TransportUnspecified.String(), "unspecified"},
		{verbs.TransportIB.String(), "InfiniBand"},
		{verbs.TransportType(-7).String(), "TransportType(-7)"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
