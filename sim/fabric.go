// SPDX-License-Identifier: MIT

package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A fabric is the directory through which the emulated EFA devices of
// several processes, and of several emulated hosts, reach each other
// (sim/preload/dp_fabric.c writes its files). Each `efap2p sim --fabric DIR`
// invocation is one host of the fabric, with a host number of its own that
// goes into its devices' GIDs, so that two hosts of one machine model are
// two different sets of addresses.

// MaxHosts is the number of hosts a fabric holds.
const MaxHosts = 65535

// FabricHost is this process's place in a fabric: a host number held by a
// lock, released by Close.
type FabricHost struct {
	// Dir is the fabric directory (absolute).
	Dir string
	// ID is the host number, from 1.
	ID   uint16
	lock *os.File
	// dir is the directory CheckFabricDir checked: every later name is
	// opened relative to it, so that a path another user can redirect
	// (a symlink on the way to it, in a sticky folder) leads nowhere else.
	dir *os.File
}

// ErrUnsafeFabric is the error of a fabric directory that another user
// could write: whoever can write it can plant files the emulated devices
// open and inject packets into their QPs.
var ErrUnsafeFabric = errors.New("another user could plant files there and inject packets; use a directory only you can write")

// JoinFabric creates dir if needed and takes the lowest free host number
// in it: a host number is held by an exclusive lock on dir/host-N.lock, so
// the number of a host that died is free again. A directory others could
// write is refused (CheckFabricDir), as the emulator's library refuses it.
// The directory is held open from the check on: the host's later files and
// its cleanup (Close) are in that directory, whatever its path leads to by
// then.
func JoinFabric(dir string) (*FabricHost, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fabric %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("fabric: %w", err)
	}
	d, err := openFabricDir(abs)
	if err != nil {
		return nil, err
	}
	for id := 1; id <= MaxHosts; id++ {
		f, err := openAt(d, fmt.Sprintf("host-%d.lock", id), os.O_RDWR|os.O_CREATE)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("fabric: %w", err)
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return &FabricHost{Dir: abs, ID: uint16(id), lock: f, dir: d}, nil
		}
		f.Close()
		if !errors.Is(err, unix.EWOULDBLOCK) {
			d.Close()
			return nil, fmt.Errorf("fabric: locking host %d: %w", id, err)
		}
	}
	d.Close()
	return nil, fmt.Errorf("fabric %s: all %d host numbers are in use", abs, MaxHosts)
}

// openFabricDir opens dir and checks the directory it opened, and those
// above it (CheckFabricDir's rules), through that descriptor: what is
// checked is what is used.
func openFabricDir(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("fabric %s: %w", dir, &os.PathError{Op: "open", Path: dir, Err: err})
	}
	d := os.NewFile(uintptr(fd), dir)
	if err := checkDirAt(d, dir); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// openAt opens name in the directory d, never following a symlink there
// (O_NOFOLLOW), without blocking on a FIFO; created files are 0600.
func openAt(d *os.File, name string, flag int) (*os.File, error) {
	fd, err := unix.Openat(int(d.Fd()), name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: filepath.Join(d.Name(), name), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.Name(), name)), nil
}

// openOwnAt opens name in d read-write when it is a regular file of this
// user (what the emulator's processes create there), else nil.
func openOwnAt(d *os.File, name string) *os.File {
	f, err := openAt(d, name, os.O_RDWR)
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != uint32(os.Geteuid()) {
		f.Close()
		return nil
	}
	return f
}

// CheckFabricDir returns ErrUnsafeFabric, saying why, when dir may not be a
// fabric: as ssh wants of ~/.ssh, dir and every directory above it must be
// root's or this user's and writable by nobody else, except that the
// directories above it may be shared if sticky (/tmp), where others cannot
// move it away; dir itself must be this user's.
func CheckFabricDir(dir string) error {
	d, err := openFabricDir(dir)
	if err != nil {
		return err
	}
	return d.Close()
}

// checkDirAt checks the directory d and those above it, walking up by
// ".." from d itself; the names in its errors are those of dir's path with
// its symlinks resolved.
func checkDirAt(d *os.File, dir string) error {
	path, err := filepath.EvalSymlinks(dir)
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return fmt.Errorf("fabric %s: %w", dir, err)
	}
	me := uint32(os.Geteuid())
	cur, err := unix.Openat(int(d.Fd()), ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("fabric %s: %w", dir, err)
	}
	defer func() { unix.Close(cur) }()
	for last := true; ; last = false {
		var st, up unix.Stat_t
		if err := unix.Fstat(cur, &st); err != nil {
			return fmt.Errorf("fabric %s: %s: %w", dir, path, err)
		}
		why := ""
		switch {
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			why = path + " is not a directory"
		case st.Uid != me && (last || st.Uid != 0):
			why = fmt.Sprintf("%s belongs to uid %d", path, st.Uid)
		case st.Mode&0o022 != 0 && (last || st.Mode&unix.S_ISVTX == 0):
			who := "its group"
			if st.Mode&0o002 != 0 {
				who = "others"
			}
			why = fmt.Sprintf("%s is writable by %s (mode %04o)", path, who, st.Mode&0o7777)
		}
		if why != "" {
			return fmt.Errorf("fabric %s refused: %s (%w)", dir, why, ErrUnsafeFabric)
		}
		parent, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("fabric %s: %s/..: %w", dir, path, err)
		}
		if err := unix.Fstat(parent, &up); err != nil {
			unix.Close(parent)
			return fmt.Errorf("fabric %s: %s/..: %w", dir, path, err)
		}
		if up.Dev == st.Dev && up.Ino == st.Ino { // the root
			unix.Close(parent)
			return nil
		}
		unix.Close(cur)
		cur = parent
		path = filepath.Dir(path)
	}
}

// Close removes what departed processes left in the fabric (CleanFabric)
// and gives the host number back.
func (h *FabricHost) Close() error {
	if h == nil || h.lock == nil {
		return nil
	}
	err := cleanFabricAt(h.dir)
	if cerr := h.lock.Close(); err == nil {
		err = cerr
	}
	h.dir.Close()
	h.lock, h.dir = nil, nil
	return err
}

// lockBase is where the QPN locks start in a device file (dp_fabric.c).
const lockBase = 4096

// CleanFabric removes the files of QPs and engines whose processes are
// gone (their POSIX locks are not held): a fabric directory then does not
// grow with every process that ever used it. Device files stay (a page
// each): a process may be about to take a lock on one. A directory that
// CheckFabricDir refuses is left alone (the error says why); a missing one
// is nothing to clean.
func CleanFabric(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	d, err := openFabricDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return cleanFabricAt(d)
}

// cleanFabricAt cleans the fabric directory d (CleanFabric): every name is
// looked up in d itself, never through a symlink.
func cleanFabricAt(d *os.File) error {
	list, err := openAt(d, ".", os.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("fabric: %w", err)
	}
	ents, err := list.ReadDir(-1)
	list.Close()
	if err != nil {
		return fmt.Errorf("fabric: %w", err)
	}
	var errs []error
	for _, e := range ents {
		name := e.Name()
		var stale bool
		switch {
		case strings.HasPrefix(name, "qp-"):
			// qp-<gid>-<qpn>, or the temporary name it was created
			// under (qp-<gid>-<qpn>.<pid>.<random>.tmp) by a process
			// that died before renaming it
			base, _, _ := strings.Cut(name, ".")
			stale = staleQP(d, base)
			if stale {
				markDead(d, name)
			}
		case strings.HasPrefix(name, "eng-"):
			stale = !locked(d, name, 0)
		}
		if stale {
			if err := unix.Unlinkat(int(d.Fd()), name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, &os.PathError{Op: "remove", Path: filepath.Join(d.Name(), name), Err: err})
			}
		}
	}
	return errors.Join(errs...)
}

// qpLiveOffset is where a QP file's header (dp_fabric.c, struct
// fab_qp_hdr) keeps its live word, after the magic, version, QPN and type.
const (
	qpMagic      = 0x45465150 // "EFQP"
	qpLiveOffset = 16
)

// markDead clears the live word of a departed QP's file before it is
// removed: a peer that still maps it then looks the QPN up again.
func markDead(d *os.File, name string) {
	f := openOwnAt(d, name)
	if f == nil {
		return
	}
	defer f.Close()
	var magic [4]byte
	if n, _ := f.ReadAt(magic[:], 0); n == 4 && binary.LittleEndian.Uint32(magic[:]) == qpMagic {
		_, _ = f.WriteAt(make([]byte, 4), qpLiveOffset)
	}
}

// staleQP tells whether qp-<gid>-<qpn> belongs to no live process.
func staleQP(d *os.File, name string) bool {
	rest := strings.TrimPrefix(name, "qp-")
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return false
	}
	qpn, err := strconv.ParseUint(rest[i+1:], 10, 32)
	if err != nil {
		return false
	}
	return !locked(d, "dev-"+rest[:i], lockBase+int64(qpn))
}

// locked tells whether another process holds a lock on byte off of the
// file name in d: false when there is no such file, true when it is not a
// regular file of this user's (it cannot tell: what names it is kept).
func locked(d *os.File, name string, off int64) bool {
	f := openOwnAt(d, name)
	if f == nil {
		var st unix.Stat_t
		err := unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		return !errors.Is(err, unix.ENOENT) && st.Mode&unix.S_IFMT != unix.S_IFLNK
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: off, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return true // cannot tell: keep it
	}
	return lk.Type != unix.F_UNLCK
}
