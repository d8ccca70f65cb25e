// SPDX-License-Identifier: MIT

// Package answer is the precomputed-answer engine: it works out what
// libefap2p's C front asks (the P2P_DMA bit of a NIC, the registration
// decision for a (NIC, dma-buf exporter) pair, the pairwise attr of a
// (NIC, peer) pair) and writes the topology file with its index. The
// library's Go core answers through an Engine at run time; `efap2p export`
// writes the same answers, for every NIC of the machine, into the topology
// file's index (index.go), which the C front reads without Go. One code
// path for both keeps the two in agreement.
package answer

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/efap2p/efap2p/abi"
	"github.com/efap2p/efap2p/p2p"
)

// Engine answers the C front's questions from one oracle. It is safe for
// concurrent use.
type Engine struct {
	sysfs  *p2p.Sysfs
	oracle *p2p.Oracle
	// err is why there is no oracle (no sysfs tree); every answer then
	// fails with EIO.
	err error
	// summaries: build the one-line summaries meant for the log (they
	// cost formatting that a process logging only errors never reads).
	summaries bool
}

// New opens the sysfs tree at root and an oracle over it with opts.
// Summaries are built only when summaries is set (an info-level log).
func New(root string, opts p2p.Options, summaries bool) *Engine {
	s, err := p2p.OpenSysfs(root)
	if err != nil {
		return &Engine{err: err}
	}
	return &Engine{sysfs: s, oracle: p2p.NewOracleWith(p2p.NewTopology(s), opts), summaries: summaries}
}

// NewFromOracle returns an engine over an oracle already open on s.
func NewFromOracle(s *p2p.Sysfs, o *p2p.Oracle) *Engine {
	return &Engine{sysfs: s, oracle: o, summaries: true}
}

// Err returns why the engine has no oracle, or nil.
func (e *Engine) Err() error { return e.err }

// Oracle returns the engine's oracle (nil when Err is set).
func (e *Engine) Oracle() *p2p.Oracle { return e.oracle }

// NIC is the P2P_DMA capability of one NIC.
type NIC struct {
	Reaches bool
	Summary string // one line for the log
}

// NIC decides the P2P_DMA bit of the RDMA device ibdev: set when its PCI
// function gets true P2P into at least one accelerator. A device without a
// PCI function, or a machine that cannot be read, does not get the bit.
func (e *Engine) NIC(ibdev string) (NIC, syscall.Errno) {
	addr, errno := e.resolve(ibdev)
	if errno != 0 {
		return NIC{Summary: e.sumf("%s: no P2P_DMA: %v", ibdev, e.resolveErr(ibdev))}, errno
	}
	return e.NICAt(ibdev, addr)
}

// NICAt is NIC for the RDMA device ibdev known to be the function addr.
func (e *Engine) NICAt(ibdev string, addr p2p.Addr) (NIC, syscall.Errno) {
	ok, v, err := e.oracle.ReachesAccelerator(addr)
	switch {
	case err != nil:
		return NIC{Summary: e.sumf("%s (%s): no P2P_DMA: %v", ibdev, addr, err)}, errnoOf(err)
	case ok:
		return NIC{true, e.sumf("%s (%s): P2P_DMA: true P2P into accelerator %s (%s, %s, %s policy)",
			ibdev, addr, v.Provider, v.MapType, v.Path, v.Policy)}, 0
	case v == nil:
		return NIC{Summary: e.sumf("%s (%s): no P2P_DMA: the machine has no accelerator", ibdev, addr)}, 0
	}
	if !e.summaries {
		return NIC{}, 0
	}
	return NIC{Summary: fmt.Sprintf("%s (%s): no P2P_DMA: no accelerator is reached with true P2P; the nearest, %s, is %s: %s",
		ibdev, addr, v.Provider, v.Outcome, e.reason(v))}, 0
}

// sumf formats a log summary when summaries are wanted.
func (e *Engine) sumf(format string, args ...any) string {
	if !e.summaries {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

// reason is a verdict's reason with the kernel's hint when it has one,
// explained on demand (an oracle with p2p.Options.NoReasons caches none).
func (e *Engine) reason(v *p2p.Verdict) string {
	if v.Reason == "" {
		if ev, err := e.oracle.Explain(v.Provider, v.Client); err == nil {
			v = ev
		}
	}
	return reasonOf(v)
}

// resolve returns the PCI function of an RDMA device, or the errno the
// pairwise queries document: ENODEV for a device without one, EIO when
// the machine cannot be read.
func (e *Engine) resolve(ibdev string) (p2p.Addr, syscall.Errno) {
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
func (e *Engine) resolveErr(ibdev string) error {
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

// ErrnoOf is the errno for an engine's failure to open (Err), for the
// core's init.
func ErrnoOf(err error) syscall.Errno { return errnoOf(err) }

// Attr is a struct efadv_p2p_attr with its strings still Go strings.
type Attr struct {
	Attr   abi.P2PAttr // Reason and KernelRelease are left 0: whoever hands it to C sets them
	Reason string
	Kernel string // the release the verdict was decided for
}

// Peer answers efadv_p2p_query_peer: the verdict for ibdev's NIC DMAing
// into memory owned by the function at peer.
func (e *Engine) Peer(ibdev string, peer p2p.Addr) (Attr, syscall.Errno) {
	nic, errno := e.resolve(ibdev)
	if errno != 0 {
		return Attr{}, errno
	}
	return e.PeerAt(nic, peer)
}

// PeerAt is Peer for the NIC at nic. The verdict is explained, and not
// kept by an oracle that keeps none explained (the front keeps the
// answer).
func (e *Engine) PeerAt(nic, peer p2p.Addr) (Attr, syscall.Errno) {
	v, err := e.oracle.Explain(peer, nic)
	if err != nil {
		return Attr{}, errnoOf(err)
	}
	return attrOf(v, 0, reasonOf(v)), 0
}

// Dmabuf is the decision for a (NIC, exporter) pair.
type Dmabuf struct {
	Decision   int // DmabufPass, DmabufRefuse or DmabufAllow
	Err        syscall.Errno
	AllAllowed bool
	Best       Attr
	Summary    string
}

// The decisions, as efap2p_core.h numbers them.
const (
	DmabufPass   = 0
	DmabufRefuse = 1
	DmabufAllow  = 2
)

// Dmabuf decides a registration by ibdev's NIC of a dma-buf from the
// exporter expName: pass (no peer to judge: a system-memory or unknown
// exporter, a NIC without a PCI function), refuse (every device the
// exporter may own is refused), or allow.
func (e *Engine) Dmabuf(ibdev, expName string) Dmabuf {
	nic, errno := e.resolve(ibdev)
	if errno != 0 {
		return Dmabuf{Decision: DmabufPass, Err: errno,
			Summary: fmt.Sprintf("%s: dma-bufs are not judged: %v", ibdev, e.resolveErr(ibdev))}
	}
	return e.DmabufAt(ibdev, nic, expName)
}

// DmabufAt is Dmabuf for the RDMA device ibdev known to be the function nic.
func (e *Engine) DmabufAt(ibdev string, nic p2p.Addr, expName string) Dmabuf {
	d, err := e.oracle.Dmabuf(nic, expName)
	return e.dmabufOf(ibdev, nic, expName, d, err)
}

// dmabufOf is DmabufAt for the oracle's decision d (or its error).
func (e *Engine) dmabufOf(ibdev string, nic p2p.Addr, expName string, d *p2p.DmabufDecision, err error) Dmabuf {
	if err != nil {
		return Dmabuf{Decision: DmabufPass, Err: errnoOf(err),
			Summary: fmt.Sprintf("%s (%s): dma-bufs from %q are not judged: %v", ibdev, nic, expName, err)}
	}
	var flags uint32
	reason := e.reason(d.Best)
	if len(d.Candidates) > 1 {
		flags |= abi.P2PFlagAmbiguousPeer
		reason = fmt.Sprintf("The exporter %q may own the buffers of %d devices; the most favourable is %s. %s",
			expName, len(d.Candidates), d.Best.Provider, reason)
	}
	a := Dmabuf{Decision: DmabufAllow, AllAllowed: true, Best: attrOf(d.Best, flags, reason)}
	for _, v := range d.Candidates {
		if v.Outcome == p2p.OutcomeRefused {
			a.AllAllowed = false
		}
	}
	if d.Refuse {
		a.Decision, a.AllAllowed = DmabufRefuse, false
		a.Summary = fmt.Sprintf("%s (%s) cannot DMA into dma-bufs exported by %q: %s",
			ibdev, nic, expName, refusedList(d, reason))
	}
	return a
}

// Refusable reports whether ibdev's NIC would have any dma-buf
// registration refused by the oracle: whether some driver of the machine
// (a possible exporter: every exporter name the oracle knows maps to
// drivers, and any other name is taken as one) owns only devices the NIC
// is refused. When none does, the front need not identify the buffers
// this NIC registers until the kernel refuses one.
func (e *Engine) Refusable(ibdev string) (bool, syscall.Errno) {
	nic, errno := e.resolve(ibdev)
	if errno != 0 {
		return false, errno
	}
	return e.RefusableAt(nic), 0
}

// RefusableAt is Refusable for the NIC at nic.
func (e *Engine) RefusableAt(nic p2p.Addr) bool {
	return e.refusableWith(func(exp string) (*p2p.DmabufDecision, error) { return e.oracle.Dmabuf(nic, exp) })
}

// refusableWith is RefusableAt with the NIC's decision for each exporter
// from decide.
func (e *Engine) refusableWith(decide func(exp string) (*p2p.DmabufDecision, error)) bool {
	drivers, err := e.sysfs.Drivers()
	if err != nil {
		return true // cannot tell: identify every buffer
	}
	for _, d := range drivers {
		// the PCIe port services driver binds bridges, which export no
		// dma-bufs
		if d == "pcieport" {
			continue
		}
		if dec, err := decide(d); err == nil && dec.Refuse {
			return true
		}
	}
	return false
}

// refusedList names the refused candidates of a decision with the reason
// of the best.
func refusedList(d *p2p.DmabufDecision, reason string) string {
	addrs := make([]string, len(d.Candidates))
	for i, v := range d.Candidates {
		addrs[i] = v.Provider.String()
	}
	what := "its device " + addrs[0] + " is refused"
	if len(addrs) > 1 {
		what = "all its devices (" + strings.Join(addrs, ", ") + ") are refused"
	}
	return what + ". " + reason
}

// reasonOf is a verdict's reason, with the kernel's hint when it has one.
func reasonOf(v *p2p.Verdict) string {
	if v.Hint == "" {
		return v.Reason
	}
	return v.Reason + " " + v.Hint
}

// attrOf fills a struct efadv_p2p_attr from a verdict.
func attrOf(v *p2p.Verdict, flags uint32, reason string) Attr {
	if !v.Certain {
		flags |= abi.P2PFlagUncertain
	}
	if !v.Exact {
		flags |= abi.P2PFlagAssumed
	}
	return Attr{Reason: reason, Kernel: v.Kernel.String(), Attr: abi.P2PAttr{
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
	case p2p.PolicyXe:
		return abi.P2PPolicyXe
	case p2p.PolicyVFIO:
		return abi.P2PPolicyVFIO
	case p2p.PolicyI915:
		return abi.P2PPolicyI915
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
