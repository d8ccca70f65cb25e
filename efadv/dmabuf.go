// SPDX-License-Identifier: MIT

package efadv

import (
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/efap2p/efap2p/internal/dl"
	"github.com/efap2p/efap2p/internal/dmabuf"
)

// libc holds the libc functions the dma-buf check calls, found as the
// process's dynamic linker finds them, so that an interposer (LD_PRELOAD)
// comes first. Go's own system calls would bypass it.
type libcFns struct{ fstatfs, open, read, close uintptr }

var libc = sync.OnceValues(func() (*libcFns, error) {
	var f libcFns
	for _, s := range []struct {
		p    *uintptr
		name string
	}{{&f.fstatfs, "fstatfs"}, {&f.open, "open"}, {&f.read, "read"}, {&f.close, "close"}} {
		p, err := dl.Global(s.name)
		if err != nil {
			return nil, fmt.Errorf("efadv: libc: %w", err)
		}
		*s.p = p
	}
	return &f, nil
})

// DmabufExporter returns the exporter name of the dma-buf fd (exp_name in
// /proc/self/fdinfo/<fd>: "nvidia", "drm", "system"...), read through libc.
// Errors wrap syscall.EBADF for a descriptor that is not open and
// syscall.EINVAL for a file that is not a dma-buf.
func DmabufExporter(fd int) (string, error) {
	f, err := libc()
	if err != nil {
		return "", err
	}
	st := new(unix.Statfs_t)
	if r, errno := dl.CallErrno(f.fstatfs, uintptr(int32(fd)), uintptr(unsafe.Pointer(st))); int32(r) != 0 {
		return "", fmt.Errorf("efadv: dma-buf %d: fstatfs: %w", fd, dl.ErrnoOrEIO(errno))
	}
	if uint32(st.Type) != dmabuf.Magic {
		return "", fmt.Errorf("efadv: fd %d is not a dma-buf (file system magic %#x): %w", fd, uint32(st.Type), syscall.EINVAL)
	}
	text, err := readFile(f, "/proc/self/fdinfo/"+strconv.Itoa(fd))
	if err != nil {
		return "", fmt.Errorf("efadv: dma-buf %d: %w", fd, err)
	}
	exp, ok := dmabuf.ExpName(text)
	if !ok {
		return "", fmt.Errorf("efadv: dma-buf %d: its fdinfo names no exporter: %w", fd, syscall.EINVAL)
	}
	return exp, nil
}

// readFile reads a small file through libc's open, read and close.
func readFile(f *libcFns, name string) (string, error) {
	path := dl.CString(name)
	r, errno := dl.CallErrno(f.open, uintptr(unsafe.Pointer(&path[0])), uintptr(syscall.O_RDONLY|syscall.O_CLOEXEC))
	fd := int32(r)
	if fd < 0 {
		return "", fmt.Errorf("open %s: %w", name, dl.ErrnoOrEIO(errno))
	}
	defer dl.Call(f.close, uintptr(fd))
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= 1<<20 {
				return "", fmt.Errorf("read %s: more than 1 MiB", name)
			}
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
		}
		free := buf[len(buf):cap(buf)]
		r, errno := dl.CallErrno(f.read, uintptr(fd), uintptr(unsafe.Pointer(&free[0])), uintptr(len(free)))
		n := int(r)
		switch {
		case n < 0 && errno == syscall.EINTR:
			continue
		case n < 0:
			return "", fmt.Errorf("read %s: %w", name, dl.ErrnoOrEIO(errno))
		case n == 0:
			return string(buf), nil
		}
		buf = buf[:len(buf)+n]
	}
}
