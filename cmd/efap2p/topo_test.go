// SPDX-License-Identifier: MIT

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/devices"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/sim"
)

// topoSection returns the lines of a section of topo's output ("NIC
// Legend:"), without its blank lines, up to the next blank line after them.
func topoSection(out, title string) []string {
	_, rest, ok := strings.Cut(out, "\n"+title+"\n\n")
	if !ok {
		return nil
	}
	body, _, _ := strings.Cut(rest, "\n\n")
	return strings.Split(strings.TrimSuffix(body, "\n"), "\n")
}

// TestTopoLayout: on p5.48xlarge the default view is laid out as
// 'nvidia-smi topo -m': tab-separated, the header's first field empty; the
// GPUs then the 32 EFA NICs (in PCI order) as columns and as rows; " X "
// on the diagonal; then CPU Affinity, NUMA Affinity, an empty field and
// GPU NUMA ID (N/A for a GPU, empty for a NIC), as nvidia-smi writes its
// rows; the NIC legend names each NIC's RDMA device and its address.
func TestTopoLayout(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	code, out, errs := runTool("topo", "--sysfs", dir)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	header, rows, order := topoRows(out)
	want := []string{""}
	for i := range 8 {
		want = append(want, fmt.Sprintf("GPU%d", i))
	}
	for i := range 32 {
		want = append(want, fmt.Sprintf("NIC%d", i))
	}
	want = append(want, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
	if !slices.Equal(header, want) {
		t.Fatalf("header %q, want %q", header, want)
	}
	if len(order) != 8+32 || order[0] != "GPU0" || order[8] != "NIC0" || order[39] != "NIC31" {
		t.Fatalf("rows %v: want GPU0..GPU7 then NIC0..NIC31", order)
	}
	// Hand-checked against the model: GPU0 (53:00.0) shares its switch
	// with the NICs on 4f..52:00.0 (rdmap79s0..rdmap82s0), PIX; GPU4
	// (97:00.0) is on the other socket (SYS), NUMA node 1. The model's 192
	// CPUs, 2 threads a core, split over its 2 nodes as Linux numbers them:
	// node 0 has 0-47 and their siblings 96-143, node 1 the rest.
	const node0, node1 = "0-47,96-143", "48-95,144-191"
	tail := func(cpus, numa, gpuNUMA string) []string { return []string{cpus, numa, "", gpuNUMA} }
	for _, tc := range []struct {
		row   string
		gpus  []string
		nic   map[int]string // NIC column -> cell
		after []string
	}{
		{"GPU0", []string{" X ", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"}, map[int]string{0: "PIX", 3: "PIX", 4: "NODE", 16: "SYS"}, tail(node0, "0", "N/A")},
		{"NIC0", []string{"PIX", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"}, map[int]string{0: " X ", 1: "PIX", 4: "NODE", 16: "SYS"}, tail(node0, "0", "")},
		{"NIC3", []string{"PIX", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"}, map[int]string{3: " X "}, tail(node0, "0", "")},
		{"NIC4", []string{"NODE", "PIX", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"}, nil, tail(node0, "0", "")},
		{"NIC16", []string{"SYS", "SYS", "SYS", "SYS", "PIX", "NODE", "NODE", "NODE"}, map[int]string{16: " X ", 0: "SYS"}, tail(node1, "1", "")},
	} {
		got := rows[tc.row]
		if len(got) != 40+4 {
			t.Errorf("row %s: %d fields after its name, want 44: %q", tc.row, len(got), got)
			continue
		}
		if !slices.Equal(got[:8], tc.gpus) || !slices.Equal(got[40:], tc.after) {
			t.Errorf("row %s: GPU columns %q, tail %q; want %q, %q", tc.row, got[:8], got[40:], tc.gpus, tc.after)
		}
		for nic, cell := range tc.nic {
			if got[8+nic] != cell {
				t.Errorf("row %s, NIC%d: %q, want %q", tc.row, nic, got[8+nic], cell)
			}
		}
	}
	legend := topoSection(out, "NIC Legend:")
	if len(legend) != 32 || legend[0] != "  NIC0: rdmap79s0 (0000:4f:00.0)" || legend[3] != "  NIC3: rdmap82s0 (0000:52:00.0)" {
		t.Fatalf("NIC legend %q", legend)
	}
	// PCI order: rdmap99s0 (63:00.0, NIC7, on GPU1's switch) before
	// rdmap113s0 (71:00.0, NIC8, GPU2's)
	if legend[7] != "  NIC7: rdmap99s0 (0000:63:00.0)" || legend[8] != "  NIC8: rdmap113s0 (0000:71:00.0)" {
		t.Errorf("NIC legend not in PCI order: %q, %q", legend[7], legend[8])
	}
	accels := topoSection(out, "Accelerators:")
	if len(accels) != 8 || accels[0] != "  GPU0: 0000:53:00.0 10de:2330 nvidia" {
		t.Errorf("accelerators %q", accels)
	}
	// the ENA has no RDMA device: not a NIC for nvidia-smi, listed apart
	if notShown := topoSection(out, "Not shown, no RDMA device ('efap2p topo --full' shows them):"); len(notShown) != 1 || !strings.HasPrefix(notShown[0], "  NET0: 0000:00:05.0 ") {
		t.Errorf("not shown: %q", notShown)
	}
	for _, w := range []string{"'efap2p explain GPU0 NIC0'", "NV#  = never shown", "NVLink"} {
		if !strings.Contains(out, w) {
			t.Errorf("topo does not say %q:\n%s", w, out)
		}
	}
}

// TestTopoFull: --full is the square matrix of every accelerator and NIC,
// the ENA among them, with the devices' addresses.
func TestTopoFull(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	code, out, errs := runTool("topo", "--sysfs", dir, "--full")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	header, rows, _ := topoRows(out)
	if len(header) != 1+8+32+1+3 || header[1] != "GPU0" || header[9] != "NIC0" || header[41] != "NET0" {
		t.Fatalf("header %v", header)
	}
	gpu0 := rows["GPU0"]
	if gpu0[0] != " X " || !slices.Equal(gpu0[8:12], []string{"PIX", "PIX", "PIX", "PIX"}) {
		t.Errorf("GPU0 row %v: want X on the diagonal, PIX for NIC0..NIC3", gpu0)
	}
	devs := topoSection(out, "Devices:")
	if len(devs) != 41 || devs[8] != "  NIC0: 0000:4f:00.0 1d0f:efa1 efa rdmap79s0" {
		t.Errorf("devices %q", devs)
	}

	code, out, _ = runTool("topo", "--sysfs", dir, "--json")
	var m devices.Matrix
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil || len(m.Devices) != 41 || len(m.Matrix) != 41 {
		t.Fatalf("topo --json: exit %d, %d devices", code, len(m.Devices))
	}
	if d := m.Devices[8]; d.Name != "NIC0" || d.IBDev != "rdmap79s0" {
		t.Errorf("JSON device 8: %+v, want NIC0 rdmap79s0", d)
	}
	if c := m.Matrix[0][8]; c.Path.String() != "PIX" || c.MapType.String() != "BUS_ADDR" || c.Distance != 4 {
		t.Errorf("GPU0/NIC0 cell %+v", c)
	}
	if code, _, errs := runTool("topo", "--sysfs", dir, "--full", "--json"); code != 2 || !strings.Contains(errs, "exclude") {
		t.Errorf("--full --json: exit %d, %s", code, errs)
	}
}

// TestTopoMarks: the marks on refused, bounced and exporter-allowed pairs,
// on a model with all three (hand-made edge case).
func TestTopoMarks(t *testing.T) {
	dir := writeTree(t, "intel-acs-switch")
	code, out, _ := runTool("topo", "--sysfs", dir)
	if code != 0 {
		t.Fatal(code)
	}
	if !strings.ContainsAny(strings.SplitN(out, "\nLegend:", 2)[0], "!~*") || strings.Contains(out, "no pair is refused") {
		t.Errorf("intel-acs-switch refuses or bounces pairs: no mark in\n%s", out)
	}
}

// writeModel writes a machine model and returns the sysfs tree of it.
func writeModel(t *testing.T, model string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "model.json")
	if err := os.WriteFile(p, []byte(model), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := models.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := sim.WriteTree(m, dir, sim.TreeOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

const gpusOnlyModel = `{"format": 1, "name": "gpus", "description": "GPUs, no NIC",
  "cpu": {"arch": "x86", "vendor": "AMD", "family": "19", "model": "01"},
  "root_buses": [{"domain": "0000", "bus": "00", "numa_node": 0, "functions": [
    {"addr": "0000:00:00.0", "kind": "host_bridge", "vendor": "1022", "device": "1480", "class": "060000"},
    {"addr": "0000:00:05.0", "kind": "endpoint", "vendor": "10de", "device": "2330", "class": "030200", "driver": "nvidia"}%s
  ]}]}`

// TestTopoNothingToShow: one line on stderr, not a useless matrix, when
// the machine has no accelerator, or no RDMA device.
func TestTopoNothingToShow(t *testing.T) {
	second := `,
    {"addr": "0000:00:06.0", "kind": "endpoint", "vendor": "10de", "device": "2330", "class": "030200", "driver": "nvidia"}`
	for _, tc := range []struct {
		name, tree, stderr string
		matrix             bool
	}{
		{"no accelerator", writeTree(t, "p4d.24xlarge"), "", true}, // control: p4d has GPUs
		{"one EFA NIC, no accelerator", writeModel(t, tinyModelJSON), "no accelerator on this machine", false},
		{"one GPU, no NIC", writeModel(t, strings.Replace(gpusOnlyModel, "%s", "", 1)), "no RDMA device on this machine, and one accelerator", false},
		{"two GPUs, no NIC", writeModel(t, strings.Replace(gpusOnlyModel, "%s", second, 1)), "no RDMA device on this machine: only the accelerators are shown", true},
	} {
		code, out, errs := runTool("topo", "--sysfs", tc.tree)
		if code != 0 || strings.Count(errs, "\n") > 1 || !strings.Contains(errs, tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want exit 0 and one line %q", tc.name, code, errs, tc.stderr)
		}
		if got := strings.HasPrefix(out, "\t"); got != tc.matrix {
			t.Errorf("%s: matrix printed %v, want %v:\n%s", tc.name, got, tc.matrix, out)
		}
	}
}
func TestTopoDOTUsage(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	if code, _, errs := runTool("topo", "--sysfs", dir, "--dot", "--json"); code != 2 || !strings.Contains(errs, "exclude") {
		t.Errorf("--dot --json: exit %d: %s", code, errs)
	}
	if code, out, errs := runTool("topo", "--help"); code != 0 || !strings.Contains(out, "--dot") || !strings.Contains(out, "Graphviz") {
		t.Errorf("topo --help: exit %d: %s%s", code, out, errs)
	}
}
