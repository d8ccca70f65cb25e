// SPDX-License-Identifier: MIT

package p2p

// LinkMBs returns a PCIe link's usable bandwidth in MB/s per direction:
// lanes x transfer rate x line-code efficiency (8b/10b up to 5 GT/s,
// 128b/130b from 8 GT/s). 0 when the link is unknown.
func LinkMBs(gts float64, width int) int {
	if gts <= 0 || width <= 0 {
		return 0
	}
	eff := 128.0 / 130.0
	if gts < 8 {
		eff = 8.0 / 10.0
	}
	return int(gts * eff * float64(width) * 1000 / 8)
}

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
			if bw := LinkMBs(f.Link()); bw > 0 && (best == 0 || bw < best) {
				best = bw
			}
		}
	}
	walk(p)
	walk(c)
	return best
}
