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
}

// ErrUnsafeFabric is the error of a fabric directory that another user
// could write: whoever can write it can plant files the emulated devices
// open and inject packets into their QPs.
var ErrUnsafeFabric = errors.New("another user could plant files there and inject packets; use a directory only you can write")

// JoinFabric creates dir if needed and takes the lowest free host number
// in it: a host number is held by an exclusive lock on dir/host-N.lock, so
// the number of a host that died is free again. A directory others could
// write is refused (CheckFabricDir), as the emulator's library refuses it.
func JoinFabric(dir string) (*FabricHost, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fabric %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("fabric: %w", err)
	}
	if err := CheckFabricDir(abs); err != nil {
		return nil, err
	}
	for id := 1; id <= MaxHosts; id++ {
		f, err := os.OpenFile(filepath.Join(abs, fmt.Sprintf("host-%d.lock", id)), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("fabric: %w", err)
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return &FabricHost{Dir: abs, ID: uint16(id), lock: f}, nil
		}
		f.Close()
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("fabric: locking host %d: %w", id, err)
		}
	}
	return nil, fmt.Errorf("fabric %s: all %d host numbers are in use", abs, MaxHosts)
}

// CheckFabricDir returns ErrUnsafeFabric, saying why, when dir may not be a
// fabric: as ssh wants of ~/.ssh, dir and every directory above it must be
// root's or this user's and writable by nobody else, except that the
// directories above it may be shared if sticky (/tmp), where others cannot
// move it away; dir itself must be this user's.
func CheckFabricDir(dir string) error {
	path, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("fabric %s: %w", dir, err)
	}
	path, err = filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("fabric %s: %w", dir, err)
	}
	me := uint32(os.Geteuid())
	for last := true; ; last = false {
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
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
		parent := filepath.Dir(path)
		if parent == path {
			return nil
		}
		path = parent
	}
}

// Close removes what departed processes left in the fabric (CleanFabric)
// and gives the host number back.
func (h *FabricHost) Close() error {
	if h == nil || h.lock == nil {
		return nil
	}
	err := CleanFabric(h.Dir)
	if cerr := h.lock.Close(); err == nil {
		err = cerr
	}
	h.lock = nil
	return err
}

// lockBase is where the QPN locks start in a device file (dp_fabric.c).
const lockBase = 4096

// CleanFabric removes the files of QPs and engines whose processes are
// gone (their POSIX locks are not held): a fabric directory then does not
// grow with every process that ever used it. Device files stay (a page
// each): a process may be about to take a lock on one.
func CleanFabric(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
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
			stale = staleQP(dir, base)
			if stale {
				markDead(filepath.Join(dir, name))
			}
		case strings.HasPrefix(name, "eng-"):
			stale = !locked(filepath.Join(dir, name), 0)
		}
		if stale {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
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
func markDead(path string) {
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer f.Close()
	var magic [4]byte
	if n, _ := f.ReadAt(magic[:], 0); n == 4 && binary.LittleEndian.Uint32(magic[:]) == qpMagic {
		_, _ = f.WriteAt(make([]byte, 4), qpLiveOffset)
	}
}

// staleQP tells whether qp-<gid>-<qpn> belongs to no live process.
func staleQP(dir, name string) bool {
	rest := strings.TrimPrefix(name, "qp-")
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return false
	}
	qpn, err := strconv.ParseUint(rest[i+1:], 10, 32)
	if err != nil {
		return false
	}
	return !locked(filepath.Join(dir, "dev-"+rest[:i]), lockBase+int64(qpn))
}

// locked tells whether another process holds a lock on byte off of path
// (false when the file is missing).
func locked(path string, off int64) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: off, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return true // cannot tell: keep it
	}
	return lk.Type != unix.F_UNLCK
}
