// SPDX-License-Identifier: MIT

// Command golib is a Go shared library (-buildmode=c-shared) that C test
// programs load (test_host with-lib, with-lib-ns, replaced): a Go runtime
// the library's host check must find, however it was loaded. Its one
// function runs the collector, which returns only where no second Go
// runtime shares the process.
package main

import (
	"C"
	"runtime"
)

func main() {}

// golib_gc runs a full garbage collection and returns 1.
//
//export golib_gc
func golib_gc() C.int {
	runtime.GC()
	return 1
}
