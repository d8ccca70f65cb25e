// SPDX-License-Identifier: MIT

package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/models"
)

// fakeProvider installs a libefa provider of rdma-core release (as Debian
// lays it out: libibverbs/libefa-rdmav34.so -> ../libefa.so.1.2.RELEASE)
// where ProviderNote looks for it.
func fakeProvider(t *testing.T, release string) {
	t.Helper()
	dir := t.TempDir()
	lib := filepath.Join(dir, "libefa.so.1.2."+release)
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "libibverbs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../"+filepath.Base(lib), filepath.Join(dir, "libibverbs", "libefa-rdmav34.so")); err != nil {
		t.Fatal(err)
	}
	saved := providerGlobs
	t.Cleanup(func() { providerGlobs = saved })
	providerGlobs = []string{filepath.Join(dir, "libibverbs", "libefa-rdmav*.so")}
}

// TestProviderNote: rdma-core 44's libefa claims 1d0f:efa0-efa2 only, so
// the trn2.48xlarge model's 16 efa3 NICs are listed by no libibverbs
// there: said in one line naming 53.0, the first release whose libefa
// claims efa3 (rdma-core commit "efa: Add EFA 0xefa3 PCI ID"). The
// p5.48xlarge model's efa1 NICs need no note.
func TestProviderNote(t *testing.T) {
	trn2, err := models.Builtin("trn2.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	p5, err := models.Builtin("p5.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	fakeProvider(t, "44.0")
	note := ProviderNote(trn2)
	for _, want := range []string{"rdma-core 44.0", "1d0f:efa3", "trn2.48xlarge", "none of its 16 EFA NICs", "rdma-core 53.0 and newer"} {
		if !strings.Contains(note, want) {
			t.Errorf("with rdma-core 44.0, trn2.48xlarge: %q; want it to say %q", note, want)
		}
	}
	if strings.Contains(note, "\n") {
		t.Errorf("the note is more than one line: %q", note)
	}
	if note := ProviderNote(p5); note != "" {
		t.Errorf("with rdma-core 44.0, p5.48xlarge (efa1): %q; want nothing", note)
	}
	fakeProvider(t, "53.0")
	if note := ProviderNote(trn2); note != "" {
		t.Errorf("with rdma-core 53.0, trn2.48xlarge: %q; want nothing", note)
	}
	providerGlobs = []string{filepath.Join(t.TempDir(), "none", "*.so")}
	if note := ProviderNote(trn2); note != "" {
		t.Errorf("with no libefa found: %q; want nothing (the release cannot be told)", note)
	}
}
