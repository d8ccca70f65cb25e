// SPDX-License-Identifier: MIT

package dmabuf

import (
	"slices"
	"testing"
)

func TestExpName(t *testing.T) {
	for _, tt := range []struct {
		text, want string
		ok         bool
	}{
		{"pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1234\nsize:\t2097152\ncount:\t1\nexp_name:\tnv_dmabuf\nname:\t<none>\n", "nv_dmabuf", true},
		{"pos:\t0\nflags:\t02\n", "", false}, // a plain file's fdinfo
		{"exp_name:\t\n", "", false},
		{"", "", false},
	} {
		if got, ok := ExpName(tt.text); got != tt.want || ok != tt.ok {
			t.Errorf("ExpName(%q) = %q, %v; want %q, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
}

func TestExporters(t *testing.T) {
	if !SystemMemory("udmabuf") || !SystemMemory("system") || SystemMemory("nv_dmabuf") || SystemMemory("amdgpu") {
		t.Error("SystemMemory")
	}
	if d := Drivers("drm"); !slices.Equal(d, []string{"amdgpu", "xe", "nouveau", "radeon"}) {
		t.Errorf("Drivers(drm) = %v", d)
	}
	if d := Drivers("neuron-driver"); !slices.Equal(d, []string{"neuron-driver"}) {
		t.Errorf("an unknown exporter is taken as a driver: %v", d)
	}
	d := Drivers("nv_dmabuf")
	d[0] = "changed"
	if Drivers("nv_dmabuf")[0] != "nvidia" {
		t.Error("Drivers hands out its table")
	}
	names := ExporterNames()
	if !slices.IsSorted(names) || !slices.Contains(names, "nv_dmabuf") || !slices.Contains(names, "udmabuf") {
		t.Errorf("ExporterNames = %v", names)
	}
}
