// SPDX-License-Identifier: MIT

package nccltopo

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestBootID: a file written with Options.BootID names the boot in its
// header, and ReadBootID reads it back; a file without one, or one whose
// comment does not open the file, names none.
func TestBootID(t *testing.T) {
	m, dir := writeTree(t, "p5.48xlarge")
	const id = "5b0e3c7e-1d0a-4f57-9c1e-6a1f0b2d3c4e"
	with := marshalTree(t, m, dir, Options{BootID: id})
	without := marshalTree(t, m, dir, Options{})
	if !bytes.HasPrefix(with, []byte("<!--\n  Boot ID "+id+": written at boot by efap2p export -boot, for this boot only.\n")) {
		t.Errorf("the header does not open with the boot:\n%.300s", with)
	}
	parseNCCL(t, with) // still a file NCCL reads
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"written for a boot", with, id},
		{"without", without, ""},
		{"the line inside the system", []byte("<system version=\"1\">\n<!--\n  Boot ID " + id + ": x\n-->\n</system>\n"), ""},
		{"past the header", []byte("<!--\n" + strings.Repeat("  padding\n", 500) + "  Boot ID " + id + ": x\n-->\n"), ""},
		{"after the comment", []byte("<!--\n  x\n-->\n<!--\n  Boot ID " + id + ": x\n-->\n"), ""},
	} {
		got, err := ReadBootID(bytes.NewReader(tc.data))
		if got != tc.want || (tc.want == "") != errors.Is(err, ErrNoBootID) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if got := BootFile("/run/efap2p/topology.json"); got != "/run/efap2p/nccl-topology.xml" {
		t.Errorf("BootFile: %q", got)
	}
}
