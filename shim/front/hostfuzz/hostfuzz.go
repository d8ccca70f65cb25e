// SPDX-License-Identifier: MIT

//go:build cgo

// Package hostfuzz drives the C front's test for a Go runtime in a loaded
// object's file (shim/front/host.c: its section headers, or its program
// headers and segments) from Go, so that its tests can hand it real Go and
// C binaries, copies stripped of their section headers and the fuzzer's
// files. Only its tests use it.
package hostfuzz

/*
#cgo CFLAGS: -I${SRCDIR}/.. -I${SRCDIR}/../../core -I${SRCDIR}/../../../include -Wall -Wextra -Werror
#include "host.c"

// host.c lists the loaded objects in a loader section (guard.c), which the
// file test does not use.
void efap2p_loader_enter(sigset_t *old) { (void)old; }
void efap2p_loader_leave(const sigset_t *old) { (void)old; }

static int go_file(const char *path)
{
	return file_has_go(path);
}
*/
import "C"

import "unsafe"

// Verdicts of HasGo.
const (
	Unknown = -1 // the file cannot tell: unreadable, not an ELF file of this machine
	NotGo   = 0
	Go      = 1
)

// HasGo tells whether the object file at path holds a Go runtime, as the
// front decides it before loading its core.
func HasGo(path string) int {
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	return int(C.go_file(p))
}
