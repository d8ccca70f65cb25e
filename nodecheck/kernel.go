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

// Kernel releases that dma-buf registration of accelerator memory with an
// EFA NIC needs (upstream mainline; distribution kernels may backport):
//   - uverbs' REG_DMABUF_MR method, behind ibv_reg_dmabuf_mr: Linux 5.12
//     (commit bfe0cc6eb249, "RDMA/uverbs: Add uverbs command for dma-buf
//     based MR registration"; rdma-core v34 took its header);
//   - the in-tree EFA driver's reg_user_mr_dmabuf: Linux 5.16 (commit
//     66f4817b5712, "RDMA/efa: Add support for dmabuf memory regions",
//     with 1e4df4a21c5a "RDMA/umem: Allow pinned dmabuf umem usage";
//     applied to rdma for-next in October 2021, during 5.15-rc).
//
// AWS's out-of-tree driver registers dma-buf memory from release 1.16.0
// (amzn-drivers kernel/linux/efa RELEASENOTES: r1.16.0 "Add support for
// dmabuf") on any kernel whose uverbs has the method.
var (
	uverbsDMABuf     = [2]int{5, 12}
	inTreeEFADMABuf  = [2]int{5, 16}
	outOfTreeDMABufV = [3]int{1, 16, 0}
)

// dmabufSupport decides whether the kernel and the EFA driver register
// dma-buf memory, and says why.
func dmabufSupport(kernel string, drv EFADriver) DMABufSupport {
	r, err := p2p.ParseRelease(kernel)
	if err != nil {
		return DMABufSupport{Judged: true, Supported: true, Reason: fmt.Sprintf("kernel release %q not understood: dma-buf support assumed", kernel)}
	}
	if !atLeast(r, uverbsDMABuf) {
		return DMABufSupport{Judged: true, Reason: fmt.Sprintf("kernel %s is older than %d.%d, the first release whose uverbs registers dma-buf memory (ibv_reg_dmabuf_mr)", kernel, uverbsDMABuf[0], uverbsDMABuf[1])}
	}
	if drv.Kind == DriverOutOfTree {
		if v, ok := parseDriverVersion(drv.Version); ok && modversion.Less(v, outOfTreeDMABufV) {
			return DMABufSupport{Judged: true, Reason: fmt.Sprintf("the out-of-tree EFA driver %s predates %d.%d.%d, its first release that registers dma-buf memory", drv.Version, outOfTreeDMABufV[0], outOfTreeDMABufV[1], outOfTreeDMABufV[2])}
		}
		return DMABufSupport{Judged: true, Supported: true, Reason: fmt.Sprintf("kernel %s (uverbs dma-buf since %d.%d) with the out-of-tree EFA driver %s", kernel, uverbsDMABuf[0], uverbsDMABuf[1], drv.Version)}
	}
	if !atLeast(r, inTreeEFADMABuf) {
		return DMABufSupport{Judged: true, Reason: fmt.Sprintf("kernel %s is older than %d.%d, the first release whose EFA driver registers dma-buf memory (uverbs has it since %d.%d)", kernel, inTreeEFADMABuf[0], inTreeEFADMABuf[1], uverbsDMABuf[0], uverbsDMABuf[1])}
	}
	return DMABufSupport{Judged: true, Supported: true, Reason: fmt.Sprintf("kernel %s: the EFA driver registers dma-buf memory (since %d.%d)", kernel, inTreeEFADMABuf[0], inTreeEFADMABuf[1])}
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
