// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/efap2p/efap2p/internal/secenv"
)

// The default places of the machine's topology file. Every process reads
// them without configuration: BootTopologyFile, written at every boot by
// efap2p-topology.service (`efap2p export --boot`), then
// OperatorTopologyFile, an operator's own. The boot-time file wins: it is
// computed for this boot, as root, from the operator's file's facts (its
// blocked NICs and extra accelerators) and this boot's sysfs, so it holds
// everything the operator's file does and is never staler; the operator's
// file answers where the unit is not enabled, or its file does not
// describe this boot. See docs/topology-file.md.
const (
	BootTopologyFile     = "/run/efap2p/topology.json"
	OperatorTopologyFile = "/etc/efap2p/topology.json"
)

// Defaults are what the library (libefap2p) and the tool read without
// configuration, so that a Go program gets their answers on the same
// machine: the boot-time topology file, else the operator's (or the file
// $EFAP2P_TOPOLOGY names instead), and the kernel release $EFAP2P_KERNEL
// names (with the build configuration $EFAP2P_KERNEL_CONFIG names). The
// zero value takes them all; each field turns one off.
type Defaults struct {
	NoBootFile     bool // leave out BootTopologyFile
	NoOperatorFile bool // leave out OperatorTopologyFile
	NoTopologyEnv  bool // ignore $EFAP2P_TOPOLOGY and $EFAP2P_TOPOLOGY_ROOT
	NoKernelEnv    bool // ignore $EFAP2P_KERNEL and $EFAP2P_KERNEL_CONFIG: the running kernel decides
}

// Options returns the options of an oracle over topo with the defaults d
// (NewOracle takes them all). The topology files are those of the machine
// topo reads: for this machine's sysfs tree (SysfsRoot), the file
// $EFAP2P_TOPOLOGY names (a missing one is reported, as a named file is),
// else the default places, below $EFAP2P_TOPOLOGY_ROOT when it is set;
// for another tree (an emulated host, a copy of another machine's), the
// default places below that tree, as efap2p sim lays them out; for a
// machine model in memory, none. The environment is not honoured in a
// secure-execution process (setuid, setgid, file capabilities).
func (d Defaults) Options(topo *Topology) Options {
	var opts Options
	if !d.NoKernelEnv {
		if v := strings.TrimSpace(secenv.Getenv(KernelEnv)); v != "" {
			if r, err := ParseRelease(v); err == nil {
				opts.Kernel = r
			} else {
				opts.kernelErr = fmt.Errorf("%s: %w; using the running kernel's", KernelEnv, err)
			}
		}
		kc, err := KernelConfigFromEnv()
		if err != nil && opts.kernelErr == nil {
			opts.kernelErr = fmt.Errorf("%w; whether the kernel has PCI_P2PDMA is found out as without it", err)
		}
		opts.KernelConfig = kc
	}
	root, ok := "", false
	if s, isSysfs := topo.src.(*Sysfs); isSysfs {
		root, ok = s.Root(), true
	}
	if !ok {
		return opts
	}
	var places []string
	if filepath.Clean(root) != filepath.Clean(SysfsRoot()) {
		// another machine's tree: its own files, never this host's
		places = []string{root + BootTopologyFile, root + OperatorTopologyFile}
	} else {
		if !d.NoTopologyEnv {
			if f := secenv.Getenv("EFAP2P_TOPOLOGY"); f != "" {
				opts.TopologyFile = f
				return opts
			}
		}
		places = defaultPlaces(!d.NoTopologyEnv)
	}
	opts.TopologyFiles = []string{}
	if !d.NoBootFile {
		opts.TopologyFiles = append(opts.TopologyFiles, places[0])
	}
	if !d.NoOperatorFile {
		opts.TopologyFiles = append(opts.TopologyFiles, places[1])
	}
	return opts
}

// defaultPlaces are BootTopologyFile and OperatorTopologyFile, below
// $EFAP2P_TOPOLOGY_ROOT when env allows it and it is set.
func defaultPlaces(env bool) []string {
	if env {
		if root := strings.TrimRight(secenv.Getenv("EFAP2P_TOPOLOGY_ROOT"), "/"); root != "" {
			return []string{root + BootTopologyFile, root + OperatorTopologyFile}
		}
	}
	return []string{BootTopologyFile, OperatorTopologyFile}
}

// This boot's ID, which a boot-time topology file is checked against;
// tests replace it.
var (
	currentBootID = func() string {
		b, err := readFileLimited("/proc/sys/kernel/random/boot_id", 64)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
)

// ErrUntrusted is wrapped when a topology file could have been written by
// someone other than root or the reading user.
var ErrUntrusted = errors.New("not trusted")

// ErrOtherMachine is wrapped when a topology file describes another
// machine, kernel or boot.
var ErrOtherMachine = errors.New("describes another machine")

// checkTrusted refuses a file others than root and this user could have
// written: another owner, or write permission for group or others.
func checkTrusted(name string, st *syscall.Stat_t) error {
	euid := uint32(os.Geteuid())
	if st.Uid != 0 && st.Uid != euid {
		return topoErrorf(ErrUntrusted, "%s is not trusted: owned by uid %d, neither root nor this user (uid %d)", name, st.Uid, euid)
	}
	if st.Mode&0o022 != 0 {
		return topoErrorf(ErrUntrusted, "%s is not trusted: writable by %s (mode %04o)", name, writers(st.Mode), st.Mode&0o7777)
	}
	return nil
}

func writers(mode uint32) string {
	switch {
	case mode&0o022 == 0o022:
		return "group and others"
	case mode&0o020 != 0:
		return "its group"
	}
	return "others"
}

// loadTopologyFile reads a topology file the oracle may use: a regular file
// root or this user owns and only they can write, well-formed, describing
// the machine t reads. why says, when it is used, what made it trusted.
func loadTopologyFile(name string, t *Topology, rel Release) (tf *TopologyFile, why string, err error) {
	data, st, err := readTopologyFileStat(name, func() int {
		fns, _ := t.Functions()
		return len(fns)
	})
	if err != nil {
		return nil, "", topoErrorf(nil, "%w", err)
	}
	if err := checkTrusted(name, &st); err != nil {
		return nil, "", err
	}
	if tf, err = ParseTopologyFile(data, name); err != nil {
		return nil, "", err
	}
	what, err := tf.checkMachine(name, t, rel)
	if err != nil {
		return nil, "", err
	}
	owner := "root"
	if st.Uid != 0 {
		owner = fmt.Sprintf("this user (uid %d)", st.Uid)
	}
	return tf, fmt.Sprintf("owned by %s, mode %04o, %s", owner, st.Mode&0o7777, what), nil
}

// checkMachine tells whether the file describes the machine t reads, whose
// verdicts are decided for release rel: the kernel release the file was
// decided for, the boot it was written in (a boot-time file),
// and, for a file that outlives boots, every PCI function it covers, with
// the same IDs. A boot-time file's functions are not read again: its boot
// ID proves they were enumerated in this boot, and the udev rule refreshes
// it when devices come or go. It returns what matched, for explanations.
func (tf *TopologyFile) checkMachine(name string, t *Topology, rel Release) (string, error) {
	m := &tf.Machine
	var what []string
	// the functions first: that another machine wrote a file says more
	// than that another kernel did
	if m.BootID == "" {
		for _, f := range m.Functions {
			v, d, _ := parseDeviceID(f.ID)
			hv, hd, err := t.functionIDs(f.Addr)
			switch {
			case errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNoFunction):
				return "", topoErrorf(ErrOtherMachine, "%s describes another machine: %s is %s there, absent here", name, f.Addr, f.ID)
			case err != nil:
				return "", topoErrorf(nil, "%s: cannot tell whether it describes this machine: %s: %w", name, f.Addr, err)
			case hv != v || hd != d:
				return "", topoErrorf(ErrOtherMachine, "%s describes another machine: %s is %s there, %s here", name, f.Addr, f.ID, hexID(hv, hd))
			}
		}
	}
	if m.Kernel != "" {
		if k := rel.String(); k != m.Kernel {
			return "", topoErrorf(ErrOtherMachine, "%s was written for kernel %s, this is %s", name, m.Kernel, k)
		}
		what = append(what, "kernel "+m.Kernel)
	}
	if m.BootID != "" {
		if b := currentBootID(); b != m.BootID {
			return "", topoErrorf(ErrOtherMachine, "%s was written during boot %s, this is boot %s (a boot-time file is rewritten at every boot)", name, m.BootID, b)
		}
		return strings.Join(append(what, "written in this boot"), ", "), nil
	}
	what = append(what, fmt.Sprintf("its %d PCI functions present with the same IDs", len(m.Functions)))
	return strings.Join(what, ", "), nil
}

// functionIDs reads a function's vendor and device attributes.
func (s *Sysfs) functionIDs(a Addr) (uint16, uint16, error) {
	v, err := s.readHex(s.devPath(a, "vendor"))
	if err != nil {
		return 0, 0, err
	}
	d, err := s.readHex(s.devPath(a, "device"))
	if err != nil {
		return 0, 0, err
	}
	return uint16(v), uint16(d), nil
}

func (t *Topology) functionIDs(a Addr) (uint16, uint16, error) {
	if r, ok := t.ext.(idReader); ok {
		return r.FunctionIDs(a)
	}
	f, err := t.Function(a)
	if err != nil {
		return 0, 0, err
	}
	at, err := f.Attrs()
	return at.Vendor, at.Device, err
}

// RecordMachine fills tf.Machine from the machine the oracle o reads: the
// kernel release it decides for, this boot's ID when boot is set (a file
// written at boot, valid for this boot only), and the IDs of every PCI
// function the file names.
func (tf *TopologyFile) RecordMachine(o *Oracle, boot bool) error {
	t := o.Topology()
	seen := map[Addr]bool{}
	var addrs []Addr
	note := func(a Addr) {
		if !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	for _, n := range tf.NICs {
		note(n.Addr)
	}
	for _, a := range tf.Accelerators {
		note(a.Addr)
	}
	for _, p := range tf.Pairs {
		note(p.Provider)
		note(p.Client)
	}
	m := TopoMachine{Kernel: o.Kernel().String(), Functions: []TopoFunction{}}
	if k := o.KernelConfig(); k.P2PDMA != BuiltUnknown {
		m.KernelConfig = &k
	}
	if boot {
		if m.BootID = currentBootID(); m.BootID == "" {
			return errors.New("cannot read this boot's ID (/proc/sys/kernel/random/boot_id)")
		}
	}
	for _, a := range addrs {
		v, d, err := t.functionIDs(a)
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
		m.Functions = append(m.Functions, TopoFunction{Addr: a, ID: hexID(v, d)})
	}
	tf.Machine = m
	return nil
}
