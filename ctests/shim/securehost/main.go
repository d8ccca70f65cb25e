// SPDX-License-Identifier: MIT

// Command securehost prints what this repository's Go packages take from
// the environment: the sysfs root and the topology files package p2p would
// read, the kernel release and configuration it would decide by, and the
// sysfs root libibverbs reads once package verbs has loaded it.
// check_secure.sh runs it in secure-execution mode (file capabilities, uid
// == euid), where SYSFS_PATH, EFAP2P_TOPOLOGY, EFAP2P_TOPOLOGY_ROOT,
// EFAP2P_KERNEL and EFAP2P_KERNEL_CONFIG must be ignored, by this
// repository's code and by the rdma-core libraries it loads.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/efap2p/efap2p/internal/dl"
	"github.com/efap2p/efap2p/internal/secenv"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/verbs"
)

func main() {
	fmt.Printf("secure %v\n", secenv.Secure())
	fmt.Printf("sysfs %s\n", p2p.SysfsRoot())
	// the live tree: this machine's when SYSFS_PATH is not honoured
	src, err := p2p.OpenSysfs("/sys")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	opts := p2p.Defaults{}.Options(p2p.NewTopology(src))
	files := opts.TopologyFiles
	if opts.TopologyFile != "" {
		files = []string{opts.TopologyFile}
	}
	fmt.Printf("topology %s\n", strings.Join(files, " "))
	rel, err := p2p.ReleaseFromEnv()
	fmt.Printf("kernel %s%s\n", rel, errSuffix(err))
	kc, err := p2p.KernelConfigFromEnv()
	switch {
	case err != nil:
		fmt.Printf("kernel-config error: %v\n", err)
	case kc != nil:
		fmt.Printf("kernel-config %s\n", kc.Source)
	default:
		fmt.Printf("kernel-config none\n")
	}
	// libibverbs, loaded by package verbs: the root it reads devices from
	if err := verbs.Load(); err != nil {
		fmt.Printf("libibverbs-sysfs unknown (%v)\n", err)
		return
	}
	fn, err := dl.Global("ibv_get_sysfs_path")
	if err != nil {
		fmt.Printf("libibverbs-sysfs unknown (%v)\n", err)
		return
	}
	fmt.Printf("libibverbs-sysfs %s\n", dl.GoString(dl.Call(fn), 4096))
}

func errSuffix(err error) string {
	if err != nil {
		return " (" + err.Error() + ")"
	}
	return ""
}
