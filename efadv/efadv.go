// SPDX-License-Identifier: MIT

package efadv

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/efap2p/efap2p/abi"
	"github.com/efap2p/efap2p/internal/dl"
	"github.com/efap2p/efap2p/verbs"
)

// LibraryName is the shared object this package loads.
const LibraryName = "libefa.so.1"

var lib = dl.NewLib(LibraryName)

var queryDeviceFn = sync.OnceValues(func() (uintptr, error) {
	// libibverbs first: libefa needs it, and a missing libibverbs is the
	// clearer message.
	if err := verbs.Load(); err != nil {
		return 0, err
	}
	return lib.Sym("efadv_query_device")
})

// Caps is the set of efadv_device_attr.device_caps bits.
type Caps uint32

// Device capabilities (EFADV_DEVICE_ATTR_CAPS_*).
const (
	CapRDMARead             Caps = abi.EFADeviceCapRDMARead
	CapRNRRetry             Caps = abi.EFADeviceCapRNRRetry
	CapCQWithSGID           Caps = abi.EFADeviceCapCQWithSGID
	CapRDMAWrite            Caps = abi.EFADeviceCapRDMAWrite
	CapUnsolicitedWriteRecv Caps = abi.EFADeviceCapUnsolicitedWriteRecv
	CapCQWithExtMemDmabuf   Caps = abi.EFADeviceCapCQWithExtMemDmabuf
	CapCompCntr             Caps = abi.EFADeviceCapCompCntr
	// CapP2PDMA is efap2p's capability (EFADV_DEVICE_ATTR_CAPS_P2P_DMA):
	// the NIC gets true peer-to-peer DMA into at least one accelerator of
	// the host (PCI class 0x03 or 0x12, or one a topology file names):
	// not refused, not bounced through system memory.
	CapP2PDMA Caps = abi.EFADeviceCapP2PDMA
)

var capNames = []struct {
	c    Caps
	name string
}{
	{CapRDMARead, "RDMA_READ"},
	{CapRNRRetry, "RNR_RETRY"},
	{CapCQWithSGID, "CQ_WITH_SGID"},
	{CapRDMAWrite, "RDMA_WRITE"},
	{CapUnsolicitedWriteRecv, "UNSOLICITED_WRITE_RECV"},
	{CapCQWithExtMemDmabuf, "CQ_WITH_EXT_MEM_DMABUF"},
	{CapCompCntr, "COMP_CNTR"},
	{CapP2PDMA, "P2P_DMA"},
}

// Has reports whether every bit of x is set in c.
func (c Caps) Has(x Caps) bool { return c&x == x }

// String lists the capabilities by their rdma-core names, joined by "|"
// ("RDMA_READ|RNR_RETRY|P2P_DMA"); unknown bits are shown in hex, no bit
// as "0".
func (c Caps) String() string {
	if c == 0 {
		return "0"
	}
	var parts []string
	for _, n := range capNames {
		if c&n.c != 0 {
			parts = append(parts, n.name)
			c &^= n.c
		}
	}
	if c != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint32(c)))
	}
	return strings.Join(parts, "|")
}

// DeviceAttr is struct efadv_device_attr in Go.
type DeviceAttr struct {
	CompMask      uint64
	MaxSQWR       uint32
	MaxRQWR       uint32
	MaxSQSGE      uint16
	MaxRQSGE      uint16
	InlineBufSize uint16
	// InlineBufSizeEx is 0 with rdma-core 44, whose struct names these two
	// bytes reserved.
	InlineBufSizeEx uint16
	Caps            Caps
	MaxRDMASize     uint32
}

func attrFrom(a *abi.EFADeviceAttr) DeviceAttr {
	return DeviceAttr{
		CompMask:        a.CompMask,
		MaxSQWR:         a.MaxSQWR,
		MaxRQWR:         a.MaxRQWR,
		MaxSQSGE:        a.MaxSQSGE,
		MaxRQSGE:        a.MaxRQSGE,
		InlineBufSize:   a.InlineBufSize,
		InlineBufSizeEx: a.InlineBufSizeEx,
		Caps:            Caps(a.DeviceCaps),
		MaxRDMASize:     a.MaxRDMASize,
	}
}

// queryRaw is libefa's efadv_query_device, nothing added.
func queryRaw(ctx *verbs.Context) (DeviceAttr, error) {
	fn, err := queryDeviceFn()
	if err != nil {
		return DeviceAttr{}, fmt.Errorf("efadv: %w", err)
	}
	p, err := ctx.Acquire()
	if err != nil {
		return DeviceAttr{}, fmt.Errorf("efadv: query device: %w", err)
	}
	attr := attrPool.Get().(*abi.EFADeviceAttr)
	*attr = abi.EFADeviceAttr{}
	r := dl.Call(fn, p, uintptr(unsafe.Pointer(attr)), abi.EFADeviceAttrSize)
	ctx.Release()
	a := attrFrom(attr)
	attrPool.Put(attr)
	if e := int32(r); e != 0 {
		if e < 0 {
			e = -e
		}
		return DeviceAttr{}, fmt.Errorf("efadv: efadv_query_device(%s): %w", ctx.Name(), syscall.Errno(e))
	}
	return a, nil
}

// attrPool recycles the buffers libefa fills: a buffer passed to C lives
// on the heap, and allocating one per call would cost as much as the rest
// of the Go side.
var attrPool = sync.Pool{New: func() any { return new(abi.EFADeviceAttr) }}

// QueryDevice returns the EFA attributes of the context's device as
// libefa's efadv_query_device reports them, with CapP2PDMA added when the
// process's oracle (see Oracle) finds at least one accelerator with which
// this NIC gets true P2P DMA. libefa's errors are returned unchanged,
// wrapped: EOPNOTSUPP for a device that is not an EFA device. When the
// oracle cannot decide (no PCI function, an unreadable sysfs), CapP2PDMA
// stays clear and QueryP2P says why.
//
// No GPU runtime is touched. After the first call for a NIC the P2P part
// is a cached lookup.
func QueryDevice(ctx *verbs.Context) (DeviceAttr, error) {
	a, err := queryRaw(ctx)
	if err != nil {
		return a, err
	}
	if reaches(ctx) {
		a.Caps |= CapP2PDMA
	}
	return a, nil
}
