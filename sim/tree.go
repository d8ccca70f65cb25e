// SPDX-License-Identifier: MIT

package sim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// EmulatorConfigName is the file, at the root of an emulated host's tree,
// that tells the preload emulator (libefasim) the model's EFA devices and
// verdicts.
const EmulatorConfigName = "efasim.conf"

// KernelConfigName is the file, at the root of an emulated host's tree,
// that holds the emulated kernel's build configuration (what its
// /boot/config-RELEASE says of PCI_P2PDMA); EmulatorEnv names it in
// EFAP2P_KERNEL_CONFIG.
const KernelConfigName = "kernel.config"

// TreeOptions tune an emulated host's tree.
type TreeOptions struct {
	// WriteOptions tune the sysfs tree (models.Machine.Write).
	models.WriteOptions
	// Fabric, when set, is the fabric directory the emulator's devices use
	// (shared by the hosts of a fabric, see JoinFabric); by default each
	// tree has its own, next to efasim.conf.
	Fabric string
}

// WriteTree writes the tree of an emulated host under dir (created if
// needed): the model's sysfs tree (models.Machine.Write) and, at its root,
// the emulator's configuration (EmulatorConfigName) and the kernel's
// (KernelConfigName), and what lets lstopo and lspci read the tree
// (FSRootDir, BinDir).
func WriteTree(m *models.Machine, dir string, opt TreeOptions) error {
	if err := m.Write(dir, opt.WriteOptions); err != nil {
		return err
	}
	if err := writeViewers(dir); err != nil {
		return err
	}
	conf, err := emulatorConfig(m, opt)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, KernelConfigName), []byte(m.KernelConfigFile()), 0o444); err != nil {
		return err
	}
	owned, err := HostSysfs(dir)
	if err != nil {
		return err
	}
	for _, rel := range owned {
		conf += "sysfs " + rel + "\n"
	}
	return os.WriteFile(filepath.Join(dir, EmulatorConfigName), []byte(conf), 0o444)
}

// hostSysfs are the parts of /sys that stand for the emulated machine
// whatever the tree holds of them: its PCI devices, RDMA devices, DMI
// identity, CPUs and NUMA nodes, ACPI tables and kernel modules. A part the
// model leaves out is absent on the emulated host, not this host's.
var hostSysfs = []string{
	"bus/pci", "class/dmi", "class/infiniband", "class/infiniband_mad", "class/infiniband_verbs",
	"devices/system/cpu", "devices/system/node", "devices/virtual/dmi", "firmware/acpi", "module",
}

// HostSysfs lists the subtrees of /sys, relative to it, that an emulated
// host's tree at dir answers for: hostSysfs and each device hierarchy the
// tree has under devices/ (devices/pci0000:00, devices/LNXSYSTM:00, ...).
// The emulator (libefasim) opens their files in the tree when a program
// names them by absolute path (efasim.conf's "sysfs" lines); the rest of
// /sys (network interfaces, huge pages, cgroups) is this host's, which the
// programs' traffic and memory really use.
func HostSysfs(dir string) ([]string, error) {
	owned := append([]string(nil), hostSysfs...)
	ents, err := os.ReadDir(filepath.Join(dir, "devices"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		if n := e.Name(); e.IsDir() && n != "system" && n != "virtual" {
			owned = append(owned, "devices/"+n)
		}
	}
	return owned, nil
}

// TreeMachine names the machine an emulated host's tree at root was
// written from, as the emulator's configuration says at its top
// ("# machine NAME;"); false when root holds no such tree.
func TreeMachine(root string) (string, bool) {
	f, err := os.Open(filepath.Join(root, EmulatorConfigName))
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 0; i < 4 && sc.Scan(); i++ {
		if rest, ok := strings.CutPrefix(sc.Text(), "# machine "); ok {
			name, _, _ := strings.Cut(rest, ";")
			return strings.TrimSpace(name), name != ""
		}
	}
	return "", false
}

// TreeDirError is PrepareTreeDir's error about the directory itself (it
// cannot be read, holds something else, or holds a tree and force is not
// set): bad input, where the other errors are failures.
type TreeDirError struct{ err error }

func (e *TreeDirError) Error() string { return e.err.Error() }
func (e *TreeDirError) Unwrap() error { return e.err }

// PrepareTreeDir checks that a tree may be written into dir (efap2p sim
// write): a new or empty directory; with force, an earlier tree
// (EmulatorConfigName at its top), which is removed first so that nothing
// of the old machine is left.
func PrepareTreeDir(dir string, force bool) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &TreeDirError{fmt.Errorf("sim write: %w", err)}
	case len(ents) == 0:
		return nil
	}
	tree := regularFile(filepath.Join(dir, EmulatorConfigName)) == nil
	switch {
	case !tree:
		return &TreeDirError{fmt.Errorf("sim write: %s is not empty and holds no emulated tree (no %s): choose a new or empty directory", dir, EmulatorConfigName)}
	case !force:
		return &TreeDirError{fmt.Errorf("sim write: %s already holds an emulated tree: --force replaces it", dir)}
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("sim write: removing the old tree: %w", err)
		}
	}
	return nil
}

// EmulatorConfig returns the preload emulator's configuration for the
// model: one line per EFA device (its uverbs index, names and attributes),
// one per PCI function (address and driver, for dma-buf owners), and one
// per expected verdict (what the emulated kernel does with a dma-buf
// registration from that NIC into memory owned by that function).
//
//	efasim 1
//	kernel <release>
//	efa_driver <release> in-tree|out-of-tree <version>
//	function <pci> <vendor> <device> <class> <driver|->
//	device <uverbsN> <ibdev> <pci> key=value ...
//	verdict <nic-pci> <owner-pci> p2p|bounced|refused
//
// WriteTree adds one line per subtree of /sys the tree answers for
// (HostSysfs):
//
//	sysfs <relative path>
//
// The kernel line is the model's kernel release (latest when the model
// names none), the efa_driver line the upstream release whose efa driver
// answers as the model's does (models.EFADriverRelease: the kernel's for
// the in-tree driver, by version for AWS's out-of-tree one) and which:
// the emulated ib_uverbs and efa driver answer as those releases' do
// (which fields of a command they know, which methods they have, the
// device_caps bits), whatever rdma-core the emulator was built with.
//
// The emulated kernel decides every (EFA NIC, dma-buf owner) pair: the
// hand-worked expected verdicts first (the ground truth), then, for every
// other pair of an EFA NIC and a function that is not a bridge, the
// dma-buf outcome of the kernel's rule and the exporter's policy at the
// model's kernel release (package p2p on the model).
func EmulatorConfig(m *models.Machine) (string, error) {
	return emulatorConfig(m, TreeOptions{})
}

// emulatorConfig adds, for a host of a fabric, the fabric line and the
// host's GIDs:
//
//	fabric <directory>
func emulatorConfig(m *models.Machine, opt TreeOptions) (string, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "efasim 1\n# machine %s; written by efap2p sim write\n", m.Name)
	fmt.Fprintf(&b, "kernel %s\n", m.KernelRelease())
	efaRel, efaName := m.EFADriverRelease()
	fmt.Fprintf(&b, "efa_driver %s %s\n", efaRel, efaName)
	if opt.Fabric != "" {
		fmt.Fprintf(&b, "fabric %s\n", opt.Fabric)
	}
	for _, f := range m.Functions() {
		drv := f.Driver
		if drv == "" {
			drv = "-"
		}
		fmt.Fprintf(&b, "function %s %04x %04x %06x %s\n", f.Addr, uint32(f.Vendor), uint32(f.Device), uint32(f.Class), drv)
	}
	for i, f := range m.EFANICs() {
		at, err := m.EFAAttrsOn(f, opt.Host)
		if err != nil {
			return "", err
		}
		caps, err := at.ReportedCaps(efaRel)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f.Addr, err)
		}
		blocked := 0
		if at.PeerAccessBlocked {
			blocked = 1
		}
		sd := f.Device
		if f.SubDevice != nil {
			sd = *f.SubDevice
		}
		kv := []string{
			fmt.Sprintf("vendor_id=0x%04x", uint32(f.Vendor)),
			fmt.Sprintf("vendor_part_id=0x%04x", uint32(f.Device)),
			fmt.Sprintf("hw_ver=0x%x", uint32(sd)),
			fmt.Sprintf("fw_ver=%s", at.FWVer),
			fmt.Sprintf("node_guid=%s", at.NodeGUID),
			fmt.Sprintf("gid=%s", at.GID),
			fmt.Sprintf("max_qp=%d", at.MaxQP),
			fmt.Sprintf("max_cq=%d", at.MaxCQ),
			fmt.Sprintf("max_cqe=%d", at.MaxCQE),
			fmt.Sprintf("max_mr=%d", at.MaxMR),
			fmt.Sprintf("max_pd=%d", at.MaxPD),
			fmt.Sprintf("max_ah=%d", at.MaxAH),
			fmt.Sprintf("max_mr_size=0x%x", at.MaxMRSize),
			fmt.Sprintf("page_size_cap=0x%x", at.PageSizeCap),
			fmt.Sprintf("max_sq_wr=%d", at.MaxSQWR),
			fmt.Sprintf("max_rq_wr=%d", at.MaxRQWR),
			fmt.Sprintf("max_sq_sge=%d", at.MaxSQSGE),
			fmt.Sprintf("max_rq_sge=%d", at.MaxRQSGE),
			fmt.Sprintf("max_wr_rdma_sge=%d", at.MaxWRRDMASGE),
			fmt.Sprintf("max_rdma_size=%d", at.MaxRDMASize),
			fmt.Sprintf("inline_buf_size=%d", at.InlineBuf),
			fmt.Sprintf("max_llq_size=%d", at.MaxLLQSize),
			fmt.Sprintf("sub_cqs_per_cq=%d", at.SubCQsPerCQ),
			fmt.Sprintf("max_tx_batch=%d", at.MaxTxBatch),
			fmt.Sprintf("min_sq_wr=%d", at.MinSQWR),
			fmt.Sprintf("device_caps=0x%x", caps),
			fmt.Sprintf("port_mtu=%d", at.PortMTU),
			fmt.Sprintf("max_msg_sz=0x%x", at.MaxMsgSz),
			fmt.Sprintf("peer_blocked=%d", blocked),
			fmt.Sprintf("numa_node=%d", f.NUMA()),
		}
		fmt.Fprintf(&b, "device uverbs%d %s %s %s\n", i, at.IBDev, f.Addr, strings.Join(kv, " "))
	}
	listed := map[[2]p2p.Addr]bool{}
	for _, p := range m.Pairs() {
		// The emulated kernel sees the NIC (client) attach to memory owned
		// by the provider.
		if listed[[2]p2p.Addr{p.Client, p.Provider}] {
			continue
		}
		listed[[2]p2p.Addr{p.Client, p.Provider}] = true
		fmt.Fprintf(&b, "verdict %s %s %s\n", p.Client, p.Provider, p.ExpectedOutcome())
	}
	// only outcomes: no reasons, and each pair once (not cached: a large
	// machine has hundreds of thousands)
	opts := m.OracleOptions()
	opts.NoReasons = true
	o := p2p.NewOracleWith(p2p.NewTopology(m.Source()), opts)
	for _, nic := range m.EFANICs() {
		for _, f := range m.Functions() {
			if f.IsBridge() || listed[[2]p2p.Addr{nic.Addr, f.Addr}] {
				continue
			}
			v, err := o.Compute(f.Addr, nic.Addr)
			if err != nil {
				return "", fmt.Errorf("verdict %s -> %s: %w", f.Addr, nic.Addr, err)
			}
			fmt.Fprintf(&b, "verdict %s %s %s\n", nic.Addr, f.Addr, v.Outcome)
		}
	}
	return b.String(), nil
}
