// SPDX-License-Identifier: MIT

package models

import (
	"encoding/binary"
	"fmt"
)

// ACPITable returns the model's binary ACPI table by signature ("HMAT",
// "SRAT"), laid out as the firmware lays it out (include/acpi/actbl1.h,
// actbl3.h in Leon Romanovsky's HMAT P2P series); nil when the model has
// no ACPI tables.
func (m *Machine) ACPITable(sig string) []byte {
	if m.ACPI == nil {
		return nil
	}
	switch sig {
	case "HMAT":
		return m.hmat()
	case "SRAT":
		return m.srat()
	}
	return nil
}

// acpiHeader writes the common ACPI table header of a table of n bytes and
// sets its checksum once the body is in place.
func acpiTable(sig string, revision uint8, body []byte, reserved int) []byte {
	b := make([]byte, 36+reserved, 36+reserved+len(body))
	copy(b[0:], sig)
	b[8] = revision
	copy(b[10:], "EFAP2P")
	copy(b[16:], "EFASIM  ")
	binary.LittleEndian.PutUint32(b[24:], 1)
	copy(b[28:], "EFAP")
	binary.LittleEndian.PutUint32(b[32:], 1)
	b = append(b, body...)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
	var sum byte
	for _, c := range b {
		sum += c
	}
	b[9] = -sum
	return b
}

func (m *Machine) hmat() []byte {
	a := m.ACPI
	rev := uint8(2)
	if a.HMATRevision != 0 {
		rev = uint8(a.HMATRevision)
	}
	le := binary.LittleEndian
	var body []byte
	for _, p := range a.P2P {
		n := 32 + 4*len(p.Initiators) + 4*len(p.Targets) + 2*len(p.Initiators)*len(p.Targets)
		s := make([]byte, n)
		le.PutUint16(s[0:], 3) // ACPI_HMAT_TYPE_P2P_LATENCY
		le.PutUint32(s[4:], uint32(n))
		for _, c := range p.Classes {
			if c == "non_uio" {
				s[8] |= 1
			} else {
				s[8] |= 2
			}
		}
		s[9] = hmatDataTypes[p.DataType]
		le.PutUint32(s[12:], uint32(len(p.Initiators)))
		le.PutUint32(s[16:], uint32(len(p.Targets)))
		le.PutUint64(s[24:], p.Base)
		off := 32
		for _, v := range p.Initiators {
			le.PutUint32(s[off:], v)
			off += 4
		}
		for _, v := range p.Targets {
			le.PutUint32(s[off:], v)
			off += 4
		}
		for _, row := range p.Entries {
			for _, v := range row {
				le.PutUint16(s[off:], v)
				off += 2
			}
		}
		body = append(body, s...)
	}
	return acpiTable("HMAT", rev, body, 4)
}

func (m *Machine) srat() []byte {
	a := m.ACPI
	le := binary.LittleEndian
	var body []byte
	for i, pd := range a.MemoryDomains {
		s := make([]byte, 40)
		s[0], s[1] = 1, 40 // ACPI_SRAT_TYPE_MEMORY_AFFINITY
		le.PutUint32(s[2:], pd)
		le.PutUint64(s[8:], uint64(i)<<36) // 64 GiB a domain
		le.PutUint64(s[16:], 1<<36)
		le.PutUint32(s[28:], 1) // enabled
		body = append(body, s...)
	}
	for _, g := range a.GenericPorts {
		s := make([]byte, 32)
		s[0], s[1] = 6, 32 // ACPI_SRAT_TYPE_GENERIC_PORT_AFFINITY
		s[3] = 0           // ACPI device handle
		le.PutUint32(s[4:], g.Domain)
		copy(s[8:16], g.HID)
		le.PutUint32(s[16:], g.UID)
		if g.Enabled == nil || *g.Enabled {
			le.PutUint32(s[24:], 1)
		}
		body = append(body, s...)
	}
	return acpiTable("SRAT", 3, body, 12)
}

// firmwareNodeName is the ACPI device directory of a host bridge's
// companion: "PNP0A08:02".
func firmwareNodeName(fn *FirmwareNode, i int) string { return fmt.Sprintf("%s:%02x", fn.HID, i) }
