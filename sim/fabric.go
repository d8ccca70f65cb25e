// SPDX-License-Identifier: MIT

package sim

import (
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

// JoinFabric creates dir if needed and takes the lowest free host number
// in it: a host number is held by an exclusive lock on dir/host-N.lock, so
// the number of a host that died is free again.
func JoinFabric(dir string) (*FabricHost, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fabric %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("fabric: %w", err)
	}
	for id := 1; id <= MaxHosts; id++ {
		f, err := os.OpenFile(filepath.Join(abs, fmt.Sprintf("host-%d.lock", id)), os.O_RDWR|os.O_CREATE, 0o600)
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
		case strings.HasPrefix(name, "qp-") && !strings.HasSuffix(name, ".tmp"):
			stale = staleQP(dir, name)
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
