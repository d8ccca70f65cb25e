// SPDX-License-Identifier: MIT

package models

import (
	"fmt"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/p2p"
)

func TestHostGID(t *testing.T) {
	for _, tc := range []struct {
		gid  string
		host uint16
		want string
		bad  bool
	}{
		{"fe80:0000:0000:0000:0000:0000:4f00:0001", 0, "fe80:0000:0000:0000:0000:0000:4f00:0001", false},
		{"fe80:0000:0000:0000:0000:0000:4f00:0001", 1, "fe80:0000:0000:0000:0001:0000:4f00:0001", false},
		{"fe80:0000:0000:0000:0000:0000:4f00:0001", 0xbeef, "fe80:0000:0000:0000:beef:0000:4f00:0001", false},
		{"fe80:0000:0000:0000:1234:0000:4f00:0001", 2, "fe80:0000:0000:0000:0002:0000:4f00:0001", false},
		{"fe80::1", 1, "", true},
		{"fe80:0000:0000:0000:0000:0000:4f00:00zz", 1, "", true},
		{"fe80:0000:0000:0000:0000:0000:4f00:001", 0, "", true},
	} {
		got, err := HostGID(tc.gid, tc.host)
		if tc.bad {
			if err == nil {
				t.Errorf("HostGID(%q, %d) = %q, want an error", tc.gid, tc.host, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("HostGID(%q, %d) = %q, %v; want %q", tc.gid, tc.host, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		guid string
		host uint16
		want string
	}{
		{"0000:0000:4f00:0001", 0, "0000:0000:4f00:0001"},
		{"0000:0000:4f00:0001", 3, "0003:0000:4f00:0001"},
		{"garbage", 3, "garbage"},
	} {
		if got := HostGUID(tc.guid, tc.host); got != tc.want {
			t.Errorf("HostGUID(%q, %d) = %q, want %q", tc.guid, tc.host, got, tc.want)
		}
	}
}

// FuzzHostGID: any input is an error or a GID of eight four-digit groups
// whose fifth is the host number and whose others are the input's.
func FuzzHostGID(f *testing.F) {
	f.Add("fe80:0000:0000:0000:0000:0000:4f00:0001", uint16(1))
	f.Add("fe80::1", uint16(0))
	f.Add("", uint16(65535))
	f.Fuzz(func(t *testing.T, gid string, host uint16) {
		got, err := HostGID(gid, host)
		if err != nil {
			return
		}
		in, out := strings.Split(gid, ":"), strings.Split(got, ":")
		if len(out) != 8 {
			t.Fatalf("HostGID(%q, %d) = %q", gid, host, got)
		}
		for i := range out {
			want := in[i]
			if i == 4 && host != 0 {
				want = fmt.Sprintf("%04x", host)
			}
			if out[i] != want || len(out[i]) != 4 {
				t.Fatalf("HostGID(%q, %d) = %q: group %d", gid, host, got, i)
			}
		}
	})
}

// What every model's EFA NICs report, against what the model's efa driver
// (the kernel's own, or AWS's out-of-tree one by version) makes of the
// device (efa_query_device, efa_query_port, efa_alloc_ucontext). The
// device_caps wanted are worked out by hand from each model's kernel, efa
// module and device_caps: CQ_WITH_SGID (0x08) always, since
// 6.1; CQ_WITH_EXT_MEM (0x80) always from 6.17; the device's RDMA_READ
// (0x01), RNR_RETRY (0x02), CQ_NOTIFICATIONS (0x04) since 6.1,
// DATA_POLLING_128 (0x10) and RDMA_WRITE (0x20) from 6.4,
// UNSOLICITED_WRITE_RECV (0x40) from 6.10.
func TestEFAAttrsAsTheDriverReports(t *testing.T) {
	want := map[string]uint32{
		"amd-efa-cpu-node":          0x0f, // 6.8, the default device
		"amd-zen-acs-switch":        0x8f, // 6.17
		"debian12-stock":            0x0f, // 6.1
		"arm64-devicetree":          0x8f, // 7.1.3
		"arm64-grace-peermem":       0x0f, // 6.8
		"hygon-hmat-p2p":            0x8f, // the newest rules
		"hyperv-vpci":               0x0f, // 6.8
		"intel-acs-switch":          0x0f, // 6.8
		"intel-e5-same-host-bridge": 0x0f, // 6.16: no CQ_WITH_EXT_MEM yet
		"intel-icelake-2rootbus":    0x0f, // 6.1
		"multi-domain":              0x8f, // 6.17
		"p4d.24xlarge":              0x0f, // 5.10, taken as 6.1
		"p5.48xlarge":               0x7f, // 6.8 with the out-of-tree efa 2.17.3g (6.13's ABI: UNSOLICITED_WRITE_RECV; no CQ_WITH_EXT_MEM on 6.8)
		"sriov-vfs-switch":          0x8f, // 6.17
		"trn2.48xlarge":             0x3f, // 6.8, in-tree: RDMA_WRITE and DATA_POLLING_128, not UNSOLICITED_WRITE_RECV
	}
	mtuEnum := func(mtu uint32) uint32 { // ib_mtu_int_to_enum, in bytes
		for _, m := range []uint32{4096, 2048, 1024, 512} {
			if mtu >= m {
				return m
			}
		}
		return 256
	}
	seen := map[string]bool{}
	for _, name := range BuiltinNames() {
		m, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m.EFANICs() {
			seen[name] = true
			at := m.EFAAttrs(f)
			rel, _ := m.EFADriverRelease()
			got, err := at.ReportedCaps(rel)
			if err != nil {
				t.Fatalf("%s %s: %v", name, f.Addr, err)
			}
			w, ok := want[name]
			if !ok {
				t.Errorf("%s: no hand-worked device_caps for this model", name)
			} else if got != w {
				t.Errorf("%s %s: device_caps %#x, want %#x", name, f.Addr, got, w)
			}
			// efa_query_port: max_msg_sz is the device's MTU, and the port
			// MTUs are ib_mtu_int_to_enum of it
			if at.PortMTU != mtuEnum(at.MaxMsgSz) {
				t.Errorf("%s %s: port MTU %d for max_msg_sz %d, want %d", name, f.Addr, at.PortMTU,
					at.MaxMsgSz, mtuEnum(at.MaxMsgSz))
			}
			// max_mr_pages * PAGE_SIZE
			if at.MaxMRSize%4096 != 0 {
				t.Errorf("%s %s: max_mr_size %#x is not a number of pages", name, f.Addr, at.MaxMRSize)
			}
			// libefa 44 cannot use a one-entry SQ's batch of 0
			if at.MinSQWR < 2 {
				t.Errorf("%s %s: min_sq_wr %d", name, f.Addr, at.MinSQWR)
			}
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s: in the table, but not a model with EFA NICs", name)
		}
	}
}

// The driver's bits by release: what it always sets and what it passes on.
func TestDriverCaps(t *testing.T) {
	for _, c := range []struct {
		release        string
		always, relays uint32
	}{
		{"5.10.230-223.885.amzn2.x86_64", 0x08, 0x07},
		{"6.1.0-28-amd64", 0x08, 0x07},
		{"6.3", 0x08, 0x07},
		{"6.4.0", 0x08, 0x37},
		{"6.9.12", 0x08, 0x37},
		{"6.10", 0x08, 0x77},
		{"6.16.0-1-amd64", 0x08, 0x77},
		{"6.17.0-6-generic", 0x88, 0x77},
		{"latest", 0x88, 0x77},
	} {
		always, known := DriverCaps(p2p.MustParseRelease(c.release))
		if always != c.always || known != c.relays {
			t.Errorf("%s: always %#x relays %#x, want %#x %#x", c.release, always, known, c.always, c.relays)
		}
	}
}

// The upstream release whose efa driver answers as the model's does: the
// kernel's own in-tree, by version out-of-tree (amzn-drivers release notes:
// 2.4.0 RDMA write, 2.8.0 query MR, 2.10.0 unsolicited write receives, 2.13.0
// service level, 2.17.0 CQs with external memory, which need a 6.17 kernel).
func TestEFADriverRelease(t *testing.T) {
	tests := []struct {
		kernel, version string
		outOfTree       bool
		want, name      string
	}{
		{"6.8.0-1021-aws", "", false, "6.8.0-1021-aws", "in-tree"},
		{"5.10.230-223.885.amzn2.x86_64", "", false, "5.10.230-223.885.amzn2.x86_64", "in-tree"},
		{"6.8.0-1021-aws", "2.17.3g", true, "6.13.0", "out-of-tree 2.17.3g"},
		{"6.17.0-6-generic", "2.17.3g", true, "6.17.0", "out-of-tree 2.17.3g"},
		{"6.8.0-1021-aws", "2.13.1", true, "6.13.0", "out-of-tree 2.13.1"},
		{"6.1.0-28-amd64", "2.10.0", true, "6.10.0", "out-of-tree 2.10.0"},
		{"5.10.230-223.885.amzn2.x86_64", "2.8.0", true, "6.8.0", "out-of-tree 2.8.0"},
		{"6.8.0-1021-aws", "2.6.0", true, "6.4.0", "out-of-tree 2.6.0"},
		{"6.8.0-1021-aws", "1.16.0", true, "6.1.0", "out-of-tree 1.16.0"},
		{"6.8.0-1021-aws", "3.1.0", true, "6.13.0", "out-of-tree 3.1.0"},
		// a version that is no version, or a module without one: the kernel's
		{"6.8.0-1021-aws", "git", true, "6.8.0-1021-aws", "in-tree"},
		{"6.8.0-1021-aws", "", true, "6.8.0-1021-aws", "in-tree"},
	}
	for _, tt := range tests {
		t.Run(tt.kernel+"/"+tt.version, func(t *testing.T) {
			m, err := Builtin("p5.48xlarge")
			if err != nil {
				t.Fatal(err)
			}
			m.Kernel = p2p.MustParseRelease(tt.kernel)
			mod := m.Host.Module("efa")
			mod.Version, mod.OutOfTree = tt.version, tt.outOfTree
			rel, name := m.EFADriverRelease()
			if rel.String() != tt.want || name != tt.name {
				t.Errorf("got %s %q, want %s %q", rel, name, tt.want, tt.name)
			}
		})
	}
}
