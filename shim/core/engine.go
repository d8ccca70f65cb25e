// SPDX-License-Identifier: MIT

//go:build cgo

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/efap2p/efap2p/abi"
	"github.com/efap2p/efap2p/p2p"
)

// engine answers the C front's questions from one oracle. Its methods are
// plain Go (the cgo layer in main.go converts), so that they can be tested
// without a C caller. It is safe for concurrent use.
type engine struct {
	sysfs  *p2p.Sysfs
	oracle *p2p.Oracle
	// err is why there is no oracle (no sysfs tree); every answer then
	// fails with EIO.
	err error
}

// newEngine opens the sysfs tree at root and an oracle over it, reading
// the topology file when one is named and deciding by the rules of the
// kernel release named (EFAP2P_KERNEL; "" for uname -r). warnf reports
// what the oracle works around (a bad topology file, a malformed release),
// once each.
func newEngine(root, topology, kernel string, warnf func(string, ...any)) *engine {
	s, err := p2p.OpenSysfs(root)
	if err != nil {
		return &engine{err: err}
	}
	var rel p2p.Release
	if kernel != "" {
		if rel, err = p2p.ParseRelease(kernel); err != nil {
			warnf("%s: %v; using the running kernel's rules", p2p.KernelEnv, err)
		}
	}
	o := p2p.NewOracleWith(p2p.NewTopology(s), p2p.Options{TopologyFile: topology, Warnf: warnf, Kernel: rel})
	return &engine{sysfs: s, oracle: o}
}

// nicAnswer is the P2P_DMA capability of one NIC.
type nicAnswer struct {
	reaches bool
	summary string // one line for the log
}

// nic decides the P2P_DMA bit of the RDMA device ibdev: set when its PCI
// function gets true P2P into at least one accelerator. A device without a
// PCI function, or a machine that cannot be read, does not get the bit.
func (e *engine) nic(ibdev string) (nicAnswer, syscall.Errno) {
	addr, errno := e.resolve(ibdev)
	if errno != 0 {
		return nicAnswer{summary: fmt.Sprintf("%s: no P2P_DMA: %v", ibdev, e.resolveErr(ibdev))}, errno
	}
	ok, v, err := e.oracle.ReachesAccelerator(addr)
	name := fmt.Sprintf("%s (%s)", ibdev, addr)
	switch {
	case err != nil:
		return nicAnswer{summary: fmt.Sprintf("%s: no P2P_DMA: %v", name, err)}, errnoOf(err)
	case ok:
		return nicAnswer{true, fmt.Sprintf("%s: P2P_DMA: true P2P into accelerator %s (%s, %s, %s policy)",
			name, v.Provider, v.MapType, v.Path, v.Policy)}, 0
	case v == nil:
		return nicAnswer{summary: name + ": no P2P_DMA: the machine has no accelerator"}, 0
	}
	return nicAnswer{summary: fmt.Sprintf("%s: no P2P_DMA: no accelerator is reached with true P2P; the nearest, %s, is %s: %s",
		name, v.Provider, v.Outcome, reasonOf(v))}, 0
}

// resolve returns the PCI function of an RDMA device, or the errno the
// pairwise queries document: ENODEV for a device without one, EIO when
// the machine cannot be read.
func (e *engine) resolve(ibdev string) (p2p.Addr, syscall.Errno) {
	if e.err != nil {
		return p2p.Addr{}, syscall.EIO
	}
	a, err := e.sysfs.RDMADevice(ibdev)
	if err != nil {
		if errors.Is(err, p2p.ErrNotPCI) || errors.Is(err, fs.ErrNotExist) {
			return p2p.Addr{}, syscall.ENODEV
		}
		return p2p.Addr{}, syscall.EIO
	}
	return a, 0
}

// resolveErr says why resolve failed, for a log line.
func (e *engine) resolveErr(ibdev string) error {
	if e.err != nil {
		return e.err
	}
	_, err := e.sysfs.RDMADevice(ibdev)
	return err
}

// errnoOf maps an oracle error to the errno the pairwise queries return.
func errnoOf(err error) syscall.Errno {
	switch {
	case errors.Is(err, p2p.ErrNoFunction):
		return syscall.ENOENT
	case errors.Is(err, p2p.ErrSystemMemory), errors.Is(err, p2p.ErrUnknownExporter):
		return syscall.ENOENT
	}
	return syscall.EIO
}

// answer is a struct efadv_p2p_attr with its strings still Go strings.
type answer struct {
	attr   abi.P2PAttr // Reason and KernelRelease are left 0: the cgo layer sets them
	reason string
	kernel string
}

// peer answers efadv_p2p_query_peer: the verdict for ibdev's NIC DMAing
// into memory owned by the function at peer.
func (e *engine) peer(ibdev string, peer p2p.Addr) (answer, syscall.Errno) {
	nic, errno := e.resolve(ibdev)
	if errno != 0 {
		return answer{}, errno
	}
	v, err := e.oracle.Verdict(peer, nic)
	if err != nil {
		return answer{}, errnoOf(err)
	}
	return answerOf(v, 0, reasonOf(v)), 0
}

// dmabufAnswer is the decision for a (NIC, exporter) pair.
type dmabufAnswer struct {
	decision   int // dmabufPass, dmabufRefuse or dmabufAllow
	err        syscall.Errno
	allAllowed bool
	best       answer
	summary    string
}

// The decisions, as efap2p_core.h numbers them.
const (
	dmabufPass   = 0
	dmabufRefuse = 1
	dmabufAllow  = 2
)

// dmabuf decides a registration by ibdev's NIC of a dma-buf from the
// exporter expName: pass (no peer to judge: a system-memory or unknown
// exporter, a NIC without a PCI function), refuse (every device the
// exporter may own is refused), or allow.
func (e *engine) dmabuf(ibdev, expName string) dmabufAnswer {
	nic, errno := e.resolve(ibdev)
	if errno != 0 {
		return dmabufAnswer{decision: dmabufPass, err: errno,
			summary: fmt.Sprintf("%s: dma-bufs are not judged: %v", ibdev, e.resolveErr(ibdev))}
	}
	d, err := e.oracle.Dmabuf(nic, expName)
	if err != nil {
		return dmabufAnswer{decision: dmabufPass, err: errnoOf(err),
			summary: fmt.Sprintf("%s (%s): dma-bufs from %q are not judged: %v", ibdev, nic, expName, err)}
	}
	var flags uint32
	reason := reasonOf(d.Best)
	if len(d.Candidates) > 1 {
		flags |= abi.P2PFlagAmbiguousPeer
		reason = fmt.Sprintf("The exporter %q may own the buffers of %d devices; the most favourable is %s. %s",
			expName, len(d.Candidates), d.Best.Provider, reason)
	}
	a := dmabufAnswer{decision: dmabufAllow, allAllowed: true, best: answerOf(d.Best, flags, reason)}
	for _, v := range d.Candidates {
		if v.Outcome == p2p.OutcomeRefused {
			a.allAllowed = false
		}
	}
	if d.Refuse {
		a.decision, a.allAllowed = dmabufRefuse, false
		a.summary = fmt.Sprintf("%s (%s) cannot DMA into dma-bufs exported by %q: %s",
			ibdev, nic, expName, refusedList(d))
	}
	return a
}

// refusable reports whether ibdev's NIC would have any dma-buf
// registration refused by the oracle: whether some driver of the machine
// (a possible exporter: every exporter name the oracle knows maps to
// drivers, and any other name is taken as one) owns only devices the NIC
// is refused. When none does, the front need not identify the buffers
// this NIC registers until the kernel refuses one.
func (e *engine) refusable(ibdev string) (bool, syscall.Errno) {
	nic, errno := e.resolve(ibdev)
	if errno != 0 {
		return false, errno
	}
	drivers, err := e.sysfs.Drivers()
	if err != nil {
		return true, 0 // cannot tell: identify every buffer
	}
	for _, d := range drivers {
		// the PCIe port services driver binds bridges, which export no
		// dma-bufs
		if d == "pcieport" {
			continue
		}
		if dec, err := e.oracle.Dmabuf(nic, d); err == nil && dec.Refuse {
			return true, 0
		}
	}
	return false, 0
}

// refusedList names the refused candidates of a decision with the reason
// of the first.
func refusedList(d *p2p.DmabufDecision) string {
	addrs := make([]string, len(d.Candidates))
	for i, v := range d.Candidates {
		addrs[i] = v.Provider.String()
	}
	what := "its device " + addrs[0] + " is refused"
	if len(addrs) > 1 {
		what = "all its devices (" + strings.Join(addrs, ", ") + ") are refused"
	}
	return what + ". " + reasonOf(d.Best)
}

// reasonOf is a verdict's reason, with the kernel's hint when it has one.
func reasonOf(v *p2p.Verdict) string {
	if v.Hint == "" {
		return v.Reason
	}
	return v.Reason + " " + v.Hint
}

// answerOf fills a struct efadv_p2p_attr from a verdict.
func answerOf(v *p2p.Verdict, flags uint32, reason string) answer {
	if !v.Certain {
		flags |= abi.P2PFlagUncertain
	}
	return answer{reason: reason, kernel: v.Kernel.String(), attr: abi.P2PAttr{
		MapType:      uint32(v.MapType),
		Distance:     int32(v.Distance),
		Path:         uint32(v.Path),
		Outcome:      uint32(v.Outcome),
		Policy:       policyOf(v.Policy),
		Source:       sourceOf(v.Source),
		BandwidthMBs: uint32(max(v.BandwidthMBs(), 0)),
		LatencyNs:    uint32(max(v.LatencyNs(), 0)),
		Flags:        flags,
		PeerDomain:   v.Provider.Domain,
		PeerBus:      v.Provider.Bus,
		PeerDevFn:    v.Provider.DevFn(),

		PeerMemOutcome:  uint32(v.PeerMem.Outcome),
		PeerMemProvider: peerMemOf(v.PeerMem),
	}}
}

func peerMemOf(pm p2p.PeerMem) uint32 {
	switch {
	case !pm.Present:
		return abi.P2PPeerMemUnknown
	case pm.Provider == "":
		return abi.P2PPeerMemNone
	case pm.Provider == "NVIDIA":
		return abi.P2PPeerMemNVIDIA
	case pm.Provider == "NVIDIA peermem":
		return abi.P2PPeerMemNVIDIAPeermem
	case pm.Provider == "NEURON":
		return abi.P2PPeerMemNeuron
	}
	return abi.P2PPeerMemOther
}

func policyOf(p p2p.Policy) uint32 {
	switch p {
	case p2p.PolicyAMDGPU:
		return abi.P2PPolicyAMDGPU
	case p2p.PolicyNVIDIA:
		return abi.P2PPolicyNVIDIA
	case p2p.PolicyNeuron:
		return abi.P2PPolicyNeuron
	}
	return abi.P2PPolicyKernel
}

func sourceOf(s p2p.VerdictSource) uint32 {
	switch s {
	case p2p.SourceACPI:
		return abi.P2PSourceACPI
	case p2p.SourceTopologyFile:
		return abi.P2PSourceTopologyFile
	}
	return abi.P2PSourceComputed
}
