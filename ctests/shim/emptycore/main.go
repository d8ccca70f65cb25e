// SPDX-License-Identifier: MIT

// Command emptycore is an empty Go c-shared library, built as the Go core
// is (-buildmode=c-shared, -trimpath, -ldflags=-w): what loading and
// starting a Go runtime costs a C process by itself. bench_floor loads it
// and calls its one function, the floor of the computed first answer
// (scripts/bench-shim.sh); it is never installed.
package main

import "C"

func main() {}

// efap2p_empty returns at once: its first call waits for the runtime's
// start, as the core's first call does.
//
//export efap2p_empty
func efap2p_empty() C.int { return 0 }
