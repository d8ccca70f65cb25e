// SPDX-License-Identifier: MIT

package models

import "encoding/binary"

// extCap is an extended capability the config space builder can place.
type extCap struct {
	id   uint16
	size int
}

// extCapIDs are the extended capabilities a model may list in ext_caps.
var extCapIDs = map[string]extCap{
	"AER":    {0x0001, 0x48},
	"VC":     {0x0002, 0x1c},
	"SN":     {0x0003, 0x0c},
	"ACS":    {0x000d, 0x08},
	"ARI":    {0x000e, 0x08},
	"ATS":    {0x000f, 0x08},
	"SRIOV":  {0x0010, 0x40},
	"LTR":    {0x0018, 0x08},
	"SECPCI": {0x0019, 0x10},
	"PASID":  {0x001b, 0x08},
	"DPC":    {0x001d, 0x48},
	"L1SS":   {0x001e, 0x10},
	"PTM":    {0x001f, 0x0c},
	"DLF":    {0x0025, 0x0c},
	"PL16":   {0x0026, 0x30},
}

// ExtCapList returns the function's extended capabilities in list order.
func (f *Function) ExtCapList() []string {
	if f.ConfigSize == 256 {
		return nil
	}
	if f.ExtCaps != nil {
		return f.ExtCaps
	}
	caps := []string{"AER"}
	if f.ACS != nil {
		caps = append(caps, "ACS")
	}
	if len(f.VFs) > 0 {
		caps = append(caps, "SRIOV")
	}
	return caps
}

// extCapSize is the size of one of the function's extended capabilities:
// ACS grows by its Egress Control Vector.
func (f *Function) extCapSize(name string) int {
	n := extCapIDs[name].size
	if name == "ACS" && f.ACS != nil {
		n += 4 * len(f.ACS.EgressVector)
	}
	return n
}

// linkSpeedCode is the PCIe Link Status speed field for a speed string.
func linkSpeedCode(s string) uint16 {
	switch {
	case len(s) >= 3 && s[:3] == "2.5":
		return 1
	case len(s) >= 3 && s[:3] == "5.0":
		return 2
	case len(s) >= 3 && s[:3] == "8.0":
		return 3
	case len(s) >= 4 && s[:4] == "16.0":
		return 4
	case len(s) >= 4 && s[:4] == "32.0":
		return 5
	case len(s) >= 4 && s[:4] == "64.0":
		return 6
	}
	return 0
}

// ConfigSpace builds the function's config space as the kernel's config
// file shows it to root: the header, a PCI Express capability at 0x40 (for
// PCIe kinds), and the extended capability list from 0x100.
func (m *Machine) ConfigSpace(f *Function) []byte {
	b := make([]byte, f.ConfigSize)
	le := binary.LittleEndian
	le.PutUint16(b[0x00:], uint16(f.Vendor))
	le.PutUint16(b[0x02:], uint16(f.Device))
	le.PutUint16(b[0x04:], 0x0406)             // memory space, bus master, INTx off
	le.PutUint32(b[0x08:], uint32(f.Class)<<8) // revision 0
	hdr := byte(0)
	if f.IsBridge() {
		hdr = 1
	}
	if m.multiFunction(f) {
		hdr |= 0x80
	}
	b[0x0e] = hdr
	if f.IsBridge() {
		b[0x18] = f.Addr.Bus
		if len(f.Children) > 0 {
			b[0x19] = f.Children[0].Addr.Bus
			b[0x1a] = subordinate(f)
		}
	} else {
		sv, sd := f.Vendor, f.Device
		if f.SubVendor != nil {
			sv = *f.SubVendor
		}
		if f.SubDevice != nil {
			sd = *f.SubDevice
		}
		le.PutUint16(b[0x2c:], uint16(sv))
		le.PutUint16(b[0x2e:], uint16(sd))
	}
	if pt := f.PortType(); pt >= 0 {
		le.PutUint16(b[0x06:], 0x0010) // status: capability list
		b[0x34] = 0x40
		b[0x40] = 0x10 // PCI Express, last in the list
		le.PutUint16(b[0x42:], uint16(pt)<<4|0x2)
		le.PutUint16(b[0x40+0x12:], linkSpeedCode(f.Link.Speed)|uint16(f.Link.Width&0x3f)<<4)
		// Link Capabilities: max speed and width, and the port number.
		le.PutUint32(b[0x40+0x0c:], uint32(linkSpeedCode(f.Link.Speed))|uint32(f.Link.Width&0x3f)<<4|uint32(f.PortNumber&0xff)<<24)
	}
	pos := 0x100
	caps := f.ExtCapList()
	for i, name := range caps {
		c := extCapIDs[name]
		next := 0
		if i+1 < len(caps) {
			next = pos + f.extCapSize(name)
			next = (next + 3) &^ 3
		}
		le.PutUint32(b[pos:], uint32(c.id)|1<<16|uint32(next)<<20)
		if name == "ACS" {
			capBits, ctrl, _ := f.ACSBits()
			for k, d := range f.ACS.EgressVector {
				le.PutUint32(b[pos+8+4*k:], uint32(d))
			}
			le.PutUint16(b[pos+4:], capBits)
			le.PutUint16(b[pos+6:], ctrl)
		}
		pos = next
	}
	return b
}

// multiFunction reports whether other functions share f's device number
// (its header type then has bit 7 set).
func (m *Machine) multiFunction(f *Function) bool {
	for fn := uint8(0); fn < 8; fn++ {
		a := f.Addr
		a.Function = fn
		if fn != f.Addr.Function && m.fns[a] != nil && m.fns[a].physfn == nil {
			return true
		}
	}
	return false
}

func subordinate(f *Function) uint8 {
	max := f.Addr.Bus
	var walk func(*Function)
	walk = func(g *Function) {
		if g.Addr.Bus > max {
			max = g.Addr.Bus
		}
		for _, v := range g.VFs {
			if v.Addr.Bus > max {
				max = v.Addr.Bus
			}
		}
		for _, c := range g.Children {
			walk(c)
		}
	}
	for _, c := range f.Children {
		walk(c)
	}
	return max
}
