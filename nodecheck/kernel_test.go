// SPDX-License-Identifier: MIT

package nodecheck

import (
	"strings"
	"testing"

	"github.com/efap2p/efap2p/p2p"
)

func TestParseRelease(t *testing.T) {
	tests := []struct {
		in           string
		major, minor int
		latest, bad  bool
	}{
		{"6.8.0-1015-aws", 6, 8, false, false},
		{"5.10.228-219.884.amzn2.x86_64", 5, 10, false, false},
		{"4.18.0-513.el8.x86_64", 4, 18, false, false},
		{"6.1", 6, 1, false, false},
		{"5.16-rc1", 5, 16, false, false},
		{"latest", 0, 0, true, false},
		{"", 0, 0, false, true},
		{"six.one", 0, 0, false, true},
		{"6", 0, 0, false, true},
		{"-1.2", 0, 0, false, true},
	}
	for _, tt := range tests {
		r, err := p2p.ParseRelease(tt.in)
		if (err != nil) != tt.bad || err == nil && (r.Major != tt.major || r.Minor != tt.minor || r.IsLatest() != tt.latest) {
			t.Errorf("p2p.ParseRelease(%q) = %+v, %v", tt.in, r, err)
		}
	}
}

// TestDMABufSupport: the releases by hand from the kernel's history
// (uverbs REG_DMABUF_MR in 5.12, EFA's reg_user_mr_dmabuf in 5.16) and
// the out-of-tree driver's release notes (dma-buf from 1.16.0).
func TestDMABufSupport(t *testing.T) {
	in := EFADriver{Kind: DriverInTree}
	oot := func(v string) EFADriver { return EFADriver{Kind: DriverOutOfTree, Version: v} }
	tests := []struct {
		kernel string
		drv    EFADriver
		ok     bool
		why    string
	}{
		{"5.11.0", in, false, "older than 5.12"},
		{"5.12.0", in, false, "older than 5.16"},
		{"5.15.0-1051-aws", in, false, "older than 5.16"},
		{"5.16.0", in, true, ""},
		{"6.8.0", in, true, ""},
		{"latest", in, true, ""},
		{"5.11.0", oot("2.17.3g"), false, "older than 5.12"},
		{"5.12.0", oot("2.17.3g"), true, ""},
		{"5.10.0", oot("2.17.3g"), false, "older than 5.12"},
		{"6.8.0", oot("1.15.3g"), false, "predates 1.16.0"},
		{"6.8.0", oot("1.16.0g"), true, ""},
		{"6.8.0", oot(""), true, ""},
		{"6.8.0", EFADriver{Kind: DriverUnknown}, true, ""},
		{"5.15.0", EFADriver{Kind: DriverUnknown}, false, "older than 5.16"},
		{"garbage", in, true, "not understood"},
	}
	for _, tt := range tests {
		got := dmabufSupport(tt.kernel, tt.drv)
		if got.Supported != tt.ok || !strings.Contains(got.Reason, tt.why) {
			t.Errorf("%s with %+v: %+v; want supported=%v, reason saying %q", tt.kernel, tt.drv, got, tt.ok, tt.why)
		}
	}
}

func TestParseDriverVersion(t *testing.T) {
	for in, want := range map[string][3]int{"2.17.3g": {2, 17, 3}, "580.65.06": {580, 65, 6}, "1.16": {1, 16, 0}} {
		if v, ok := parseDriverVersion(in); !ok || v != want {
			t.Errorf("%q: %v %v", in, v, ok)
		}
	}
	for _, in := range []string{"", "g", "1", "1.x.3", "1.2.3.4", "-1.2"} {
		if _, ok := parseDriverVersion(in); ok {
			t.Errorf("%q parsed", in)
		}
	}
}

// FuzzParseRelease: any string parses or fails cleanly, and a parsed
// release is at least itself.
func FuzzParseRelease(f *testing.F) {
	for _, s := range []string{"6.8.0-1015-aws", "latest", "5.10.228-219.884.amzn2.x86_64", "4.18", "", "9999999999999999999999.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := p2p.ParseRelease(s)
		if err != nil {
			return
		}
		if r.Major < 0 || r.Minor < 0 || !r.AtLeast(r) || !r.IsLatest() && !atLeast(r, [2]int{r.Major, r.Minor}) {
			t.Errorf("%q: %+v", s, r)
		}
		dmabufSupport(s, EFADriver{Kind: DriverOutOfTree, Version: s})
		parseDriverVersion(s)
	})
}
