// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/sim"
)

// runTool runs the tool in-process and returns its exit status and output.
func runTool(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeTree(t testing.TB, name string) string {
	t.Helper()
	m, err := models.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := sim.WriteTree(m, dir, sim.TreeOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestExplainJSON(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	code, out, errs := runTool("explain", "--sysfs", dir, "--json", "0000:53:00.0", "4f:00.0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v struct {
		MapType     string   `json:"map_type"`
		Distance    *int     `json:"distance"`
		Path        string   `json:"path"`
		Source      string   `json:"source"`
		ACSRedirect []string `json:"acs_redirect"`
		Reason      string   `json:"reason"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	// p5.48xlarge: the GPU and the NIC share switch 45:00.0, no ACS redirect.
	if v.MapType != "BUS_ADDR" || v.Distance == nil || *v.Distance != 4 || v.Path != "PIX" || v.Source != "computed" || v.ACSRedirect == nil || len(v.ACSRedirect) != 0 || v.Reason == "" {
		t.Errorf("got %+v", v)
	}
}

func TestExplainErrors(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"explain", "--sysfs", dir, "0000:53:00.0", "zz"}, `"zz"`},
		{[]string{"explain", "--sysfs", dir, "0000:53:00.0", "0000:3f:00.0"}, "0000:3f:00.0"},
		{[]string{"explain", "--sysfs", dir + "/missing", "53:00.0", "4f:00.0"}, "missing"},
		{[]string{"explain", "--sysfs", dir, "53:00.0"}, "PROVIDER and a CLIENT"},
		{[]string{"topo", "--sysfs", dir + "/missing"}, "missing"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"explain", "--bogus"}, "bogus"},
	}
	for _, tt := range tests {
		code, _, errs := runTool(tt.args...)
		if code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tt.args, code, errs, tt.want)
		}
	}
}

func TestSimWrite(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runTool("sim", "write", "--machine", "p5.48xlarge", dir)
	if code != 0 || !strings.Contains(out, "32 EFA NICs") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	if code, _, errs := runTool("sim", "write", "--machine", "nonesuch", dir); code != 2 || !strings.Contains(errs, "nonesuch") {
		t.Errorf("unknown machine: exit %d, %s", code, errs)
	}
	code, out, _ = runTool("sim", "list")
	if code != 0 || !strings.Contains(out, "p5.48xlarge") {
		t.Errorf("sim list: exit %d: %s", code, out)
	}
}
