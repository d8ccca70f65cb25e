// SPDX-License-Identifier: MIT

package p2p

import (
	"io/fs"
	"syscall"
	"unsafe"
)

// The sysfs reads are system calls that cannot block: attribute and config
// files of a memory filesystem, opened O_NONBLOCK, and its links. They are
// made raw, without telling the Go scheduler: a call that outlasts the
// scheduler's 20 us tick (any, on a loaded machine) would otherwise have
// the caller's P handed to another thread and a thread woken to poll the
// network, each time; in a C process that called into the library, that
// more than doubled the first answer's context switches. Topology files
// and directories, which a disk or a network filesystem may hold, go
// through the scheduler as usual.

func rawErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// rawOpen is openat(AT_FDCWD, path, flags), retried on EINTR.
func rawOpen(path string, flags int) (int, error) {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	for {
		fd, _, e := syscall.RawSyscall6(syscall.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(p)), uintptr(flags), 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(fd), nil
	}
}

// atFDCWD is AT_FDCWD, -100, as a register holds it.
const atFDCWD = ^uintptr(99)

func rawClose(fd int) { syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(fd), 0, 0) }

// rawRead is read(2), retried on EINTR.
func rawRead(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e != syscall.EINTR {
			return int(n), rawErr(e)
		}
	}
}

// rawPread is pread(2), retried on EINTR.
func rawPread(fd int, b []byte, off int64) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
		if e != syscall.EINTR {
			return int(n), rawErr(e)
		}
	}
}

// rawReadlink is os.Readlink made raw; errors are *fs.PathError.
func rawReadlink(path string) (string, error) {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: path, Err: err}
	}
	for size := 128; ; size *= 2 {
		b := make([]byte, size)
		n, _, e := syscall.RawSyscall6(syscall.SYS_READLINKAT, atFDCWD, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&b[0])), uintptr(size), 0, 0)
		if e == syscall.EINTR {
			size /= 2
			continue
		}
		if e != 0 {
			return "", &fs.PathError{Op: "readlink", Path: path, Err: e}
		}
		if int(n) < size {
			return string(b[:n]), nil
		}
	}
}
