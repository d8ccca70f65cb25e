// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Oracle answers pairwise P2P questions for one machine and caches every
// verdict for the life of the process (the kernel never invalidates its own
// cache either). It is safe for concurrent use. The verdicts its methods
// return are the cached ones, shared by every caller: do not change them
// (Verdict.Clone makes a copy that is the caller's).
type Oracle struct {
	topo  *Topology
	opts  Options
	rules *kernelRules
	file  *topoIndex // the topology file, when one was read
	// fileWhy says why the file was trusted; fileErr is why a topology
	// file was not used (the first one refused).
	fileWhy string
	fileErr error

	warnMu sync.Mutex
	warned map[string]bool

	kconfig func() KernelConfig // worked out once, on first use

	// Lookups read an immutable map through an atomic pointer, without a
	// lock; new verdicts go to dirty under mu and are published in batches
	// (a copy of read plus dirty) once enough lookups have missed read.
	read   atomic.Pointer[map[uint64]*Verdict]
	mu     sync.Mutex
	dirty  map[uint64]*Verdict
	misses int
	wide   map[pair]*Verdict // pairs with a domain past 16 bits, under mu
}

type pair struct{ provider, client Addr }

// pairKey packs a pair into 64 bits when both domains fit in 16.
func pairKey(p, c Addr) (uint64, bool) {
	if p.Domain > 0xffff || c.Domain > 0xffff {
		return 0, false
	}
	pk := uint64(p.Domain)<<16 | uint64(p.Bus)<<8 | uint64(p.DevFn())
	ck := uint64(c.Domain)<<16 | uint64(c.Bus)<<8 | uint64(c.DevFn())
	return pk<<32 | ck, true
}

// Options configure an Oracle.
type Options struct {
	// TopologyFile is a file written by `efap2p export`; its verdicts take
	// precedence over the ACPI tables and the computed ones. A file that
	// cannot be used (malformed, writable by others than root and this
	// user, or describing another machine, kernel or boot) is reported once
	// through Warnf and ignored.
	TopologyFile string
	// TopologyFiles, when TopologyFile is "", are the places to look for
	// one, in order (Defaults.Options: the default places): the first
	// usable one is read; a missing one is skipped silently, any other
	// that cannot be used is reported.
	TopologyFiles []string
	// Warnf reports problems the oracle works around (each one once).
	Warnf func(format string, args ...any)
	// Kernel is the release whose rules decide the verdicts; the zero
	// value means the running kernel's (uname -r), or the newest rules
	// when that cannot be read.
	Kernel Release
	// KernelConfig is that kernel's build configuration (whether it has
	// PCI_P2PDMA). Nil: worked out on first use, for the live /sys only
	// (RunningKernelConfig for the running kernel, /boot/config-RELEASE
	// for another installed one); unknown for any other tree, where the
	// verdicts are those of a kernel with PCI_P2PDMA and say so.
	KernelConfig *KernelConfig
	// NoReasons leaves the Reason and Hint of the verdicts the oracle
	// returns and caches empty. Their sentences cost more than the rule
	// itself (formatting, and memory in every cached verdict), and a
	// process that shows none (the C library at its default log level,
	// an export without reasons) need not pay for them: Explain writes
	// them for the one pair that is asked about.
	NoReasons bool

	kernelErr error // why Defaults.Options could not take $EFAP2P_KERNEL or $EFAP2P_KERNEL_CONFIG
}

// NewOracle returns an oracle over topo with the defaults the library and
// the tool take (Defaults): the machine's topology file and the kernel
// release $EFAP2P_KERNEL names. NewOracleWith takes only what its Options
// say.
func NewOracle(topo *Topology) *Oracle { return NewOracleWith(topo, Defaults{}.Options(topo)) }

// NewOracleWith returns an oracle over topo, with the options opts (the
// zero value: no topology file, the running kernel's rules).
func NewOracleWith(topo *Topology, opts Options) *Oracle {
	o := &Oracle{topo: topo, opts: opts, dirty: map[uint64]*Verdict{}, wide: map[pair]*Verdict{}, warned: map[string]bool{}}
	o.read.Store(&map[uint64]*Verdict{})
	if opts.kernelErr != nil {
		o.warn("%v", opts.kernelErr)
	}
	rel := opts.Kernel
	if rel.IsZero() {
		var err error
		if rel, err = RunningRelease(); err != nil {
			o.warn("%v; deciding by the newest rules known", err)
			rel = releaseLatest
		}
	}
	o.rules = rulesFor(rel)
	o.kconfig = sync.OnceValue(func() KernelConfig { return o.findKernelConfig(opts.Kernel.IsZero()) })
	names, explicit := opts.TopologyFiles, false
	if opts.TopologyFile != "" {
		names, explicit = []string{opts.TopologyFile}, true
	}
	for _, name := range names {
		tf, why, err := loadTopologyFile(name, topo, o.rules.Release)
		if err != nil {
			if !explicit && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if o.fileErr == nil {
				o.fileErr = err
			}
			o.warn("%v; using the other sources instead", err)
			continue
		}
		o.file, o.fileWhy = newTopoIndex(tf, name), why
		topo.addAccelerators(o.file.accels)
		break
	}
	return o
}

// TopologyFileInUse returns the topology file the oracle reads, and why it
// was trusted; "" when it reads none.
func (o *Oracle) TopologyFileInUse() (name, why string) {
	if o.file == nil {
		return "", ""
	}
	return o.file.name, o.fileWhy
}

// TopologyFileError returns why a topology file named by the options is not
// in use (the first refused), or nil.
func (o *Oracle) TopologyFileError() error { return o.fileErr }

// warn reports a problem once.
func (o *Oracle) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	o.warnMu.Lock()
	seen := o.warned[msg]
	o.warned[msg] = true
	o.warnMu.Unlock()
	if !seen && o.opts.Warnf != nil {
		o.opts.Warnf("%s", msg)
	}
}

// KernelConfig returns the build configuration of the kernel whose
// verdicts the oracle gives: Options.KernelConfig, else what the live
// system tells (worked out once).
func (o *Oracle) KernelConfig() KernelConfig { return o.kconfig() }

// findKernelConfig works out the configuration when no option gave it.
// Only the live /sys describes this machine, whose /proc and /boot then
// describe its kernels; running says the release is the running kernel's
// by default.
func (o *Oracle) findKernelConfig(running bool) KernelConfig {
	if k := o.opts.KernelConfig; k != nil {
		return *k
	}
	k := o.liveKernelConfig(running)
	// A topology file written as root for this kernel may know what this
	// process cannot read.
	if k.P2PDMA == BuiltUnknown && o.file != nil && o.file.kconfig != nil {
		fk := *o.file.kconfig
		fk.Source = fmt.Sprintf("recorded in the topology file %s: %s", o.file.name, fk.Source)
		return fk
	}
	return k
}

func (o *Oracle) liveKernelConfig(running bool) KernelConfig {
	s, ok := o.topo.src.(*Sysfs)
	if !ok || s.root != defaultSysfsRoot {
		return KernelConfig{Source: "the tree read is not this machine's /sys, and no kernel configuration was given for it (--kernel-config, $" + KernelConfigEnv + ")"}
	}
	rel := o.rules.Release
	if run, err := RunningRelease(); running || err == nil && run.String() == rel.String() {
		return RunningKernelConfig()
	}
	if rel.IsLatest() || rel.Extra == "" {
		return KernelConfig{Source: fmt.Sprintf("%s names kernel rules, not an installed kernel whose configuration could be read", rel)}
	}
	return ReleaseKernelConfig(rel)
}

// Topology returns the topology the oracle reads.
func (o *Oracle) Topology() *Topology { return o.topo }

// Kernel returns the release whose rules the oracle decides by.
func (o *Oracle) Kernel() Release { return o.rules.Release }

// Verdict returns the kernel's verdict for a DMA from client into
// provider's memory. The returned Verdict is shared: do not modify it
// (Verdict.Clone). A warm lookup takes no lock and does not allocate.
func (o *Oracle) Verdict(provider, client Addr) (*Verdict, error) {
	k, narrow := pairKey(provider, client)
	if narrow {
		if v, ok := (*o.read.Load())[k]; ok {
			return v, nil
		}
	}
	if v := o.cachedLocked(provider, client, k, narrow, true); v != nil {
		return v, nil
	}
	return o.compute(provider, client, k, narrow)
}

// cachedLocked looks the pair up where read did not hold it, under mu;
// count makes a hit count toward publishing dirty (Verdict's lookups,
// which will be asked again, do; Compute's need not).
func (o *Oracle) cachedLocked(provider, client Addr, k uint64, narrow, count bool) *Verdict {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !narrow {
		return o.wide[pair{provider, client}]
	}
	v := o.dirty[k]
	if v != nil && count {
		o.missed()
	}
	return v
}

// missed counts a lookup that read did not answer and publishes dirty once
// the misses have paid for the copy (amortized O(1) a miss). Called with
// mu held.
func (o *Oracle) missed() {
	o.misses++
	old := *o.read.Load()
	if o.misses < len(old)+len(o.dirty) {
		return
	}
	next := make(map[uint64]*Verdict, len(old)+len(o.dirty))
	for k, v := range old {
		next[k] = v
	}
	for k, v := range o.dirty {
		next[k] = v
	}
	o.read.Store(&next)
	o.dirty = map[uint64]*Verdict{}
	o.misses = 0
}

// Compute returns the verdict for the pair like Verdict, without caching
// one it works out (a cached one is returned as it is): for a caller that
// asks each pair once, such as an export of every pair of a large machine,
// where the cache would only hold hundreds of megabytes. The functions'
// attributes and config reads are cached all the same.
func (o *Oracle) Compute(provider, client Addr) (*Verdict, error) {
	k, narrow := pairKey(provider, client)
	if narrow {
		if v, ok := (*o.read.Load())[k]; ok {
			return v, nil
		}
	}
	if v := o.cachedLocked(provider, client, k, narrow, false); v != nil {
		return v, nil
	}
	return o.build(provider, client, !o.opts.NoReasons)
}

// Explain returns the verdict for the pair with its Reason and Hint. It is
// Verdict, except for an oracle made with Options.NoReasons, whose cached
// verdicts have none: the pair is then worked out again, explained (the
// functions' attributes and config reads are cached: only the rule runs
// again), and the copy returned is the caller's, not cached.
func (o *Oracle) Explain(provider, client Addr) (*Verdict, error) {
	if !o.opts.NoReasons {
		return o.Verdict(provider, client)
	}
	return o.build(provider, client, true)
}

func (o *Oracle) compute(provider, client Addr, k uint64, narrow bool) (*Verdict, error) {
	v, err := o.build(provider, client, !o.opts.NoReasons)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !narrow {
		if old, ok := o.wide[pair{provider, client}]; ok {
			return old, nil
		}
		o.wide[pair{provider, client}] = v
		return v, nil
	}
	if old, ok := (*o.read.Load())[k]; ok {
		return old, nil // another goroutine won; keep one answer per pair
	}
	if old, ok := o.dirty[k]; ok {
		return old, nil
	}
	o.dirty[k] = v
	o.missed()
	return v, nil
}

// build works out a verdict from the sources in precedence order: the
// topology file, else the kernel rule of the oracle's release (with the
// ACPI HMAT in the host-bridge check under p2p-hmat, and its figures as the
// path's bandwidth and latency wherever it describes the host bridges),
// the exporter's policy, the peer-memory path, and the NIC-level facts of
// the topology file; explain writes its Reason and Hint.
func (o *Oracle) build(provider, client Addr, explain bool) (*Verdict, error) {
	if o.file != nil {
		if tp := o.file.pair(provider, client); tp != nil {
			v := o.file.verdict(tp, explain)
			v.Kernel = o.rules.Release
			o.filePeerMem(v)
			return v, nil
		}
	}
	p, err := o.topo.Function(provider)
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	c, err := o.topo.Function(client)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	t := o.topo
	v := t.computeVerdict(o.rules, p, c, explain)
	kc := o.kconfig()
	v.KernelP2PDMA = kc.P2PDMA
	switch kc.P2PDMA {
	case BuiltNo:
		noP2PDMA(v, kc)
	case BuiltUnknown:
		if !kc.unread {
			break
		}
		// Without p2pdma every pair is the stub's NOT_SUPPORTED: settle
		// tells whether the exporter's outcome could differ. The verdict
		// stays Exact: the PCI path was read whole, and it is the answer
		// of a kernel built with p2pdma.
		v.alts = append(v.alts, MapNotSupported)
		v.Unread = append(v.Unread, "whether the kernel is built with PCI_P2PDMA")
	}
	lca := commonAncestor(p, c)
	throughHost := v.MapType == MapThruHostBridge || v.MapType == MapNotSupported
	v.fig = &figures{compute: func() (int, int) {
		bw, lat := bottleneckMBs(p, c, lca), estimateLatency(v.Distance, v.Path)
		if throughHost {
			if h := t.hmatPath(p.Root, c.Root); h.allowed {
				if b := h.coord.BandwidthMBs(); b > 0 {
					bw = b
				}
				if l := h.coord.LatencyNs(); l > 0 {
					lat = l
				}
			}
		}
		return bw, lat
	}}
	t.applyPolicy(o.rules, v, p, c)
	t.settle(o.rules, v, p, c)
	t.dmabufPath(o.rules, v, p, c)
	t.peerMemPath(v, p, c)
	if n, ok := o.fileBlocked(client); ok {
		// Refused whatever the rule would have said.
		v.Outcome, v.Source, v.Certain = OutcomeRefused, SourceTopologyFile, true
		if v.PeerMem.Outcome == OutcomeP2P {
			v.PeerMem.Outcome = OutcomeRefused
		}
		if explain {
			v.addReason(blockedReason(o.file.name, n))
		}
	} else if cl, err := c.Class(); err == nil && cl>>16 == 0x02 && v.P2P() {
		v.Note = firmwareNote
	}
	return v, nil
}

// filePeerMem completes a verdict the topology file gave, which records
// what p2pdma and the exporter decide for the dma-buf path: whether the
// NIC can register dma-bufs at all, and the peer-memory path, are read as
// for a computed verdict (the kernel's release, the EFA driver's version
// and the NIC's p2p attribute, which need no privilege), so that a pair
// gets the same answer with the file and without it; and the NIC's note,
// as a computed verdict has it.
func (o *Oracle) filePeerMem(v *Verdict) {
	p, err := o.topo.Function(v.Provider)
	if err != nil {
		return
	}
	c, err := o.topo.Function(v.Client)
	if err != nil {
		return
	}
	o.topo.dmabufPath(o.rules, v, p, c)
	o.topo.peerMemPath(v, p, c)
	if n, ok := o.fileBlocked(v.Client); ok {
		if v.PeerMem.Outcome == OutcomeP2P {
			v.PeerMem.Outcome = OutcomeRefused
			if why := blockedReason(o.file.name, n); v.explain && !strings.Contains(v.Reason, why) {
				v.addReason(why)
			}
		}
	} else if cl, err := c.Class(); err == nil && cl>>16 == 0x02 && v.P2P() {
		v.Note = firmwareNote
	}
}

// firmwareNote is the Note of a NIC's verdict that allows P2P: what no
// verdict computed from sysfs can see.
const firmwareNote = "Whether a NIC's firmware allows peer access cannot be seen in sysfs; where it does not, record it in the operator's topology file (efap2p export --peer-blocked NIC -o " + OperatorTopologyFile + ")."

// settle decides whether an inexact verdict is certain: the outcome of
// each map type the unread inputs could have given, under the exporter's
// rule, against the kernel-safe branch's. The map type stays the
// kernel-safe branch's; the reason says what would decide the outcome, or
// that nothing would change it.
func (t *Topology) settle(ru *kernelRules, v *Verdict, p, c *Function) {
	if len(v.alts) == 0 && !v.undecidable {
		v.Certain = true
		return
	}
	unread := strings.Join(v.Unread, ", ")
	if v.undecidable {
		v.Certain = false
		v.reasonf("The outcome rests on %s, which efap2p cannot decide.", unread)
		return
	}
	v.Certain = true
	var others []string
	for _, alt := range v.alts {
		s := Verdict{Provider: v.Provider, Client: v.Client, MapType: alt, Distance: v.Distance, Path: v.Path, Kernel: v.Kernel}
		t.applyPolicy(ru, &s, p, c)
		if s.Outcome != v.Outcome {
			v.Certain = false
			if v.explain {
				others = append(others, fmt.Sprintf("%s where it gives %s", s.Outcome, alt))
			}
		}
	}
	if !v.explain {
		return
	}
	if v.Certain {
		v.reasonf("%s could not be read, and it does not matter: the outcome is %s under every value it could have (the map type above is the kernel-safe branch).", capitalize(unread), v.Outcome)
		return
	}
	v.reasonf("The outcome depends on %s, which could not be read: %s under the kernel-safe assumption (%s), %s.", unread, v.Outcome, v.MapType, strings.Join(others, ", "))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (o *Oracle) fileBlocked(nic Addr) (*TopoNIC, bool) {
	if o.file == nil {
		return nil, false
	}
	n, ok := o.file.blocked[nic]
	return n, ok
}

// ErrNoClients is returned by DistanceMany for an empty client list.
var ErrNoClients = errors.New("no clients")

// DistanceMany is the kernel's pci_p2pdma_distance_many: the sum of the
// distances from provider to every client, or -1 when any client is
// NOT_SUPPORTED (or there are none). The verdicts are returned alongside.
func (o *Oracle) DistanceMany(provider Addr, clients []Addr) (int, []*Verdict, error) {
	if len(clients) == 0 {
		return -1, nil, ErrNoClients
	}
	total, refused := 0, false
	vs := make([]*Verdict, len(clients))
	for i, c := range clients {
		v, err := o.Verdict(provider, c)
		if err != nil {
			return -1, nil, err
		}
		vs[i] = v
		if !v.MapType.Supported() {
			refused = true
		}
		total += v.Distance
	}
	if refused {
		return -1, vs, nil
	}
	return total, vs, nil
}

// ReachesAccelerator reports whether the client (a NIC) gets true P2P DMA
// (Verdict.P2P: not refused, not bounced) into at least one accelerator of
// the machine (PCI class 03 or 12, or listed in the topology file). It asks
// the nearest accelerators first (deepest common ancestor, then shortest
// chain) and stops at the first allowed one, returning its verdict; when
// none is allowed it returns the nearest refused verdict (nil without
// accelerators).
func (o *Oracle) ReachesAccelerator(client Addr) (bool, *Verdict, error) {
	c, err := o.topo.Function(client)
	if err != nil {
		return false, nil, err
	}
	accels, err := o.topo.Accelerators()
	if err != nil {
		return false, nil, err
	}
	order := make([]*Function, 0, len(accels))
	for _, a := range accels {
		if a != c {
			order = append(order, a)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return nearer(order[i], order[j], c) })
	var first *Verdict
	for _, a := range order {
		v, err := o.Verdict(a.Addr, client)
		if err != nil {
			return false, nil, err
		}
		if v.P2P() {
			return true, v, nil
		}
		if first == nil {
			first = v
		}
	}
	return false, first, nil
}

// nearer orders candidate providers for a client: a deeper common ancestor
// first, then the same root bus, then fewer hops.
func nearer(a, b, c *Function) bool {
	la, lb := commonAncestor(a, c), commonAncestor(b, c)
	da, db := -1, -1
	if la != nil {
		da = la.Depth
	}
	if lb != nil {
		db = lb.Depth
	}
	if da != db {
		return da > db
	}
	if (a.Root == c.Root) != (b.Root == c.Root) {
		return a.Root == c.Root
	}
	return a.Depth < b.Depth
}
