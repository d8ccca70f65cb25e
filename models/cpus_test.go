// SPDX-License-Identifier: MIT

package models

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUFormats: cpulist and cpumap as the kernel writes them.
func TestCPUFormats(t *testing.T) {
	for _, tc := range []struct {
		cpus       []int
		nbits      int
		list, mask string
	}{
		{[]int{0, 1}, 4, "0-1", "3"},
		{[]int{0, 2, 3, 4, 7}, 8, "0,2-4,7", "9d"},
		{[]int{32}, 36, "32", "1,00000000"},
		{[]int{0, 1, 2, 3}, 64, "0-3", "00000000,0000000f"},
	} {
		if got := cpuList(tc.cpus); got != tc.list {
			t.Errorf("cpuList(%v) = %q, want %q", tc.cpus, got, tc.list)
		}
		if got := cpuMask(tc.cpus, tc.nbits); got != tc.mask {
			t.Errorf("cpuMask(%v, %d) = %q, want %q", tc.cpus, tc.nbits, got, tc.mask)
		}
	}
}

// TestWrittenCPUs: the p5.48xlarge model's CPUs and NUMA nodes as its tree
// shows them. By hand: 192 CPUs, 2 nodes, 2 threads a core, so 48 cores a
// node; Linux numbers the first threads of all cores first, so node 0 has
// CPUs 0-47 and their siblings 96-143, node 1 48-95 and 144-191; a
// function on node 1 (GPU4, 97:00.0) has node 1's CPUs as its local ones.
func TestWrittenCPUs(t *testing.T) {
	m, err := Builtin("p5.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Write(dir, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"devices/system/cpu/online":                                    "0-191",
		"devices/system/node/online":                                   "0-1",
		"devices/system/node/node0/cpulist":                            "0-47,96-143",
		"devices/system/node/node1/cpulist":                            "48-95,144-191",
		"devices/system/node/node0/cpumap":                             "00000000,0000ffff,ffffffff,00000000,0000ffff,ffffffff",
		"devices/system/node/node1/distance":                           "32 10",
		"devices/system/cpu/cpu96/topology/thread_siblings_list":       "0,96",
		"devices/system/cpu/cpu144/topology/physical_package_id":       "1",
		"devices/system/cpu/cpu144/topology/core_id":                   "0",
		"devices/system/cpu/cpu47/topology/core_siblings_list":         "0-47,96-143",
		"bus/pci/devices/0000:97:00.0/local_cpulist":                   "48-95,144-191",
		"bus/pci/devices/0000:53:00.0/local_cpus":                      "00000000,0000ffff,ffffffff,00000000,0000ffff,ffffffff",
		"bus/pci/devices/0000:53:00.0/irq":                             "0",
		"devices/system/node/node0/cpu96/topology/physical_package_id": "0",
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "devices/system/node/node1/meminfo"))
	if err != nil || !strings.HasPrefix(string(b), "Node 1 MemTotal:       1073741824 kB\n") {
		t.Errorf("node1/meminfo: %q (%v); want 1024 GiB, half of the model's 2048", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "devices/system/cpu/cpu192")); err == nil {
		t.Error("a CPU 192 on a machine of 192 CPUs")
	}
}

// TestCPUCountChecked: a CPU count that does not split over the nodes and
// threads is refused where the model says it.
func TestCPUCountChecked(t *testing.T) {
	m, err := Builtin("p5.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), `"cpus": 192`, `"cpus": 190`, 1)
	if bad == string(data) {
		t.Fatal("the model has no \"cpus\": 192")
	}
	if _, err := Parse([]byte(bad), "bad"); err == nil || !strings.Contains(err.Error(), "cpus 190") {
		t.Errorf("cpus 190 over 2 nodes of 2-thread cores: %v; want it refused", err)
	}
}
