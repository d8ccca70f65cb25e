// SPDX-License-Identifier: MIT

package dl_test

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/efap2p/efap2p/internal/dl"
)

func TestMissing(t *testing.T) {
	libc := dl.NewLib("libc.so.6")
	tests := []struct {
		name string
		err  func() error
	}{
		{"library", func() error { _, err := dl.NewLib("libefap2p-absent.so.1").Handle(); return err }},
		{"symbol of a missing library", func() error { _, err := dl.NewLib("libefap2p-absent.so.1").Sym("f"); return err }},
		{"symbol", func() error { _, err := libc.Sym("efap2p_no_such_function"); return err }},
		{"global symbol", func() error { _, err := dl.Global("efap2p_no_such_function"); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); !errors.Is(err, dl.ErrNoLibrary) {
				t.Errorf("got %v, want an error wrapping ErrNoLibrary", err)
			}
		})
	}
}

func TestCallErrno(t *testing.T) {
	closeFn, err := dl.Global("close")
	if err != nil {
		t.Fatal(err)
	}
	getpid, err := dl.Global("getpid")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		fn        uintptr
		args      []uintptr
		want      int32
		wantErrno syscall.Errno
	}{
		{"close(-1)", closeFn, []uintptr{^uintptr(0)}, -1, syscall.EBADF},
		{"getpid leaves errno clear", getpid, nil, int32(os.Getpid()), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, errno := dl.CallErrno(tc.fn, tc.args...)
			if int32(r) != tc.want || errno != tc.wantErrno {
				t.Errorf("got %d, %v; want %d, %v", int32(r), errno, tc.want, tc.wantErrno)
			}
		})
	}
	if got := dl.ErrnoOrEIO(0); got != syscall.EIO {
		t.Errorf("ErrnoOrEIO(0) = %v", got)
	}
}

func TestStrings(t *testing.T) {
	c := dl.CString("rdmap79s0")
	tests := []struct {
		name, got, want string
	}{
		{"GoString", dl.GoString(uintptr(unsafe.Pointer(&c[0])), 64), "rdmap79s0"},
		{"GoString at most max", dl.GoString(uintptr(unsafe.Pointer(&c[0])), 5), "rdmap"},
		{"GoString of NULL", dl.GoString(0, 64), ""},
		{"CBytes", dl.CBytes([]byte("uverbs0\x00junk")), "uverbs0"},
		{"CBytes without NUL", dl.CBytes([]byte("abc")), "abc"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	runtime.KeepAlive(c)
}
