// SPDX-License-Identifier: MIT

package p2p

import (
	"fmt"
	"strings"

	"github.com/efap2p/efap2p/internal/modversion"
)

// What dma-buf registration of accelerator memory with an EFA NIC needs
// (upstream mainline; distribution kernels may backport):
//   - uverbs' REG_DMABUF_MR method, behind ibv_reg_dmabuf_mr: merged for
//     Linux 5.12 (commit bfe0cc6eb249, "RDMA/uverbs: Add uverbs command
//     for dma-buf based MR registration"; rdma-core v34 took its header);
//   - the in-tree EFA driver's reg_user_mr_dmabuf: merged for 5.16 (commit
//     66f4817b5712, "RDMA/efa: Add support for dmabuf memory regions",
//     with 1e4df4a21c5a "RDMA/umem: Allow pinned dmabuf umem usage";
//     applied to rdma for-next in October 2021, during 5.15-rc);
//   - AWS's out-of-tree driver registers dma-buf memory from its release
//     1.16.0 (amzn-drivers kernel/linux/efa RELEASENOTES: r1.16.0 "Add
//     support for dmabuf") on any kernel whose uverbs has the method.
var (
	releaseUverbsDmabuf = mergedFor(5, 12)
	releaseEFADmabuf    = mergedFor(5, 16)
	efaOutOfTreeDmabuf  = [3]int{1, 16, 0}
)

// DmabufRegistration says whether an EFA NIC registers dma-buf memory
// (ibv_reg_dmabuf_mr) under kernel release r with its EFA driver, and why:
// outOfTree is AWS's out-of-tree driver, efaVersion its version
// ("2.17.3g"; "" when unknown, taken as recent enough). Where it does not,
// the dma-buf registration path gives nothing, whatever p2pdma and the
// exporter would decide (Verdict.DmabufUnavailable).
func DmabufRegistration(r Release, outOfTree bool, efaVersion string) (bool, string) {
	if r.IsZero() {
		r = releaseLatest
	}
	if !r.AtLeast(releaseUverbsDmabuf) {
		return false, fmt.Sprintf("kernel %s is older than 5.12, the first release whose uverbs registers dma-buf memory (ibv_reg_dmabuf_mr)", r)
	}
	if outOfTree {
		v, ok := modversion.Parse(strings.TrimRight(strings.TrimSpace(efaVersion), "abcdefghijklmnopqrstuvwxyz"))
		if ok && modversion.Less(v, efaOutOfTreeDmabuf) {
			return false, fmt.Sprintf("the out-of-tree EFA driver %s predates 1.16.0, its first release that registers dma-buf memory", efaVersion)
		}
		version := ""
		if efaVersion != "" {
			version = " " + efaVersion
		}
		return true, fmt.Sprintf("kernel %s (uverbs dma-buf since 5.12) with the out-of-tree EFA driver%s", r, version)
	}
	if !r.AtLeast(releaseEFADmabuf) {
		return false, fmt.Sprintf("kernel %s is older than 5.16, the first release whose EFA driver registers dma-buf memory (uverbs has it since 5.12)", r)
	}
	return true, fmt.Sprintf("kernel %s: the EFA driver registers dma-buf memory (since 5.16)", r)
}

// dmabufPath decides whether the client, an EFA NIC, can register the
// provider's dma-bufs at all under the rules ru: the kernel's release and
// the EFA driver's (AWS's out-of-tree one has the p2p attribute or a
// module version; the in-tree one neither).
func (t *Topology) dmabufPath(ru *kernelRules, v *Verdict, p, c *Function) {
	if cl, err := c.Class(); err != nil || cl>>16 != 0x02 || c.Driver() != "efa" || !p.isAccelerator() {
		return
	}
	version := t.moduleVersion("efa")
	outOfTree := t.peerMemProvider(c.Addr).present || version != ""
	if ok, why := DmabufRegistration(ru.Release, outOfTree, version); !ok {
		v.DmabufUnavailable = why
		if v.explain {
			v.reasonf("The NIC cannot register dma-buf memory at all: %s; the dma-buf path above is what a capable kernel and driver would get.", why)
		}
	}
}
