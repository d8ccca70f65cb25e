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

	"github.com/efap2p/efap2p/internal/counted"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
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
	// "" is the running kernel's. KernelSource says where it came from
	// ("option" by default, "environment" for $EFAP2P_KERNEL).
	Kernel       string
	KernelSource string
	// Userspace lists the RDMA devices the installed userspace makes
	// usable (libibverbs' device list: those its providers claim); nil
	// leaves that unchecked. An error is reported as a note.
	Userspace func() ([]string, error)
	// Expect forces the comparison with a machine model; nil compares
	// with the built-in model of the EC2 instance type DMI names, if any.
	Expect *models.Machine
}

// ErrNoOracle is returned when Options.Oracle is nil.
var ErrNoOracle = errors.New("nodecheck: no oracle given")

// Finding codes: stable names of the kinds of finding (docs/operators.md).
const (
	CodeNoEFADevice          = "no-efa-device"  // not applicable (NotApplicable.Code), not a finding
	CodeNoAccelerator        = "no-accelerator" // not applicable (NotApplicable.Code), not a finding
	CodeEFADriverMissing     = "efa-driver-missing"
	CodeEFARDMADeviceMissing = "efa-rdma-device-missing"
	CodeEFAPortDown          = "efa-port-down"
	CodeEFAUnclaimed         = "efa-provider-unclaimed"
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
	c.applicability()
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
	c.peerMemoryNote()
	c.compare()
	c.uncertainty()
	c.finish()
	return c.r, nil
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

// finish sorts the findings, sets the status and the summary.
func (c *checker) finish() {
	rank := map[Severity]int{SeverityError: 0, SeverityWarning: 1, SeverityUnknown: 2}
	sort.SliceStable(c.r.Findings, func(i, j int) bool { return rank[c.r.Findings[i].Severity] < rank[c.r.Findings[j].Severity] })
	c.r.Status = StatusOK
	if c.r.NotApplicable != nil {
		c.r.Status = StatusNotApplicable
	}
	for _, f := range c.r.Findings {
		switch f.Severity {
		case SeverityError, SeverityWarning:
			c.r.Status = StatusDegraded
		case SeverityUnknown:
			if c.r.Status != StatusDegraded {
				c.r.Status = StatusUnknown
			}
		}
	}
	c.r.ExitCode = c.r.Status.ExitCode()
	c.r.Summary = c.summary()
}

func (c *checker) summary() string {
	r := c.r
	if r.Status == StatusNotApplicable {
		return "not applicable: " + r.NotApplicable.Reason
	}
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
	nics := "its local EFA NICs"
	if uniform {
		nics = its(n, localWord(path)+" EFA NIC")
	}
	if len(r.Accelerators) == 1 {
		return fmt.Sprintf("1 %s, with true P2P to %s%s", strings.TrimSuffix(kind, "s"), nics, where)
	}
	return fmt.Sprintf("%d %s, each with true P2P to %s%s", len(r.Accelerators), kind, nics, where)
}

// its says "its nearest EFA NIC", "its 4 switch-local EFA NICs".
func its(n int, what string) string {
	if n == 1 {
		return "its " + what
	}
	return "its " + counted.Noun(n, what)
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

// nicList names EFA NICs as NCCL and fi_info do, by their RDMA devices,
// each with its PCI address beside it: "rdmap79s0 (0000:4f:00.0)"; the
// address alone for a NIC without an RDMA device (or not on the node).
func (c *checker) nicList(as []p2p.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = nicName(c.nicIndex[a], a, a.String())
	}
	return strings.Join(s, ", ")
}

// nicName is "rdmap79s0 (ADDR)" for a NIC with an RDMA device, else ADDR.
func nicName(n *NIC, a p2p.Addr, addr string) string {
	if n == nil || n.IBDev == "" {
		return addr
	}
	return n.IBDev + " (" + addr + ")"
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
