// SPDX-License-Identifier: MIT

// Command libefap2p-core is the Go core of libefap2p.so, built with
// -buildmode=c-shared. The C front (shim/front) owns every exported
// rdma-core symbol and dlopen()s this library only when a call first needs
// the oracle and the topology file's index does not answer it; it calls
// the functions below, declared for C in efap2p_core.h. They answer with
// plain C types (package answer works them out); every string they return
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
	"github.com/efap2p/efap2p/answer"
	"github.com/efap2p/efap2p/internal/secenv"
	"github.com/efap2p/efap2p/p2p"
)

func main() {}

var (
	initOnce sync.Once
	eng      *answer.Engine
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

// topologyFiles copies the front's NULL-terminated list.
func topologyFiles(list **C.char) []string {
	files := []string{}
	if list == nil {
		return files
	}
	for p := list; *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		files = append(files, C.GoString(*p))
	}
	return files
}

// efap2p_core_init opens the oracle over the sysfs root the front names.
// The front calls it once, right after loading the core; later calls
// change nothing. Every input comes from cfg, which the front filled from
// the environment it read with secure_getenv: the core reads none of its
// own (its runtime's copy of the environment is the program's at start,
// and Go's secure-execution test is its own).
//
//export efap2p_core_init
func efap2p_core_init(cfg *C.struct_efap2p_core_config) C.int {
	initOnce.Do(func() {
		// The oracle's work is small and serial: two Ps keep the runtime's
		// threads few in the host process.
		runtime.GOMAXPROCS(2)
		opts := p2p.Options{TopologyFiles: []string{}, Warnf: func(format string, args ...any) {
			logf(C.EFAP2P_LOG_ERROR, format, args...)
		}}
		root := "/sys"
		if cfg == nil {
			// not from the front: the environment, as package p2p reads it
			root = p2p.SysfsRoot()
			kc, err := p2p.KernelConfigFromEnv()
			if err != nil {
				logf(C.EFAP2P_LOG_ERROR, "%v; whether the kernel has PCI_P2PDMA is found out as without it", err)
			}
			opts.KernelConfig = kc
		} else {
			if cfg.secure != 0 {
				// whatever else of package p2p reads the environment
				secenv.Enforce()
			}
			logLevel = int(cfg.log_level)
			opts.TopologyFiles = topologyFiles((**C.char)(unsafe.Pointer(cfg.topology_files)))
			if cfg.kernel != nil {
				rel, err := p2p.ParseRelease(C.GoString(cfg.kernel))
				if err != nil {
					logf(C.EFAP2P_LOG_ERROR, "%s: %v; using the running kernel's rules", p2p.KernelEnv, err)
				}
				opts.Kernel = rel
			}
			if cfg.kernel_config != nil {
				kc, err := p2p.ReadKernelConfigFile(C.GoString(cfg.kernel_config))
				if err != nil {
					logf(C.EFAP2P_LOG_ERROR, "%s: %v; whether the kernel has PCI_P2PDMA is found out as without it",
						p2p.KernelConfigEnv, err)
				} else {
					opts.KernelConfig = &kc
				}
			}
			if cfg.sysfs != nil {
				root = C.GoString(cfg.sysfs)
			}
		}
		// Below info the front logs only refusals, whose reasons the
		// engine explains on demand, as it does the pairwise queries':
		// the oracle keeps none (building them cost more than the rule).
		summaries := logLevel >= C.EFAP2P_LOG_INFO
		opts.NoReasons = !summaries
		eng = answer.New(root, opts, summaries)
		if eng.Err() != nil {
			logf(C.EFAP2P_LOG_ERROR, "%v: no P2P answers in this process", eng.Err())
		}
	})
	if eng.Err() != nil {
		return C.int(answer.ErrnoOf(eng.Err()))
	}
	return 0
}

func ready() *answer.Engine {
	efap2p_core_init(nil)
	return eng
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

//export efap2p_core_nic
func efap2p_core_nic(ibdev *C.char, out *C.struct_efap2p_core_nic) C.int {
	a, errno := ready().NIC(C.GoString(ibdev))
	out.reaches = cbool(a.Reaches)
	out.summary = cstring(a.Summary)
	return C.int(errno)
}

//export efap2p_core_refusable
func efap2p_core_refusable(ibdev *C.char, out *C.int) C.int {
	r, errno := ready().Refusable(C.GoString(ibdev))
	*out = cbool(r)
	return C.int(errno)
}

//export efap2p_core_dmabuf
func efap2p_core_dmabuf(ibdev, expName *C.char, out *C.struct_efap2p_core_dmabuf) C.int {
	a := ready().Dmabuf(C.GoString(ibdev), C.GoString(expName))
	out.decision = C.int(a.Decision)
	out.err = C.int(a.Err)
	out.all_allowed = cbool(a.AllAllowed)
	out.summary = nil
	if a.Summary != "" {
		out.summary = cstring(a.Summary)
	}
	if a.Decision != answer.DmabufPass {
		putAttr(&out.best, a.Best)
	}
	return 0
}

//export efap2p_core_peer
func efap2p_core_peer(ibdev *C.char, domain, bus, devfn C.uint32_t, out *C.struct_efadv_p2p_attr) C.int {
	peer := p2p.Addr{Domain: uint32(domain), Bus: uint8(bus), Device: uint8(devfn) >> 3, Function: uint8(devfn) & 7}
	a, errno := ready().Peer(C.GoString(ibdev), peer)
	if errno != 0 {
		return C.int(errno)
	}
	putAttr(out, a)
	return 0
}

// putAttr writes a whole struct efadv_p2p_attr; abi/cgocheck holds
// abi.P2PAttr to the C layout.
func putAttr(dst *C.struct_efadv_p2p_attr, a answer.Attr) {
	a.Attr.Reason = uintptr(unsafe.Pointer(cstring(a.Reason)))
	a.Attr.KernelRelease = uintptr(unsafe.Pointer(cstring(a.Kernel)))
	*(*abi.P2PAttr)(unsafe.Pointer(dst)) = a.Attr
}

// The C struct and its Go mirror have one size (a negative array length
// fails the build otherwise).
var (
	_ [unsafe.Sizeof(C.struct_efadv_p2p_attr{}) - abi.P2PAttrSize]byte
	_ [abi.P2PAttrSize - unsafe.Sizeof(C.struct_efadv_p2p_attr{})]byte
)
