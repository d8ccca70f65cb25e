// SPDX-License-Identifier: MIT

package sim

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
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

// TestFindLibraryUnreadable: a library that is there but cannot be read
// (in a folder this user cannot enter, or a file it may not read) is
// said to be so, never "not found".
func TestFindLibraryUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file: the case needs another user (ctests run it as uid 65534)")
	}
	t.Setenv("EFASIM_LIBRARY", "")
	for _, tc := range []struct {
		name          string
		dirMode, mode os.FileMode
	}{
		{"a folder closed to the user", 0o600, 0o644},
		{"a file the user may not read", 0o755, 0o200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			bin := filepath.Join(root, "bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			lib := filepath.Join(bin, LibraryName)
			if err := os.WriteFile(lib, nil, tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(bin, tc.dirMode); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(bin, 0o755) })
			exe := func() (string, error) { return filepath.Join(bin, "efap2p"), nil }
			_, err := FindLibrary(exe, "")
			if err == nil || strings.Contains(err.Error(), "not found") ||
				!strings.Contains(err.Error(), lib+" cannot be read (permission denied)") {
				t.Errorf("FindLibrary: %v; want %q", err, lib+" cannot be read (permission denied)")
			}
		})
	}
}
