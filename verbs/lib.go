// SPDX-License-Identifier: MIT

package verbs

import (
	"fmt"
	"sync"
	"syscall"

	"github.com/efap2p/efap2p/internal/dl"
	"github.com/efap2p/efap2p/p2p"
)

// LibraryName is the shared object this package loads.
const LibraryName = "libibverbs.so.1"

var lib = dl.NewLib(LibraryName)

// fns holds the libibverbs entry points, resolved once.
type fns struct {
	getDeviceList, freeDeviceList uintptr
	openDevice, closeDevice       uintptr
	allocPD, deallocPD            uintptr
	regMR, regDmabufMR, deregMR   uintptr
}

var loadFns = sync.OnceValues(func() (*fns, error) {
	var f fns
	for _, s := range []struct {
		p    *uintptr
		name string
	}{
		{&f.getDeviceList, "ibv_get_device_list"},
		{&f.freeDeviceList, "ibv_free_device_list"},
		{&f.openDevice, "ibv_open_device"},
		{&f.closeDevice, "ibv_close_device"},
		{&f.allocPD, "ibv_alloc_pd"},
		{&f.deallocPD, "ibv_dealloc_pd"},
		{&f.regMR, "ibv_reg_mr"},
		{&f.deregMR, "ibv_dereg_mr"},
	} {
		p, err := lib.Sym(s.name)
		if err != nil {
			return nil, err
		}
		*s.p = p
	}
	// ibv_reg_dmabuf_mr arrived in rdma-core 34 (IBVERBS_1.12): an older
	// library still serves everything else.
	f.regDmabufMR, _ = lib.Sym("ibv_reg_dmabuf_mr")
	return &f, nil
})

// Load loads libibverbs if it is not loaded yet. Every function of this
// package does so on first use; Load only lets a program check early. The
// error wraps ErrNoLibrary.
func Load() error {
	_, err := loadFns()
	return err
}

// sysfs is the tree libibverbs reads devices from: $SYSFS_PATH or /sys.
var sysfs = sync.OnceValues(func() (*p2p.Sysfs, error) {
	return p2p.OpenSysfs(p2p.SysfsRoot())
})

// intResult turns the int a libibverbs function returned into an error:
// 0 is success; rdma-core returns a positive errno, some paths -1 with
// errno set.
func intResult(r uintptr, errno syscall.Errno) error {
	v := int32(r)
	switch {
	case v == 0:
		return nil
	case v > 0:
		return syscall.Errno(v)
	default:
		return dl.ErrnoOrEIO(errno)
	}
}

func callErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("verbs: %s: %w", what, err)
}
