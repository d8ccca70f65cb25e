// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/efap2p/efap2p/internal/acpitab"
)

// acpiTable reads a binary ACPI table from firmware/acpi/tables/<sig>;
// nil when the machine has none.
func (s *Sysfs) acpiTable(sig string) ([]byte, error) {
	s.attrReads.Add(1)
	b, err := readFileLimited(filepath.Join(s.root, "firmware/acpi/tables", sig), acpitab.MaxTableSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// hostBridgeFirmware reads the _HID and _UID of a root bus's host bridge
// from its firmware_node (devices/.../pciDDDD:BB/firmware_node).
func (s *Sysfs) hostBridgeFirmware(r RootBus) (string, string, bool, error) {
	dir := filepath.Join(s.rootDir(r), "firmware_node")
	uid, err := s.readAttr(filepath.Join(dir, "uid"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	hid, _ := s.readAttr(filepath.Join(dir, "hid"))
	return hid, uid, true, nil
}

// acpiState is what a Topology has read of the ACPI tables, once.
type acpiState struct {
	once sync.Once
	loc  *acpitab.Localities // nil without an HMAT
	srat *acpitab.SRAT       // nil without an SRAT
	// err is why the tables cannot be used (unreadable without root,
	// malformed); nil when they are fine or absent.
	err error
}

func (t *Topology) acpiTables() *acpiState {
	st := &t.acpiOnce
	st.once.Do(func() {
		src, ok := t.ext.(acpiSource)
		if !ok {
			return
		}
		h, err := src.ACPITable("HMAT")
		if err != nil {
			st.err = fmt.Errorf("ACPI HMAT: %w", err)
			return
		}
		if h == nil {
			return
		}
		hm, err := acpitab.ParseHMAT(h)
		if err != nil {
			st.err = err
			return
		}
		sr, err := src.ACPITable("SRAT")
		if err != nil {
			st.err = fmt.Errorf("ACPI SRAT: %w", err)
			return
		}
		if sr != nil {
			if st.srat, err = acpitab.ParseSRAT(sr); err != nil {
				st.err = err
				return
			}
		}
		st.loc = hm.Localities()
	})
	return st
}

// hostBridgeDomain is the kernel's pci_host_bridge_pxm: the proximity
// domain of a root bus's host bridge, through its ACPI companion's _UID
// and the SRAT generic ports.
func (t *Topology) hostBridgeDomain(r RootBus) (uint32, string, bool) {
	t.mu.Lock()
	if e, ok := t.pxms[r]; ok {
		t.mu.Unlock()
		return e.pd, e.why, e.ok
	}
	t.mu.Unlock()
	e := pxmEntry{}
	src, _ := t.ext.(acpiSource)
	st := t.acpiTables()
	switch {
	case src == nil:
		e.why = "the source has no ACPI tables"
	case st.srat == nil:
		e.why = "the machine has no SRAT"
	default:
		hid, uid, ok, err := src.HostBridgeFirmware(r)
		switch {
		case err != nil:
			e.why = fmt.Sprintf("the ACPI companion of %s cannot be read: %v", r, err)
		case !ok:
			e.why = fmt.Sprintf("the host bridge of %s has no ACPI companion (firmware_node)", r)
		default:
			n, err := acpitab.ParseUID(uid)
			if err != nil {
				e.why = fmt.Sprintf("the host bridge of %s (%s): %v", r, hid, err)
				break
			}
			pd, found := st.srat.GenericPortDomain(n)
			if !found {
				e.why = fmt.Sprintf("no SRAT generic port has _UID %d (the host bridge of %s, %s)", n, r, hid)
				break
			}
			e.pd, e.ok = pd, true
			e.why = fmt.Sprintf("%s (%s _UID %d) is proximity domain %d", r, hid, n, pd)
		}
	}
	t.mu.Lock()
	if t.pxms == nil {
		t.pxms = map[RootBus]pxmEntry{}
	}
	t.pxms[r] = e
	t.mu.Unlock()
	return e.pd, e.why, e.ok
}

type pxmEntry struct {
	pd  uint32
	ok  bool
	why string
}

// hmatDecision is what the HMAT says of a path from the client's host
// bridge (initiator) to the provider's (target).
type hmatDecision struct {
	coord   acpitab.Coordinates
	allowed bool // a reachable ordered (non-UIO) path
	known   bool // false: the tables exist but could not be read
	why     string
}

// hmatPath looks the path up as the series' host_bridge_hmat_p2p does.
func (t *Topology) hmatPath(pr, cr RootBus) hmatDecision {
	st := t.acpiTables()
	if st.err != nil {
		return hmatDecision{why: st.err.Error() + " (the ACPI tables are readable by root only: export a topology file as root for a certain answer)"}
	}
	if st.loc == nil {
		return hmatDecision{known: true, why: "the machine has no ACPI HMAT"}
	}
	ini, whyI, okI := t.hostBridgeDomain(cr)
	tgt, whyT, okT := t.hostBridgeDomain(pr)
	if !okI || !okT {
		why := whyI
		if okI {
			why = whyT
		}
		return hmatDecision{known: true, why: why}
	}
	c, err := st.loc.Coordinates(ini, tgt, acpitab.NonUIO)
	if err != nil {
		return hmatDecision{known: true, why: err.Error()}
	}
	return hmatDecision{coord: c, allowed: true, known: true,
		why: fmt.Sprintf("the ACPI HMAT describes a reachable ordered P2P path from %s to %s (%s; %s)", cr, pr, whyI, whyT)}
}
