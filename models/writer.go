// SPDX-License-Identifier: MIT

package models

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/efap2p/efap2p/p2p"
)

// WriteOptions tune the written tree.
type WriteOptions struct {
	// ConfigBytes, when set, truncates every config file to that many
	// bytes: 64 shows the tree as a process without CAP_SYS_ADMIN sees it.
	ConfigBytes int
	// Host is this tree's host number in a fabric of emulated hosts (0:
	// alone); it goes into the GIDs and node GUIDs of its EFA devices
	// (HostGID, HostGUID).
	Host uint16
}

// Uverbs device numbers: the uverbs character devices use major 231 and
// minors from 192 (ib_uverbs' IB_UVERBS_BASE_MINOR).
const (
	UverbsMajor     = 231
	UverbsBaseMinor = 192
)

// Write writes the model as a sysfs tree under dir (created if needed),
// shaped as the kernel shapes /sys.
func (m *Machine) Write(dir string, opt WriteOptions) error {
	w := &treeWriter{m: m, dir: dir, opt: opt, devDir: map[p2p.Addr]string{}, lay: m.layout()}
	w.nodeCPUs = w.lay.sortedNodeCPUs()
	return w.write()
}

type treeWriter struct {
	m        *Machine
	dir      string
	opt      WriteOptions
	devDir   map[p2p.Addr]string // absolute directory of each function
	lay      cpuLayout
	nodeCPUs [][]int // each NUMA node's CPUs, in order
	err      error
}

func (w *treeWriter) write() error {
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return err
	}
	for _, d := range []string{"bus/pci/devices", "bus/pci/drivers", "class/infiniband", "class/infiniband_verbs", "devices/system/cpu"} {
		w.mkdir(filepath.Join(w.dir, d))
	}
	w.rootBuses()
	w.file(filepath.Join(w.dir, "devices/system/cpu/modalias"), w.m.CPU.Modalias()+"\n")
	w.cpus()
	w.file(filepath.Join(w.dir, "class/infiniband_verbs/abi_version"), "6\n")
	for i, f := range w.m.EFANICs() {
		w.efa(i, f)
	}
	w.acpiTables()
	w.host()
	return w.err
}

// rootBuses writes every root bus where the kernel puts it: under
// devices/, below a PCI function (VMD), or below sysfs_parent (a platform
// device, a VMBus device), with its host bridge's firmware_node. A root
// bus below a function waits until that function is written (the model
// has no cycles).
func (w *treeWriter) rootBuses() {
	done := map[*RootBus]bool{}
	hids := map[string]int{}
	for progress := true; progress && w.err == nil; {
		progress = false
		for i := range w.m.RootBuses {
			rb := &w.m.RootBuses[i]
			if done[rb] {
				continue
			}
			parent := filepath.Join(w.dir, "devices")
			switch {
			case rb.ParentFunction != nil:
				d, ok := w.devDir[*rb.ParentFunction]
				if !ok {
					continue
				}
				parent = d
			case rb.SysfsParent != "":
				parent = filepath.Join(w.dir, "devices", rb.SysfsParent)
			}
			rbDir := filepath.Join(parent, rb.Addr().String())
			w.mkdir(rbDir)
			if fn := rb.FirmwareNode; fn != nil {
				adev := filepath.Join(w.dir, "devices/LNXSYSTM:00/LNXSYBUS:00", firmwareNodeName(fn, hids[fn.HID]))
				hids[fn.HID]++
				w.mkdir(adev)
				w.file(filepath.Join(adev, "hid"), fn.HID+"\n")
				w.file(filepath.Join(adev, "uid"), fn.UID+"\n")
				w.link(filepath.Join(rbDir, "firmware_node"), adev)
				w.link(filepath.Join(adev, "physical_node"), rbDir)
			}
			w.functions(rbDir, rb.Functions)
			done[rb], progress = true, true
		}
	}
	if w.err == nil && len(done) != len(w.m.RootBuses) {
		w.err = errors.New("a root bus hangs from a function that is never written")
	}
}

func (w *treeWriter) functions(parentDir string, fns []*Function) {
	for _, f := range fns {
		w.function(parentDir, f)
		for i, vf := range f.VFs {
			w.function(parentDir, vf)
			w.link(filepath.Join(w.devDir[vf.Addr], "physfn"), w.devDir[f.Addr])
			w.link(filepath.Join(w.devDir[f.Addr], fmt.Sprintf("virtfn%d", i)), w.devDir[vf.Addr])
		}
		if len(f.VFs) > 0 {
			w.file(filepath.Join(w.devDir[f.Addr], "sriov_numvfs"), fmt.Sprintf("%d\n", len(f.VFs)))
			w.file(filepath.Join(w.devDir[f.Addr], "sriov_totalvfs"), fmt.Sprintf("%d\n", len(f.VFs)))
		}
		if len(f.Children) > 0 {
			w.functions(w.devDir[f.Addr], f.Children)
		}
	}
}

func (w *treeWriter) function(parentDir string, f *Function) {
	d := filepath.Join(parentDir, f.Addr.String())
	w.devDir[f.Addr] = d
	w.mkdir(d)
	sv, sd := f.Vendor, f.Device
	if f.SubVendor != nil {
		sv = *f.SubVendor
	}
	if f.SubDevice != nil {
		sd = *f.SubDevice
	}
	attrs := [][2]string{
		{"vendor", fmt.Sprintf("0x%04x", uint32(f.Vendor))},
		{"device", fmt.Sprintf("0x%04x", uint32(f.Device))},
		{"subsystem_vendor", fmt.Sprintf("0x%04x", uint32(sv))},
		{"subsystem_device", fmt.Sprintf("0x%04x", uint32(sd))},
		{"class", fmt.Sprintf("0x%06x", uint32(f.Class))},
		{"revision", "0x00"},
		{"numa_node", fmt.Sprintf("%d", f.NUMA())},
		{"modalias", fmt.Sprintf("pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X", uint32(f.Vendor), uint32(f.Device), uint32(sv), uint32(sd), uint32(f.Class)>>16, uint32(f.Class)>>8&0xff, uint32(f.Class)&0xff)},
	}
	if f.Link.Speed != "" {
		attrs = append(attrs,
			[2]string{"current_link_speed", f.Link.Speed},
			[2]string{"max_link_speed", f.Link.Speed},
			[2]string{"current_link_width", fmt.Sprintf("%d", f.Link.Width)},
			[2]string{"max_link_width", fmt.Sprintf("%d", f.Link.Width)})
	}
	for _, a := range attrs {
		// numa_node is writable by root (pci-sysfs.c numa_node_store),
		// as a booted kernel shows it.
		mode := os.FileMode(0o444)
		if a[0] == "numa_node" {
			mode = 0o644
		}
		w.fileMode(filepath.Join(d, a[0]), a[1]+"\n", mode)
	}
	w.localCPUs(d, f)
	// lspci reads irq and resource for every function; the model has no
	// interrupt lines or BARs, so: no IRQ, every resource empty (13 lines,
	// 17 for a bridge's windows, as pci-sysfs writes them)
	w.file(filepath.Join(d, "irq"), "0\n")
	n := 13
	if f.Kind != KindEndpoint && f.Kind != KindIntegrated && f.Kind != KindHostBridge {
		n = 17
	}
	w.file(filepath.Join(d, "resource"), strings.Repeat("0x0000000000000000 0x0000000000000000 0x0000000000000000\n", n))
	cfg := w.m.ConfigSpace(f)
	if n := w.opt.ConfigBytes; n > 0 && n < len(cfg) {
		cfg = cfg[:n]
	}
	w.fileMode(filepath.Join(d, "config"), string(cfg), 0o644)
	w.link(filepath.Join(w.dir, "bus/pci/devices", f.Addr.String()), d)
	if f.Driver != "" {
		drv := filepath.Join(w.dir, "bus/pci/drivers", f.Driver)
		w.mkdir(drv)
		w.link(filepath.Join(d, "driver"), drv)
		w.link(filepath.Join(drv, f.Addr.String()), d)
	}
}

// portState is what ib_core writes in a port's state and phys_state, by
// the model's port_state.
var portState = map[string][2]string{
	"":       {"4: ACTIVE", "5: LinkUp"},
	"ACTIVE": {"4: ACTIVE", "5: LinkUp"},
	"DOWN":   {"1: DOWN", "3: Disabled"},
}

// efa writes the RDMA class entries of the i-th EFA NIC, as ib_core and
// ib_uverbs lay them out under the PCI function.
func (w *treeWriter) efa(i int, f *Function) {
	at, err := w.m.EFAAttrsOn(f, w.opt.Host)
	if err != nil && w.err == nil {
		w.err = err
	}
	fnDir := w.devDir[f.Addr]
	ib := filepath.Join(fnDir, "infiniband", at.IBDev)
	w.mkdir(filepath.Join(ib, "ports/1/gids"))
	w.mkdir(filepath.Join(ib, "ports/1/gid_attrs/types"))
	w.mkdir(filepath.Join(ib, "ports/1/gid_attrs/ndevs"))
	for _, a := range [][2]string{
		{"node_type", "7: unspecified"},
		{"node_guid", at.NodeGUID},
		{"sys_image_guid", at.NodeGUID},
		{"fw_ver", at.FWVer},
		{"hw_rev", fmt.Sprintf("0x%x", uint32(f.Device))},
		{"board_id", at.BoardID},
		{"node_desc", at.IBDev},
		{"hca_type", ""},
		{"ports/1/state", portState[at.PortState][0]},
		{"ports/1/phys_state", portState[at.PortState][1]},
		{"ports/1/link_layer", "Unspecified"},
		{"ports/1/rate", "100 Gb/sec (4X EDR)"},
		{"ports/1/lid", "0x0"},
		{"ports/1/sm_lid", "0x0"},
		{"ports/1/lid_mask_count", "0"},
		{"ports/1/cap_mask", "0x00000000"},
		{"ports/1/gids/0", at.GID},
		{"ports/1/gid_attrs/types/0", "IB/RoCE v1"},
		{"ports/1/gid_attrs/ndevs/0", ""},
	} {
		w.file(filepath.Join(ib, a[0]), a[1]+"\n")
	}
	w.link(filepath.Join(ib, "device"), fnDir)
	w.link(filepath.Join(w.dir, "class/infiniband", at.IBDev), ib)
	if at.P2P != nil {
		// The out-of-tree driver's peer-memory provider (efa_sysfs.c).
		w.file(filepath.Join(fnDir, "p2p"), *at.P2P+"\n")
	}

	name := fmt.Sprintf("uverbs%d", i)
	uv := filepath.Join(fnDir, "infiniband_verbs", name)
	w.mkdir(uv)
	w.file(filepath.Join(uv, "ibdev"), at.IBDev+"\n")
	w.file(filepath.Join(uv, "abi_version"), "1\n")
	w.file(filepath.Join(uv, "dev"), fmt.Sprintf("%d:%d\n", UverbsMajor, UverbsBaseMinor+i))
	w.link(filepath.Join(uv, "device"), fnDir)
	w.link(filepath.Join(w.dir, "class/infiniband_verbs", name), uv)
}

// acpiTables writes the model's binary HMAT and SRAT as the kernel shows
// them: firmware/acpi/tables/<SIG>, readable by root only.
func (w *treeWriter) acpiTables() {
	if w.m.ACPI == nil {
		return
	}
	d := filepath.Join(w.dir, "firmware/acpi/tables")
	w.mkdir(d)
	for _, sig := range []string{"HMAT", "SRAT"} {
		if w.err == nil {
			w.err = os.WriteFile(filepath.Join(d, sig), w.m.ACPITable(sig), 0o400)
		}
	}
}

func (w *treeWriter) mkdir(d string) {
	if w.err == nil {
		w.err = os.MkdirAll(d, 0o755)
	}
}

func (w *treeWriter) file(p, content string) { w.fileMode(p, content, 0o444) }

func (w *treeWriter) fileMode(p, content string, mode os.FileMode) {
	if w.err == nil {
		w.err = os.WriteFile(p, []byte(content), mode)
	}
}

// link makes a relative symlink at p pointing to target, as sysfs does.
func (w *treeWriter) link(p, target string) {
	if w.err != nil {
		return
	}
	rel, err := filepath.Rel(filepath.Dir(p), target)
	if err != nil {
		w.err = err
		return
	}
	// A link to an ancestor of the link's directory climbs one level more
	// and names the target, as sysfs writes it ("../../../0000:4f:00.0").
	if rel == ".." || strings.HasSuffix(rel, "/..") {
		rel = filepath.Join(rel, "..", filepath.Base(target))
	}
	if err := os.Symlink(rel, p); err != nil && !errors.Is(err, os.ErrExist) {
		w.err = err
	}
}
