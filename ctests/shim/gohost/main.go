// SPDX-License-Identifier: MIT

// Command gohost is a Go program (with cgo) into which libefap2p.so is
// preloaded: a process can hold only one Go runtime, so the library must
// not load its Go core here. It asks efadv_p2p_query_peer once (with a
// context whose device has a name, so that the question needs the core)
// and prints the answer; the shim.gohost tests want ELIBACC and no crash,
// and a collection that completes (a second runtime would take the first's
// preemption signal, and runtime.GC would never return). It is built twice:
// with Go's build-ID note, and without (-ldflags=-buildid=, as reproducible
// builds do).
package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

typedef int (*query_peer_fn)(struct ibv_context *, const char *, void *, unsigned int);

static int ask(void)
{
	static struct ibv_device dev;
	static struct ibv_context ctx;
	char attr[64];
	query_peer_fn q = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");

	if (!q)
		return -1;
	snprintf(dev.name, sizeof(dev.name), "rdmap79s0");
	ctx.device = &dev;
	return q(&ctx, "0000:53:00.0", attr, sizeof(attr));
}
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

func main() {
	rc := syscall.Errno(C.ask())
	fmt.Printf("efadv_p2p_query_peer: %d (%v)\n", int(rc), rc)
	runtime.GC()
	fmt.Println("gohost: garbage collected")
	if rc != syscall.ELIBACC {
		os.Exit(1)
	}
}
