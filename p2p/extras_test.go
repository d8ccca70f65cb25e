// SPDX-License-Identifier: MIT

package p2p_test

import (
	"slices"
	"testing"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// TestOptionalMethods: the optional Source methods are found by their
// signatures alone, so a change to one side would silently switch a rule
// off; sysfs offers them all, and the machine models what they model.
func TestOptionalMethods(t *testing.T) {
	m, dir := writeModel(t, "hygon-hmat-p2p", models.WriteOptions{})
	s, err := p2p.OpenSysfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		src  p2p.Source
		want []string
	}{
		{"sysfs", s, []string{"acpi", "config", "driver-functions", "driver-info", "ids", "peer-mem"}},
		{"model", m.Source(), []string{"acpi", "config", "driver-functions", "peer-mem"}},
	} {
		got := p2p.OptionalMethodsForTest(tc.src)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s offers %v, want %v", tc.name, got, tc.want)
		}
	}
}
