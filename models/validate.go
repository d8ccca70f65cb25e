// SPDX-License-Identifier: MIT

package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/efap2p/efap2p/internal/acpitab"
	"github.com/efap2p/efap2p/p2p"
)

// locError is a validation error about one element of the model, named by
// its JSON path ("root_buses", 0, "functions", 2, "acs"), so that Parse can
// turn it into a line number.
type locError struct {
	path []any
	err  error
}

func (e *locError) Error() string { return e.err.Error() }
func (e *locError) Unwrap() error { return e.err }

// at returns a located error; path is copied.
func at(path []any, format string, args ...any) error {
	return &locError{path: append([]any(nil), path...), err: fmt.Errorf(format, args...)}
}

// sub returns path extended by elems, without aliasing path.
func sub(path []any, elems ...any) []any {
	out := make([]any, 0, len(path)+len(elems))
	return append(append(out, path...), elems...)
}

// busKey names one bus number of one PCI domain.
type busKey struct {
	domain uint32
	bus    uint8
}

// busOwner is what a bus number hangs from: a bridge (its secondary bus),
// or the root bus itself (fn nil). A VF bus past its PF's is a virtual bus
// owned by the PF's upstream bridge (or root bus), as the kernel makes it.
type busOwner struct {
	fn   *Function
	rb   *RootBus
	path []any
}

// bridgeRange is a bridge's (or a root bus's) bus range, checked once every
// bus is known.
type bridgeRange struct {
	fn       *Function // nil for a root bus
	rb       *RootBus
	sec, sub uint8
	path     []any
}

// indexer holds the state of one index pass.
type indexer struct {
	m      *Machine
	owners map[busKey]busOwner
	ranges []bridgeRange
}

// index links parents, fills NUMA nodes and validates the model. Errors
// about one element are *locError.
func (m *Machine) index() error {
	if m.Name == "" {
		return at([]any{"name"}, "the model has no name")
	}
	if err := m.CPU.validate(); err != nil {
		return at([]any{"cpu"}, "%w", err)
	}
	if err := m.Host.validate(); err != nil {
		return err
	}
	m.fns = make(map[p2p.Addr]*Function)
	x := &indexer{m: m, owners: map[busKey]busOwner{}}
	seenRoot := map[p2p.RootBus]bool{}
	for i := range m.RootBuses {
		rb := &m.RootBuses[i]
		path := []any{"root_buses", i}
		if rb.Bus > 0xff {
			return at(sub(path, "bus"), "root bus %d: bus %#x is not 0..ff", i, uint32(rb.Bus))
		}
		key := p2p.RootBus{Domain: uint32(rb.Domain), Bus: uint8(rb.Bus)}
		if seenRoot[key] {
			return at(path, "root bus %s listed twice", key)
		}
		seenRoot[key] = true
		if err := x.own(key.Domain, key.Bus, busOwner{rb: rb, path: path}); err != nil {
			return err
		}
		max, err := x.indexBus(rb, nil, rb.Functions, key.Domain, key.Bus, sub(path, "functions"))
		if err != nil {
			return err
		}
		x.ranges = append(x.ranges, bridgeRange{rb: rb, sec: key.Bus, sub: max, path: path})
	}
	if len(m.fns) == 0 {
		return at([]any{"root_buses"}, "the model has no PCI function")
	}
	if err := x.checkRanges(); err != nil {
		return err
	}
	if err := m.validateCPUs(); err != nil {
		return err
	}
	ibdevs := map[string]bool{}
	for _, f := range m.EFANICs() {
		name := f.IBDev()
		if ibdevs[name] {
			return at(f.path, "%s: ibdev %q used twice", f.Addr, name)
		}
		ibdevs[name] = true
		if st := m.EFAAttrs(f).PortState; portState[st][0] == "" {
			return at(f.path, "%s: port_state %q: want ACTIVE or DOWN", f.Addr, st)
		}
	}
	for i := range m.Expected {
		if err := m.checkExpect(i); err != nil {
			return err
		}
	}
	if err := m.checkRootParents(); err != nil {
		return err
	}
	if b := m.KernelBuild; b != nil && b.PCIP2PDMA != "y" && b.PCIP2PDMA != "n" {
		return at([]any{"kernel_config", "pci_p2pdma"}, "kernel_config: pci_p2pdma %q (want \"y\" or \"n\")", b.PCIP2PDMA)
	}
	if err := m.checkACPI(); err != nil {
		return err
	}
	return nil
}

// checkRootParents checks where the root buses' directories go: below a
// PCI function of another root bus (no cycle), or a path under devices/.
func (m *Machine) checkRootParents() error {
	for i := range m.RootBuses {
		rb := &m.RootBuses[i]
		path := []any{"root_buses", i}
		if rb.ParentFunction != nil && rb.SysfsParent != "" {
			return at(path, "root bus %s: parent_function and sysfs_parent exclude each other", rb.Addr())
		}
		if p := rb.SysfsParent; p != "" {
			clean := filepath.Clean(p)
			if filepath.IsAbs(p) || clean != p || clean == "." || strings.HasPrefix(clean, "..") || strings.ContainsAny(p, "\x00\n") {
				return at(sub(path, "sysfs_parent"), "root bus %s: sysfs_parent %q must be a clean relative path under devices/", rb.Addr(), p)
			}
			for _, comp := range strings.Split(clean, "/") {
				if _, ok := p2p.ParseRootBus(comp); ok {
					return at(sub(path, "sysfs_parent"), "root bus %s: sysfs_parent %q holds a root bus directory", rb.Addr(), p)
				}
			}
		}
		if fn := rb.FirmwareNode; fn != nil {
			if fn.HID == "" || strings.ContainsAny(fn.HID+fn.UID, "/\x00\n") {
				return at(sub(path, "firmware_node"), "root bus %s: firmware_node needs a hid and a uid without / or newlines", rb.Addr())
			}
		}
		seen := map[*RootBus]bool{rb: true}
		for cur := rb; cur.ParentFunction != nil; {
			f := m.fns[*cur.ParentFunction]
			if f == nil {
				return at(sub(path, "parent_function"), "root bus %s: parent_function %s is not a function of the model", rb.Addr(), *cur.ParentFunction)
			}
			if f.IsBridge() {
				return at(sub(path, "parent_function"), "root bus %s: parent_function %s is a bridge (a VMD domain hangs from an endpoint)", rb.Addr(), f.Addr)
			}
			if seen[f.root] {
				return at(sub(path, "parent_function"), "root bus %s: parent_function %s makes a cycle of root buses", rb.Addr(), f.Addr)
			}
			seen[f.root] = true
			cur = f.root
		}
	}
	return nil
}

// checkACPI checks the model's ACPI tables.
func (m *Machine) checkACPI() error {
	a := m.ACPI
	if a == nil {
		return nil
	}
	path := []any{"acpi"}
	switch a.HMATRevision {
	case 0, 1, 2:
	default:
		return at(sub(path, "hmat_revision"), "acpi: hmat_revision %d (want 1 or 2)", a.HMATRevision)
	}
	for i, g := range a.GenericPorts {
		if g.HID == "" || len(g.HID) > 8 {
			return at(sub(path, "generic_ports", i), "acpi: generic_ports[%d]: hid %q (want 1 to 8 characters)", i, g.HID)
		}
	}
	for i, p := range a.P2P {
		where := sub(path, "p2p", i)
		if len(p.Classes) == 0 {
			return at(where, "acpi: p2p[%d]: give classes (non_uio, uio)", i)
		}
		for _, c := range p.Classes {
			if c != "non_uio" && c != "uio" {
				return at(where, "acpi: p2p[%d]: class %q (want non_uio or uio)", i, c)
			}
		}
		if _, ok := hmatDataTypes[p.DataType]; !ok {
			return at(where, "acpi: p2p[%d]: data_type %q (want access_latency, read_latency, write_latency, access_bandwidth, read_bandwidth or write_bandwidth)", i, p.DataType)
		}
		if len(p.Entries) != len(p.Initiators) {
			return at(where, "acpi: p2p[%d]: %d rows of entries for %d initiators", i, len(p.Entries), len(p.Initiators))
		}
		for j, row := range p.Entries {
			if len(row) != len(p.Targets) {
				return at(where, "acpi: p2p[%d]: row %d has %d entries for %d targets", i, j, len(row), len(p.Targets))
			}
		}
	}
	return nil
}

var hmatDataTypes = map[string]uint8{
	"access_latency": acpitab.HMATAccessLatency, "read_latency": acpitab.HMATReadLatency, "write_latency": acpitab.HMATWriteLatency,
	"access_bandwidth": acpitab.HMATAccessBandwidth, "read_bandwidth": acpitab.HMATReadBandwidth, "write_bandwidth": acpitab.HMATWriteBandwidth,
}

func (m *Machine) checkExpect(i int) error {
	e := &m.Expected[i]
	path := []any{"expected", i}
	if len(e.Providers) == 0 || len(e.Clients) == 0 {
		return at(path, "expected[%d]: needs providers and clients", i)
	}
	if e.MapType == p2p.MapUnknown {
		return at(path, "expected[%d]: map_type is missing", i)
	}
	if e.Distance < 0 {
		return at(sub(path, "distance"), "expected[%d]: distance %d: give the hops the walk counted (also for NOT_SUPPORTED), not the kernel's -1", i, e.Distance)
	}
	if e.Why == "" {
		return at(path, "expected[%d]: say why (the hand-worked reasoning)", i)
	}
	switch e.Outcome {
	case "", OutcomeP2P, OutcomeBounced, OutcomeRefused:
	default:
		return at(sub(path, "outcome"), "expected[%d]: outcome %q (want p2p, bounced or refused)", i, e.Outcome)
	}
	switch e.Policy {
	case p2p.PolicyUnknown, p2p.PolicyNVIDIA:
	case p2p.PolicyKernel:
		if e.Outcome == OutcomeBounced {
			return at(sub(path, "outcome"), "expected[%d]: the kernel policy never bounces: its outcome follows map_type", i)
		}
	case p2p.PolicyAMDGPU:
		// Refused by the kernel, amdgpu bounces; allowed, it keeps the
		// buffer in VRAM from 6.15 and bounces it before.
		if !e.MapType.Supported() && e.Outcome != OutcomeBounced {
			return at(sub(path, "outcome"), "expected[%d]: amdgpu with %s gives outcome %q, not %q", i, e.MapType, OutcomeBounced, e.Outcome)
		}
		if e.MapType.Supported() && e.Outcome != OutcomeP2P && e.Outcome != OutcomeBounced {
			return at(sub(path, "outcome"), "expected[%d]: amdgpu with %s gives outcome p2p (6.15 and later) or bounced, not %q", i, e.MapType, e.Outcome)
		}
	case p2p.PolicyNeuron:
		if e.Outcome != OutcomeP2P {
			return at(sub(path, "outcome"), "expected[%d]: the Neuron driver allows every importer: outcome p2p, not %q", i, e.Outcome)
		}
	case p2p.PolicyXe:
		// Like amdgpu: refused by the kernel, xe bounces; allowed, it keeps
		// a pinned buffer in VRAM from 6.19 and bounces it before.
		if !e.MapType.Supported() && e.Outcome != OutcomeBounced || e.Outcome == OutcomeRefused {
			return at(sub(path, "outcome"), "expected[%d]: xe with %s gives outcome bounced (or p2p where the kernel allows it), not %q", i, e.MapType, e.Outcome)
		}
	case p2p.PolicyVFIO:
		if e.Outcome == OutcomeBounced {
			return at(sub(path, "outcome"), "expected[%d]: vfio-pci never bounces: its BAR is shared or refused", i)
		}
	case p2p.PolicyI915:
		if e.Outcome != "" && e.Outcome != OutcomeBounced {
			return at(sub(path, "outcome"), "expected[%d]: i915 moves every exported buffer to system memory: outcome bounced, not %q", i, e.Outcome)
		}
	}
	switch e.PeerMem {
	case "", OutcomeP2P, OutcomeRefused, "unknown":
	default:
		return at(sub(path, "peer_mem"), "expected[%d]: peer_mem %q (want p2p, refused or unknown)", i, e.PeerMem)
	}
	for _, l := range []struct {
		key   string
		addrs []p2p.Addr
	}{{"providers", e.Providers}, {"clients", e.Clients}, {"acs_redirect", e.ACSRedirect}} {
		for j, a := range l.addrs {
			if m.fns[a] == nil {
				return at(sub(path, l.key, j), "expected[%d]: %s is not a function of the model", i, a)
			}
		}
	}
	return nil
}

// own records that bus b of domain d hangs from o.
func (x *indexer) own(d uint32, b uint8, o busOwner) error {
	k := busKey{d, b}
	if prev, ok := x.owners[k]; ok {
		if prev.fn == o.fn && prev.rb == o.rb {
			return nil
		}
		return at(o.path, "bus %04x:%02x is already the bus of %s", d, b, ownerName(prev))
	}
	x.owners[k] = o
	return nil
}

func ownerName(o busOwner) string {
	if o.fn != nil {
		return o.fn.Addr.String()
	}
	return "root bus " + p2p.RootBus{Domain: uint32(o.rb.Domain), Bus: uint8(o.rb.Bus)}.String()
}

// indexBus indexes the functions on one bus; path names their JSON array.
// It returns the highest bus number used on or below the bus.
func (x *indexer) indexBus(rb *RootBus, parent *Function, fns []*Function, domain uint32, bus uint8, path []any) (uint8, error) {
	max := bus
	for j, f := range fns {
		fpath := sub(path, j)
		if f == nil {
			return 0, at(fpath, "a null function on bus %04x:%02x", domain, bus)
		}
		f.path = fpath
		if err := x.indexFunction(rb, parent, nil, f, domain, bus); err != nil {
			return 0, err
		}
		for k, vf := range f.VFs {
			vpath := sub(fpath, "vfs", k)
			if vf == nil || len(vf.VFs) > 0 || len(vf.Children) > 0 {
				return 0, at(vpath, "%s: a VF can have neither VFs nor children", f.Addr)
			}
			vf.path = vpath
			// A VF may sit on a bus number past its PF's (a virtual bus);
			// the kernel's upstream bridge for it is the PF's.
			if vf.Addr.Bus < bus {
				return 0, at(vpath, "%s: a VF cannot sit on a bus below its PF's (%02x)", vf.Addr, bus)
			}
			if err := x.indexFunction(rb, parent, f, vf, domain, vf.Addr.Bus); err != nil {
				return 0, err
			}
			if vf.Addr.Bus != bus {
				if err := x.own(domain, vf.Addr.Bus, busOwner{fn: parent, rb: rb, path: vpath}); err != nil {
					return 0, err
				}
			}
			max = maxBus(max, vf.Addr.Bus)
		}
		if len(f.Children) == 0 {
			continue
		}
		cpath := sub(fpath, "children")
		if !f.IsBridge() {
			return 0, at(cpath, "%s: a %s has no secondary bus for children", f.Addr, f.Kind)
		}
		if f.Children[0] == nil {
			return 0, at(sub(cpath, 0), "a null function under %s", f.Addr)
		}
		sec := f.Children[0].Addr.Bus
		if f.Children[0].Addr.Domain != domain {
			return 0, at(sub(cpath, 0), "%s: a child of %s must be in domain %04x", f.Children[0].Addr, f.Addr, domain)
		}
		if sec <= bus {
			return 0, at(sub(cpath, 0), "%s: secondary bus %02x must be above bus %02x", f.Addr, sec, bus)
		}
		if err := x.own(domain, sec, busOwner{fn: f, rb: rb, path: sub(cpath, 0)}); err != nil {
			return 0, err
		}
		subMax, err := x.indexBus(rb, f, f.Children, domain, sec, cpath)
		if err != nil {
			return 0, err
		}
		x.ranges = append(x.ranges, bridgeRange{fn: f, rb: rb, sec: sec, sub: subMax, path: fpath})
		max = maxBus(max, subMax)
	}
	return max, nil
}

func maxBus(a, b uint8) uint8 {
	if a > b {
		return a
	}
	return b
}

// checkRanges checks that every bridge's bus range (secondary to
// subordinate, as the writer computes it) holds no bus of another branch,
// and that no root bus's range holds another root bus's buses.
func (x *indexer) checkRanges() error {
	for _, r := range x.ranges {
		d := uint32(r.rb.Domain)
		for b := int(r.sec); b <= int(r.sub); b++ {
			o, ok := x.owners[busKey{d, uint8(b)}]
			if !ok {
				continue
			}
			if r.fn == nil {
				if o.rb != r.rb {
					return at(r.path, "root bus %02x reaches bus %02x, but that bus belongs to %s", uint8(r.rb.Bus), b, ownerName(o))
				}
				continue
			}
			inside := false
			for g := o.fn; g != nil; g = g.parent {
				if g == r.fn {
					inside = true
					break
				}
			}
			if !inside {
				return at(r.path, "%s: its bus range %02x-%02x holds bus %02x of %s", r.fn.Addr, r.sec, r.sub, b, ownerName(o))
			}
		}
	}
	return nil
}

func (x *indexer) indexFunction(rb *RootBus, parent, physfn, f *Function, domain uint32, bus uint8) error {
	m := x.m
	if _, ok := kindPortType[f.Kind]; !ok {
		return at(sub(f.path, "kind"), "%s: unknown kind %q (want host_bridge, root_port, switch_upstream, switch_downstream, pci_bridge, endpoint or integrated)", f.Addr, f.Kind)
	}
	if f.Addr.Domain != domain || f.Addr.Bus != bus {
		return at(sub(f.path, "addr"), "%s: expected on bus %04x:%02x", f.Addr, domain, bus)
	}
	if m.fns[f.Addr] != nil {
		return at(sub(f.path, "addr"), "%s: listed twice", f.Addr)
	}
	if f.Vendor > 0xffff || f.Device > 0xffff || f.Class > 0xffffff {
		return at(f.path, "%s: vendor, device or class out of range", f.Addr)
	}
	if physfn != nil && f.IsBridge() {
		return at(sub(f.path, "kind"), "%s: a VF cannot be a bridge", f.Addr)
	}
	switch f.ConfigSize {
	case 0:
		// Linux sizes config space 4096 for a PCIe function and 256 for one
		// without a PCIe capability (pci_cfg_space_size), as a host bridge
		// is here, unless the model gives it extended capabilities.
		f.ConfigSize = 4096
		if f.Kind == KindHostBridge && f.ACS == nil && len(f.ExtCaps) == 0 {
			f.ConfigSize = 256
		}
	case 256, 4096:
	default:
		return at(sub(f.path, "config_size"), "%s: config_size %d (want 256 or 4096)", f.Addr, f.ConfigSize)
	}
	if f.PortNumber < 0 || f.PortNumber > 255 {
		return at(sub(f.path, "port_number"), "%s: port_number %d is not 0..255", f.Addr, f.PortNumber)
	}
	if f.ACS != nil {
		if len(f.ACS.EgressVector) > 8 {
			return at(sub(f.path, "acs"), "%s: an Egress Control Vector has at most 8 dwords (256 ports)", f.Addr)
		}
		for _, n := range append(append([]string{}, f.ACS.Capability...), f.ACS.Control...) {
			if acsBits([]string{n}) == 0 {
				return at(sub(f.path, "acs"), "%s: unknown ACS bit %q (want SV, TB, RR, CR, UF, EC, DT)", f.Addr, n)
			}
		}
		if f.ConfigSize == 256 {
			return at(sub(f.path, "acs"), "%s: ACS needs extended config space (config_size 4096)", f.Addr)
		}
	}
	seen := map[string]bool{}
	end := 0x100
	for _, c := range f.ExtCaps {
		if _, ok := extCapIDs[c]; !ok {
			return at(sub(f.path, "ext_caps"), "%s: unknown extended capability %q", f.Addr, c)
		}
		if seen[c] {
			return at(sub(f.path, "ext_caps"), "%s: extended capability %q listed twice", f.Addr, c)
		}
		seen[c] = true
		if c == "ACS" && f.ACS == nil {
			return at(sub(f.path, "ext_caps"), "%s: ext_caps lists ACS but the function has no acs", f.Addr)
		}
		end = (end + f.extCapSize(c) + 3) &^ 3
	}
	if f.ACS != nil && f.ExtCaps != nil && !seen["ACS"] {
		return at(sub(f.path, "ext_caps"), "%s: the function has acs but ext_caps does not list ACS", f.Addr)
	}
	if end > f.ConfigSize && len(f.ExtCaps) > 0 {
		return at(sub(f.path, "ext_caps"), "%s: the extended capabilities do not fit in config space", f.Addr)
	}
	if f.EFA != nil {
		if f.Kind != KindEndpoint || f.Vendor != 0x1d0f {
			return at(sub(f.path, "efa"), "%s: an EFA NIC is an Amazon (1d0f) endpoint", f.Addr)
		}
	}
	f.parent, f.physfn, f.root = parent, physfn, rb
	f.numaNode = rb.NUMANode
	if f.NUMANode != nil {
		f.numaNode = *f.NUMANode
	} else if physfn != nil {
		f.numaNode = physfn.numaNode
	}
	m.fns[f.Addr] = f
	return nil
}

// jsonNode is where one JSON value starts in a document, with its object
// members (by lower-case key, as encoding/json matches them) or array
// elements.
type jsonNode struct {
	off  int64
	obj  map[string]*jsonNode
	elem []*jsonNode
}

// jsonTree decodes data into a tree of start offsets. It stops quietly at
// the first syntax error with what it has.
func jsonTree(data []byte) *jsonNode {
	dec := json.NewDecoder(bytes.NewReader(data))
	n, _ := jsonValue(dec)
	return n
}

func jsonValue(dec *json.Decoder) (*jsonNode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	n := &jsonNode{off: dec.InputOffset()}
	switch tok {
	case json.Delim('{'):
		n.off--
		n.obj = map[string]*jsonNode{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return n, err
			}
			key, _ := kt.(string)
			v, err := jsonValue(dec)
			if v != nil {
				n.obj[strings.ToLower(key)] = v
			}
			if err != nil {
				return n, err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		n.off--
		for dec.More() {
			v, err := jsonValue(dec)
			if v != nil {
				n.elem = append(n.elem, v)
			}
			if err != nil {
				return n, err
			}
		}
		_, err = dec.Token()
	}
	return n, err
}

// lineAt returns the 1-based line where the element at path starts, or
// where its deepest existing ancestor starts (line 1 at worst).
func lineAt(data []byte, path []any) int {
	n := jsonTree(data)
	if n == nil {
		return 1
	}
	off := n.off
	for _, p := range path {
		var next *jsonNode
		switch k := p.(type) {
		case string:
			next = n.obj[k]
		case int:
			if k >= 0 && k < len(n.elem) {
				next = n.elem[k]
			}
		}
		if next == nil {
			break
		}
		n, off = next, next.off
	}
	if off < 0 {
		off = 0
	}
	return lineOf(data, off, nil)
}

// decodeErrorLine returns the line a decoding error is about. Syntax and
// type errors carry their offset. Others come from a value's own
// unmarshaler (an address, a hex number, a map type) or from an unknown
// field, and name the offending string: the first key (for an unknown
// field) or string value (otherwise) that the message quotes is taken, in
// document order, which is the order the decoder met them.
func decodeErrorLine(data []byte, off int64, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return lineOf(data, off, err)
	}
	msg := err.Error()
	key := ""
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		if k, err := strconv.Unquote(rest); err == nil {
			key = k
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	// Track whether the next string token in an object is a key.
	type frame struct {
		obj     bool
		wantKey bool
	}
	var stack []frame
	for {
		tok, terr := dec.Token()
		if terr != nil {
			break
		}
		isKey := false
		if n := len(stack); n > 0 && stack[n-1].obj {
			isKey = stack[n-1].wantKey
			stack[n-1].wantKey = !stack[n-1].wantKey
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{obj: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
				// The closing delimiter ended a value: in an object the
				// next string is a key again (already toggled above for
				// this value's start, so set it).
				if n := len(stack); n > 0 && stack[n-1].obj {
					stack[n-1].wantKey = true
				}
			}
		case string:
			if key != "" && isKey && t == key {
				return lineOf(data, dec.InputOffset(), nil)
			}
			if key == "" && !isKey && strings.Contains(msg, strconv.Quote(t)) {
				return lineOf(data, dec.InputOffset(), nil)
			}
		}
	}
	return lineOf(data, off, err)
}
