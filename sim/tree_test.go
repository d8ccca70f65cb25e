// SPDX-License-Identifier: MIT

package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/models"
)

// FuzzEmulatorConfig: a model that parses gives an emulator configuration
// that starts with its format line, or an error; never a panic.
func FuzzEmulatorConfig(f *testing.F) {
	for _, name := range models.BuiltinNames() {
		m, err := models.Builtin(name)
		if err != nil {
			f.Fatal(err)
		}
		data, err := m.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := models.Parse(data, "fuzz.json")
		if err != nil {
			return
		}
		conf, err := EmulatorConfig(m)
		if err == nil && !strings.HasPrefix(conf, "efasim 1\n") {
			t.Fatalf("configuration without its format line:\n%s", conf)
		}
	})
}

// A tree written for a process without CAP_SYS_ADMIN shows what the kernel
// shows it: 64 bytes of each config file and no readable ACPI table; a
// tree for root shows them whole.
func TestWriteTreeUnprivileged(t *testing.T) {
	m, err := models.Builtin("hygon-hmat-p2p")
	if err != nil {
		t.Fatal(err)
	}
	for _, unpriv := range []bool{false, true} {
		dir := t.TempDir()
		if err := WriteTree(m, dir, TreeOptions{WriteOptions: models.WriteOptions{Unprivileged: unpriv}}); err != nil {
			t.Fatal(err)
		}
		cfg, err := os.ReadFile(filepath.Join(dir, "bus/pci/devices/0000:01:00.0/config"))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 4096, true: 64}[unpriv]; len(cfg) != want {
			t.Errorf("unprivileged %v: config of %d bytes, want %d", unpriv, len(cfg), want)
		}
		st, err := os.Stat(filepath.Join(dir, "firmware/acpi/tables/HMAT"))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]os.FileMode{false: 0o400, true: 0}[unpriv]; st.Mode().Perm() != want {
			t.Errorf("unprivileged %v: HMAT mode %v, want %v", unpriv, st.Mode().Perm(), want)
		}
	}
	if got := CapSysAdmin(); got != (os.Geteuid() == 0) {
		t.Logf("CapSysAdmin %v for euid %d (a container may drop it from root)", got, os.Geteuid())
	}
}

// TestHostSysfs: the tree's configuration names the parts of /sys the
// emulated host answers for: the model's device hierarchies (each root bus
// of p5.48xlarge, the VMBus one of a Hyper-V guest, the platform one of a
// device-tree arm64 machine) and its classes, DMI,
// CPUs, NUMA nodes, ACPI tables and modules; never the parts that are this
// host's (network interfaces, huge pages), nor all of devices/.
func TestHostSysfs(t *testing.T) {
	tests := []struct {
		machine   string
		want, not []string
	}{
		{"p5.48xlarge",
			[]string{"bus/pci", "class/infiniband", "class/infiniband_verbs", "class/dmi", "devices/virtual/dmi",
				"devices/system/cpu", "devices/system/node", "module", "devices/pci0000:00", "devices/pci0000:44",
				"devices/pci0000:bb"},
			[]string{"devices", "devices/system", "devices/virtual", "class/net", "kernel/mm/hugepages", "class"}},
		{"hyperv-vpci", []string{"devices/LNXSYSTM:00"}, []string{"devices/pci0000:00"}},
		{"arm64-devicetree", []string{"devices/platform"}, []string{"devices/LNXSYSTM:00"}},
		{"hygon-hmat-p2p", []string{"firmware/acpi", "devices/LNXSYSTM:00", "devices/pci0000:80"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.machine, func(t *testing.T) {
			m, err := models.Builtin(tt.machine)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := WriteTree(m, dir, TreeOptions{}); err != nil {
				t.Fatal(err)
			}
			conf, err := os.ReadFile(filepath.Join(dir, EmulatorConfigName))
			if err != nil {
				t.Fatal(err)
			}
			lines := map[string]bool{}
			for _, l := range strings.Split(string(conf), "\n") {
				if rel, ok := strings.CutPrefix(l, "sysfs "); ok {
					lines[rel] = true
				}
			}
			for _, w := range tt.want {
				if !lines[w] {
					t.Errorf("no line sysfs %s", w)
				}
			}
			for _, n := range tt.not {
				if lines[n] {
					t.Errorf("sysfs %s: this host's part of /sys", n)
				}
			}
		})
	}
}
