// SPDX-License-Identifier: MIT

package p2p

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Sources of a verdict, in precedence order: an operator's topology file,
// then the ACPI P2P table, then the oracle's own computation.
const (
	SourceTopologyFile = "topology-file"
	SourceACPI         = "acpi"
	SourceComputed     = "computed"
)

// Verdict is the oracle's answer for one (provider, client) pair: the
// provider owns the memory, the client DMAs into it.
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
	// Certain is false when something the rule needs could not be read and
	// the verdict took the kernel-safe branch (it assumed redirection and
	// refused what it could not prove allowed).
	Certain bool `json:"certain"`
	// Whitelist is the host-bridge whitelist entry that allowed the path.
	Whitelist *WhitelistEntry `json:"-"`
	// Policy names the exporter rule that decided Outcome: "kernel",
	// "amdgpu" or "nvidia" (the driver bound to the provider).
	Policy string `json:"policy"`
	// Outcome is what a NIC's DMA into the provider's memory really gets:
	// p2p, bounced (through system memory) or refused.
	Outcome Outcome `json:"outcome"`
	// Source says where the verdict came from: "topology-file", "acpi" or
	// "computed".
	Source string `json:"source"`
	// Reason explains the verdict in a sentence or two; Hint, when set, is
	// what an administrator can change (the kernel's own advice).
	Reason string `json:"reason"`
	Hint   string `json:"hint,omitempty"`

	fig *figures // bandwidth and latency, worked out on first use
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

// BandwidthMBs is the narrowest PCIe link on the path in MB/s (0 when
// unknown), or the ACPI table's or topology file's figure.
func (v *Verdict) BandwidthMBs() int { bw, _ := v.fig.get(); return bw }

// LatencyNs is an estimate of the path's latency from its hop count and
// class, or the ACPI table's or topology file's figure.
func (v *Verdict) LatencyNs() int { _, lat := v.fig.get(); return lat }

// MarshalJSON adds bandwidth_mbs and latency_ns to the verdict's fields.
func (v *Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict
	return json.Marshal(struct {
		*plain
		BandwidthMBs int `json:"bandwidth_mbs"`
		LatencyNs    int `json:"latency_ns"`
	}{(*plain)(v), v.BandwidthMBs(), v.LatencyNs()})
}

// P2P reports whether the NIC gets true peer-to-peer DMA: not refused, not
// bounced through system memory.
func (v *Verdict) P2P() bool { return v.Outcome == OutcomeP2P }

// KernelDistance is what pci_p2pdma_distance returns: the distance, or -1
// when the kernel refuses the mapping.
func (v *Verdict) KernelDistance() int {
	if !v.MapType.Supported() {
		return -1
	}
	return v.Distance
}

// computeVerdict applies the kernel's calc_map_type_and_dist to p and c.
func (t *Topology) computeVerdict(p, c *Function) *Verdict {
	v := &Verdict{Provider: p.Addr, Client: c.Addr, Source: SourceComputed, Certain: true, ACSRedirect: []Addr{}}
	lca := commonAncestor(p, c)
	if lca == nil {
		// No common upstream bridge: each side counts its whole chain,
		// itself included, and ACS on the way does not matter.
		v.Distance = p.Depth + 1 + c.Depth + 1
		v.MapType = MapThruHostBridge
		t.hostBridgeCheck(v, p, c, false)
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
	for f := p; ; f = f.Upstream {
		v.noteACS(f)
		if f == lca {
			break
		}
	}
	for f := c; f != lca; f = f.Upstream {
		v.noteACS(f)
	}
	v.Path = t.pathClass(p, c, lca)
	if len(v.ACSRedirect) == 0 && len(v.ACSUnknown) == 0 {
		v.MapType = MapBusAddr
		v.Rule = RuleCommonBridge
		if p == c {
			v.Rule = RuleSameFunction
		}
		v.Reason = busAddrReason(v, p == c)
		return v
	}
	v.MapType = MapThruHostBridge
	if len(v.ACSRedirect) == 0 {
		v.Certain = false
	}
	t.hostBridgeCheck(v, p, c, true)
	return v
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
}

func (d hostDecision) allowed() bool { return d.byCPU || d.bridge.ok }

// hostDecide is the kernel's host-bridge check: the CPU rule, then the
// whitelist (once with same_host_bridge when both sit under one bridge,
// else both bridges must pass on their own).
func (t *Topology) hostDecide(pr, cr RootBus) hostDecision {
	var d hostDecision
	cpu, err := t.CPU()
	d.cpu, d.cpuKnown = cpu, err == nil && cpu.Known
	if cpu.SupportsP2P() {
		d.byCPU = true
		return d
	}
	check := func(r RootBus, same bool) hostBridgeVerdict {
		hb, err := t.HostBridge(r)
		if err != nil {
			return hostBridgeVerdict{why: err.Error()}
		}
		return whitelisted(hb, same)
	}
	if pr == cr {
		d.bridge = check(pr, true)
		return d
	}
	if d.bridge = check(pr, false); d.bridge.ok {
		d.bridge = check(cr, false)
	}
	return d
}

// hostBridgeAllows reports whether the host-bridge check passes for a path
// between the two root buses.
func (t *Topology) hostBridgeAllows(pr, cr RootBus) bool { return t.hostDecide(pr, cr).allowed() }

// hostBridgeCheck decides a THRU_HOST_BRIDGE path and explains it.
func (t *Topology) hostBridgeCheck(v *Verdict, p, c *Function, acsPath bool) {
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
	d := t.hostDecide(p.Root, c.Root)
	switch {
	case d.byCPU:
		v.Rule = RuleCPU
		fmt.Fprintf(&why, "The %s family 0x%x CPU supports P2P DMA through its host bridges (THRU_HOST_BRIDGE, distance %d).", d.cpu.VendorName(), d.cpu.Family, v.Distance)
	case d.bridge.ok:
		v.Rule = RuleWhitelist
		v.Whitelist = d.bridge.entry
		e := d.bridge.entry
		id := "every device of vendor " + hexID(e.Vendor, 0)[:4]
		if e.Device != AnyDevice {
			id = hexID(e.Vendor, uint16(e.Device))
		}
		fmt.Fprintf(&why, "The host bridge (%s, %s) is in the kernel's P2PDMA whitelist (THRU_HOST_BRIDGE, distance %d).", id, e.Note, v.Distance)
	default:
		v.MapType = MapNotSupported
		v.Rule = RuleHostBridge
		if !d.bridge.known || !d.cpuKnown {
			v.Certain = false
		}
		fmt.Fprintf(&why, "%s cannot be used for peer-to-peer DMA as the client and provider (%s) do not share an upstream bridge or whitelisted host bridge: %s", c.Addr, p.Addr, d.bridge.why)
		if !d.cpuKnown {
			why.WriteString("; the CPU could not be identified, so the AMD rule was not applied")
		} else {
			fmt.Fprintf(&why, "; the %s CPU does not qualify for the CPU rule (AMD family 0x17 or later)", d.cpu.VendorName())
		}
		why.WriteString(".")
	}
	v.Reason = why.String()
}

// acsReason explains an ACS-forced detour and sets the kernel's hint.
func acsReason(v *Verdict) string {
	var b strings.Builder
	if len(v.ACSRedirect) > 0 {
		fmt.Fprintf(&b, "ACS redirect is set between the client and provider (%s) at %s, so peer traffic is routed up to the root complex. ", v.Provider, joinAddrs(v.ACSRedirect, ", "))
		var ids []string
		for _, a := range v.ACSRedirect {
			ids = append(ids, a.Short())
		}
		v.Hint = "to disable ACS redirect for this path, add the kernel parameter: pci=disable_acs_redir=" + strings.Join(ids, ";")
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
