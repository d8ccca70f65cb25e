// SPDX-License-Identifier: MIT

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// topoRows splits topo's matrix, tab-separated as nvidia-smi topo -m
// writes it: the header's fields (the first one empty) and each row's, by
// the row's name, in order.
func topoRows(out string) (header []string, rows map[string][]string, order []string) {
	lines := strings.Split(out, "\n")
	header = strings.Split(lines[0], "\t")
	rows = map[string][]string{}
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		f := strings.Split(l, "\t")
		rows[f[0]] = f[1:]
		order = append(order, f[0])
	}
	return header, rows, order
}

// TestTopoPeerMemoryOnly: on arm64-grace-peermem the GPU's dma-buf is
// refused to the NIC and the EFA driver's peer memory carries the pair:
// topo marks the cell as true P2P by peer memory (+), not refused (!), and
// --p2p names the path (PEER), as check and the Go API say it.
func TestTopoPeerMemoryOnly(t *testing.T) {
	dir := writeTree(t, "arm64-grace-peermem")
	kernel := "--kernel=6.8.0-1021-nvidia-64k"
	_, out, _ := runTool("topo", "--sysfs", dir, kernel)
	_, rows, _ := topoRows(out)
	if rows["NIC0"][0] != "NODE+" || rows["GPU0"][1] != "NODE+" {
		t.Errorf("GPU0/NIC0: %q and %q, want NODE+ (P2P by peer memory only)\n%s", rows["NIC0"][0], rows["GPU0"][1], out)
	}
	code, out, _ := runTool("topo", "--sysfs", dir, kernel, "--p2p")
	header, rows, _ := topoRows(out)
	if code != 0 || !slices.Equal(header, []string{"", "GPU0"}) || !slices.Equal(rows["NIC0"], []string{"PEER"}) {
		t.Errorf("--p2p: exit %d, header %q, NIC0 %q; want PEER\n%s", code, header, rows["NIC0"], out)
	}
	_, out, _ = runTool("topo", "--sysfs", writeTree(t, "p5.48xlarge"), "--p2p")
	if _, rows, order := topoRows(out); len(order) != 32 || !slices.Equal(rows["NIC0"], slices.Repeat([]string{"OK"}, 8)) {
		t.Errorf("p5.48xlarge --p2p: %d rows, NIC0 %q; want 32 rows, OK for every GPU", len(order), rows["NIC0"])
	}
}

// TestTopoAffinity: CPU Affinity is the device's local_cpulist, NUMA
// Affinity its numa_node; N/A where sysfs does not say.
func TestTopoAffinity(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	dev := func(a string) string { return filepath.Join(dir, "bus/pci/devices", a) }
	// GPU1 (64:00.0) and NIC1 (50:00.0) as sysfs shows them when it does
	// not say: no local_cpulist, and GPU1's node unknown
	for _, a := range []string{"0000:64:00.0", "0000:50:00.0"} {
		if err := os.Remove(filepath.Join(dev(a), "local_cpulist")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dev("0000:64:00.0"), "numa_node")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dev("0000:64:00.0"), "numa_node"), []byte("-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, _ := runTool("topo", "--sysfs", dir)
	_, rows, _ := topoRows(out)
	for row, want := range map[string][]string{
		"GPU0": {"0-47,96-143", "0"},
		"NIC0": {"0-47,96-143", "0"},
		"GPU1": {"N/A", "N/A"},
		"NIC1": {"N/A", "0"},
	} {
		if got := rows[row]; len(got) < 4 || !slices.Equal(got[len(got)-4:len(got)-2], want) {
			t.Errorf("%s: affinity %q, want %q", row, got, want)
		}
	}
}
