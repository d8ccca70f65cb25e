// SPDX-License-Identifier: MIT

package nodecheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// maxAttr bounds what is read of one attribute file: sysfs attributes are
// at most a page, and the ones read here a line.
const maxAttr = 4096

// errNotRegular is returned for a FIFO, a device or a directory where an
// attribute belongs: opened without blocking, never read.
var errNotRegular = errors.New("not a regular file")

// readAttr reads a small attribute file and returns its first line, with
// surrounding blanks trimmed. It never blocks on a FIFO or a device and
// never reads past maxAttr.
func readAttr(path string) (string, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	}
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return "", &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return "", fmt.Errorf("%s: %w", path, errNotRegular)
	}
	buf := make([]byte, maxAttr)
	n, err := syscall.Read(fd, buf)
	for err == syscall.EINTR {
		n, err = syscall.Read(fd, buf)
	}
	if err != nil {
		return "", &fs.PathError{Op: "read", Path: path, Err: err}
	}
	s := string(buf[:max(n, 0)])
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s), nil
}

// isDir reports whether path is a directory (following links).
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// exists reports whether path exists (a broken link does not).
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// firstEntry returns the first name in directory dir, "" when it is
// empty or unreadable.
func firstEntry(dir string) string {
	f, err := os.Open(dir)
	if err != nil {
		return ""
	}
	defer f.Close()
	names, err := f.Readdirnames(8)
	if err != nil || len(names) == 0 {
		return ""
	}
	min := names[0]
	for _, n := range names[1:] {
		if n < min {
			min = n
		}
	}
	return min
}

// readDirNames returns the names in dir, at most 64 (a device has a
// handful of ports).
func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(64)
}
