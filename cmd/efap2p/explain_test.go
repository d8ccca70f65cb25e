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

// TestExplainNICFirst: a NIC typed as the provider and an accelerator as
// the client is the same pair as topo reads it (the accelerator owns the
// memory): explain answers for it, says so in one line on stderr, and
// gives the NIC's peer-memory path, not a wrong note about it; a count of
// one argument is "1 argument".
func TestExplainNICFirst(t *testing.T) {
	dir := writeTree(t, "arm64-grace-peermem")
	kernel := "--kernel=6.8.0-1021-nvidia-64k"
	code, want, errs := runTool("explain", "--sysfs", dir, kernel, "GPU0", "NIC0")
	if code != 0 || errs != "" {
		t.Fatalf("explain GPU0 NIC0: exit %d: %s", code, errs)
	}
	code, got, errs := runTool("explain", "--sysfs", dir, kernel, "NIC0", "GPU0")
	if code != 0 || got != want || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "'efap2p explain GPU0 NIC0'") {
		t.Errorf("explain NIC0 GPU0: exit %d, stderr %q; stdout the same as GPU0 NIC0's: %v\n%s", code, errs, got == want, got)
	}
	for _, w := range []string{"p2p           yes, by peer memory only (dma-buf: refused)", `peer memory   p2p (provider "NVIDIA" of the out-of-tree EFA driver)`} {
		if !strings.Contains(got, w) {
			t.Errorf("explain NIC0 GPU0 does not say %q:\n%s", w, got)
		}
	}
	if code, _, errs := runTool("explain", "--sysfs", dir, "GPU0"); code != 2 || !strings.Contains(errs, "(got 1 argument)") {
		t.Errorf("explain GPU0: exit %d, %q", code, errs)
	}
}
