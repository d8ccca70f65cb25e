// SPDX-License-Identifier: MIT

package models

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/p2p"
)

const hostFields = `  "dmi": {"sys_vendor": "Amazon EC2", "product_name": "tiny.1xlarge"},
  "modules": [
    {"name": "ib_uverbs"},
    {"name": "efa", "version": "2.17.3g", "out_of_tree": true, "p2p": "NVIDIA"}
  ],
`

func tinyWithHost(t *testing.T, fields string) (*Machine, error) {
	t.Helper()
	return Parse([]byte(strings.Replace(tinyModel, `  "cpu":`, fields+`  "cpu":`, 1)), "tiny.json")
}

// TestHostWritten: DMI identity, modules and the out-of-tree driver's p2p
// attribute land where the kernel puts them.
func TestHostWritten(t *testing.T) {
	m, err := tinyWithHost(t, hostFields)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Write(dir, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"class/dmi/id/sys_vendor":                          "Amazon EC2\n",
		"class/dmi/id/product_name":                        "tiny.1xlarge\n",
		"devices/virtual/dmi/id/product_name":              "tiny.1xlarge\n",
		"module/efa/version":                               "2.17.3g\n",
		"module/efa/taint":                                 "O\n",
		"module/efa/initstate":                             "live\n",
		"module/ib_uverbs/taint":                           "\n",
		"bus/pci/devices/0000:01:00.0/p2p":                 "NVIDIA\n",
		"devices/pci0000:00/0000:00:01.1/0000:01:00.0/p2p": "NVIDIA\n",
	}
	for p, v := range want {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || string(b) != v {
			t.Errorf("%s: %q, %v; want %q", p, b, err, v)
		}
	}
	for _, p := range []string{"module/ib_uverbs/version", "bus/pci/devices/0000:01:00.1/p2p"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s exists", p)
		}
	}
	if target, err := os.Readlink(filepath.Join(dir, "class/dmi/id")); err != nil || target != "../../devices/virtual/dmi/id" {
		t.Errorf("class/dmi/id -> %q, %v", target, err)
	}

	// EC2's board asset tag: the instance ID, one per host of a fabric
	tag := func(host uint16) string {
		d := t.TempDir()
		if err := m.Write(d, WriteOptions{Host: host}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(d, "class/dmi/id/board_asset_tag"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	alone, first, second := tag(0), tag(1), tag(2)
	for _, id := range []string{alone, first, second} {
		// libfabric reads 16 hex digits after "i-0" (efa_get_host_id)
		if len(id) != len("i-0123456789abcdef0\n") || !strings.HasPrefix(id, "i-0") || !strings.HasSuffix(id, "\n") ||
			strings.Trim(id[3:19], "0123456789abcdef") != "" {
			t.Errorf("board_asset_tag %q: want i-0 and 16 hex digits", id)
		}
	}
	if alone == first || first == second || alone != tag(0) {
		t.Errorf("instance IDs of hosts 0, 1, 2: %q %q %q: want distinct and stable", alone, first, second)
	}
	other, err := tinyWithHost(t, strings.Replace(hostFields, "Amazon EC2", "QEMU", 1))
	if err != nil {
		t.Fatal(err)
	}
	if d := t.TempDir(); other.Write(d, WriteOptions{}) != nil {
		t.Fatal("write")
	} else if _, err := os.Lstat(filepath.Join(d, "class/dmi/id/board_asset_tag")); err == nil {
		t.Error("a machine that is not EC2's has an instance ID")
	}

	// A model without host fields writes neither DMI nor module/.
	plain, _ := Parse([]byte(tinyModel), "tiny.json")
	dir = t.TempDir()
	if err := plain.Write(dir, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"module", "class/dmi"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s written for a model without host fields", p)
		}
	}
}

func TestHostErrors(t *testing.T) {
	cases := []struct{ fields, want string }{
		{`  "modules": [{"name": "efa"}, {"name": "efa"}],` + "\n", "efa listed twice"},
		{`  "modules": [{"name": "ib-core"}],` + "\n", `name "ib-core"`},
		{`  "modules": [{"name": "nvidia", "p2p": "NVIDIA"}],` + "\n", "only on module efa with out_of_tree"},
		{`  "modules": [{"name": "efa", "p2p": "NVIDIA"}],` + "\n", "only on module efa with out_of_tree"},
		{`  "modules": [{"name": "efa", "out_of_tree": true, "p2p": "AMD"}],` + "\n", `p2p "AMD"`},
		{`  "modules": [{"name": "efa", "version": "1 2"}],` + "\n", `version "1 2"`},
		{`  "dmi": {"sys_vendor": "a\nb", "product_name": "x"},` + "\n", "one line"},
		{`  "dmi": {"vendor": "x"},` + "\n", `unknown field "vendor"`},
	}
	for _, c := range cases {
		_, err := tinyWithHost(t, c.fields)
		if err == nil || !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "tiny.json:") {
			t.Errorf("%q: error %v; want one naming the line and %q", c.fields, err, c.want)
		}
	}
}

// TestWithout: removing functions takes what is below them and the
// expected verdicts that named them; the copy is valid, the original
// untouched.
func TestWithout(t *testing.T) {
	m, err := Builtin("p5.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	gpu, nic, port := p2p.MustParseAddr("0000:53:00.0"), p2p.MustParseAddr("0000:4f:00.0"), p2p.MustParseAddr("0000:46:02.0")
	c, err := m.Without(nic, port)
	if err != nil {
		t.Fatal(err)
	}
	if c.Function(nic) != nil || c.Function(port) != nil || c.Function(p2p.MustParseAddr("0000:50:00.0")) != nil {
		t.Error("removed functions (and the NIC below the removed port) still there")
	}
	if c.Function(gpu) == nil || len(c.EFANICs()) != 30 || len(m.EFANICs()) != 32 {
		t.Errorf("copy has %d EFA NICs, original %d; want 30 and 32", len(c.EFANICs()), len(m.EFANICs()))
	}
	for _, p := range c.Pairs() {
		if p.Client == nic || p.Provider == nic {
			t.Fatalf("expected pair with a removed NIC: %+v", p)
		}
	}
	if c.DMI == nil || c.DMI.ProductName != "p5.48xlarge" || c.Module("efa") == nil {
		t.Error("host fields lost")
	}
	if _, err := m.Without(p2p.MustParseAddr("0000:ee:00.0")); err == nil {
		t.Error("removing a function the model lacks: no error")
	}
}
