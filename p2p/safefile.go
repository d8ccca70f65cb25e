// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// The oracle runs inside other people's processes, so nothing it reads may
// block or grow without bound: a FIFO put where an attribute, a config file
// or a topology file belongs would block open() or read() for ever, and
// /dev/zero or a huge file would read until memory runs out. Every file is
// opened with O_NONBLOCK and read up to a limit. A file read whole (a
// topology file, an ACPI table) must also be a regular file; a sysfs
// attribute or config file is not stat()ed: its reads are bounded and
// cannot block whatever it turns out to be (a FIFO reads end-of-file or
// EAGAIN, a folder EISDIR, pread on a FIFO ESPIPE), so the check would be
// a system call per file that changes no answer.

// errNotRegular is wrapped when a path the oracle reads is a FIFO, a
// device, a socket or a directory where a file belongs.
var errNotRegular = errors.New("not a regular file")

// errTooLarge is wrapped when a file is larger than its reader allows.
var errTooLarge = errors.New("file too large")

const openFlags = syscall.O_RDONLY | syscall.O_CLOEXEC | syscall.O_NONBLOCK | syscall.O_NOCTTY

// openNonblock opens path for reading without blocking, and without
// checking what it is (see above): for sysfs attributes and config files.
// O_DIRECTORY in extra makes it a folder or an error. The caller closes fd.
func openNonblock(path string, extra int) (int, error) {
	for {
		fd, err := syscall.Open(path, openFlags|extra, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// openAttr is openNonblock for a sysfs attribute or config file, made raw
// (rawsys.go).
func openAttr(path string) (int, error) {
	fd, err := rawOpen(path, openFlags)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// openRegular is openStat returning the file's size alone.
func openRegular(path string, dir bool) (fd int, size int64, err error) {
	fd, st, err := openStat(path, dir)
	return fd, st.Size, err
}

// openStat opens path for reading without blocking and checks that it is
// a regular file (a directory when dir is set), returning its status. The
// caller closes fd.
func openStat(path string, dir bool) (fd int, st syscall.Stat_t, err error) {
	extra := 0
	if dir {
		extra = syscall.O_DIRECTORY
	}
	if fd, err = openNonblock(path, extra); err != nil {
		return -1, st, err
	}
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, st, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	mode := st.Mode & syscall.S_IFMT
	if (dir && mode != syscall.S_IFDIR) || (!dir && mode != syscall.S_IFREG) {
		syscall.Close(fd)
		return -1, st, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", errNotRegular, fileKind(mode))}
	}
	return fd, st, nil
}

func fileKind(mode uint32) string {
	switch mode {
	case syscall.S_IFIFO:
		return "a FIFO"
	case syscall.S_IFCHR:
		return "a character device"
	case syscall.S_IFBLK:
		return "a block device"
	case syscall.S_IFSOCK:
		return "a socket"
	case syscall.S_IFDIR:
		return "a directory"
	case syscall.S_IFREG:
		return "a regular file"
	}
	return "of an unknown kind"
}

// readFileLimited reads the regular file at path, failing with errTooLarge
// when it holds more than limit bytes (sysfs attributes report a size of
// 4096 whatever they hold, so the limit is checked on what is read, and on
// the reported size only for ordinary files above it).
func readFileLimited(path string, limit int) ([]byte, error) {
	data, _, err := readFileStat(path, limit)
	return data, err
}

// readFileStat is readFileLimited, returning the status of the file read.
func readFileStat(path string, limit int) ([]byte, syscall.Stat_t, error) {
	fd, st, err := openStat(path, false)
	if err != nil {
		return nil, st, err
	}
	defer syscall.Close(fd)
	data, err := readAll(fd, path, st.Size, limit)
	return data, st, err
}

func readAll(fd int, path string, size int64, limit int) ([]byte, error) {
	if size > int64(limit) && size > 4096 {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, at most %d read", errTooLarge, size, limit)}
	}
	buf := make([]byte, 0, min(max(size, 512), int64(limit)+1))
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)}
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n <= 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	if len(buf) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)}
	}
	return buf, nil
}

// readDirNames lists the directory at path (unsorted), refusing anything
// that is not a directory (O_DIRECTORY) without blocking on it.
func readDirNames(path string) ([]string, error) {
	fd, err := openNonblock(path, syscall.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	// a blocking descriptor keeps os.File away from the runtime's poller
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	return f.Readdirnames(-1)
}
