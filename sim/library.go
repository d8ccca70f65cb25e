// SPDX-License-Identifier: MIT

package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/efap2p/efap2p/internal/secenv"
)

// LibraryName is the file name of the emulator's preload library.
const LibraryName = "libefasim.so"

// multiarchTriplets are the Debian multiarch directories of the
// architectures Go builds for, by GOARCH.
var multiarchTriplets = map[string]string{
	"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "386": "i386-linux-gnu",
	"arm": "arm-linux-gnueabihf", "ppc64le": "powerpc64le-linux-gnu", "s390x": "s390x-linux-gnu",
	"riscv64": "riscv64-linux-gnu", "loong64": "loongarch64-linux-gnu", "mips64le": "mips64el-linux-gnuabi64",
}

// libraryCandidates are the places FindLibrary looks, in order, for an
// executable in dir: next to it (the build tree), then the efap2p/
// directory of the usual libdirs of its prefix (lib, lib/<multiarch>,
// lib64), then that of libDir, the libdir it was built for.
func libraryCandidates(dir, libDir string) []string {
	prefix := filepath.Dir(dir)
	c := []string{
		filepath.Join(dir, LibraryName),
		filepath.Join(prefix, "lib", "efap2p", LibraryName),
	}
	if t, ok := multiarchTriplets[runtime.GOARCH]; ok {
		c = append(c, filepath.Join(prefix, "lib", t, "efap2p", LibraryName))
	}
	c = append(c, filepath.Join(prefix, "lib64", "efap2p", LibraryName))
	if libDir != "" {
		if p := filepath.Join(libDir, "efap2p", LibraryName); !slices.Contains(c, p) {
			c = append(c, p)
		}
	}
	return c
}

// FindLibrary locates libefasim.so for the efap2p executable that
// executable (os.Executable) names, built for libDir ("" when unknown):
// $EFASIM_LIBRARY, else next to the executable (the build tree), else in
// the efap2p/ directory of the usual libdirs of its prefix (lib,
// lib/<multiarch>, lib64), else in that of libDir. The path returned is
// absolute, as LD_PRELOAD needs in a child that may change directory.
func FindLibrary(executable func() (string, error), libDir string) (string, error) {
	if p := secenv.Getenv("EFASIM_LIBRARY"); p != "" {
		abs, err := filepath.Abs(p)
		if err == nil {
			err = readableFile(abs)
		}
		if errors.Is(err, fs.ErrPermission) {
			return "", fmt.Errorf("EFASIM_LIBRARY=%s cannot be read (%w)", p, unwrapPath(err))
		}
		if err != nil {
			return "", fmt.Errorf("EFASIM_LIBRARY=%s: %w", p, err)
		}
		return abs, nil
	}
	exe, err := executable()
	if err != nil {
		return "", fmt.Errorf("finding %s: %w", LibraryName, err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	candidates := libraryCandidates(filepath.Dir(exe), libDir)
	var unreadable []string
	for _, c := range candidates {
		err := readableFile(c)
		if err == nil {
			return filepath.Abs(c)
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			unreadable = append(unreadable, fmt.Sprintf("%s cannot be read (%v)", c, unwrapPath(err)))
		}
	}
	if len(unreadable) > 0 {
		return "", fmt.Errorf("%s, the emulator's library: %s: make it readable to this user (uid %d), or set EFASIM_LIBRARY to a copy it can read",
			LibraryName, strings.Join(unreadable, "; "), os.Getuid())
	}
	return "", fmt.Errorf("%s, the emulator's library, not found (looked for %s): install it (make install, or the efap2p-sim package), build it ('make c-build' in the source tree), or set EFASIM_LIBRARY",
		LibraryName, strings.Join(candidates, ", "))
}

// unwrapPath is err without the operation and path a *fs.PathError adds.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// regularFile reports whether p is a regular file (nil), or why not.
func regularFile(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", p)
	}
	return nil
}

// readableFile reports whether p is a regular file this process can open
// for reading (nil), or why not: fs.ErrNotExist only when nothing is
// there; a file in a folder this user cannot enter, or one it may not
// read, is a permission error.
func readableFile(p string) error {
	if err := regularFile(p); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	return f.Close()
}
