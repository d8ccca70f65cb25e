// SPDX-License-Identifier: MIT

package nodecheck

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/efap2p/efap2p/p2p"
)

// EC2's DMI system vendor: product_name is then the instance type.
const ec2Vendor = "Amazon EC2"

// EFA PCI device IDs (Amazon 1d0f:efa0..efa3; amzn-drivers efa_pci_tbl).
var efaDevices = map[uint16]bool{0xefa0: true, 0xefa1: true, 0xefa2: true, 0xefa3: true}

// Modules the registration paths need, beyond the accelerators' drivers:
// the RDMA core, the EFA driver, and the peer-memory links.
var pathModules = []string{"ib_core", "ib_uverbs", "efa", "efa_nv_peermem", "nvidia_peermem"}

// Peer-memory providers the out-of-tree EFA driver's p2p attribute names,
// by the accelerator driver whose memory each registers (amzn-drivers
// kernel/linux/efa: efa_nvmem_impl.h, efa_neuronmem.c).
var providersFor = map[string][]string{
	"nvidia":        {"NVIDIA", "NVIDIA peermem"},
	"neuron-driver": {"NEURON"}, // the PCI driver of aws-neuron-driver's module, neuron
}

// readDMI reads the DMI identity of the tree.
func (c *checker) readDMI() {
	id := filepath.Join(c.root, "class/dmi/id")
	c.r.Host.SysVendor, _ = readAttr(filepath.Join(id, "sys_vendor"))
	c.r.Host.ProductName, _ = readAttr(filepath.Join(id, "product_name"))
	if c.r.Host.SysVendor == ec2Vendor {
		c.r.Host.InstanceType = c.r.Host.ProductName
	}
}

// module reads one module's state: loaded when module/<name> exists or a
// PCI driver of that name is registered (a built-in driver without
// parameters has no module/ directory).
func (c *checker) module(name string) Module {
	m := Module{Name: name}
	dir := filepath.Join(c.root, "module", name)
	if isDir(dir) {
		m.Loaded = true
		m.Version, _ = readAttr(filepath.Join(dir, "version"))
		if t, err := readAttr(filepath.Join(dir, "taint")); err == nil && strings.Contains(t, "O") {
			m.OutOfTree = true
		}
	} else if isDir(filepath.Join(c.root, "bus/pci/drivers", name)) {
		m.Loaded = true
	}
	return m
}

// readModules reads the modules the paths need and the accelerators'
// drivers; it leaves Host.Modules nil when the tree has no module/.
func (c *checker) readModules() {
	c.haveModules = isDir(filepath.Join(c.root, "module"))
	names := append([]string{}, pathModules...)
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for _, a := range c.r.Accelerators {
		d := a.Driver
		if d == "" {
			d = expectedDriver(a.Vendor)
		}
		if d != "" && !seen[d] {
			seen[d] = true
			names = append(names, d)
		}
	}
	c.modules = map[string]Module{}
	for _, n := range names {
		c.modules[n] = c.module(n)
	}
	if !c.haveModules {
		return
	}
	sort.Strings(names)
	for _, n := range names {
		c.r.Host.Modules = append(c.r.Host.Modules, c.modules[n])
	}
}

// expectedDriver names the driver an accelerator of a vendor needs.
func expectedDriver(vendor string) string {
	switch vendor {
	case "10de":
		return "nvidia"
	case "1002":
		return "amdgpu"
	case "1d0f":
		return "neuron"
	}
	return ""
}

const evidenceNoNIC = "no EFA NIC"

// readEFADriver tells the in-tree EFA driver from AWS's out-of-tree one:
// the out-of-tree driver has a version (MODULE_VERSION, "2.17.3g"), the
// out-of-tree taint, and on each NIC's PCI function a p2p attribute
// naming its peer-memory provider (from r2.6; before, a gdr attribute
// saying 1 or 0). The in-tree driver has none of these.
func (c *checker) readEFADriver() {
	d := &c.r.Host.EFADriver
	var bound []p2p.Addr
	for _, n := range c.r.NICs {
		if n.Driver == "efa" {
			bound = append(bound, n.Addr)
		}
	}
	if len(bound) == 0 {
		d.Kind, d.Evidence = DriverNone, "no EFA NIC has the efa driver bound"
		if len(c.r.NICs) == 0 {
			d.Evidence = evidenceNoNIC
		}
		return
	}
	mod := c.modules["efa"]
	nicDir := filepath.Join(c.root, "bus/pci/devices", bound[0].String())
	if v, err := readAttr(filepath.Join(nicDir, "p2p")); err == nil {
		d.Kind, d.Version = DriverOutOfTree, mod.Version
		d.PeerMemory = &v
		d.Evidence = fmt.Sprintf("%s/p2p exists (the out-of-tree driver's peer-memory attribute)", bound[0])
		return
	}
	if v, err := readAttr(filepath.Join(nicDir, "gdr")); err == nil {
		prov := ""
		if v == "1" {
			prov = "NVIDIA"
		}
		d.Kind, d.Version, d.PeerMemory = DriverOutOfTree, mod.Version, &prov
		d.Evidence = fmt.Sprintf("%s/gdr exists (the out-of-tree driver before r2.6)", bound[0])
		return
	}
	switch {
	case mod.Version != "":
		d.Kind, d.Version, d.Evidence = DriverOutOfTree, mod.Version, "module/efa/version exists (the in-tree driver has none)"
	case mod.OutOfTree:
		d.Kind, d.Evidence = DriverOutOfTree, "module/efa/taint says O (out-of-tree module)"
	case !c.haveModules:
		d.Kind, d.Evidence = DriverUnknown, "the tree has no module/ directory"
	case isDir(filepath.Join(c.root, "module/efa")):
		d.Kind, d.Evidence = DriverInTree, "module/efa has no version, no out-of-tree taint and no p2p attribute"
	default:
		d.Kind, d.Evidence = DriverInTree, "efa is built into the kernel (no module/efa)"
	}
}

// ibdevs returns a NIC's RDMA and uverbs device names ("" when absent).
func (c *checker) ibdevs(a p2p.Addr) (string, string) {
	dir := filepath.Join(c.root, "bus/pci/devices", a.String())
	return firstEntry(filepath.Join(dir, "infiniband")), firstEntry(filepath.Join(dir, "infiniband_verbs"))
}
