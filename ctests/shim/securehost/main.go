// SPDX-License-Identifier: MIT

// Command securehost prints what package p2p takes from the environment:
// the sysfs root and the topology files it would read. check_secure.sh
// runs it in secure-execution mode (file capabilities, uid == euid), where
// SYSFS_PATH, EFAP2P_TOPOLOGY and EFAP2P_TOPOLOGY_ROOT must be ignored.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/efap2p/efap2p/internal/secenv"
	"github.com/efap2p/efap2p/p2p"
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
}
