// SPDX-License-Identifier: MIT

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/efap2p/efap2p/p2p"
)

// The few sysfs attributes the tool reads itself (the oracle reads the
// rest), read as the oracle reads its own: without blocking on a FIFO put
// where a file or directory belongs, and up to a limit.

// openNonBlocking opens path for reading and checks its kind.
func openNonBlocking(path string, dir bool) (*os.File, error) {
	flags := syscall.O_RDONLY | syscall.O_CLOEXEC | syscall.O_NONBLOCK | syscall.O_NOCTTY
	if dir {
		flags |= syscall.O_DIRECTORY
	}
	fd, err := syscall.Open(path, flags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	want := uint32(syscall.S_IFREG)
	if dir {
		want = syscall.S_IFDIR
	}
	if st.Mode&syscall.S_IFMT != want {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a regular file")}
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// readAttr reads a small sysfs attribute, trimmed.
func readAttr(path string) (string, error) {
	f, err := openNonBlocking(path, false)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(buf[:n])), nil
}

// listDir lists a directory's names, sorted.
func listDir(path string) ([]string, error) {
	f, err := openNonBlocking(path, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

// cpuAffinity is a PCI function's local_cpulist ("0-47,96-143"), "" when
// sysfs has none.
func cpuAffinity(src *p2p.Sysfs, a p2p.Addr) string {
	s, err := readAttr(filepath.Join(src.Root(), "bus/pci/devices", a.String(), "local_cpulist"))
	if err != nil {
		return ""
	}
	return s
}
