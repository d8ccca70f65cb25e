// SPDX-License-Identifier: MIT

package nodecheck

// The topology file the oracle reads, and the NICs it records as blocking
// peers.

import (
	"fmt"

	"github.com/efap2p/efap2p/p2p"
)

func (c *checker) readTopologyFile() {
	h := &c.r.Host
	h.TopologyFile = c.opt.TopologyFile
	if err := c.o.TopologyFileError(); err != nil {
		h.TopologyFileError = err.Error()
		c.add(Finding{Code: CodeTopologyFile, Severity: SeverityWarning, Message: fmt.Sprintf("the topology file is not used: %v", err),
			Fix: "Write it again as root with `efap2p export -o FILE` on this machine; until then the verdicts are computed from sysfs."})
		return
	}
	if c.opt.TopologyFile == "" {
		return
	}
	tf, err := p2p.ReadTopologyFile(c.opt.TopologyFile)
	if err != nil {
		return
	}
	for _, n := range tf.NICs {
		if n.PeerAccessBlocked {
			c.blockedNICs[n.Addr] = true
		}
	}
}
