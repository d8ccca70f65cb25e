// SPDX-License-Identifier: MIT

// Package jobenv works out what a job's launcher exports so that the
// unmodified GPU stacks take efap2p's answer for a task's accelerators and
// EFA NICs (`efap2p env`, the Slurm TaskProlog): none of them reads a P2P
// capability, they find out by trying (docs/consumers.md).
//
//   - NCCL_TOPO_FILE names the NCCL topology `efap2p export --boot` wrote
//     beside the boot-time topology file, in this boot: NCCL keeps its gdr
//     attributes, one per GPU and per NIC.
//   - FI_HMEM_DISABLE_P2P=1 where no (accelerator, EFA NIC) pair of the task
//     gets true P2P DMA, and every one of them is certain: libfabric 2.x
//     then skips its CUDA probe (a context, an allocation, a dma-buf
//     export and a registration on NIC 0). An uncertain answer never sets
//     it: only a certain "no" does, and then Result.Why says why in the
//     node check's words, and what aws-ofi-nccl will do about it.
//
// The pairs and their answers are the node check's (package nodecheck):
// `efap2p env` says no more and no less than `efap2p check`.
//
// A variable the environment already has is the user's, left as it is
// (as libfabric lets the environment win over libfabric.conf), unless an
// earlier efap2p env set it: those are named in EFAP2P_ENV (propagated by
// the launcher from another node, say), and decided again here, set or
// unset.
package jobenv

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/internal/counted"
	"github.com/efap2p/efap2p/nccltopo"
	"github.com/efap2p/efap2p/nodecheck"
	"github.com/efap2p/efap2p/p2p"
)

// The variables efap2p env decides.
const (
	VarNCCLTopoFile = "NCCL_TOPO_FILE"
	VarDisableP2P   = "FI_HMEM_DISABLE_P2P"
	// VarMarker names, comma-separated, the variables efap2p env set.
	VarMarker = "EFAP2P_ENV"
)

// Options configure Run.
type Options struct {
	// Oracle reads the machine (with its topology file: the boot-time one
	// by default) and Sysfs is the tree it reads. Required.
	Oracle *p2p.Oracle
	Sysfs  *p2p.Sysfs
	// TopologyFile is the topology file named to the oracle, "" for the
	// default places (as nodecheck.Options.TopologyFile).
	TopologyFile string
	// NCCLTopoFile is the boot-time NCCL topology (nccltopo.BootFile of
	// the boot-time topology file); "" names none.
	NCCLTopoFile string
	// Accelerators and NICs are the task's, as people type them (3 for
	// GPU3, GPU3, 0000:97:00.0, rdmap79s0, NIC4); nil is every
	// accelerator, or every EFA NIC, of the node, and an empty non-nil
	// list none.
	Accelerators, NICs []string
	// Kernel and KernelSource are nodecheck.Options'.
	Kernel, KernelSource string
	// Lookup looks a variable up in the environment the lines are for;
	// nil for none (a file for every process: libfabric.conf).
	Lookup func(string) (string, bool)
}

// Answer is whether GPUDirect RDMA works for the task.
type Answer string

// The answers.
const (
	AnswerP2P Answer = "p2p" // at least one pair of the task gets true P2P DMA
	// AnswerNoP2P: no pair of the task does, and every answer is certain.
	AnswerNoP2P Answer = "no-p2p"
	// AnswerUncertain: no pair is known to, and some cannot be vouched
	// for: FI_HMEM_DISABLE_P2P is not set.
	AnswerUncertain Answer = "uncertain"
	// AnswerNotApplicable: the task has no accelerator or no EFA NIC.
	AnswerNotApplicable Answer = "not-applicable"
)

// Var is one variable to export, and why.
type Var struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Why   string `json:"why"`
}

// Result is what efap2p env prints.
type Result struct {
	Answer Answer `json:"answer"`
	// Summary says the answer in one sentence.
	Summary string `json:"summary"`
	// Source is the topology file the verdicts came from, or "computed".
	Source       string     `json:"source"`
	Accelerators []p2p.Addr `json:"accelerators"`
	NICs         []p2p.Addr `json:"nics"`
	// Pairs counts the task's (accelerator, EFA NIC) pairs, P2PPairs
	// those with true P2P DMA, UncertainPairs those without whose answer
	// is uncertain.
	Pairs          int `json:"pairs"`
	P2PPairs       int `json:"p2p_pairs"`
	UncertainPairs int `json:"uncertain_pairs"`
	// InstanceType is the EC2 instance type (DMI), GDRRequired whether
	// aws-ofi-nccl refuses to run there without GPUDirect RDMA.
	InstanceType string `json:"instance_type,omitempty"`
	GDRRequired  bool   `json:"gdr_required"`
	// Set are the variables to export, Unset those an earlier efap2p env
	// set that are to go, Kept those the environment has already and
	// keeps (the user's).
	Set   []Var    `json:"set"`
	Unset []string `json:"unset"`
	Kept  []Var    `json:"kept"`
	// Why says, for no-p2p and uncertain answers, why, in the node check's
	// words (its first finding about the task's devices), and what the
	// stacks will do: the line efap2p env prints on stderr.
	Why string `json:"why,omitempty"`
	// Notes are what else is worth saying (the verdicts were computed,
	// there is no NCCL topology of this boot).
	Notes []string `json:"notes"`
}

// ErrSelection is matched (errors.Is) by every error about what
// Options.Accelerators and Options.NICs name; ErrNotAccelerator and
// ErrNotEFANIC are wrapped when a name is a device of the node, but not an
// accelerator, or not an EFA NIC.
var (
	ErrSelection      = errors.New("bad device selection")
	ErrNotAccelerator = errors.New("not an accelerator of this node")
	ErrNotEFANIC      = errors.New("not an EFA NIC of this node")
)

// selectionError is an error about a device named: its message as is,
// matching ErrSelection.
type selectionError struct{ err error }

func (e selectionError) Error() string        { return e.err.Error() }
func (e selectionError) Unwrap() error        { return e.err }
func (e selectionError) Is(target error) bool { return target == ErrSelection }

func selectionErrorf(format string, args ...any) error {
	return selectionError{fmt.Errorf(format, args...)}
}

// ErrNoOracle is returned when Options.Oracle or Options.Sysfs is nil.
var ErrNoOracle = errors.New("jobenv: no oracle given")

// Run works out the task's variables.
func Run(opts Options) (*Result, error) {
	if opts.Oracle == nil || opts.Sysfs == nil {
		return nil, ErrNoOracle
	}
	report, err := nodecheck.Run(nodecheck.Options{Oracle: opts.Oracle, Root: opts.Sysfs.Root(), TopologyFile: opts.TopologyFile,
		Kernel: opts.Kernel, KernelSource: opts.KernelSource})
	if err != nil {
		return nil, err
	}
	r := &Result{Source: "computed", InstanceType: report.Host.InstanceType, GDRRequired: GDRRequired(report.Host.InstanceType),
		Accelerators: []p2p.Addr{}, NICs: []p2p.Addr{}, Set: []Var{}, Unset: []string{}, Kept: []Var{}, Notes: []string{}}
	if name, _ := opts.Oracle.TopologyFileInUse(); name != "" {
		r.Source = name
	} else {
		r.Notes = append(r.Notes, "no topology file answered: the verdicts were computed from sysfs (efap2p export --boot, as root, writes the boot-time file)")
	}
	res := devices.NewResolver(opts.Oracle, opts.Sysfs)
	accels := make([]p2p.Addr, len(report.Accelerators))
	gpus := true
	for i, a := range report.Accelerators {
		accels[i] = a.Addr
		gpus = gpus && strings.HasPrefix(a.Name, "GPU")
	}
	nics := make([]p2p.Addr, len(report.NICs))
	for i, n := range report.NICs {
		nics[i] = n.Addr
	}
	if r.Accelerators, err = pick(res, opts.Accelerators, accels, true); err != nil {
		return nil, err
	}
	if r.NICs, err = pick(res, opts.NICs, nics, false); err != nil {
		return nil, err
	}
	r.decide(report, gpus)
	r.variables(opts)
	return r, nil
}

// pick resolves the names of a selection among the node's devices (all of
// them for a nil selection), in the node's order.
func pick(res *devices.Resolver, names []string, node []p2p.Addr, accel bool) ([]p2p.Addr, error) {
	if names == nil {
		return slices.Clone(node), nil
	}
	what, notErr := "EFA NIC", ErrNotEFANIC
	if accel {
		what, notErr = "accelerator", ErrNotAccelerator
	}
	chosen := map[p2p.Addr]bool{}
	for _, s := range names {
		s = strings.TrimSpace(s)
		if accel && (strings.HasPrefix(s, "GPU-") || strings.HasPrefix(s, "MIG-")) {
			return nil, selectionErrorf("%s %q: a GPU UUID cannot be matched to a PCI function without the GPU's driver; name it by index in PCI order (CUDA_DEVICE_ORDER=PCI_BUS_ID), as GPU3, or by PCI address", what, s)
		}
		if _, err := strconv.ParseUint(s, 10, 16); err == nil && accel {
			s = "GPU" + s
		}
		a, err := res.Resolve(s)
		if err != nil {
			return nil, selectionErrorf("%s %q: %w", what, s, err)
		}
		if !slices.Contains(node, a) {
			return nil, selectionErrorf("%s %s: %w", what, a, notErr)
		}
		chosen[a] = true
	}
	out := []p2p.Addr{}
	for _, a := range node {
		if chosen[a] {
			out = append(out, a)
		}
	}
	return out, nil
}

// decide counts the task's pairs and gives the answer, and, for a certain
// no or an uncertain one, why.
func (r *Result) decide(report *nodecheck.Report, gpus bool) {
	nodeAccel, nodeNIC := map[p2p.Addr]bool{}, map[p2p.Addr]bool{}
	for _, a := range report.Accelerators {
		nodeAccel[a.Addr] = true
	}
	for _, n := range report.NICs {
		nodeNIC[n.Addr] = true
	}
	// about the task: a finding about one of the task's accelerators, or,
	// naming no accelerator, one of its NICs, or naming neither (the
	// node as a whole, its bridges)
	aboutTask := func(f nodecheck.Finding) bool {
		is := func(set map[p2p.Addr]bool) func(p2p.Addr) bool { return func(a p2p.Addr) bool { return set[a] } }
		in := func(list []p2p.Addr) func(p2p.Addr) bool {
			return func(a p2p.Addr) bool { return slices.Contains(list, a) }
		}
		switch {
		case slices.ContainsFunc(f.Subjects, is(nodeAccel)):
			return slices.ContainsFunc(f.Subjects, in(r.Accelerators))
		case slices.ContainsFunc(f.Subjects, is(nodeNIC)):
			return slices.ContainsFunc(f.Subjects, in(r.NICs))
		}
		return true
	}
	for _, p := range report.Pairs {
		if !slices.Contains(r.Accelerators, p.Accelerator) || !slices.Contains(r.NICs, p.NIC) {
			continue
		}
		r.Pairs++
		switch {
		case p.P2P:
			r.P2PPairs++
		case !p.Certain:
			r.UncertainPairs++
		}
	}
	kind := "accelerator-EFA NIC"
	if gpus {
		kind = "GPU-EFA NIC"
	}
	switch {
	case report.NotApplicable != nil && r.Pairs == 0:
		r.Answer, r.Summary = AnswerNotApplicable, "GPUDirect RDMA does not apply to this node: "+report.NotApplicable.Reason
		return
	case r.Pairs == 0:
		r.Answer, r.Summary = AnswerNotApplicable, "GPUDirect RDMA does not apply to this task: it has "+taskLacks(len(r.Accelerators), len(r.NICs))
		return
	case r.P2PPairs > 0:
		r.Answer = AnswerP2P
		r.Summary = fmt.Sprintf("GPUDirect RDMA works for this task: %d of its %s have true P2P DMA", r.P2PPairs, counted.Noun(r.Pairs, kind+" pair"))
		return
	case r.UncertainPairs > 0:
		r.Answer = AnswerUncertain
		r.Summary = fmt.Sprintf("cannot tell whether GPUDirect RDMA works for this task: none of its %s has true P2P DMA for certain, %d cannot be vouched for", counted.Noun(r.Pairs, kind+" pair"), r.UncertainPairs)
	default:
		r.Answer = AnswerNoP2P
		r.Summary = fmt.Sprintf("no GPUDirect RDMA for this task: none of its %s has true P2P DMA", counted.Noun(r.Pairs, kind+" pair"))
	}
	// why: the check's first finding about the task's devices (or the
	// whole node), in its words
	var found []nodecheck.Finding
	for _, f := range report.Findings {
		want := f.Severity == nodecheck.SeverityError || f.Severity == nodecheck.SeverityWarning
		if r.Answer == AnswerUncertain {
			want = f.Severity == nodecheck.SeverityUnknown
		}
		if want && aboutTask(f) {
			found = append(found, f)
		}
	}
	finding := report.Summary
	if len(found) > 0 {
		finding = found[0].Code + ": " + found[0].Message
		if len(found) > 1 {
			finding += fmt.Sprintf(" (+%d more)", len(found)-1)
		}
	}
	if r.Answer == AnswerUncertain {
		r.Why = "cannot tell whether GPUDirect RDMA works for this task (efap2p check: " + finding + "): " + VarDisableP2P + " is not set, libfabric probes as before"
		return
	}
	r.Why = "no GPUDirect RDMA for this task (efap2p check: " + finding + "): " + VarDisableP2P + "=1 spares libfabric its CUDA probe; "
	if r.GDRRequired {
		r.Why += "aws-ofi-nccl requires GPUDirect RDMA on " + r.InstanceType + " and will not run there"
	} else {
		r.Why += "NCCL runs without GPUDirect RDMA, through host memory"
	}
}

// variables works out what to set, unset and keep.
func (r *Result) variables(opts Options) {
	lookup := opts.Lookup
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	var want []Var
	if r.Answer == AnswerNoP2P {
		want = append(want, Var{VarDisableP2P, "1", "libfabric 2.x skips its CUDA probe and knows P2P is off"})
	}
	if opts.NCCLTopoFile != "" {
		if err := checkNCCLFile(opts.NCCLTopoFile); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s is not set: %v", VarNCCLTopoFile, err))
		} else {
			want = append(want, Var{VarNCCLTopoFile, opts.NCCLTopoFile, "NCCL takes each GPU's and NIC's gdr attribute from efap2p's NCCL topology"})
		}
	}
	// ours: what an earlier efap2p env set, decided again here
	mine := map[string]bool{}
	m, marked := lookup(VarMarker)
	if marked {
		for _, n := range strings.Split(m, ",") {
			if n = strings.TrimSpace(n); n == VarDisableP2P || n == VarNCCLTopoFile {
				mine[n] = true
			}
		}
	}
	var set []string
	for _, v := range want {
		if cur, ok := lookup(v.Name); ok && !mine[v.Name] {
			r.Kept = append(r.Kept, Var{v.Name, cur, "set before efap2p env: the environment's value is kept (efap2p env would set " + v.Value + ")"})
			continue
		}
		r.Set = append(r.Set, v)
		set = append(set, v.Name)
	}
	for _, n := range []string{VarDisableP2P, VarNCCLTopoFile} {
		if _, ok := lookup(n); ok && mine[n] && !slices.Contains(set, n) {
			r.Unset = append(r.Unset, n)
		}
	}
	switch {
	case len(set) > 0:
		r.Set = append(r.Set, Var{VarMarker, strings.Join(set, ","), "what efap2p env set, for the next efap2p env to decide again"})
	case marked:
		r.Unset = append(r.Unset, VarMarker)
	}
	if v, ok := lookup(VarDisableP2P); ok && r.Answer != AnswerNoP2P && !mine[VarDisableP2P] {
		note := fmt.Sprintf("%s=%s was set before efap2p env and is kept: libfabric takes it", VarDisableP2P, v)
		if r.Answer == AnswerP2P {
			note += ", although a pair of this task has true P2P DMA"
		}
		r.Notes = append(r.Notes, note)
	}
}

// checkNCCLFile tells whether the NCCL topology name may be named in
// NCCL_TOPO_FILE: as a topology file is trusted (a regular file of root or
// this user, that its group and others cannot write), and written in this
// boot.
func checkNCCLFile(name string) error {
	data, err := p2p.ReadTrustedFile(name, 4096)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no NCCL topology of this boot at %s (efap2p export --boot, as root, writes it)", name)
	case err != nil:
		return err
	}
	id, err := nccltopo.ReadBootID(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w: not written by efap2p export --boot", name, err)
	}
	if boot := p2p.CurrentBootID(); id != boot {
		return fmt.Errorf("%s was written during boot %s, this is boot %s (efap2p export --boot rewrites it at every boot)", name, id, boot)
	}
	return nil
}

func taskLacks(accels, nics int) string {
	switch {
	case accels == 0 && nics == 0:
		return "no accelerator and no EFA NIC"
	case accels == 0:
		return "no accelerator"
	}
	return "no EFA NIC"
}
