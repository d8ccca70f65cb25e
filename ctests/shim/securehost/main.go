// SPDX-License-Identifier: MIT

// Command securehost prints what package p2p takes from the environment:
// the sysfs root and the topology files it would read. check_secure.sh
// runs it in secure-execution mode (file capabilities, uid == euid), where
// SYSFS_PATH, EFAP2P_TOPOLOGY and EFAP2P_TOPOLOGY_ROOT must be ignored.
package main

import (
	"fmt"
	"strings"

	"github.com/efap2p/efap2p/internal/secenv"
	"github.com/efap2p/efap2p/p2p"
)

func main() {
	fmt.Printf("secure %v\n", secenv.Secure())
	fmt.Printf("sysfs %s\n", p2p.SysfsRoot())
	fmt.Printf("topology %s\n", strings.Join(p2p.TopologyFileCandidates(), " "))
}
