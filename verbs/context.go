// SPDX-License-Identifier: MIT

package verbs

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/efap2p/efap2p/abi"
	"github.com/efap2p/efap2p/internal/dl"
	"github.com/efap2p/efap2p/p2p"
)

// ErrNoLibrary is wrapped by every error that comes from libibverbs (or
// another library this module loads) being absent or too old.
var ErrNoLibrary = dl.ErrNoLibrary

// ErrNoDevice is wrapped when there is no RDMA device to open: the host's
// kernel has no RDMA support (libibverbs' ENOSYS, wrapped too), or no
// device has the name asked for (ENODEV, wrapped too).
var ErrNoDevice = errors.New("no RDMA device")

// ErrClosed is wrapped by every error from a Context, PD or MR that was
// already closed, deallocated or deregistered.
var ErrClosed = errors.New("verbs: handle already closed")

// Context is an open device (struct ibv_context). Its methods, and those
// of its PDs and MRs, are safe for concurrent use; Close waits for calls
// in progress.
type Context struct {
	// mu guards ptr and the ptr of every PD and MR of the context: calls
	// that use them hold it for reading, calls that free them (Close,
	// Dealloc, Dereg) for writing.
	mu     sync.RWMutex
	ptr    uintptr // struct ibv_context *; 0 once closed
	closed atomic.Bool
	dev    Device
	// setMu guards the sets of live PDs and MRs (pds, PD.mrs) for callers
	// holding mu for reading; a holder of mu for writing needs no setMu.
	setMu sync.Mutex
	pds   map[*PD]struct{}

	pciOnce sync.Once
	pci     p2p.Addr
	pciErr  error
}

// Open opens the RDMA device named name ("rdmap79s0"). An unknown name
// gives an error wrapping syscall.ENODEV; libibverbs' own failures carry
// its errno.
func Open(name string) (*Context, error) {
	f, err := loadFns()
	if err != nil {
		return nil, err
	}
	list, ptrs, err := deviceList(f)
	if err != nil {
		return nil, err
	}
	defer dl.Call(f.freeDeviceList, list)
	for _, p := range ptrs {
		d := deviceFrom(p)
		if d.Name != name {
			continue
		}
		ctx, errno := dl.CallErrno(f.openDevice, p)
		if ctx == 0 {
			return nil, callErr("ibv_open_device("+name+")", dl.ErrnoOrEIO(errno))
		}
		return &Context{ptr: ctx, dev: d, pds: map[*PD]struct{}{}}, nil
	}
	return nil, fmt.Errorf("verbs: %w named %q (%w)", ErrNoDevice, name, syscall.ENODEV)
}

// Name returns the device's verbs name.
func (c *Context) Name() string { return c.dev.Name }

// Device returns the device the context was opened on.
func (c *Context) Device() Device { return c.dev }

// PCIAddr returns the device's PCI function (see Device.PCIAddr), read
// once per context.
func (c *Context) PCIAddr() (p2p.Addr, error) {
	if c.closed.Load() {
		return p2p.Addr{}, c.closedErr()
	}
	c.pciOnce.Do(func() { c.pci, c.pciErr = pciAddr(c.dev.Name) })
	return c.pci, c.pciErr
}

func (c *Context) closedErr() error {
	return fmt.Errorf("context of %s: %w", c.dev.Name, ErrClosed)
}

// Acquire returns the struct ibv_context pointer and keeps the context
// open until the matching Release: for packages that pass the context to
// a provider library (efadv). Every successful Acquire must be followed by
// exactly one Release; do not call Close in between.
func (c *Context) Acquire() (uintptr, error) {
	c.mu.RLock()
	if c.ptr == 0 {
		c.mu.RUnlock()
		return 0, c.closedErr()
	}
	return c.ptr, nil
}

// Release ends an Acquire.
func (c *Context) Release() { c.mu.RUnlock() }

// Close deregisters the context's remaining MRs, deallocates its remaining
// PDs and closes the device. A second Close returns an error wrapping
// ErrClosed.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr == 0 {
		return c.closedErr()
	}
	f, err := loadFns()
	if err != nil {
		return err // not reached: the context was opened through f
	}
	var errs []error
	for pd := range c.pds {
		for mr := range pd.mrs {
			errs = append(errs, mr.deregLocked(f))
		}
		errs = append(errs, pd.deallocLocked(f))
	}
	errs = append(errs, callErr("ibv_close_device("+c.dev.Name+")", intResult(dl.CallErrno(f.closeDevice, c.ptr))))
	// Whatever failed above went with the device: no handle of the
	// context may reach the library again.
	for pd := range c.pds {
		for mr := range pd.mrs {
			mr.ptr = 0
			if mr.pin != nil {
				mr.pin.Unpin()
			}
		}
		pd.mrs = nil
		pd.ptr = 0
	}
	c.pds = nil
	c.ptr = 0
	c.closed.Store(true)
	return errors.Join(errs...)
}

// PD is a protection domain (struct ibv_pd).
type PD struct {
	ctx    *Context
	ptr    uintptr // struct ibv_pd *; 0 once deallocated; under ctx.mu
	handle uint32
	mrs    map[*MR]struct{}
}

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (*PD, error) {
	f, err := loadFns()
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == 0 {
		return nil, c.closedErr()
	}
	p, errno := dl.CallErrno(f.allocPD, c.ptr)
	if p == 0 {
		return nil, callErr("ibv_alloc_pd("+c.dev.Name+")", dl.ErrnoOrEIO(errno))
	}
	pd := &PD{ctx: c, ptr: p, handle: (*abi.IBVPD)(dl.Ptr(p)).Handle, mrs: map[*MR]struct{}{}}
	c.setMu.Lock()
	c.pds[pd] = struct{}{}
	c.setMu.Unlock()
	return pd, nil
}

// Context returns the context the PD belongs to.
func (pd *PD) Context() *Context { return pd.ctx }

// Handle returns the kernel's handle of the PD.
func (pd *PD) Handle() uint32 { return pd.handle }

func (pd *PD) closedErr() error {
	return fmt.Errorf("PD %d of %s: %w", pd.handle, pd.ctx.dev.Name, ErrClosed)
}

// Dealloc deallocates the PD. While MRs use it, libibverbs refuses with
// EBUSY and the PD stays usable. A second Dealloc returns an error
// wrapping ErrClosed.
func (pd *PD) Dealloc() error {
	f, err := loadFns()
	if err != nil {
		return err
	}
	pd.ctx.mu.Lock()
	defer pd.ctx.mu.Unlock()
	if pd.ptr == 0 {
		return pd.closedErr()
	}
	return pd.deallocLocked(f)
}

func (pd *PD) deallocLocked(f *fns) error {
	if err := intResult(dl.CallErrno(f.deallocPD, pd.ptr)); err != nil {
		return callErr(fmt.Sprintf("ibv_dealloc_pd(%s, PD %d)", pd.ctx.dev.Name, pd.handle), err)
	}
	pd.ptr = 0
	delete(pd.ctx.pds, pd)
	return nil
}

// Access is a set of enum ibv_access_flags.
type Access uint32

// Access flags.
const (
	AccessLocalWrite   Access = abi.IBVAccessLocalWrite
	AccessRemoteWrite  Access = abi.IBVAccessRemoteWrite
	AccessRemoteRead   Access = abi.IBVAccessRemoteRead
	AccessRemoteAtomic Access = abi.IBVAccessRemoteAtomic
	AccessRelaxedOrder Access = abi.IBVAccessRelaxedOrder
)

// MR is a registered memory region (struct ibv_mr).
type MR struct {
	pd     *PD
	ptr    uintptr // struct ibv_mr *; 0 once deregistered; under ctx.mu
	handle uint32
	lkey   uint32
	rkey   uint32
	addr   uint64
	length uint64
	pin    *runtime.Pinner // Go memory registered by RegMR
}

// RegDmabufMR registers length bytes of the dma-buf fd, from offset, at
// the I/O virtual address iova (ibv_reg_dmabuf_mr). The kernel's errors
// come back as errno: EBADF for a closed fd, EINVAL for one that is not a
// dma-buf or a range outside it, EOPNOTSUPP for access the device lacks
// or a peer it cannot reach. A libibverbs older than rdma-core 34 gives an
// error wrapping ErrNoLibrary.
func (pd *PD) RegDmabufMR(offset, length, iova uint64, fd int, access Access) (*MR, error) {
	f, err := loadFns()
	if err != nil {
		return nil, err
	}
	if f.regDmabufMR == 0 {
		return nil, fmt.Errorf("verbs: ibv_reg_dmabuf_mr: %w: %s has no ibv_reg_dmabuf_mr", ErrNoLibrary, LibraryName)
	}
	return pd.reg(func() (uintptr, syscall.Errno) {
		return dl.CallErrno(f.regDmabufMR, pd.ptr, uintptr(offset), uintptr(length), uintptr(iova), uintptr(int32(fd)), uintptr(access))
	}, "ibv_reg_dmabuf_mr", nil)
}

// RegMR registers buf (ibv_reg_mr). Memory from the Go heap is pinned
// until the MR is deregistered; memory mapped with mmap suits the device
// better (it is page-aligned and never moves).
func (pd *PD) RegMR(buf []byte, access Access) (*MR, error) {
	f, err := loadFns()
	if err != nil {
		return nil, err
	}
	if len(buf) == 0 {
		return nil, fmt.Errorf("verbs: ibv_reg_mr: empty buffer: %w", syscall.EINVAL)
	}
	pin := new(runtime.Pinner)
	pin.Pin(&buf[0])
	mr, err := pd.reg(func() (uintptr, syscall.Errno) {
		return dl.CallErrno(f.regMR, pd.ptr, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(access))
	}, "ibv_reg_mr", pin)
	if err != nil {
		pin.Unpin()
	}
	return mr, err
}

func (pd *PD) reg(call func() (uintptr, syscall.Errno), what string, pin *runtime.Pinner) (*MR, error) {
	c := pd.ctx
	c.mu.RLock() // registrations run in parallel; Dealloc waits for them
	defer c.mu.RUnlock()
	if pd.ptr == 0 {
		return nil, pd.closedErr()
	}
	p, errno := call()
	if p == 0 {
		return nil, callErr(fmt.Sprintf("%s(%s, PD %d)", what, c.dev.Name, pd.handle), dl.ErrnoOrEIO(errno))
	}
	m := (*abi.IBVMR)(dl.Ptr(p))
	mr := &MR{pd: pd, ptr: p, handle: m.Handle, lkey: m.LKey, rkey: m.RKey, addr: uint64(m.Addr), length: m.Length, pin: pin}
	c.setMu.Lock()
	pd.mrs[mr] = struct{}{}
	c.setMu.Unlock()
	return mr, nil
}

// PD returns the protection domain the MR belongs to.
func (mr *MR) PD() *PD { return mr.pd }

// LKey returns the local key of the region.
func (mr *MR) LKey() uint32 { return mr.lkey }

// RKey returns the remote key of the region.
func (mr *MR) RKey() uint32 { return mr.rkey }

// Handle returns the kernel's handle of the region.
func (mr *MR) Handle() uint32 { return mr.handle }

// Addr returns ibv_mr.addr as libibverbs sets it: the buffer's address
// for RegMR, the offset into the dma-buf for RegDmabufMR.
func (mr *MR) Addr() uint64 { return mr.addr }

// Length returns the region's length in bytes.
func (mr *MR) Length() uint64 { return mr.length }

// Dereg deregisters the region (ibv_dereg_mr). A second Dereg returns an
// error wrapping ErrClosed.
func (mr *MR) Dereg() error {
	f, err := loadFns()
	if err != nil {
		return err
	}
	c := mr.pd.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if mr.ptr == 0 {
		return fmt.Errorf("MR %d of %s: %w", mr.handle, c.dev.Name, ErrClosed)
	}
	return mr.deregLocked(f)
}

func (mr *MR) deregLocked(f *fns) error {
	if err := intResult(dl.CallErrno(f.deregMR, mr.ptr)); err != nil {
		return callErr(fmt.Sprintf("ibv_dereg_mr(%s, MR %d)", mr.pd.ctx.dev.Name, mr.handle), err)
	}
	mr.ptr = 0
	delete(mr.pd.mrs, mr)
	if mr.pin != nil {
		mr.pin.Unpin()
	}
	return nil
}
