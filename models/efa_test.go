// SPDX-License-Identifier: MIT

package models

import (
	"fmt"
	"strings"
	"testing"
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
