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
