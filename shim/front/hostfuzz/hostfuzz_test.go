// SPDX-License-Identifier: MIT

//go:build cgo

package hostfuzz

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// write puts data in a file of the test's and returns its path.
func write(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("%s: %v", path, err)
	}
	return data
}

// noSections is data (a 64-bit ELF file) with its section header table
// unreferenced, as sstrip leaves a program.
func noSections(data []byte) []byte {
	out := append([]byte(nil), data...)
	binary.LittleEndian.PutUint64(out[0x28:], 0) // e_shoff
	copy(out[0x3a:0x40], make([]byte, 6))        // e_shentsize, e_shnum, e_shstrndx
	return out
}

// TestHasGo: a Go program (this test, cgo included) is told by its
// sections, and without them by its segments; a C program is not, even one
// that carries a whole Go binary after its own bytes; what is not an ELF
// file of this machine cannot tell.
func TestHasGo(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	goExe := read(t, self)
	cExe := read(t, "/bin/true")
	for _, tc := range []struct {
		name string
		path string
		want int
	}{
		{"the test binary", self, Go},
		{"it without section headers", write(t, "go-noshdr", noSections(goExe)), Go},
		{"/bin/true", "/bin/true", NotGo},
		{"/bin/true without section headers", write(t, "c-noshdr", noSections(cExe)), NotGo},
		{"/bin/true with a Go binary after it", write(t, "c-carrying-go", append(append([]byte(nil), cExe...), goExe...)), NotGo},
		{"a shell script", write(t, "script", []byte("#!/bin/sh\nexit 0\n")), Unknown},
		{"an ELF header alone", write(t, "head", goExe[:64]), Unknown},
		{"a folder", t.TempDir(), Unknown},
		{"a missing file", filepath.Join(t.TempDir(), "gone"), Unknown},
	} {
		if got := HasGo(tc.path); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// FuzzHasGo: whatever a file holds, the test reads within it and answers
// one of its three verdicts.
func FuzzHasGo(f *testing.F) {
	self, err := os.Executable()
	if err != nil {
		f.Fatal(err)
	}
	goExe, err := os.ReadFile(self)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(goExe[:4096])
	f.Add(noSections(goExe)[:4096])
	if c, err := os.ReadFile("/bin/true"); err == nil {
		f.Add(c)
		f.Add(noSections(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got := HasGo(write(t, "f", data)); got < Unknown || got > Go {
			t.Fatalf("verdict %d", got)
		}
	})
}

// BenchmarkHasGo: the cost of the test for one loaded object, paid once a
// process for each object before the core is first loaded: a C program
// (section headers), this Go program, and it without section headers (the
// segments are read).
func BenchmarkHasGo(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, path string }{
		{"c", "/bin/true"},
		{"go", self},
		{"go-noshdr", write(b, "go-noshdr", noSections(read(b, self)))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				HasGo(bc.path)
			}
		})
	}
}
