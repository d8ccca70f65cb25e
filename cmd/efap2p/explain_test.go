// SPDX-License-Identifier: MIT

package main

import (
	"strings"
	"testing"
)

// TestExplainNames: explain takes what topo prints and what users type.
func TestExplainNames(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	verdict := func(p, c string) (int, string, string) {
		return runTool("explain", "--sysfs", dir, "--json", p, c)
	}
	_, want, _ := verdict("0000:53:00.0", "0000:4f:00.0")
	for _, pair := range [][2]string{{"GPU0", "NIC0"}, {"gpu0", "nic0"}, {"53:00.0", "rdmap79s0"}, {"GPU0", "4f:00.0"}} {
		code, out, errs := verdict(pair[0], pair[1])
		if code != 0 || out != want {
			t.Errorf("explain %s %s: exit %d, %s; want the verdict of 0000:53:00.0 0000:4f:00.0", pair[0], pair[1], code, errs)
		}
	}
	// NET0 is the ENA, 0000:00:05.0
	if code, out, _ := verdict("GPU0", "NET0"); code != 0 || !strings.Contains(out, `"client": "0000:00:05.0"`) {
		t.Errorf("explain GPU0 NET0: exit %d, %s", code, out)
	}
	for _, tc := range []struct{ arg, want string }{
		{"NIC32", "no device NIC32 on this machine (it has GPU0..GPU7, NIC0..NIC31, NET0)"},
		{"rdmap9s9", `"rdmap9s9" is not a PCI address`},
		{"../x", `"../x" is not a PCI address`},
	} {
		code, _, errs := verdict("GPU0", tc.arg)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("explain GPU0 %s: exit %d, %q; want exit 2 and %q", tc.arg, code, errs, tc.want)
		}
	}
}
