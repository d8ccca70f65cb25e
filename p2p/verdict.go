// SPDX-License-Identifier: MIT

package p2p

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Verdict is the oracle's answer for one (provider, client) pair: the
// provider owns the memory, the client DMAs into it. The verdicts an
// Oracle returns are shared with its cache: read them, and Clone one to
// keep a copy to change.
type Verdict struct {
	Provider Addr `json:"provider"`
	Client   Addr `json:"client"`
	// MapType and Distance are the kernel's calc_map_type_and_dist result.
	// Distance is the number of hops of the path the rule walked; the
	// kernel's pci_p2pdma_distance reports -1 instead when MapType is
	// NOT_SUPPORTED (see KernelDistance).
	MapType  MapType   `json:"map_type"`
	Distance int       `json:"distance"`
	Path     PathClass `json:"path"`
	Rule     Rule      `json:"rule"`
	// CommonBridge is the lowest function both upstream chains share, when
	// there is one (the switch port where the path turns around).
	CommonBridge *Addr `json:"common_bridge,omitempty"`
	// ACSRedirect lists the functions on the path with RR, CR or EC set in
	// ACS Control: the ones pci=disable_acs_redir= would name.
	ACSRedirect []Addr `json:"acs_redirect"`
	// ACSUnknown lists the functions on the path whose ACS state could not
	// be read (config space past 64 bytes needs CAP_SYS_ADMIN).
	ACSUnknown []Addr `json:"acs_unknown,omitempty"`
	// ACSBlocked lists the functions whose ACS Egress Control blocks the
	// direct path without redirecting it (p2p-hmat only; PCIe r7.0 table
	// 6-11): the request can only go through the host bridge.
	ACSBlocked []Addr `json:"acs_blocked,omitempty"`
	// Exact is true when everything the kernel's rule needs was read, so
	// that MapType and Rule are the kernel's own. When something could not
	// be read (ACS state without root, the CPU, a host bridge), they are
	// the kernel-safe branch: redirection assumed, and refused what could
	// not be proven allowed; Unread names what was missing.
	Exact bool `json:"exact"`
	// Certain is true when Outcome is the same under every value what
	// could not be read could have (always so when Exact): an unknown ACS
	// state under an exporter that does not consult the kernel, or on a CPU
	// whose rule allows the detour, does not make the answer uncertain.
	Certain bool `json:"certain"`
	// Unread names what the rule needed and could not read ("the ACS state
	// of 0000:4e:00.0", "the CPU"); when Certain is false, it decides the
	// outcome.
	Unread []string `json:"unread,omitempty"`
	// Whitelist is the host-bridge whitelist entry that allowed the path.
	Whitelist *WhitelistEntry `json:"-"`
	// Policy names the exporter rule that decided Outcome: kernel,
	// amdgpu, nvidia or neuron (the driver bound to the provider).
	Policy Policy `json:"policy"`
	// Outcome is the dma-buf registration path's answer (what
	// ibv_reg_dmabuf_mr gets, through p2pdma and the exporter's rule):
	// p2p, bounced (through system memory) or refused. It is not the
	// pair's whole answer where the NIC has a second path: Effective is
	// what the NIC gets by either path, Via the paths that give true P2P.
	Outcome Outcome `json:"outcome"`
	// DmabufUnavailable, when set, says why the client, an EFA NIC, cannot
	// register dma-buf memory at all with this kernel and EFA driver
	// (DmabufRegistration): Outcome is then what p2pdma and the exporter
	// would decide for a capable one, and the dma-buf path gives nothing
	// (Via leaves it out).
	DmabufUnavailable string `json:"dmabuf_unavailable,omitempty"`
	// PeerMem is the second registration path: the accelerator's memory
	// registered by virtual address through the out-of-tree EFA driver's
	// peer-memory provider.
	PeerMem PeerMem `json:"peer_mem"`
	// Source says where the verdict came from: topology-file, acpi or
	// computed.
	Source VerdictSource `json:"source"`
	// Kernel is the release whose rules decided the verdict ("latest" for
	// the newest known, "p2p-hmat" with the HMAT P2P series).
	Kernel Release `json:"kernel"`
	// KernelP2PDMA is whether that kernel is built with PCI_P2PDMA: "y",
	// "n" (then MapType is the stub's NOT_SUPPORTED for every pair), or
	// "unknown" (the verdict is that of a kernel built with it).
	KernelP2PDMA Built `json:"kernel_p2pdma"`
	// Reason explains the verdict in a sentence or two; Hint, when set, is
	// what an administrator can change (the kernel's own advice).
	Reason string `json:"reason"`
	Hint   string `json:"hint,omitempty"`
	// Note, when set, says what the verdict cannot see and how to record
	// it: it is the same for every pair it applies to, so a report of many
	// verdicts says it once (a NIC's firmware that blocks peer access is
	// invisible in sysfs).
	Note string `json:"note,omitempty"`

	fig *figures // bandwidth and latency, worked out on first use

	// alts are the map types the rule would give under the other values of
	// what it could not read; undecidable is set when those cannot be
	// listed (rules efap2p does not model).
	alts        []MapType
	undecidable bool
	// explain: Reason and Hint are written (see Options.NoReasons).
	explain bool
}

// figures holds a verdict's bandwidth and latency. Reading link widths and
// speeds costs two attribute reads per function on the path, which a
// yes/no question does not need, so they are read on first use.
type figures struct {
	once    sync.Once
	compute func() (bandwidthMBs, latencyNs int)
	bw, lat int
}

func fixedFigures(bw, lat int) *figures {
	f := &figures{bw: bw, lat: lat}
	f.once.Do(func() {})
	return f
}

func (f *figures) get() (int, int) {
	if f == nil {
		return 0, 0
	}
	f.once.Do(func() { f.bw, f.lat = f.compute() })
	return f.bw, f.lat
}

// Clone returns a copy of v that shares nothing the caller could change
// with it: the oracle's verdicts are shared with its cache (Oracle.Verdict),
// a clone is the caller's to keep and change.
func (v *Verdict) Clone() *Verdict {
	if v == nil {
		return nil
	}
	c := *v
	if v.CommonBridge != nil {
		a := *v.CommonBridge
		c.CommonBridge = &a
	}
	c.ACSRedirect = slices.Clone(v.ACSRedirect)
	c.ACSUnknown = slices.Clone(v.ACSUnknown)
	c.ACSBlocked = slices.Clone(v.ACSBlocked)
	c.Unread = slices.Clone(v.Unread)
	c.alts = slices.Clone(v.alts)
	if v.Whitelist != nil {
		e := v.Whitelist.clone()
		c.Whitelist = &e
	}
	// fig is computed once and only read: the copy may share it.
	return &c
}

// BandwidthMBs is the narrowest PCIe link on the path in MB/s (0 when
// unknown), or the ACPI table's or topology file's figure.
func (v *Verdict) BandwidthMBs() int { bw, _ := v.fig.get(); return bw }

// LatencyNs is an estimate of the path's latency from its hop count and
// class, or the ACPI table's or topology file's figure.
func (v *Verdict) LatencyNs() int { _, lat := v.fig.get(); return lat }

// MarshalJSON adds bandwidth_mbs, latency_ns, p2p, p2p_via and
// effective_outcome to the verdict's fields.
func (v *Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict
	return json.Marshal(struct {
		*plain
		BandwidthMBs int          `json:"bandwidth_mbs"`
		LatencyNs    int          `json:"latency_ns"`
		P2P          bool         `json:"p2p"`
		Via          Registration `json:"p2p_via"`
		Effective    Outcome      `json:"effective_outcome"`
	}{(*plain)(v), v.BandwidthMBs(), v.LatencyNs(), v.P2P(), v.Via(), v.Effective()})
}

// P2P reports whether the NIC gets true peer-to-peer DMA into the
// provider's memory by either registration path: the dma-buf one (not
// refused, not bounced through system memory) or the peer-memory one.
func (v *Verdict) P2P() bool { return v.Via() != 0 }

// DmabufP2P reports true P2P on the dma-buf path alone (what
// ibv_reg_dmabuf_mr gets): Outcome p2p, where the NIC can register
// dma-buf memory at all.
func (v *Verdict) DmabufP2P() bool { return v.Outcome == OutcomeP2P && v.DmabufUnavailable == "" }

// Via returns the registration paths that give the client true P2P into
// the provider's memory: RegDmabuf when Outcome is p2p (and the NIC can
// register dma-bufs: DmabufUnavailable is empty), RegPeerMem when
// PeerMem.Outcome is; none (0) when neither does.
func (v *Verdict) Via() Registration {
	var r Registration
	if v.DmabufP2P() {
		r |= RegDmabuf
	}
	if v.PeerMem.Outcome == OutcomeP2P {
		r |= RegPeerMem
	}
	return r
}

// Effective is the pair's answer to "can the client DMA straight into the
// provider's memory", whichever way the memory is registered: p2p when
// either path gives true P2P (Via says which); else bounced when dma-buf
// registration works through system memory; else refused when a path
// refuses (or the NIC cannot register dma-bufs at all); unknown when
// neither path could be decided. Outcome is the dma-buf path's alone: on a
// NIC with peer memory the two differ.
func (v *Verdict) Effective() Outcome {
	switch {
	case v.P2P():
		return OutcomeP2P
	case v.DmabufUnavailable == "" && v.Outcome == OutcomeBounced:
		return OutcomeBounced
	case v.Outcome == OutcomeRefused || v.PeerMem.Outcome == OutcomeRefused || v.DmabufUnavailable != "":
		return OutcomeRefused
	}
	return OutcomeUnknown
}

// Registration is a set of the ways a NIC registers an accelerator's
// memory for DMA: the two paths a verdict decides.
type Registration uint8

// The registration paths.
const (
	// RegDmabuf: ibv_reg_dmabuf_mr on a dma-buf the accelerator's driver
	// exports, through p2pdma and the exporter's rule (Verdict.Outcome).
	RegDmabuf Registration = 1 << iota
	// RegPeerMem: ibv_reg_mr on the accelerator's memory by address,
	// through the out-of-tree EFA driver's peer-memory provider
	// (Verdict.PeerMem).
	RegPeerMem
)

var registrationNames = []struct {
	r    Registration
	name string
}{{RegDmabuf, "dma-buf"}, {RegPeerMem, "peer-memory"}}

// Names lists the paths of the set: "dma-buf", "peer-memory".
func (r Registration) Names() []string {
	out := []string{}
	for _, n := range registrationNames {
		if r&n.r != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// String joins the paths' names with "+" ("dma-buf+peer-memory"); "none"
// for the empty set.
func (r Registration) String() string {
	if r == 0 {
		return "none"
	}
	return strings.Join(r.Names(), "+")
}

// MarshalJSON writes the set as an array of names (Names).
func (r Registration) MarshalJSON() ([]byte, error) { return json.Marshal(r.Names()) }

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Registration) UnmarshalJSON(b []byte) error {
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return err
	}
	*r = 0
	for _, s := range names {
		i := slices.IndexFunc(registrationNames, func(n struct {
			r    Registration
			name string
		}) bool {
			return n.name == s
		})
		if i < 0 {
			return fmt.Errorf("unknown registration path %q (want dma-buf or peer-memory)", s)
		}
		*r |= registrationNames[i].r
	}
	return nil
}

// KernelDistance is what pci_p2pdma_distance returns: the distance, or -1
// when the kernel refuses the mapping.
func (v *Verdict) KernelDistance() int {
	if !v.MapType.Supported() {
		return -1
	}
	return v.Distance
}

// computeVerdict applies the kernel's calc_map_type_and_dist of the rules
// ru to p and c; explain writes the verdict's Reason and Hint.
func (t *Topology) computeVerdict(ru *kernelRules, p, c *Function, explain bool) *Verdict {
	v := &Verdict{Provider: p.Addr, Client: c.Addr, Source: SourceComputed, Exact: true, Certain: true, ACSRedirect: []Addr{}, Kernel: ru.Release, explain: explain}
	if ru.Unmodelled {
		v.Exact, v.undecidable = false, true
		v.Unread = append(v.Unread, "the rules of Linux "+ru.Release.String())
		v.reasonf("Linux %s predates the rules efap2p models (5.4 and later): 5.4's are applied.", ru.Release)
	}
	lca := commonAncestor(p, c)
	if lca == nil {
		// No common upstream bridge: each side counts its whole chain,
		// itself included, and ACS on the way does not matter.
		v.Distance = p.Depth + 1 + c.Depth + 1
		v.MapType = MapThruHostBridge
		t.hostBridgeCheck(ru, v, p, c, false)
		v.Path = t.pathClass(p, c, nil)
		return v
	}
	v.Distance = (p.Depth - lca.Depth) + (c.Depth - lca.Depth)
	if lca != p || lca != c {
		a := lca.Addr
		v.CommonBridge = &a
	}
	// ACS is checked on the provider's side up to and including the common
	// ancestor, and on the client's side below it.
	if ru.HMAT {
		t.noteACSEgress(v, p, c, lca)
	} else {
		for f := p; ; f = f.Upstream {
			v.noteACS(f)
			if f == lca {
				break
			}
		}
		for f := c; f != lca; f = f.Upstream {
			v.noteACS(f)
		}
	}
	v.Path = t.pathClass(p, c, lca)
	if len(v.ACSRedirect) == 0 && len(v.ACSUnknown) == 0 && len(v.ACSBlocked) == 0 {
		v.MapType = MapBusAddr
		v.Rule = RuleCommonBridge
		if p == c {
			v.Rule = RuleSameFunction
		}
		if explain {
			v.addReason(busAddrReason(v, p == c))
		}
		return v
	}
	v.MapType = MapThruHostBridge
	if len(v.ACSRedirect) == 0 && len(v.ACSBlocked) == 0 {
		// Only unknown ACS states stand in the way: without redirection
		// at any of them the traffic would turn around below lca.
		v.assume(MapBusAddr, "the ACS state of "+joinAddrs(v.ACSUnknown, ", "))
	}
	t.hostBridgeCheck(ru, v, p, c, true)
	return v
}

// assume records that the verdict took the kernel-safe branch because
// what it names could not be read, and that alt is the map type the rule
// gives under the other value.
func (v *Verdict) assume(alt MapType, unread string) {
	v.Exact = false
	if !slices.Contains(v.alts, alt) {
		v.alts = append(v.alts, alt)
	}
	if !slices.Contains(v.Unread, unread) {
		v.Unread = append(v.Unread, unread)
	}
}

// noP2PDMA turns a computed verdict into what a kernel built without
// PCI_P2PDMA answers: pci_p2pdma_distance is the header's stub, -1 for
// every pair, so the map type is NOT_SUPPORTED. The walked distance and
// path stay (what the PCI path is), and the explanation keeps what a
// kernel with p2pdma would have said.
func noP2PDMA(v *Verdict, kc KernelConfig) {
	would := ""
	if v.explain {
		would = fmt.Sprintf("Built with it, the kernel would answer %s (distance %d): %s", v.MapType, v.Distance, v.Reason)
	}
	v.MapType, v.Rule, v.Source, v.Certain = MapNotSupported, RuleNoP2PDMA, SourceComputed, true
	// The stub answers without looking at the path: nothing unread matters.
	v.Exact, v.undecidable, v.alts, v.Unread = true, false, nil, nil
	v.Whitelist = nil
	v.Reason, v.Hint = "", ""
	if v.explain {
		v.reasonf("This kernel is built without PCI_P2PDMA (%s): the kernel refuses every P2P mapping it is asked for; dma-buf exporters that ask it fall back (NOT_SUPPORTED, pci_p2pdma_distance -1).", kc.Source)
		v.addReason(would)
		v.Hint = "boot a kernel built with CONFIG_PCI_P2PDMA=y (no stock Debian 12 kernel is)"
	}
}

func (v *Verdict) noteACS(f *Function) {
	acs := f.ACS()
	switch {
	case !acs.Known:
		v.ACSUnknown = append(v.ACSUnknown, f.Addr)
	case acs.Redirects():
		v.ACSRedirect = append(v.ACSRedirect, f.Addr)
	}
}

// hostDecision is the outcome of the host-bridge check for two root buses.
type hostDecision struct {
	cpu      CPU
	cpuKnown bool
	byCPU    bool              // cpu_supports_p2pdma passed
	bridge   hostBridgeVerdict // the whitelist, when the CPU did not pass
	provider *WhitelistEntry   // the provider's entry, with two host bridges
	hmat     *hmatDecision     // the HMAT (p2p-hmat), when neither passed
}

func (d hostDecision) allowed() bool {
	return d.byCPU || d.bridge.ok || d.hmat != nil && d.hmat.allowed
}

// hostDecide is the kernel's host-bridge check under the rules ru: the CPU
// rule (from 5.9), then the whitelist (once with same_host_bridge when both
// sit under one bridge, else both bridges must pass on their own), then,
// with the HMAT series, a reachable HMAT path from the client's host bridge
// to the provider's.
func (t *Topology) hostDecide(ru *kernelRules, pr, cr RootBus) hostDecision {
	return remember(t, &t.hostDec, hostKey{ru, pr, cr}, 0, func() hostDecision { return t.decideHost(ru, pr, cr) })
}

// hostKey names a host-bridge decision: it depends on the rules and the
// two root buses only.
type hostKey struct {
	ru     *kernelRules
	pr, cr RootBus
}

func (t *Topology) decideHost(ru *kernelRules, pr, cr RootBus) hostDecision {
	var d hostDecision
	cpu, err := t.CPU()
	d.cpu, d.cpuKnown = cpu, err == nil && cpu.Known
	if ru.CPURule && cpu.supportsP2P() {
		d.byCPU = true
		return d
	}
	check := func(r RootBus, same bool) hostBridgeVerdict {
		hb, err := t.HostBridge(r)
		if err != nil {
			return hostBridgeVerdict{why: err.Error()}
		}
		return whitelisted(ru, hb, same)
	}
	if pr == cr {
		d.bridge = check(pr, true)
	} else if d.bridge = check(pr, false); d.bridge.ok {
		d.provider = d.bridge.entry
		d.bridge = check(cr, false)
	}
	if !d.bridge.ok && ru.HMAT {
		h := t.hmatPath(pr, cr)
		d.hmat = &h
	}
	return d
}

// hostBridgeAllows reports whether the host-bridge check passes for a path
// between the two root buses.
func (t *Topology) hostBridgeAllows(ru *kernelRules, pr, cr RootBus) bool {
	return t.hostDecide(ru, pr, cr).allowed()
}

// hostBridgeCheck decides a THRU_HOST_BRIDGE path and explains it.
func (t *Topology) hostBridgeCheck(ru *kernelRules, v *Verdict, p, c *Function, acsPath bool) {
	d := t.hostDecide(ru, p.Root, c.Root)
	switch {
	case d.byCPU:
		v.Rule = RuleCPU
	case d.bridge.ok:
		v.Rule = RuleWhitelist
		v.Whitelist = d.bridge.entry
	case d.hmat != nil && d.hmat.allowed:
		v.Rule = RuleACPI
		v.Source = SourceACPI
	default:
		v.MapType = MapNotSupported
		v.Rule = RuleHostBridge
		// What could not be read could have allowed the detour.
		if !d.cpuKnown && ru.CPURule {
			v.assume(MapThruHostBridge, "the CPU")
		}
		if !d.bridge.known {
			what := "the host bridge of " + p.Root.String()
			if p.Root != c.Root {
				what = "the host bridges of " + p.Root.String() + " and " + c.Root.String()
			}
			v.assume(MapThruHostBridge, what)
		}
		if d.hmat != nil && !d.hmat.known {
			v.assume(MapThruHostBridge, "the ACPI HMAT")
		}
	}
	if v.explain {
		v.addReason(hostBridgeReason(ru, v, p, c, acsPath, d))
	}
}

// hostBridgeReason explains the host-bridge check's decision d.
func hostBridgeReason(ru *kernelRules, v *Verdict, p, c *Function, acsPath bool, d hostDecision) string {
	var why strings.Builder
	if acsPath {
		why.WriteString(acsReason(v))
	} else {
		fmt.Fprintf(&why, "%s and %s share no upstream bridge, so the path goes through the host bridge", p.Addr, c.Addr)
		if p.Root != c.Root {
			fmt.Fprintf(&why, "s of %s and %s. ", p.Root, c.Root)
		} else {
			fmt.Fprintf(&why, " of %s. ", p.Root)
		}
	}
	switch {
	case d.byCPU:
		fmt.Fprintf(&why, "The %s family 0x%x CPU supports P2P DMA through its host bridges (THRU_HOST_BRIDGE, distance %d).", d.cpu.vendorName(), d.cpu.Family, v.Distance)
	case d.bridge.ok:
		name := func(e *WhitelistEntry) string {
			if e.Device == AnyDevice {
				return "every device of vendor " + hexID(e.Vendor, 0)[:4] + ", " + e.Note
			}
			return hexID(e.Vendor, uint16(e.Device)) + ", " + e.Note
		}
		if d.provider != nil {
			fmt.Fprintf(&why, "Both host bridges are in the P2PDMA whitelist of %s: the provider's (%s) and the client's (%s) (THRU_HOST_BRIDGE, distance %d).", ru.describe(), name(d.provider), name(d.bridge.entry), v.Distance)
		} else {
			fmt.Fprintf(&why, "The host bridge (%s) is in the P2PDMA whitelist of %s (THRU_HOST_BRIDGE, distance %d).", name(d.bridge.entry), ru.describe(), v.Distance)
		}
	case d.hmat != nil && d.hmat.allowed:
		fmt.Fprintf(&why, "Neither the CPU rule nor the whitelist allows it (%s), but %s: with the HMAT P2P series the kernel allows it (THRU_HOST_BRIDGE, distance %d).", d.bridge.why, d.hmat.why, v.Distance)
	default:
		if d.hmat != nil {
			fmt.Fprintf(&why, "%s cannot be used for peer-to-peer DMA as the client and provider (%s) do not share an upstream bridge, whitelisted host bridge, or HMAT-described P2P path: %s; %s", c.Addr, p.Addr, d.bridge.why, d.hmat.why)
		} else {
			fmt.Fprintf(&why, "%s cannot be used for peer-to-peer DMA as the client and provider (%s) do not share an upstream bridge or whitelisted host bridge: %s", c.Addr, p.Addr, d.bridge.why)
		}
		switch {
		case !ru.CPURule:
			fmt.Fprintf(&why, "; Linux %s has no CPU rule (AMD family 0x17 or later allows every path from 5.9)", ru.Release)
		case !d.cpuKnown:
			why.WriteString("; the CPU could not be identified, so the AMD rule was not applied")
		default:
			fmt.Fprintf(&why, "; the %s CPU does not qualify for the CPU rule (AMD family 0x17 or later)", d.cpu.vendorName())
		}
		why.WriteString(".")
	}
	return why.String()
}

// acsReason explains an ACS-forced detour and sets the kernel's hint.
func acsReason(v *Verdict) string {
	var b strings.Builder
	if len(v.ACSBlocked) > 0 {
		fmt.Fprintf(&b, "ACS Egress Control blocks the direct P2P path to provider %s at %s, so the request can only go through the host bridge. ", v.Provider, joinAddrs(v.ACSBlocked, ", "))
	}
	if len(v.ACSRedirect) > 0 {
		fmt.Fprintf(&b, "ACS redirect is set between the client and provider (%s) at %s, so peer traffic is routed up to the root complex. ", v.Provider, joinAddrs(v.ACSRedirect, ", "))
	}
	if len(v.ACSRedirect)+len(v.ACSBlocked) > 0 {
		var ids []string
		for _, a := range append(append([]Addr{}, v.ACSRedirect...), v.ACSBlocked...) {
			ids = append(ids, a.Short())
		}
		what := "ACS redirect"
		if len(v.ACSBlocked) > 0 {
			what = "ACS controls"
		}
		v.Hint = "to disable " + what + " for this path, add the kernel parameter: pci=disable_acs_redir=" + strings.Join(ids, ";")
	}
	if len(v.ACSUnknown) > 0 {
		fmt.Fprintf(&b, "The ACS state of %s is unknown (config space past 64 bytes needs CAP_SYS_ADMIN), so the path is assumed to be redirected through the root complex; run as root, or read a topology file written by `efap2p export` as root, for a certain answer. ", joinAddrs(v.ACSUnknown, ", "))
	}
	return b.String()
}

func busAddrReason(v *Verdict, same bool) string {
	if same {
		return "Provider and client are the same function (BUS_ADDR, distance 0)."
	}
	return fmt.Sprintf("%s and %s share the upstream bridge %s and no ACS redirect is set on the path, so traffic turns around there without reaching the host bridge (BUS_ADDR, distance %d).", v.Client, v.Provider, v.CommonBridge, v.Distance)
}

func joinAddrs(as []Addr, sep string) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, sep)
}

// pathClass names the path as NCCL and nvidia-smi do. Below a common
// bridge, a path that climbs at most two levels on each side (a downstream
// port, then the switch's upstream port) stays inside one switch: PIX;
// longer ones cross several bridges: PXB. Without a common bridge: PHB under
// one host bridge, NODE across host bridges of one NUMA node, SYS across
// NUMA nodes (or when a NUMA node is unknown).
func (t *Topology) pathClass(p, c, lca *Function) PathClass {
	switch {
	case p == c:
		return PathLOC
	case lca != nil:
		if p.Depth-lca.Depth <= 2 && c.Depth-lca.Depth <= 2 {
			return PathPIX
		}
		return PathPXB
	case p.Root == c.Root:
		return PathPHB
	}
	if n := p.NUMANode(); n >= 0 && n == c.NUMANode() {
		return PathNODE
	}
	return PathSYS
}
