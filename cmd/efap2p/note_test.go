// SPDX-License-Identifier: MIT

package main

import (
	"strings"
	"testing"
)

// TestNoteOncePerReport: what no verdict can see (a NIC's firmware that
// blocks peers) is said once per report, not in every pair's reason: once
// in check's text and JSON, once in explain's, never in the topology file.
func TestNoteOncePerReport(t *testing.T) {
	tree := writeTree(t, "p5.48xlarge")
	const note = "firmware allows peer access cannot be seen in sysfs"
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"check", "--sysfs", tree}, 1},
		{[]string{"check", "--sysfs", tree, "--json"}, 1},
		{[]string{"explain", "--sysfs", tree, "GPU0", "NIC0"}, 1},
		{[]string{"explain", "--sysfs", tree, "--json", "GPU0", "NIC0"}, 1},
		{[]string{"export", "--sysfs", tree}, 0},
	} {
		_, out, _ := runTool(tc.args...)
		// the text reports wrap it: compare with the lines joined
		flat := strings.Join(strings.Fields(out), " ")
		if got := strings.Count(flat, note); got != tc.want {
			t.Errorf("efap2p %s: the firmware note %d times; want %d", strings.Join(tc.args[:1], " "), got, tc.want)
		}
	}
}
