// SPDX-License-Identifier: MIT

package efadv

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/efap2p/efap2p/internal/secenv"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/verbs"
)

// oracle is the process's oracle, built on first use.
var oracle = sync.OnceValues(buildOracle)

func buildOracle() (*p2p.Oracle, error) {
	src, err := p2p.OpenSysfs(p2p.SysfsRoot())
	if err != nil {
		return nil, fmt.Errorf("efadv: the P2P oracle: %w", err)
	}
	// the library's defaults: the machine's topology file, $EFAP2P_KERNEL
	topo := p2p.NewTopology(src)
	opts := p2p.Defaults{}.Options(topo)
	opts.Warnf = warnf
	return p2p.NewOracleWith(topo, opts), nil
}

// Oracle returns the process's P2P oracle, built on first use from the
// sysfs tree libibverbs reads ($SYSFS_PATH, else /sys) and the machine's
// topology file ($EFAP2P_TOPOLOGY, else the default places
// /run/efap2p/topology.json, /etc/efap2p/topology.json; see p2p.Defaults)
// when one describes this machine, deciding by
// the rules of the kernel release $EFAP2P_KERNEL names ("6.1.0-28-amd64",
// "latest", "p2p-hmat"), else of the running kernel, built as the file
// $EFAP2P_KERNEL_CONFIG says (else as /proc and /boot tell: see
// p2p.Options.KernelConfig). Every function of
// this package asks this one oracle; its verdicts are cached for the life
// of the process, and those its own methods return are shared with that
// cache (p2p.Verdict.Clone copies one; QueryP2P returns copies).
func Oracle() (*p2p.Oracle, error) { return oracle() }

var warned sync.Map

// warnf reports a problem the package works around, once per message, on
// standard error; EFAP2P_LOG=off silences it.
func warnf(format string, args ...any) {
	if strings.EqualFold(secenv.Getenv("EFAP2P_LOG"), "off") {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if _, dup := warned.LoadOrStore(msg, true); dup {
		return
	}
	fmt.Fprintf(os.Stderr, "efadv: %s\n", msg)
}

// reach caches Oracle.ReachesAccelerator per NIC (by addrKey): an
// immutable map read without a lock, replaced under reachMu.
var (
	reach   atomic.Pointer[map[uint64]bool]
	reachMu sync.Mutex
)

// addrKey packs a PCI address into a map key that hashes fast.
func addrKey(a p2p.Addr) uint64 {
	return uint64(a.Domain)<<32 | uint64(a.Bus)<<16 | uint64(a.Device)<<8 | uint64(a.Function)
}

// reaches reports whether ctx's NIC gets true P2P into an accelerator.
func reaches(ctx *verbs.Context) bool {
	nic, err := ctx.PCIAddr()
	if err != nil {
		warnf("P2P_DMA left clear for %s: %v", ctx.Name(), err)
		return false
	}
	key := addrKey(nic)
	if m := reach.Load(); m != nil {
		if ok, found := (*m)[key]; found {
			return ok
		}
	}
	o, err := oracle()
	if err != nil {
		warnf("P2P_DMA left clear for %s: %v", ctx.Name(), err)
		return false
	}
	ok, _, err := o.ReachesAccelerator(nic)
	if err != nil {
		warnf("P2P_DMA left clear for %s (%s): %v", ctx.Name(), nic, err)
		return false
	}
	reachMu.Lock()
	defer reachMu.Unlock()
	old := reach.Load()
	next := make(map[uint64]bool, 1)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[key] = ok
	reach.Store(&next)
	return ok
}

// QueryP2P returns the oracle's verdict for the context's NIC DMAing into
// memory owned by the PCI function peer: map type and distance as the
// kernel decides them, the path class, the exporting driver's outcome
// (p2p, bounced or refused) on the dma-buf path (Verdict.Outcome), the
// peer-memory path (Verdict.PeerMem: the out-of-tree EFA driver's
// provider), what the NIC gets by either (Verdict.Effective, Verdict.Via),
// the kernel release decided for, the source and the reason. The verdict is the
// caller's: a copy of the one the process's oracle caches
// (p2p.Verdict.Clone), which it may keep and change without changing later
// answers. A peer that is not on the machine gives an error wrapping
// p2p.ErrNoFunction; a closed context one wrapping verbs.ErrClosed.
func QueryP2P(ctx *verbs.Context, peer p2p.Addr) (*p2p.Verdict, error) {
	nic, err := ctx.PCIAddr()
	if err != nil {
		return nil, fmt.Errorf("efadv: P2P query: %w", err)
	}
	o, err := oracle()
	if err != nil {
		return nil, err
	}
	v, err := o.Verdict(peer, nic)
	if err != nil {
		return nil, fmt.Errorf("efadv: P2P query %s -> %s: %w", ctx.Name(), peer, err)
	}
	return v.Clone(), nil
}

// QueryP2PDmabuf is QueryP2P for the device that exports the dma-buf fd.
// The exporter is identified through libc, so that interposers see it:
// fstatfs must report the dma-buf magic, and /proc/self/fdinfo/<fd> names
// the exporter (exp_name), whose PCI functions are the candidates. The
// decision holds one verdict per candidate and the most favourable one;
// like QueryP2P's, it is the caller's to keep and change (its verdicts are
// copies of the cached ones, Best one of Candidates).
//
// Errors wrap syscall.EBADF for a closed fd, syscall.EINVAL for a file
// that is not a dma-buf, p2p.ErrSystemMemory for a buffer in host memory
// (no peer), p2p.ErrUnknownExporter for an exporter that owns no PCI
// function of this machine.
func QueryP2PDmabuf(ctx *verbs.Context, fd int) (*p2p.DmabufDecision, error) {
	nic, err := ctx.PCIAddr()
	if err != nil {
		return nil, fmt.Errorf("efadv: dma-buf P2P query: %w", err)
	}
	exp, err := DmabufExporter(fd)
	if err != nil {
		return nil, err
	}
	o, err := oracle()
	if err != nil {
		return nil, err
	}
	d, err := o.Dmabuf(nic, exp)
	if err != nil {
		return nil, fmt.Errorf("efadv: dma-buf %d for %s: %w", fd, ctx.Name(), err)
	}
	return cloneDecision(d), nil
}

// cloneDecision copies a decision and its verdicts, Best pointing at the
// copy of the candidate it is.
func cloneDecision(d *p2p.DmabufDecision) *p2p.DmabufDecision {
	c := *d
	c.Candidates = make([]*p2p.Verdict, len(d.Candidates))
	c.Best = nil
	for i, v := range d.Candidates {
		c.Candidates[i] = v.Clone()
		if v == d.Best {
			c.Best = c.Candidates[i]
		}
	}
	if c.Best == nil {
		c.Best = d.Best.Clone()
	}
	return &c
}
