// SPDX-License-Identifier: MIT

package sim

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestFindLibraryLayouts: the emulator's library is found next to the
// executable (the build tree), then in the efap2p/ directory of wherever
// LIBDIR put it: PREFIX/lib, the multiarch PREFIX/lib/<triplet>, lib64,
// or the libdir the tool was built for.
func TestFindLibraryLayouts(t *testing.T) {
	t.Setenv("EFASIM_LIBRARY", "")
	var executable func() (string, error)
	var libDir string
	touch := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, lib, builtFor string
	}{
		{"PREFIX/lib", "lib/efap2p/libefasim.so", ""},
		{"multiarch", "lib/" + multiarchTriplets[runtime.GOARCH] + "/efap2p/libefasim.so", ""},
		{"lib64", "lib64/efap2p/libefasim.so", ""},
		{"the LIBDIR it was built for", "opt/elsewhere/efap2p/libefasim.so", "opt/elsewhere"},
		{"build tree", "bin/libefasim.so", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			exe := filepath.Join(root, "bin", "efap2p")
			touch(exe)
			want := filepath.Join(root, tc.lib)
			touch(want)
			executable = func() (string, error) { return exe, nil }
			libDir = ""
			if tc.builtFor != "" {
				libDir = filepath.Join(root, tc.builtFor)
			}
			if got, err := FindLibrary(executable, libDir); err != nil || got != want {
				t.Errorf("%q, %v; want %q", got, err, want)
			}
		})
	}
	// next to the executable comes first
	root := t.TempDir()
	exe := filepath.Join(root, "bin", "efap2p")
	touch(exe)
	touch(filepath.Join(root, "lib", "efap2p", "libefasim.so"))
	touch(filepath.Join(root, "bin", "libefasim.so"))
	executable = func() (string, error) { return exe, nil }
	if got, err := FindLibrary(executable, libDir); err != nil || got != filepath.Join(root, "bin", "libefasim.so") {
		t.Errorf("build tree and installed layout: %q, %v; want the one next to the executable", got, err)
	}
}
