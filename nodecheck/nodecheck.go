// SPDX-License-Identifier: MIT

// Package nodecheck answers, for one node, whether GPUDirect RDMA works:
// for every accelerator, the EFA NICs it gets true P2P DMA with and
// through which registration path (dma-buf, or the out-of-tree EFA
// driver's peer memory), and everything in the way, each finding with
// its fix: missing devices, drivers and modules, a kernel too old for
// dma-buf registration, pairs the oracle refuses or bounces, a layout
// that differs from the instance type's machine model, and verdicts that
// cannot be vouched for without root.
//
// It reads the machine once: the PCI tree through the oracle (and its
// topology file), and the DMI identity, module and EFA driver attributes
// from the same sysfs tree. Run returns a Report; its methods write it as
// text, one line (node-problem-detector and Slurm health checks), or a
// Prometheus textfile, and encoding/json writes it as the documented JSON
// (docs/check-report.schema.json). `efap2p check` is its command.
package nodecheck

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim"
)

// Options configure Run.
type Options struct {
	// Oracle answers the pairs; it reads the machine (and its topology
	// file, if one was given). Required.
	Oracle *p2p.Oracle
	// Root is the sysfs tree the oracle reads, where DMI, modules and
	// driver attributes are read too (default: p2p.SysfsRoot()).
	Root string
	// TopologyFile is the topology file the oracle reads, "" for none or
	// to ask the oracle (read again here for the NICs it records as
	// blocking peers).
	TopologyFile string
	// Kernel is the kernel release to judge ("6.8.0-1015-aws", "latest");
	// "" is the running kernel's.
	Kernel string
	// Expect forces the comparison with a machine model; nil compares
	// with the built-in model of the EC2 instance type DMI names, if any.
	Expect *sim.Machine
}

// ErrNoOracle is returned when Options.Oracle is nil.
var ErrNoOracle = errors.New("nodecheck: no oracle given")

// Finding codes: stable names of the kinds of finding (docs/operators.md).
const (
	CodeNoEFADevice          = "no-efa-device"
	CodeNoAccelerator        = "no-accelerator"
	CodeEFADriverMissing     = "efa-driver-missing"
	CodeEFARDMADeviceMissing = "efa-rdma-device-missing"
	CodeAccelDriverMissing   = "accelerator-driver-missing"
	CodeKernelDMABuf         = "kernel-dmabuf"
	CodeKernelNoP2PDMA       = "kernel-without-p2pdma"
	CodePeerMemoryMissing    = "peer-memory-missing"
	CodePeerMemoryMismatch   = "peer-memory-mismatch"
	CodeTopologyFile         = "topology-file-unusable"
	CodeP2PRefused           = "p2p-refused"
	CodeP2PBounced           = "p2p-bounced"
	CodeAccelsMissing        = "accelerators-missing"
	CodeAccelsUnexpected     = "accelerators-unexpected"
	CodeEFAMissing           = "efa-devices-missing"
	CodeEFAUnexpected        = "efa-devices-unexpected"
	CodeLocalP2PMissing      = "local-p2p-missing"
	CodeUncertain            = "uncertain-verdicts"
	CodePeerMemoryUndecided  = "peer-memory-undecided"
)

type pairKey struct{ acc, nic p2p.Addr }

type checker struct {
	opt  Options
	o    *p2p.Oracle
	t    *p2p.Topology
	root string
	r    *Report

	haveModules bool
	modules     map[string]Module
	nicIndex    map[p2p.Addr]*NIC
	accIndex    map[p2p.Addr]*Accelerator
	pairs       map[pairKey]*Pair
	verdicts    map[pairKey]*p2p.Verdict
	blockedNICs map[p2p.Addr]bool // recorded as blocking peers in the topology file
	// covered are pairs a finding already explains.
	covered map[pairKey]bool
	// nicBlocked and accBlocked are finding codes that make every path of
	// a NIC or an accelerator unavailable.
	nicBlocked map[p2p.Addr][]string
	accBlocked map[p2p.Addr][]string
}

// Run checks the node.
func Run(opt Options) (*Report, error) {
	if opt.Oracle == nil {
		return nil, ErrNoOracle
	}
	if opt.Root == "" {
		opt.Root = p2p.SysfsRoot()
	}
	if opt.TopologyFile == "" {
		// An oracle that found its topology file by itself (the default
		// places) names it.
		if f, ok := any(opt.Oracle).(interface{ TopologyFileInUse() (string, string) }); ok {
			opt.TopologyFile, _ = f.TopologyFileInUse()
		}
	}
	c := &checker{
		opt: opt, o: opt.Oracle, t: opt.Oracle.Topology(), root: opt.Root,
		r: &Report{Format: ReportFormat, Version: ReportVersion, Accelerators: []Accelerator{}, NICs: []NIC{},
			Pairs: []Pair{}, Findings: []Finding{}, Notes: []string{}},
		nicIndex: map[p2p.Addr]*NIC{}, accIndex: map[p2p.Addr]*Accelerator{},
		pairs: map[pairKey]*Pair{}, verdicts: map[pairKey]*p2p.Verdict{}, covered: map[pairKey]bool{},
		blockedNICs: map[p2p.Addr]bool{}, nicBlocked: map[p2p.Addr][]string{}, accBlocked: map[p2p.Addr][]string{},
	}
	c.r.Host.SysfsRoot, c.r.Host.Sources = opt.Root, map[string]int{}
	if err := c.scan(); err != nil {
		return nil, err
	}
	c.readDMI()
	c.readModules()
	c.readEFADriver()
	c.readKernel()
	c.readTopologyFile()
	c.deviceFindings()
	c.pathFindings()
	if err := c.buildPairs(); err != nil {
		return nil, err
	}
	c.accelFindings()
	c.compare()
	c.uncertainty()
	c.finish()
	return c.r, nil
}

// scan lists the accelerators and the EFA NICs.
func (c *checker) scan() error {
	accels, err := c.t.Accelerators()
	if err != nil {
		return fmt.Errorf("listing accelerators: %w", err)
	}
	gpus, accs := 0, 0
	for _, f := range accels {
		at, err := f.Attrs()
		if err != nil {
			return fmt.Errorf("accelerator %s: %w", f.Addr, err)
		}
		a := Accelerator{Addr: f.Addr, Vendor: fmt.Sprintf("%04x", at.Vendor), Device: fmt.Sprintf("%04x", at.Device),
			Driver: at.Driver, NUMANode: at.NUMANode, LocalNICs: []p2p.Addr{}, P2PNICs: []p2p.Addr{}, LocalP2P: []p2p.Addr{}, Certain: true}
		if at.Class>>16 == 0x12 {
			a.Name = fmt.Sprintf("ACC%d", accs)
			accs++
		} else {
			a.Name = fmt.Sprintf("GPU%d", gpus)
			gpus++
		}
		c.r.Accelerators = append(c.r.Accelerators, a)
	}
	all, err := c.t.Functions()
	if err != nil {
		return fmt.Errorf("listing PCI functions: %w", err)
	}
	for _, addr := range all {
		f, err := c.t.Function(addr)
		if err != nil {
			continue // a function whose chain cannot be read is not a NIC the check can judge
		}
		cl, err := f.Class()
		if err != nil || cl>>16 != 0x02 {
			continue
		}
		at, err := f.Attrs()
		if err != nil {
			return fmt.Errorf("NIC %s: %w", addr, err)
		}
		if !(at.Vendor == 0x1d0f && efaDevices[at.Device]) && at.Driver != "efa" {
			continue
		}
		n := NIC{Addr: addr, Driver: at.Driver, NUMANode: at.NUMANode}
		n.IBDev, n.Uverbs = c.ibdevs(addr)
		c.r.NICs = append(c.r.NICs, n)
	}
	for i := range c.r.Accelerators {
		c.accIndex[c.r.Accelerators[i].Addr] = &c.r.Accelerators[i]
	}
	for i := range c.r.NICs {
		c.nicIndex[c.r.NICs[i].Addr] = &c.r.NICs[i]
	}
	return nil
}

func (c *checker) readKernel() {
	h := &c.r.Host
	h.Kernel, h.KernelSource = c.opt.Kernel, "option"
	if h.Kernel == "" {
		h.Kernel, h.KernelSource = runningKernel(), "running"
	}
	h.DMABuf = dmabufSupport(h.Kernel, h.EFADriver)
	h.KernelP2PDMA = c.o.KernelConfig()
	if _, err := p2p.ParseRelease(h.Kernel); err != nil {
		c.note("%v: the kernel's dma-buf support was not judged.", err)
	}
}

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

func (c *checker) add(f Finding) {
	if f.Subjects == nil {
		f.Subjects = []p2p.Addr{}
	}
	c.r.Findings = append(c.r.Findings, f)
}

func (c *checker) note(format string, args ...any) {
	c.r.Notes = append(c.r.Notes, fmt.Sprintf(format, args...))
}

// deviceFindings: no EFA device, no accelerator, NICs without a driver or
// an RDMA device, accelerators without a driver.
func (c *checker) deviceFindings() {
	if len(c.r.NICs) == 0 {
		c.add(Finding{Code: CodeNoEFADevice, Severity: SeverityError,
			Message: "no EFA device on this node (no PCI function 1d0f:efa0..efa3)",
			Fix:     "Launch the instance with EFA network interfaces (InterfaceType efa or efa-only, one per network card) on an instance type that supports EFA; `lspci -d 1d0f:` lists them."})
	}
	if len(c.r.Accelerators) == 0 {
		c.add(Finding{Code: CodeNoAccelerator, Severity: SeverityError,
			Message: "no accelerator on this node (no PCI class 03 display or 12 processing accelerator function)",
			Fix:     "Run the check on accelerator nodes only (the DaemonSet's node selector); if the node should have GPUs, `lspci -d 10de:` lists them: a GPU missing from the bus needs the instance stopped and started (new hardware)."})
	}
	var noDriver, noRDMA []p2p.Addr
	var rdmaWhy []string
	for _, n := range c.r.NICs {
		switch {
		case n.Driver != "efa":
			noDriver = append(noDriver, n.Addr)
			c.nicBlocked[n.Addr] = append(c.nicBlocked[n.Addr], CodeEFADriverMissing)
		case n.IBDev == "":
			noRDMA = append(noRDMA, n.Addr)
			rdmaWhy = append(rdmaWhy, n.Addr.String()+" (no RDMA device)")
			c.nicBlocked[n.Addr] = append(c.nicBlocked[n.Addr], CodeEFARDMADeviceMissing)
		case n.Uverbs == "":
			noRDMA = append(noRDMA, n.Addr)
			rdmaWhy = append(rdmaWhy, n.Addr.String()+" ("+n.IBDev+" has no uverbs device)")
			c.nicBlocked[n.Addr] = append(c.nicBlocked[n.Addr], CodeEFARDMADeviceMissing)
		}
	}
	if len(noDriver) > 0 {
		c.add(Finding{Code: CodeEFADriverMissing, Severity: SeverityError, Subjects: noDriver,
			Message: fmt.Sprintf("%s without the efa driver: %s", count(len(noDriver), "EFA NIC"), addrList(noDriver)),
			Fix:     "Load the EFA driver (`modprobe efa`); install it with the AWS EFA installer, or use a kernel built with CONFIG_INFINIBAND_EFA; `dmesg | grep -i efa` says why a probe failed."})
	}
	if len(noRDMA) > 0 {
		c.add(Finding{Code: CodeEFARDMADeviceMissing, Severity: SeverityError, Subjects: noRDMA,
			Message: fmt.Sprintf("%s not usable from user space: %s", count(len(noRDMA), "EFA NIC"), strings.Join(rdmaWhy, ", ")),
			Fix:     "Load the RDMA user-space access module (`modprobe ib_uverbs`); `ibv_devices` should then list every EFA device."})
	}
	var noAccDriver []p2p.Addr
	var want []string
	for _, a := range c.r.Accelerators {
		if a.Driver == "" {
			noAccDriver = append(noAccDriver, a.Addr)
			c.accBlocked[a.Addr] = append(c.accBlocked[a.Addr], CodeAccelDriverMissing)
			if d := expectedDriver(a.Vendor); d != "" && !contains(want, d) {
				want = append(want, d)
			}
		}
	}
	if len(noAccDriver) > 0 {
		fix := "Bind the accelerator's driver"
		if len(want) > 0 {
			fix = "Load its driver (`modprobe " + strings.Join(want, "`, `modprobe ") + "`)"
		}
		fix += "; its kernel log (`dmesg`) says why it did not bind. Without a driver nothing exports the accelerator's memory."
		c.add(Finding{Code: CodeAccelDriverMissing, Severity: SeverityError, Subjects: noAccDriver,
			Message: fmt.Sprintf("%s without a driver: %s", count(len(noAccDriver), "accelerator"), c.accList(noAccDriver)),
			Fix:     fix})
	}
}

// pathFindings: the kernel's dma-buf support and the out-of-tree driver's
// peer-memory provider.
func (c *checker) pathFindings() {
	h := &c.r.Host
	drv := h.EFADriver
	if drv.Kind == DriverInTree {
		c.note("The in-tree EFA driver registers accelerator memory by dma-buf only (no peer-memory provider).")
	}
	if m, ok := c.modules["nvidia_peermem"]; ok && m.Loaded {
		c.note("nvidia_peermem is loaded: it serves the peer-memory API of Mellanox OFED's ib_core; the EFA driver does not use it.")
	}
	if len(c.r.NICs) == 0 || len(c.r.Accelerators) == 0 {
		return
	}
	// Accelerator drivers whose memory the provider could register.
	served, wanting := false, []string{}
	if drv.PeerMemory != nil {
		for _, a := range c.r.Accelerators {
			provs, ok := providersFor[a.Driver]
			if !ok {
				continue
			}
			if contains(provs, *drv.PeerMemory) {
				served = true
			} else if !contains(wanting, a.Driver) {
				wanting = append(wanting, a.Driver)
			}
		}
	}
	if !h.DMABuf.Supported {
		if served {
			c.note("dma-buf registration is unavailable (%s); accelerator memory is registered through the EFA driver's peer-memory provider %q.", h.DMABuf.Reason, *drv.PeerMemory)
		} else {
			fix := "Boot a kernel of 5.16 or later (or your distribution's kernel that backports EFA dma-buf), or install AWS's out-of-tree EFA driver (the EFA installer), which also registers GPU memory through its peer-memory provider."
			if drv.Kind == DriverOutOfTree {
				fix = "Boot a kernel of 5.12 or later and the out-of-tree EFA driver 1.16.0 or later (the EFA installer), or give the driver its peer-memory provider (see peer-memory-missing)."
			}
			c.add(Finding{Code: CodeKernelDMABuf, Severity: SeverityError, Message: "dma-buf registration of accelerator memory is unavailable: " + h.DMABuf.Reason, Fix: fix})
		}
	}
	c.p2pdmaFinding()
	if drv.PeerMemory == nil || len(wanting) == 0 {
		return
	}
	sev := SeverityWarning
	if !h.DMABuf.Supported && !served {
		sev = SeverityError
	}
	if *drv.PeerMemory == "" {
		fix := "Load the peer-memory link between the EFA and the accelerator drivers: "
		if contains(wanting, "nvidia") {
			fix += "for NVIDIA GPUs, the nvidia module and then efa_nv_peermem (`modprobe efa_nv_peermem`, package efa-nv-peermem of the EFA installer; nvidia_peermem serves Mellanox OFED, not EFA). "
		}
		if contains(wanting, "neuron") {
			fix += "for Neuron devices, the neuron module (aws-neuronx-dkms). "
		}
		fix += "The p2p attribute of each EFA NIC's PCI function then names the provider."
		c.add(Finding{Code: CodePeerMemoryMissing, Severity: sev, Subjects: c.nicAddrs(),
			Message: fmt.Sprintf("the out-of-tree EFA driver %s has no peer-memory provider (its p2p attribute is empty): registering %s memory by address (ibv_reg_mr, libfabric's fallback after a dma-buf failure) fails", drv.Version, strings.Join(wanting, "/")),
			Fix:     fix})
		return
	}
	c.add(Finding{Code: CodePeerMemoryMismatch, Severity: sev, Subjects: c.nicAddrs(),
		Message: fmt.Sprintf("the EFA driver's peer-memory provider is %q, which does not serve the %s accelerators of this node", *drv.PeerMemory, strings.Join(wanting, "/")),
		Fix:     "The driver names only the first provider it finds; unload the provider of the other accelerator family (or its driver), so that the driver finds the one this node needs."})
}

// p2pdmaFinding says what a kernel without PCI_P2PDMA does to the node's
// accelerators: an error where an exporter asks p2pdma (it falls back or
// refuses), a note where none does (NVIDIA's, Neuron's); and that it is
// not known, where nothing told.
func (c *checker) p2pdmaFinding() {
	k := c.r.Host.KernelP2PDMA
	switch k.P2PDMA {
	case p2p.BuiltYes:
		return
	case p2p.BuiltUnknown:
		c.note("Whether the kernel is built with PCI_P2PDMA is not known (%s): the verdicts are those of a kernel built with it.", k.Source)
		return
	}
	var asking, unaffected []p2p.Addr
	var drivers []string
	for _, a := range c.r.Accelerators {
		switch a.Driver {
		case "nvidia", "neuron-driver":
			unaffected = append(unaffected, a.Addr)
		default:
			asking = append(asking, a.Addr)
			d := a.Driver
			if d == "" {
				d = "no driver"
			}
			if !contains(drivers, d) {
				drivers = append(drivers, d)
			}
		}
	}
	if len(asking) == 0 {
		c.note("The kernel is built without PCI_P2PDMA (%s); the accelerators' exporters (NVIDIA's, Neuron's) never ask p2pdma, so it changes nothing here.", k.Source)
		return
	}
	c.add(Finding{Code: CodeKernelNoP2PDMA, Severity: SeverityError, Subjects: asking,
		Message: fmt.Sprintf("this kernel is built without PCI_P2PDMA (%s): the kernel refuses every P2P mapping it is asked for; dma-buf exporters that ask it fall back (%s: %s)", k.Source, strings.Join(drivers, ", "), c.accList(asking)),
		Fix:     "Boot a kernel built with CONFIG_PCI_P2PDMA=y (no stock Debian 12 kernel is: build one, or use a distribution kernel that enables it); `efap2p explain ACCELERATOR NIC` names the source it was read from."})
}

// buildPairs asks the oracle for every (accelerator, EFA NIC) pair and
// puts each registration path's answer together.
func (c *checker) buildPairs() error {
	h := &c.r.Host
	for ai := range c.r.Accelerators {
		a := &c.r.Accelerators[ai]
		for _, n := range c.r.NICs {
			v, err := c.o.Verdict(a.Addr, n.Addr)
			if err != nil {
				return fmt.Errorf("verdict %s -> %s: %w", a.Addr, n.Addr, err)
			}
			k := pairKey{a.Addr, n.Addr}
			c.verdicts[k] = v
			p := Pair{Accelerator: a.Addr, NIC: n.Addr, Path: v.Path}
			blocked := append(append([]string{}, c.nicBlocked[n.Addr]...), c.accBlocked[a.Addr]...)
			dist := v.Distance
			p.DMABuf = PathAnswer{MapType: v.MapType.String(), Distance: &dist, Rule: v.Rule.String(), Policy: v.Policy.String(),
				Source: v.Source.String(), Certain: v.Certain, Reason: v.Reason, Hint: v.Hint, Outcome: v.Outcome.String()}
			dmBlocked := blocked
			if !h.DMABuf.Supported {
				dmBlocked = append(dmBlocked, CodeKernelDMABuf)
			}
			if len(dmBlocked) > 0 {
				p.DMABuf.Outcome, p.DMABuf.Blocked = OutcomeUnavailable, dmBlocked
			}
			if prov := h.EFADriver.PeerMemory; prov != nil {
				p.PeerMemory = c.peerPath(v, a, n.Addr, *prov, blocked)
			}
			c.decide(&p, v)
			c.r.Host.countSource(v.Source.String())
			c.r.Pairs = append(c.r.Pairs, p)
		}
	}
	for i := range c.r.Pairs {
		p := &c.r.Pairs[i]
		c.pairs[pairKey{p.Accelerator, p.NIC}] = p
	}
	return nil
}

// peerPath is the peer-memory path's answer for a pair. The driver-level
// facts (a provider, one that serves the accelerator's driver) are read
// here; the per-pair rule is the oracle's (peerMemoryOutcome).
func (c *checker) peerPath(v *p2p.Verdict, a *Accelerator, nic p2p.Addr, provider string, blocked []string) *PathAnswer {
	pa := &PathAnswer{Provider: provider, Outcome: OutcomeUndecided, Certain: false}
	provs, known := providersFor[a.Driver]
	switch {
	case c.blockedNICs[nic]:
		pa.Outcome, pa.Certain = p2p.OutcomeRefused.String(), true
		pa.Reason = fmt.Sprintf("the topology file %s records that the NIC's firmware refuses DMA to any peer", c.opt.TopologyFile)
	case len(blocked) > 0:
		pa.Outcome, pa.Blocked, pa.Certain = OutcomeUnavailable, blocked, true
	case provider == "" && known:
		pa.Outcome, pa.Blocked, pa.Certain = OutcomeUnavailable, []string{CodePeerMemoryMissing}, true
	case known && !contains(provs, provider):
		pa.Outcome, pa.Blocked, pa.Certain = OutcomeUnavailable, []string{CodePeerMemoryMismatch}, true
	case !known:
		pa.Outcome, pa.Certain = OutcomeUnavailable, true
		pa.Reason = fmt.Sprintf("no peer-memory provider of the EFA driver registers memory of %q accelerators", a.Driver)
	default:
		if o, certain, reason, ok := peerMemoryOutcome(v); ok {
			pa.Outcome, pa.Certain, pa.Reason = o, certain, reason
		} else {
			pa.Reason = fmt.Sprintf("the provider %q registers this accelerator's memory by address; this build decides the pair by its dma-buf path only", provider)
		}
	}
	return pa
}

// peerMemoryOutcome is the oracle's per-pair verdict for the peer-memory
// path (the EFA driver's provider serves the accelerator's driver, or not),
// when the oracle gives one: not without the driver's p2p attribute.
func peerMemoryOutcome(v *p2p.Verdict) (outcome string, certain bool, reason string, ok bool) {
	pm := v.PeerMem
	if !pm.Present || pm.Outcome == p2p.OutcomeUnknown {
		return "", false, "", false
	}
	reason = fmt.Sprintf("the EFA driver's peer-memory provider %q %s memory of this accelerator's driver by address",
		pm.Provider, map[bool]string{true: "registers", false: "does not register"}[pm.Outcome == p2p.OutcomeP2P])
	return pm.Outcome.String(), true, reason, true
}

// decide sets the pair's P2P and Certain from its paths.
func (c *checker) decide(p *Pair, v *p2p.Verdict) {
	pm := p.PeerMemory
	switch {
	case p.DMABuf.Outcome == p2p.OutcomeP2P.String():
		p.P2P, p.Certain = true, v.Certain
	case pm != nil && pm.Outcome == p2p.OutcomeP2P.String():
		p.P2P, p.Certain = true, pm.Certain
	case pm != nil && pm.Outcome == OutcomeUndecided:
		p.P2P, p.Certain = false, false
	case p.DMABuf.Outcome == OutcomeUnavailable:
		p.P2P, p.Certain = false, true
	default:
		p.P2P, p.Certain = false, v.Certain
	}
}

func (h *Host) countSource(s string) { h.Sources[s]++ }

// accelFindings works out each accelerator's local NICs and P2P NICs,
// and the refused or bounced pairs among its local ones.
func (c *checker) accelFindings() {
	var remoteRefused []pairKey
	for ai := range c.r.Accelerators {
		a := &c.r.Accelerators[ai]
		best := p2p.PathUnknown
		for _, n := range c.r.NICs {
			p := c.pairs[pairKey{a.Addr, n.Addr}]
			if p.Path != p2p.PathUnknown && (best == p2p.PathUnknown || p.Path < best) {
				best = p.Path
			}
		}
		a.LocalPath = best
		var refused, bounced []p2p.Addr
		var firstRefused, firstBounced *p2p.Verdict
		for _, n := range c.r.NICs {
			k := pairKey{a.Addr, n.Addr}
			p := c.pairs[k]
			p.Local = p.Path == best
			if !p.Certain {
				a.Certain = false
			}
			if p.P2P {
				a.P2PNICs = append(a.P2PNICs, n.Addr)
			}
			if !p.Local {
				if !p.P2P && p.DMABuf.Outcome == p2p.OutcomeRefused.String() && !c.blockedNICs[n.Addr] {
					remoteRefused = append(remoteRefused, k)
				}
				continue
			}
			a.LocalNICs = append(a.LocalNICs, n.Addr)
			if p.P2P {
				a.LocalP2P = append(a.LocalP2P, n.Addr)
				continue
			}
			if p.DMABuf.Outcome == OutcomeUnavailable {
				c.covered[k] = true // the finding that blocks the path explains it
				continue
			}
			switch p.DMABuf.Outcome {
			case p2p.OutcomeRefused.String():
				refused = append(refused, n.Addr)
				if firstRefused == nil {
					firstRefused = c.verdicts[k]
				}
				c.covered[k] = true
			case p2p.OutcomeBounced.String():
				bounced = append(bounced, n.Addr)
				if firstBounced == nil {
					firstBounced = c.verdicts[k]
				}
				c.covered[k] = true
			}
		}
		word := localWord(best)
		if len(refused) > 0 {
			c.add(Finding{Code: CodeP2PRefused, Severity: SeverityError, Subjects: append([]p2p.Addr{a.Addr}, refused...),
				Message: fmt.Sprintf("%s %s: P2P DMA is refused with %d of its %s: %s", a.Name, a.Addr, len(refused), count(len(a.LocalNICs), word+" EFA NIC"), addrList(refused)),
				Reason:  firstRefused.Reason, Fix: c.fixFor(firstRefused)})
		}
		if len(bounced) > 0 {
			c.add(Finding{Code: CodeP2PBounced, Severity: SeverityWarning, Subjects: append([]p2p.Addr{a.Addr}, bounced...),
				Message: fmt.Sprintf("%s %s: registration works with %d of its %s, but the exporter bounces the DMA through system memory: %s", a.Name, a.Addr, len(bounced), count(len(a.LocalNICs), word+" EFA NIC"), addrList(bounced)),
				Reason:  firstBounced.Reason,
				Fix:     c.fixFor(firstBounced) + " amdgpu keeps the memory in VRAM only for peers the kernel allows."})
		}
	}
	if len(remoteRefused) > 0 {
		v := c.verdicts[remoteRefused[0]]
		c.note("%s beyond the accelerators' local NICs refused (e.g. %s with %s: %s); NCCL uses GPUDirect RDMA only for paths up to NCCL_NET_GDR_LEVEL (PXB by default).",
			count(len(remoteRefused), "pair"), remoteRefused[0].acc, remoteRefused[0].nic, firstSentence(v.Reason))
	}
}

// fixFor says what to do about a refused or bounced pair.
func (c *checker) fixFor(v *p2p.Verdict) string {
	explain := fmt.Sprintf(" `efap2p explain %s %s` says why in full.", v.Provider, v.Client)
	switch {
	case c.blockedNICs[v.Client]:
		return fmt.Sprintf("The topology file %s records that %s's firmware refuses DMA to peers: keep GPUDirect RDMA jobs off this NIC, or stop and start the instance to move to other hardware; if the record is stale, write the file again with `efap2p export` (without --peer-blocked for it).", c.opt.TopologyFile, v.Client) + explain
	case v.Hint != "":
		s := v.Hint
		return strings.ToUpper(s[:1]) + s[1:] + " (then reboot)." + explain
	case v.Rule == p2p.RuleHostBridge:
		return "The path goes through a host bridge that is not in the kernel's P2PDMA whitelist, on a CPU the kernel's rule does not trust: put the accelerator and the NIC under one PCIe switch, or use a kernel whose whitelist has this host bridge." + explain
	case v.Rule == p2p.RuleACPI:
		return "The platform firmware's ACPI P2P table does not list the pair: ask the platform vendor, or pair the accelerator with a NIC the table lists." + explain
	case v.Policy == p2p.PolicyNVIDIA:
		return "The NVIDIA driver refuses the peer by its own rule (NVreg_GrdmaPciTopoCheckOverride=1 overrides its topology check, at your own risk)." + explain
	}
	return "See the reason." + explain
}

// localWord names an accelerator's nearest NICs by their path class.
func localWord(p p2p.PathClass) string {
	switch p {
	case p2p.PathPIX, p2p.PathPXB:
		return "switch-local"
	case p2p.PathLOC:
		return "same-device"
	}
	return "nearest"
}

// uncertainty adds the findings for answers the check cannot vouch for.
func (c *checker) uncertainty() {
	acsHidden, other, undecided := 0, 0, 0
	for i := range c.r.Pairs {
		p := &c.r.Pairs[i]
		if p.Certain {
			continue
		}
		v := c.verdicts[pairKey{p.Accelerator, p.NIC}]
		switch {
		case p.PeerMemory != nil && p.PeerMemory.Outcome == OutcomeUndecided && !p.P2P:
			undecided++
		case len(v.ACSUnknown) > 0:
			acsHidden++
		default:
			other++
		}
	}
	total := len(c.r.Pairs)
	if acsHidden+other > 0 {
		msg := fmt.Sprintf("%d of %d pairs are uncertain", acsHidden+other, total)
		if acsHidden > 0 {
			msg += ": PCI config space past 64 bytes is hidden from this user, so the ACS state of the bridges on their paths is unknown"
			if c.opt.TopologyFile == "" || c.r.Host.TopologyFileError != "" {
				msg += ", and no topology file is in use"
			}
		} else {
			msg += ": something the kernel's rule needs (the CPU, a host bridge) could not be read"
		}
		c.add(Finding{Code: CodeUncertain, Severity: SeverityUnknown,
			Message: msg,
			Fix:     "Run efap2p check as root, or write a topology file once as root (`sudo efap2p export -o /etc/efap2p/topology.json`) and give it with --topology or EFAP2P_TOPOLOGY."})
	}
	if undecided > 0 {
		c.add(Finding{Code: CodePeerMemoryUndecided, Severity: SeverityUnknown,
			Message: fmt.Sprintf("%d of %d pairs depend on the EFA driver's peer-memory path (their dma-buf path is not P2P), which this build does not decide pair by pair", undecided, total),
			Fix:     "Make the dma-buf path work (a kernel of 5.12 or later with the out-of-tree driver, 5.16 with the in-tree one); `efap2p explain ACCELERATOR NIC` shows the dma-buf verdict."})
	}
}

// finish sorts the findings, sets the status and the summary.
func (c *checker) finish() {
	rank := map[Severity]int{SeverityError: 0, SeverityWarning: 1, SeverityUnknown: 2}
	sort.SliceStable(c.r.Findings, func(i, j int) bool { return rank[c.r.Findings[i].Severity] < rank[c.r.Findings[j].Severity] })
	c.r.Status = StatusOK
	for _, f := range c.r.Findings {
		switch f.Severity {
		case SeverityError, SeverityWarning:
			c.r.Status = StatusDegraded
		case SeverityUnknown:
			if c.r.Status == StatusOK {
				c.r.Status = StatusUnknown
			}
		}
	}
	c.r.ExitCode = c.r.Status.ExitCode()
	c.r.Summary = c.summary()
}

func (c *checker) summary() string {
	r := c.r
	if r.Status != StatusOK {
		f := r.Findings[0]
		s := f.Message
		if n := len(r.Findings) - 1; n > 0 {
			s += fmt.Sprintf(" (+%d more)", n)
		}
		return s
	}
	kind := "accelerators"
	if allGPUs(r.Accelerators) {
		kind = "GPUs"
	}
	where := ""
	if r.Host.InstanceType != "" {
		where = " (" + r.Host.InstanceType + ")"
	}
	n, path, uniform := len(r.Accelerators[0].LocalP2P), r.Accelerators[0].LocalPath, true
	for _, a := range r.Accelerators[1:] {
		if len(a.LocalP2P) != n || a.LocalPath != path {
			uniform = false
		}
	}
	if uniform {
		return fmt.Sprintf("%d %s, each with true P2P to its %s%s", len(r.Accelerators), kind, count(n, localWord(path)+" EFA NIC"), where)
	}
	return fmt.Sprintf("%d %s, each with true P2P to its local EFA NICs%s", len(r.Accelerators), kind, where)
}

// count says "1 NIC", "4 NICs".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func allGPUs(as []Accelerator) bool {
	for _, a := range as {
		if !strings.HasPrefix(a.Name, "GPU") {
			return false
		}
	}
	return true
}

func (c *checker) nicAddrs() []p2p.Addr {
	out := make([]p2p.Addr, len(c.r.NICs))
	for i, n := range c.r.NICs {
		out[i] = n.Addr
	}
	return out
}

// accList names accelerators "GPU0 0000:53:00.0".
func (c *checker) accList(as []p2p.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
		if acc := c.accIndex[a]; acc != nil {
			s[i] = acc.Name + " " + a.String()
		}
	}
	return strings.Join(s, ", ")
}

func addrList(as []p2p.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// firstSentence cuts an explanation after its first sentence.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
