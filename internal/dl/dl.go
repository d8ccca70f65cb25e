// SPDX-License-Identifier: MIT

// Package dl loads C libraries at run time with purego and calls their
// functions without cgo: a library opened once per process, symbols looked
// up once, errno read back through libc's __errno_location, and helpers to
// read C memory and strings. It is shared by packages verbs and efadv.
package dl

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/efap2p/efap2p/internal/secenv"
)

// ErrNoLibrary is wrapped when a shared library or one of its symbols
// cannot be loaded.
var ErrNoLibrary = errors.New("shared library not available")

// Lib is a shared library opened on first use, once per process.
type Lib struct {
	name   string
	once   sync.Once
	handle uintptr
	err    error
}

// NewLib returns a Lib for the shared object name ("libibverbs.so.1").
// Nothing is loaded until Handle or Sym is called.
func NewLib(name string) *Lib { return &Lib{name: name} }

// Name returns the library's file name.
func (l *Lib) Name() string { return l.name }

// rdmaEnv are the variables rdma-core's libraries read that redirect what
// they read, load or write: the sysfs root, the provider drivers, the log
// file, and how they treat memory. libibverbs ignores some of them only
// where the real and effective user IDs differ, not in a process granted
// file capabilities; in any secure-execution process they are removed
// before one of these libraries is loaded (ScrubEnv).
var rdmaEnv = []string{
	"SYSFS_PATH", "RDMAV_DRIVERS", "IBV_DRIVERS", "VERBS_LOG_FILE", "VERBS_LOG_LEVEL",
	"IBV_SHOW_WARNINGS", "RDMAV_HUGEPAGES_SAFE", "RDMAV_FORK_SAFE", "IBV_FORK_SAFE",
}

// ScrubEnv removes rdma-core's variables (rdmaEnv) from the environment
// in a secure-execution process (setuid, setgid, file capabilities), so
// that the C libraries loaded after it do not honour them either; in any
// other process it does nothing.
func ScrubEnv() {
	if !secenv.Secure() {
		return
	}
	for _, name := range rdmaEnv {
		os.Unsetenv(name)
	}
}

// Handle opens the library (RTLD_NOW | RTLD_GLOBAL) the first time and
// returns its handle; the error wraps ErrNoLibrary. In a secure-execution
// process rdma-core's variables are removed first (ScrubEnv).
func (l *Lib) Handle() (uintptr, error) {
	l.once.Do(func() {
		ScrubEnv()
		h, err := purego.Dlopen(l.name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			l.err = fmt.Errorf("%w: %s: %w", ErrNoLibrary, l.name, err)
			return
		}
		l.handle = h
	})
	return l.handle, l.err
}

// Sym returns the address of symbol name in the library; the error wraps
// ErrNoLibrary.
func (l *Lib) Sym(name string) (uintptr, error) {
	h, err := l.Handle()
	if err != nil {
		return 0, err
	}
	p, err := purego.Dlsym(h, name)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%w: %s has no symbol %s", ErrNoLibrary, l.name, name)
	}
	return p, nil
}

// Global returns the address of a symbol anywhere in the process (the
// preloaded libraries, the executable, libc), as dlsym(RTLD_DEFAULT)
// finds it: an interposer's version comes first.
func Global(name string) (uintptr, error) {
	p, err := purego.Dlsym(purego.RTLD_DEFAULT, name)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%w: no symbol %s in the process", ErrNoLibrary, name)
	}
	return p, nil
}

var errnoLocation = sync.OnceValues(func() (uintptr, error) { return Global("__errno_location") })

// Call calls the C function fn. Arguments that are Go pointers must be
// converted with uintptr(unsafe.Pointer(p)) in the call expression itself,
// as for syscall.Syscall; the objects they point to then escape to the heap
// and stay alive during the call.
//
//go:uintptrescapes
func Call(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// CallErrno calls fn like Call, with errno cleared before the call, and
// returns errno as the call left it. The goroutine stays on one thread
// for both, as errno is per thread.
//
//go:uintptrescapes
func CallErrno(fn uintptr, args ...uintptr) (uintptr, syscall.Errno) {
	loc, err := errnoLocation()
	if err != nil {
		// No libc errno: the result alone has to do.
		r, _, _ := purego.SyscallN(fn, args...)
		return r, 0
	}
	runtime.LockOSThread()
	p, _, _ := purego.SyscallN(loc)
	e := (*int32)(Ptr(p))
	*e = 0
	r, _, _ := purego.SyscallN(fn, args...)
	errno := syscall.Errno(*e)
	runtime.UnlockOSThread()
	return r, errno
}

// Ptr converts an address of C memory (never Go memory) to a pointer.
func Ptr(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

// CString returns a NUL-terminated copy of s in Go memory.
func CString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// GoString copies the NUL-terminated C string at p (at most max bytes).
func GoString(p uintptr, max int) string {
	if p == 0 {
		return ""
	}
	base := Ptr(p)
	n := 0
	for n < max && *(*byte)(unsafe.Add(base, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(base), n))
}

// CBytes returns the bytes of a fixed-size C char array up to its first
// NUL, as a string.
func CBytes(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// ErrnoOrEIO returns e, or EIO for a call that failed without setting
// errno.
func ErrnoOrEIO(e syscall.Errno) syscall.Errno {
	if e == 0 {
		return syscall.EIO
	}
	return e
}
