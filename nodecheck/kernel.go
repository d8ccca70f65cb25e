// SPDX-License-Identifier: MIT

package nodecheck

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/efap2p/efap2p/internal/modversion"
	"github.com/efap2p/efap2p/p2p"
)

// atLeast reports whether r has what was merged for release major.minor:
// its first release candidate or later ("latest" is later than every
// numbered release).
func atLeast(r p2p.Release, v [2]int) bool {
	return r.AtLeast(p2p.Release{Major: v[0], Minor: v[1], RC: 1})
}

// runningKernel returns uname -r.
func runningKernel() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// dmabufSupport decides whether the kernel and the EFA driver register
// dma-buf memory, and says why: the oracle's rule (p2p.DmabufRegistration),
// so that the check and every verdict agree.
func dmabufSupport(kernel string, drv EFADriver) DMABufSupport {
	r, err := p2p.ParseRelease(kernel)
	if err != nil {
		return DMABufSupport{Judged: true, Supported: true, Reason: fmt.Sprintf("kernel release %q not understood: dma-buf support assumed", kernel)}
	}
	ok, why := p2p.DmabufRegistration(r, drv.Kind == DriverOutOfTree, drv.Version)
	return DMABufSupport{Judged: true, Supported: ok, Reason: why}
}

// parseDriverVersion reads "2.17.3g" (AWS appends a letter) or "580.65.06".
func parseDriverVersion(s string) ([3]int, bool) {
	return modversion.Parse(strings.TrimRight(strings.TrimSpace(s), "abcdefghijklmnopqrstuvwxyz"))
}

func (c *checker) readKernel() {
	h := &c.r.Host
	h.Kernel, h.KernelSource = c.opt.Kernel, c.opt.KernelSource
	if h.KernelSource == "" {
		h.KernelSource = "option"
	}
	if h.Kernel == "" {
		h.Kernel, h.KernelSource = runningKernel(), "running"
	}
	if !c.applies() {
		h.DMABuf = DMABufSupport{Reason: "not judged: " + c.r.NotApplicable.Reason}
		return
	}
	h.DMABuf = dmabufSupport(h.Kernel, h.EFADriver)
	h.KernelP2PDMA = c.o.KernelConfig()
	if _, err := p2p.ParseRelease(h.Kernel); err != nil {
		c.note("%v: the kernel's dma-buf support was not judged.", err)
	}
}
