// SPDX-License-Identifier: MIT

package sim

import (
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
