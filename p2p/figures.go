// SPDX-License-Identifier: MIT

package p2p

import "github.com/efap2p/efap2p/internal/pcilink"

// Latency estimates, in nanoseconds, for one direction of a posted write.
// They are rough figures for ordering paths, not measurements: a port
// traversal inside a switch, the root complex, a hop between host bridges
// of one socket, and the inter-socket link.
const (
	latencyPerHopNs     = 70
	latencyHostBridgeNs = 250
	latencyNodeNs       = 150
	latencySysNs        = 300
)

// estimateLatency estimates the path's latency from its hop count and class.
func estimateLatency(distance int, path PathClass) int {
	ns := distance * latencyPerHopNs
	switch path {
	case PathPHB:
		ns += latencyHostBridgeNs
	case PathNODE:
		ns += latencyHostBridgeNs + latencyNodeNs
	case PathSYS:
		ns += latencyHostBridgeNs + latencySysNs
	}
	return ns
}

// bottleneckMBs is the narrowest link on the path: each function's own
// link to the bridge above it, for every function below the common
// ancestor on both sides (or on both whole chains when there is none).
// 0 when no link on the path is known.
func bottleneckMBs(p, c, lca *Function) int {
	best := 0
	walk := func(f *Function) {
		for ; f != nil && f != lca; f = f.Upstream {
			if bw := pcilink.MBs(f.Link()); bw > 0 && (best == 0 || bw < best) {
				best = bw
			}
		}
	}
	walk(p)
	walk(c)
	return best
}
