// SPDX-License-Identifier: MIT

package nodecheck

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// release is a kernel release reduced to what the rules compare.
type release struct {
	major, minor int
	latest       bool // "latest": newer than every rule
}

func (r release) atLeast(major, minor int) bool {
	return r.latest || r.major > major || r.major == major && r.minor >= minor
}

// parseRelease reads "6.8.0-1015-aws", "5.10.228-219.884.amzn2.x86_64",
// "6.1" or "latest".
func parseRelease(s string) (release, error) {
	s = strings.TrimSpace(s)
	if s == "latest" {
		return release{latest: true}, nil
	}
	nums := strings.SplitN(s, ".", 3)
	if len(nums) < 2 {
		return release{}, fmt.Errorf("kernel release %q: want MAJOR.MINOR[...], e.g. 6.8.0-1015-aws, or latest", s)
	}
	major, err1 := strconv.Atoi(nums[0])
	minorStr := nums[1]
	if i := strings.IndexFunc(minorStr, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorStr = minorStr[:i]
	}
	minor, err2 := strconv.Atoi(minorStr)
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return release{}, fmt.Errorf("kernel release %q: want MAJOR.MINOR[...], e.g. 6.8.0-1015-aws, or latest", s)
	}
	return release{major: major, minor: minor}, nil
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
	r, err := parseRelease(kernel)
	if err != nil {
		return DMABufSupport{Supported: true, Reason: fmt.Sprintf("kernel release %q not understood: dma-buf support assumed", kernel)}
	}
	if !r.atLeast(uverbsDMABuf[0], uverbsDMABuf[1]) {
		return DMABufSupport{Reason: fmt.Sprintf("kernel %s is older than %d.%d, the first release whose uverbs registers dma-buf memory (ibv_reg_dmabuf_mr)", kernel, uverbsDMABuf[0], uverbsDMABuf[1])}
	}
	if drv.Kind == DriverOutOfTree {
		if v, ok := parseDriverVersion(drv.Version); ok && versionLess(v, outOfTreeDMABufV) {
			return DMABufSupport{Reason: fmt.Sprintf("the out-of-tree EFA driver %s predates %d.%d.%d, its first release that registers dma-buf memory", drv.Version, outOfTreeDMABufV[0], outOfTreeDMABufV[1], outOfTreeDMABufV[2])}
		}
		return DMABufSupport{Supported: true, Reason: fmt.Sprintf("kernel %s (uverbs dma-buf since %d.%d) with the out-of-tree EFA driver %s", kernel, uverbsDMABuf[0], uverbsDMABuf[1], drv.Version)}
	}
	if !r.atLeast(inTreeEFADMABuf[0], inTreeEFADMABuf[1]) {
		return DMABufSupport{Reason: fmt.Sprintf("kernel %s is older than %d.%d, the first release whose EFA driver registers dma-buf memory (uverbs has it since %d.%d)", kernel, inTreeEFADMABuf[0], inTreeEFADMABuf[1], uverbsDMABuf[0], uverbsDMABuf[1])}
	}
	return DMABufSupport{Supported: true, Reason: fmt.Sprintf("kernel %s: the EFA driver registers dma-buf memory (since %d.%d)", kernel, inTreeEFADMABuf[0], inTreeEFADMABuf[1])}
}

// parseDriverVersion reads "2.17.3g" (AWS appends a letter) or "580.65.06".
func parseDriverVersion(s string) ([3]int, bool) {
	var v [3]int
	s = strings.TrimRight(strings.TrimSpace(s), "abcdefghijklmnopqrstuvwxyz")
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func versionLess(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
