// SPDX-License-Identifier: MIT

package models

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/efap2p/efap2p/internal/modversion"
	"github.com/efap2p/efap2p/p2p"
)

// EFA holds an EFA NIC's identity and the attributes the emulated kernel
// reports for it. In efa_defaults every field applies to every NIC; in a
// NIC's own efa object, set fields override the defaults. Zero means
// "unset" (then the built-in default below applies).
type EFA struct {
	// IBDev is the verbs device name; by default "rdmap<bus>s<slot>" in
	// decimal, as the efa driver names it ("rdmap79s0" for 4f:00.0).
	IBDev string `json:"ibdev,omitempty"`
	// PeerAccessBlocked: the NIC's firmware refuses DMA to every peer.
	// Invisible in sysfs; only a topology file or the ACPI table can say.
	PeerAccessBlocked bool `json:"peer_access_blocked,omitempty"`
	// P2P is the out-of-tree EFA driver's p2p attribute on the NIC's PCI
	// function: its peer-memory provider ("NVIDIA", "NVIDIA peermem",
	// "NEURON", or "" for none). Absent: the in-tree driver, which has no
	// such attribute.
	P2P *string `json:"p2p,omitempty"`
	// PortState is port 1's state as ib_core reports it: "ACTIVE"
	// (default) or "DOWN" (the link is down: no traffic).
	PortState string `json:"port_state,omitempty"`

	FWVer        string `json:"fw_ver,omitempty"`
	NodeGUID     string `json:"node_guid,omitempty"` // "0000:0000:0000:0000" form
	BoardID      string `json:"board_id,omitempty"`
	MaxQP        uint32 `json:"max_qp,omitempty"`
	MaxCQ        uint32 `json:"max_cq,omitempty"`
	MaxCQE       uint32 `json:"max_cqe,omitempty"`
	MaxMR        uint32 `json:"max_mr,omitempty"`
	MaxPD        uint32 `json:"max_pd,omitempty"`
	MaxAH        uint32 `json:"max_ah,omitempty"`
	MaxMRSize    uint64 `json:"max_mr_size,omitempty"`
	PageSizeCap  uint64 `json:"page_size_cap,omitempty"`
	MaxSQWR      uint32 `json:"max_sq_wr,omitempty"`
	MaxRQWR      uint32 `json:"max_rq_wr,omitempty"`
	MaxSQSGE     uint16 `json:"max_sq_sge,omitempty"`
	MaxRQSGE     uint16 `json:"max_rq_sge,omitempty"`
	MaxWRRDMASGE uint16 `json:"max_wr_rdma_sge,omitempty"`
	MaxRDMASize  uint32 `json:"max_rdma_size,omitempty"`
	InlineBuf    uint16 `json:"inline_buf_size,omitempty"`
	MaxLLQSize   uint32 `json:"max_llq_size,omitempty"`
	SubCQsPerCQ  uint16 `json:"sub_cqs_per_cq,omitempty"`
	MaxTxBatch   uint16 `json:"max_tx_batch,omitempty"`
	MinSQWR      uint16 `json:"min_sq_wr,omitempty"`
	// DeviceCaps are what the device itself offers, by the names of the
	// kernel's EFA_QUERY_DEVICE_CAPS_* bits: RDMA_READ, RNR_RETRY,
	// CQ_NOTIFICATIONS (the device has event queues), DATA_POLLING_128,
	// RDMA_WRITE, UNSOLICITED_WRITE_RECV, COMP_CNTR, SQ_64_BIT_REQ_ID.
	// What efa_query_device reports is ReportedCaps: those the machine's
	// kernel knows, plus the bits its driver sets for every device
	// (CQ_WITH_SGID, CQ_WITH_EXT_MEM), which a model need not list.
	DeviceCaps []string `json:"device_caps,omitempty"`
	// Port attributes.
	PortMTU  uint32 `json:"port_mtu,omitempty"` // bytes: 4096 or 8192 ...
	MaxMsgSz uint32 `json:"max_msg_sz,omitempty"`
	GID      string `json:"gid,omitempty"` // GID 0; derived from the address when unset
}

// KernelCapBits are the efa driver's device_caps bits (rdma/efa-abi.h).
var KernelCapBits = map[string]uint32{
	"RDMA_READ":              1 << 0,
	"RNR_RETRY":              1 << 1,
	"CQ_NOTIFICATIONS":       1 << 2,
	"CQ_WITH_SGID":           1 << 3,
	"DATA_POLLING_128":       1 << 4,
	"RDMA_WRITE":             1 << 5,
	"UNSOLICITED_WRITE_RECV": 1 << 6,
	"CQ_WITH_EXT_MEM":        1 << 7,
	"COMP_CNTR":              1 << 8,
	"SQ_64_BIT_REQ_ID":       1 << 9,
}

// builtinEFA are the attributes of an EFA NIC a model does not set; they
// follow what the efa driver reports on current instances.
var builtinEFA = EFA{
	FWVer:        "0.0.0.0",
	MaxQP:        256,
	MaxCQ:        512,
	MaxCQE:       32768,
	MaxMR:        262144,
	MaxPD:        256,
	MaxAH:        1024,
	MaxMRSize:    0x3fffff000000, // max_mr_pages * 4 KiB
	PageSizeCap:  0xfffff000,
	MaxSQWR:      4096,
	MaxRQWR:      32768,
	MaxSQSGE:     2,
	MaxRQSGE:     3,
	MaxWRRDMASGE: 1,
	MaxRDMASize:  1 << 30,
	InlineBuf:    32,
	MaxLLQSize:   4096 * 128,
	SubCQsPerCQ:  1,
	MaxTxBatch:   16,
	// The device's minimum SQ depth (min_sq_depth, passed on as is by the
	// driver). libefa 44 cannot use a depth of 1: a one-entry SQ gets a
	// doorbell batch of 0 and its WQE copy runs off the heap, so a device
	// reports at least 2.
	MinSQWR:    2,
	DeviceCaps: []string{"RDMA_READ", "RNR_RETRY", "CQ_NOTIFICATIONS"},
	PortMTU:    4096,
	MaxMsgSz:   0x2260,
}

// IBDev returns the NIC's verbs device name.
func (f *Function) IBDev() string {
	if f.EFA != nil && f.EFA.IBDev != "" {
		return f.EFA.IBDev
	}
	return fmt.Sprintf("rdmap%ds%d", f.Addr.Bus, f.Addr.Device)
}

// EFAAttrs returns the NIC's attributes: its own, then the machine's
// defaults, then the built-in ones.
func (m *Machine) EFAAttrs(f *Function) EFA {
	out := builtinEFA
	if m.EFADefaults != nil {
		overlay(&out, m.EFADefaults)
	}
	if f.EFA != nil {
		overlay(&out, f.EFA)
	}
	out.IBDev = f.IBDev()
	if out.NodeGUID == "" {
		// Unique per NIC: the PCI address in the low bytes.
		out.NodeGUID = fmt.Sprintf("0000:0000:%04x:%02x%02x", f.Addr.Domain&0xffff, f.Addr.Bus, f.Addr.DevFn())
	}
	if out.GID == "" {
		out.GID = fmt.Sprintf("fe80:0000:0000:0000:0000:%04x:%02x%02x:0001", f.Addr.Domain&0xffff, f.Addr.Bus, f.Addr.DevFn())
	}
	return out
}

// HostGID returns gid ("fe80:0000:...:0001", eight groups of four hex
// digits) as it reads on host number host of a fabric: its fifth group
// (bytes 8-9) is the host number. Host 0 (no fabric) leaves it unchanged.
func HostGID(gid string, host uint16) (string, error) {
	groups := strings.Split(gid, ":")
	if len(groups) != 8 {
		return "", fmt.Errorf("GID %q: want eight groups of four hex digits", gid)
	}
	for _, g := range groups {
		if _, err := hex.DecodeString(g); err != nil || len(g) != 4 {
			return "", fmt.Errorf("GID %q: want eight groups of four hex digits", gid)
		}
	}
	if host == 0 {
		return gid, nil
	}
	groups[4] = fmt.Sprintf("%04x", host)
	return strings.Join(groups, ":"), nil
}

// HostGUID returns a node GUID ("0000:0000:4f00:0001" form) as it reads on
// host number host: its first group is the host number.
func HostGUID(guid string, host uint16) string {
	groups := strings.Split(guid, ":")
	if host == 0 || len(groups) != 4 {
		return guid
	}
	groups[0] = fmt.Sprintf("%04x", host)
	return strings.Join(groups, ":")
}

// EFAAttrsOn returns the NIC's attributes on host number host of a fabric
// (EFAAttrs, with HostGID and HostGUID applied).
func (m *Machine) EFAAttrsOn(f *Function, host uint16) (EFA, error) {
	at := m.EFAAttrs(f)
	gid, err := HostGID(at.GID, host)
	if err != nil {
		return at, fmt.Errorf("%s: %w", f.Addr, err)
	}
	at.GID = gid
	at.NodeGUID = HostGUID(at.NodeGUID, host)
	return at, nil
}

// efaDriver is what efa_query_device (drivers/infiniband/hw/efa/efa_verbs.c)
// puts in device_caps, by the release that brought it: always, the bits
// it sets for every device; relayed, the device's own bits it knows (and
// CQ_NOTIFICATIONS when the device has event queues). 6.1 and 6.12 as
// read in Debian's linux-source-6.1 (6.1.192) and -6.12 (6.12.117); the
// others by the patches that added them: DATA_POLLING_128 (February
// 2023) and RDMA_WRITE (April 2023) in 6.4, UNSOLICITED_WRITE_RECV (May
// 2024) in 6.10, CQ_WITH_EXT_MEM (July 2025) in 6.17, each merged for
// that release (so in its rc1). A release older than 6.1 is taken as 6.1,
// the oldest read.
var efaDriver = []struct {
	since           p2p.Release
	always, relayed uint32
}{
	{p2p.MustParseRelease("6.1"), KernelCapBits["CQ_WITH_SGID"],
		KernelCapBits["RDMA_READ"] | KernelCapBits["RNR_RETRY"] | KernelCapBits["CQ_NOTIFICATIONS"]},
	{p2p.MustParseRelease("6.4-rc1"), 0, KernelCapBits["DATA_POLLING_128"] | KernelCapBits["RDMA_WRITE"]},
	{p2p.MustParseRelease("6.10-rc1"), 0, KernelCapBits["UNSOLICITED_WRITE_RECV"]},
	{p2p.MustParseRelease("6.17-rc1"), KernelCapBits["CQ_WITH_EXT_MEM"], 0},
}

// DriverCaps returns the device_caps bits the efa driver of kernel release
// k sets for every device (always) and the device's bits it passes on
// (known); ReportedCaps is always | (the device's & known).
func DriverCaps(k p2p.Release) (always, known uint32) {
	for i, d := range efaDriver {
		if i == 0 || k.AtLeast(d.since) {
			always |= d.always
			known |= d.relayed
		}
	}
	return always, known
}

// amznEFA is, for AWS's out-of-tree efa driver (amzn-drivers,
// kernel/linux/efa, its RELEASENOTES.md and efa_verbs.c at each tag), the
// first version with each part of the efa ABI and the upstream release that
// brought the same: RDMA write and data polling in 2.4.0 (6.4), the query-MR
// method in 2.8.0 (6.8), unsolicited write-with-immediate receives and the
// create-QP flags in 2.10.0 (6.10), the QP service level in 2.13.0 (6.13),
// CQs with external memory in 2.17.0 (6.17; only on a kernel with the uverbs
// attributes it needs, which upstream has from 6.17).
var amznEFA = []struct {
	version [3]int
	like    p2p.Release
}{
	{[3]int{2, 4, 0}, p2p.MustParseRelease("6.4")},
	{[3]int{2, 8, 0}, p2p.MustParseRelease("6.8")},
	{[3]int{2, 10, 0}, p2p.MustParseRelease("6.10")},
	{[3]int{2, 13, 0}, p2p.MustParseRelease("6.13")},
	{[3]int{2, 17, 0}, p2p.MustParseRelease("6.17")},
}

// driverVersion parses an out-of-tree module version ("2.17.3g": the
// digits of each dot-separated part).
func driverVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return v, false
	}
	for i, p := range parts {
		n := 0
		digits := 0
		for _, c := range p {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
			digits++
		}
		if digits == 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// EFADriverRelease returns the upstream kernel release whose efa driver
// answers as the model's does (its ABI: the device_caps bits it reports, the
// fields of its commands, its methods). The in-tree driver is the kernel's
// own: the model's kernel release. AWS's out-of-tree driver (a module efa,
// out_of_tree, with a version) is the release whose features that version
// has (amznEFA; the 6.1 rules before 2.4.0), but no newer than 6.13 on a
// kernel older than 6.17, whose uverbs lacks what the driver's CQs with
// external memory need. The second result names the driver ("in-tree", or
// "out-of-tree VERSION").
func (m *Machine) EFADriverRelease() (p2p.Release, string) {
	k := m.KernelRelease()
	mod := m.Host.Module("efa")
	if mod == nil || !mod.OutOfTree || mod.Version == "" {
		return k, "in-tree"
	}
	v, ok := driverVersion(mod.Version)
	if !ok {
		return k, "in-tree"
	}
	rel := p2p.MustParseRelease("6.1")
	for _, a := range amznEFA {
		if !modversion.Less(v, a.version) {
			rel = a.like
		}
	}
	if rel.AtLeast(p2p.MustParseRelease("6.17")) && !k.AtLeast(p2p.MustParseRelease("6.17")) {
		rel = p2p.MustParseRelease("6.13")
	}
	return rel, "out-of-tree " + mod.Version
}

// ReportedCaps returns what efa_query_device reports in device_caps for a
// device with these DeviceCaps under an efa driver of release k (the
// model's EFADriverRelease).
func (e *EFA) ReportedCaps(k p2p.Release) (uint32, error) {
	dev, err := e.KernelCaps()
	if err != nil {
		return 0, err
	}
	always, known := DriverCaps(k)
	return always | dev&known, nil
}

// KernelCaps returns DeviceCaps as the kernel's bit mask.
func (e *EFA) KernelCaps() (uint32, error) {
	var v uint32
	for _, n := range e.DeviceCaps {
		b, ok := KernelCapBits[strings.ToUpper(n)]
		if !ok {
			return 0, fmt.Errorf("unknown EFA device cap %q", n)
		}
		v |= b
	}
	return v, nil
}

func overlay(dst, src *EFA) {
	setS := func(d *string, s string) {
		if s != "" {
			*d = s
		}
	}
	set32 := func(d *uint32, s uint32) {
		if s != 0 {
			*d = s
		}
	}
	set16 := func(d *uint16, s uint16) {
		if s != 0 {
			*d = s
		}
	}
	set64 := func(d *uint64, s uint64) {
		if s != 0 {
			*d = s
		}
	}
	setS(&dst.IBDev, src.IBDev)
	setS(&dst.PortState, src.PortState)
	if src.P2P != nil {
		dst.P2P = src.P2P
	}
	dst.PeerAccessBlocked = dst.PeerAccessBlocked || src.PeerAccessBlocked
	setS(&dst.FWVer, src.FWVer)
	setS(&dst.NodeGUID, src.NodeGUID)
	setS(&dst.BoardID, src.BoardID)
	set32(&dst.MaxQP, src.MaxQP)
	set32(&dst.MaxCQ, src.MaxCQ)
	set32(&dst.MaxCQE, src.MaxCQE)
	set32(&dst.MaxMR, src.MaxMR)
	set32(&dst.MaxPD, src.MaxPD)
	set32(&dst.MaxAH, src.MaxAH)
	set64(&dst.MaxMRSize, src.MaxMRSize)
	set64(&dst.PageSizeCap, src.PageSizeCap)
	set32(&dst.MaxSQWR, src.MaxSQWR)
	set32(&dst.MaxRQWR, src.MaxRQWR)
	set16(&dst.MaxSQSGE, src.MaxSQSGE)
	set16(&dst.MaxRQSGE, src.MaxRQSGE)
	set16(&dst.MaxWRRDMASGE, src.MaxWRRDMASGE)
	set32(&dst.MaxRDMASize, src.MaxRDMASize)
	set16(&dst.InlineBuf, src.InlineBuf)
	set32(&dst.MaxLLQSize, src.MaxLLQSize)
	set16(&dst.SubCQsPerCQ, src.SubCQsPerCQ)
	set16(&dst.MaxTxBatch, src.MaxTxBatch)
	set16(&dst.MinSQWR, src.MinSQWR)
	if src.DeviceCaps != nil {
		dst.DeviceCaps = src.DeviceCaps
	}
	set32(&dst.PortMTU, src.PortMTU)
	set32(&dst.MaxMsgSz, src.MaxMsgSz)
	setS(&dst.GID, src.GID)
}
