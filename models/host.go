// SPDX-License-Identifier: MIT

package models

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"

	"github.com/efap2p/efap2p/p2p"
)

// Host is what a model declares about the host beyond its PCI hierarchy:
// its DMI identity and the kernel modules loaded, so that a node check
// (`efap2p check`) sees them in the written tree. It is embedded in
// Machine: its fields are top-level fields of the model file.
type Host struct {
	// DMI is the firmware's identity of the machine, written as
	// class/dmi/id/* (on EC2, sys_vendor "Amazon EC2", product_name the
	// instance type and board_asset_tag the instance's ID, InstanceID).
	DMI *DMI `json:"dmi,omitempty"`
	// Modules are the loaded kernel modules, written as module/<name>/.
	// A model without modules writes no module/ directory at all (module
	// state unknown), unlike a model whose list lacks a module (not
	// loaded).
	Modules []Module `json:"modules,omitempty"`
	// MemoryGiB is the machine's memory, split evenly over its NUMA nodes
	// (devices/system/node/nodeN/meminfo); default 16 GiB a node.
	MemoryGiB int `json:"memory_gib,omitempty"`
}

// DMI is the part of the machine's DMI identity a node check reads.
type DMI struct {
	SysVendor   string `json:"sys_vendor"`
	ProductName string `json:"product_name"`
}

// EC2Vendor is the sys_vendor of an EC2 instance's DMI.
const EC2Vendor = "Amazon EC2"

// InstanceID is the EC2 instance ID of host number host (0: alone) of a
// fabric of emulated machines named name: "i-0" and 16 hex digits, the
// form EC2 writes in the DMI board asset tag and libfabric's EFA provider
// reads as its host ID (distinct for the hosts of one fabric).
func InstanceID(name string, host uint16) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", name, host)
	return fmt.Sprintf("i-0%016x", h.Sum64())
}

// Module is one loaded kernel module.
type Module struct {
	Name string `json:"name"`
	// Version is what MODULE_VERSION says (module/<name>/version); empty
	// for modules without one (the in-tree efa driver has none).
	Version string `json:"version,omitempty"`
	// OutOfTree marks a module built outside the kernel tree: its taint
	// file says "O" (TAINT_OOT_MODULE).
	OutOfTree bool `json:"out_of_tree,omitempty"`
	// P2P is, for AWS's out-of-tree efa driver only, the peer-memory
	// provider its read-only `p2p` attribute names on every EFA NIC's PCI
	// function: "NVIDIA", "NVIDIA peermem", "NEURON", or "" (none). Absent:
	// no attribute (the in-tree driver, or an out-of-tree one built without
	// peer-memory support).
	P2P *string `json:"p2p,omitempty"`
}

// Peer-memory providers the out-of-tree EFA driver names in its p2p
// attribute (amzn-drivers, kernel/linux/efa: efa_nvmem_impl.h and
// efa_neuronmem.c).
const (
	P2PProviderNVIDIA        = "NVIDIA"         // nvidia.ko's nvidia_p2p_* functions
	P2PProviderNVIDIAPeermem = "NVIDIA peermem" // the same through efa_nv_peermem
	P2PProviderNeuron        = "NEURON"         // the Neuron driver's neuron_p2p_* functions
)

// Module returns the model's module of that name, or nil.
func (h *Host) Module(name string) *Module {
	for i := range h.Modules {
		if h.Modules[i].Name == name {
			return &h.Modules[i]
		}
	}
	return nil
}

// validate checks the host fields; errors are located in the model.
func (h *Host) validate() error {
	if d := h.DMI; d != nil {
		for _, f := range []struct{ key, v string }{{"sys_vendor", d.SysVendor}, {"product_name", d.ProductName}} {
			if strings.ContainsAny(f.v, "\n\x00") || len(f.v) > 255 {
				return at([]any{"dmi", f.key}, "dmi: %s %q: one line of at most 255 bytes", f.key, f.v)
			}
		}
	}
	if h.MemoryGiB < 0 {
		return at([]any{"memory_gib"}, "memory_gib %d: want the machine's memory in GiB", h.MemoryGiB)
	}
	seen := map[string]bool{}
	for i, mod := range h.Modules {
		where := []any{"modules", i}
		if !validModuleName(mod.Name) {
			return at(where, "modules[%d]: name %q (want a module name: letters, digits and _)", i, mod.Name)
		}
		if seen[mod.Name] {
			return at(where, "modules[%d]: %s listed twice", i, mod.Name)
		}
		seen[mod.Name] = true
		if strings.ContainsAny(mod.Version, "\n\x00 ") {
			return at(where, "modules[%d]: %s: version %q", i, mod.Name, mod.Version)
		}
		if mod.P2P != nil {
			if mod.Name != "efa" || !mod.OutOfTree {
				return at(where, "modules[%d]: p2p is the attribute of AWS's out-of-tree efa driver: only on module efa with out_of_tree", i)
			}
			switch *mod.P2P {
			case "", P2PProviderNVIDIA, P2PProviderNVIDIAPeermem, P2PProviderNeuron:
			default:
				return at(where, "modules[%d]: p2p %q (want %q, %q, %q or \"\")", i, *mod.P2P, P2PProviderNVIDIA, P2PProviderNVIDIAPeermem, P2PProviderNeuron)
			}
		}
	}
	return nil
}

func validModuleName(s string) bool {
	if s == "" || len(s) > 56 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// host writes the DMI identity, the modules and the efa driver's p2p
// attribute, as the kernel lays them out.
func (w *treeWriter) host() {
	h := &w.m.Host
	if d := h.DMI; d != nil {
		id := filepath.Join(w.dir, "devices/virtual/dmi/id")
		w.mkdir(id)
		w.file(filepath.Join(id, "sys_vendor"), d.SysVendor+"\n")
		w.file(filepath.Join(id, "product_name"), d.ProductName+"\n")
		if d.SysVendor == EC2Vendor {
			w.file(filepath.Join(id, "board_asset_tag"), InstanceID(w.m.Name, w.opt.Host)+"\n")
		}
		w.mkdir(filepath.Join(w.dir, "class/dmi"))
		w.link(filepath.Join(w.dir, "class/dmi/id"), id)
	}
	if len(h.Modules) > 0 {
		w.mkdir(filepath.Join(w.dir, "module"))
	}
	for _, mod := range h.Modules {
		d := filepath.Join(w.dir, "module", mod.Name)
		w.mkdir(d)
		w.file(filepath.Join(d, "initstate"), "live\n")
		taint := ""
		if mod.OutOfTree {
			taint = "O"
		}
		w.file(filepath.Join(d, "taint"), taint+"\n")
		if mod.Version != "" {
			w.file(filepath.Join(d, "version"), mod.Version+"\n")
		}
		if mod.P2P != nil {
			for _, f := range w.m.EFANICs() {
				w.file(filepath.Join(w.devDir[f.Addr], "p2p"), *mod.P2P+"\n")
			}
		}
	}
}

// Without returns a copy of the model without the functions at addrs
// (a bridge goes with everything below it, a physical function with its
// virtual functions), and without the expected verdicts and ACPI entries
// that named them: the same machine with devices missing, as a node
// check should notice. Addresses the model lacks are an error.
func (m *Machine) Without(addrs ...p2p.Addr) (*Machine, error) {
	data, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	c, err := Parse(data, m.Name)
	if err != nil {
		return nil, err
	}
	gone := map[p2p.Addr]bool{}
	for _, a := range addrs {
		f := c.fns[a]
		if f == nil {
			return nil, fmt.Errorf("%s is not a function of machine %s", a, m.Name)
		}
		markGone(f, gone)
	}
	for i := range c.RootBuses {
		c.RootBuses[i].Functions = prune(c.RootBuses[i].Functions, gone)
	}
	var exp []Expect
	for _, e := range c.Expected {
		e.Providers, e.Clients = keep(e.Providers, gone), keep(e.Clients, gone)
		e.ACSRedirect = keep(e.ACSRedirect, gone)
		if len(e.Providers) > 0 && len(e.Clients) > 0 {
			exp = append(exp, e)
		}
	}
	c.Expected = exp
	if data, err = c.Marshal(); err != nil {
		return nil, err
	}
	return Parse(data, m.Name)
}

func markGone(f *Function, gone map[p2p.Addr]bool) {
	gone[f.Addr] = true
	for _, g := range f.VFs {
		markGone(g, gone)
	}
	for _, g := range f.Children {
		markGone(g, gone)
	}
}

func prune(fns []*Function, gone map[p2p.Addr]bool) []*Function {
	out := make([]*Function, 0, len(fns))
	for _, f := range fns {
		if gone[f.Addr] {
			continue
		}
		f.VFs = prune(f.VFs, gone)
		f.Children = prune(f.Children, gone)
		out = append(out, f)
	}
	return out
}

func keep(as []p2p.Addr, gone map[p2p.Addr]bool) []p2p.Addr {
	var out []p2p.Addr
	for _, a := range as {
		if !gone[a] {
			out = append(out, a)
		}
	}
	return out
}
