// SPDX-License-Identifier: MIT

package main

// How TestOneAnswer reads each surface's words back as an answer.

import "github.com/efap2p/efap2p/p2p"

// markAnswer reads topo's mark back: what it says the NIC gets.
func markAnswer(mark string) pairAnswer {
	switch mark {
	case "":
		return pairAnswer{p2p.OutcomeP2P, p2p.RegDmabuf}
	case "*":
		return pairAnswer{p2p.OutcomeP2P, p2p.RegDmabuf}
	case "+":
		return pairAnswer{p2p.OutcomeP2P, p2p.RegPeerMem}
	case "~":
		return pairAnswer{p2p.OutcomeBounced, 0}
	case "!":
		return pairAnswer{p2p.OutcomeRefused, 0}
	}
	return pairAnswer{p2p.OutcomeUnknown, 0}
}

// markAgrees: a mark tells P2P by dma-buf (with or without peer memory)
// from P2P by peer memory alone, and bounced from refused.
func markAgrees(m, w pairAnswer) bool {
	if m.via == p2p.RegDmabuf {
		return w.via&p2p.RegDmabuf != 0
	}
	return m == w
}

// codeAgrees: topo --p2p's code names the paths.
func codeAgrees(code string, w pairAnswer) bool {
	switch code {
	case "OK":
		return w.via&p2p.RegDmabuf != 0
	case "DMA":
		return w.via == p2p.RegDmabuf
	case "PEER":
		return w.via == p2p.RegPeerMem
	case "BNC":
		return w.via == 0 && w.effective == p2p.OutcomeBounced
	case "NS":
		return w.via == 0 && w.effective == p2p.OutcomeRefused
	}
	return w.effective == p2p.OutcomeUnknown
}

// explainWord is how explain's p2p line begins for an answer.
func explainWord(w pairAnswer) string {
	switch {
	case w.via == p2p.RegDmabuf|p2p.RegPeerMem:
		return "yes, by dma-buf and peer memory"
	case w.via == p2p.RegDmabuf:
		return "yes, by dma-buf"
	case w.via == p2p.RegPeerMem:
		return "yes, by peer memory only"
	case w.effective == p2p.OutcomeBounced:
		return "no: registration works, but the exporter bounces"
	case w.effective == p2p.OutcomeRefused:
		return "no: "
	}
	return "unknown"
}
