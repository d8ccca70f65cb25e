// SPDX-License-Identifier: MIT

// Command libefap2p-core is the Go core of libefap2p.so, built with
// -buildmode=c-shared. The C front (shim/front) owns every exported
// rdma-core symbol and dlopen()s this library only when a call first needs
// the oracle; it calls the functions below, declared for C in
// efap2p_core.h. They answer with plain C types; every string they return
// is allocated once (per distinct text) and never freed, so it stays valid
// for the life of the process and in a forked child.
//
// The front never calls Go in a child forked after this library was
// loaded, and blocks asynchronous signals around every call, so that no
// host signal handler runs on a Go stack.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -I${SRCDIR}
#include <stdlib.h>
#include "efap2p_core.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/efap2p/efap2p/abi"
	"github.com/efap2p/efap2p/p2p"
)

func main() {}

var (
	initOnce sync.Once
	eng      *engine
	logLevel int
)

// internMu guards interned: C copies of the strings handed to the front.
var (
	internMu sync.Mutex
	interned = map[string]*C.char{}
)

// cstring returns a C copy of s that lives as long as the process.
func cstring(s string) *C.char {
	internMu.Lock()
	defer internMu.Unlock()
	if p, ok := interned[s]; ok {
		return p
	}
	p := C.CString(s)
	interned[s] = p
	return p
}

// logf writes one line to stderr when the level is enabled, in a single
// write so that lines of concurrent callers do not mix.
func logf(level int, format string, args ...any) {
	if level > logLevel {
		return
	}
	names := [...]string{"", "error", "info", "debug"}
	os.Stderr.WriteString("efap2p: " + names[level] + ": " + fmt.Sprintf(format, args...) + "\n")
}

//export efap2p_core_abi
func efap2p_core_abi() C.int { return C.EFAP2P_CORE_ABI }

// efap2p_core_init opens the oracle over $SYSFS_PATH (or /sys). The front
// calls it once, right after loading the core; later calls change nothing.
//
//export efap2p_core_init
func efap2p_core_init(cfg *C.struct_efap2p_core_config) C.int {
	initOnce.Do(func() {
		// The oracle's work is small and serial: two Ps keep the runtime's
		// threads few in the host process.
		runtime.GOMAXPROCS(2)
		topology, kernel := "", ""
		if cfg != nil {
			logLevel = int(cfg.log_level)
			if cfg.topology != nil {
				topology = C.GoString(cfg.topology)
			}
			if cfg.kernel != nil {
				kernel = C.GoString(cfg.kernel)
			}
		}
		eng = newEngine(p2p.SysfsRoot(), topology, kernel, func(format string, args ...any) {
			logf(C.EFAP2P_LOG_ERROR, format, args...)
		})
		if eng.err != nil {
			logf(C.EFAP2P_LOG_ERROR, "%v: no P2P answers in this process", eng.err)
		}
	})
	if eng.err != nil {
		return C.int(errnoOf(eng.err))
	}
	return 0
}

func ready() *engine {
	efap2p_core_init(nil)
	return eng
}

//export efap2p_core_nic
func efap2p_core_nic(ibdev *C.char, out *C.struct_efap2p_core_nic) C.int {
	a, errno := ready().nic(C.GoString(ibdev))
	out.reaches = 0
	if a.reaches {
		out.reaches = 1
	}
	out.summary = cstring(a.summary)
	return C.int(errno)
}

//export efap2p_core_dmabuf
func efap2p_core_dmabuf(ibdev, expName *C.char, out *C.struct_efap2p_core_dmabuf) C.int {
	a := ready().dmabuf(C.GoString(ibdev), C.GoString(expName))
	out.decision = C.int(a.decision)
	out.err = C.int(a.err)
	out.all_allowed = 0
	if a.allAllowed {
		out.all_allowed = 1
	}
	out.summary = nil
	if a.summary != "" {
		out.summary = cstring(a.summary)
	}
	if a.decision != dmabufPass {
		putAttr(&out.best, a.best)
	}
	return 0
}

//export efap2p_core_refusable
func efap2p_core_refusable(ibdev *C.char, out *C.int) C.int {
	r, errno := ready().refusable(C.GoString(ibdev))
	*out = 0
	if r {
		*out = 1
	}
	return C.int(errno)
}

//export efap2p_core_peer
func efap2p_core_peer(ibdev *C.char, domain, bus, devfn C.uint32_t, out *C.struct_efadv_p2p_attr) C.int {
	peer := p2p.Addr{Domain: uint32(domain), Bus: uint8(bus), Device: uint8(devfn) >> 3, Function: uint8(devfn) & 7}
	a, errno := ready().peer(C.GoString(ibdev), peer)
	if errno != 0 {
		return C.int(errno)
	}
	putAttr(out, a)
	return 0
}

// putAttr writes a whole struct efadv_p2p_attr; abi/cgocheck holds
// abi.P2PAttr to the C layout.
func putAttr(dst *C.struct_efadv_p2p_attr, a answer) {
	a.attr.Reason = uintptr(unsafe.Pointer(cstring(a.reason)))
	a.attr.KernelRelease = uintptr(unsafe.Pointer(cstring(a.kernel)))
	*(*abi.P2PAttr)(unsafe.Pointer(dst)) = a.attr
}

// The C struct and its Go mirror have one size (a negative array length
// fails the build otherwise).
var (
	_ [unsafe.Sizeof(C.struct_efadv_p2p_attr{}) - abi.P2PAttrSize]byte
	_ [abi.P2PAttrSize - unsafe.Sizeof(C.struct_efadv_p2p_attr{})]byte
)
