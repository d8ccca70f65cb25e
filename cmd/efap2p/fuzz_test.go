// SPDX-License-Identifier: MIT

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzExplainArgument: whatever a user types as a device, explain answers
// the verdict (exit 0, JSON) or one line of error (exit 2); it never
// panics, hangs or reads outside the tree.
func FuzzExplainArgument(f *testing.F) {
	dir := writeTree(f, "p5.48xlarge")
	for _, s := range []string{"GPU0", "nic31", "NET0", "rdmap79s0", "53:00.0", "0000:4f:00.0", "NIC99999999999", "../../../etc", "", "-x", "GPU", "acc0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		code, out, errs := runTool("explain", "--sysfs", dir, "--json", "GPU0", arg)
		switch code {
		case 0:
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil || v["client"] == nil {
				t.Fatalf("explain GPU0 %q: exit 0 but %q", arg, out)
			}
		case 2:
			if out != "" || errs == "" || (strings.Count(errs, "\n") > 1 && !strings.Contains(errs, "\nTry 'efap2p explain --help'")) {
				t.Fatalf("explain GPU0 %q: exit 2, stdout %q, stderr %q", arg, out, errs)
			}
		default:
			t.Fatalf("explain GPU0 %q: exit %d: %s", arg, code, errs)
		}
	})
}
