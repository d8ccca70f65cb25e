// SPDX-License-Identifier: MIT

// Package secenv tells whether the process runs in secure-execution mode,
// where environment variables that redirect what it reads (SYSFS_PATH,
// EFAP2P_TOPOLOGY, EFAP2P_KERNEL, ...) must be ignored, as glibc's
// secure_getenv ignores them, and gives the environment as secure_getenv
// does. Every variable this repository's library, core and tool read goes
// through Getenv.
//
// It imports nothing of this repository.
package secenv

import (
	"encoding/binary"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

const atSecure = 23 // AT_SECURE in the ELF auxiliary vector

// enforced is set by Enforce: the process is known to be secure.
var enforced atomic.Bool

var secure = sync.OnceValue(func() bool {
	if os.Getuid() != os.Geteuid() || os.Getgid() != os.Getegid() {
		return true
	}
	if v, ok := fromRuntime(); ok {
		return v != 0
	}
	if v, ok := fromProc(); ok {
		return v != 0
	}
	// the kernel's word cannot be read: the environment is not trusted
	return true
})

// fromRuntime is AT_SECURE from the auxiliary vector the Go runtime kept.
func fromRuntime() (uintptr, bool) {
	auxv, err := unix.Auxv()
	if err != nil {
		return 0, false
	}
	for _, kv := range auxv {
		if kv[0] == atSecure {
			return kv[1], true
		}
	}
	return 0, false
}

// fromProc is AT_SECURE from /proc/self/auxv, for a runtime that was not
// handed the vector (a library loaded where the loader did not pass it).
func fromProc() (uintptr, bool) {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 0, false
	}
	const w = int(unsafe.Sizeof(uintptr(0)))
	word := func(p []byte) uintptr {
		if w == 8 {
			return uintptr(binary.NativeEndian.Uint64(p))
		}
		return uintptr(binary.NativeEndian.Uint32(p))
	}
	for i := 0; i+2*w <= len(b); i += 2 * w {
		if word(b[i:]) == atSecure {
			return word(b[i+w:]), true
		}
	}
	return 0, false
}

// Secure reports whether the process runs in secure-execution mode
// (AT_SECURE: setuid or setgid, or granted file capabilities), or was
// said to by Enforce. It is worked out once; where the kernel's word
// cannot be read at all, the process counts as secure.
func Secure() bool { return enforced.Load() || secure() }

// Enforce makes Secure report true from now on: for a Go runtime loaded by
// C code that knows the process to be secure (the C library's
// getauxval(AT_SECURE)), before anything reads the environment.
func Enforce() { enforced.Store(true) }

// Getenv is os.Getenv, or "" in secure-execution mode, as glibc's
// secure_getenv.
func Getenv(name string) string {
	if Secure() {
		return ""
	}
	return os.Getenv(name)
}
