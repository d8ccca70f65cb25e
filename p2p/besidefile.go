// SPDX-License-Identifier: MIT

package p2p

// Files written beside the topology files (the boot-time NCCL topology),
// read under the topology files' rules: what `efap2p env` names in a job's
// environment is what root wrote in this boot.

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// BootTopologyPlace returns where the machine topo reads keeps its
// boot-time topology file, as Defaults.Options looks for it:
// BootTopologyFile, below $EFAP2P_TOPOLOGY_ROOT where it is honoured, or
// below another machine's sysfs tree; "" for a machine that is not a sysfs
// tree (a model in memory). $EFAP2P_TOPOLOGY, which names a file instead
// of the default places, does not move it.
func BootTopologyPlace(topo *Topology) string {
	s, ok := topo.src.(*Sysfs)
	if !ok {
		return ""
	}
	if filepath.Clean(s.Root()) != filepath.Clean(SysfsRoot()) {
		return s.Root() + BootTopologyFile
	}
	return defaultPlaces(true)[0]
}

// CurrentBootID returns this boot's ID (/proc/sys/kernel/random/boot_id),
// the one a boot-time topology file is checked against; "" when it cannot
// be read.
func CurrentBootID() string { return currentBootID() }

// ReadTrustedFile reads, up to limit bytes, a file written beside the
// topology files, under their rules: a regular file (not a FIFO, a device
// or a folder: the open never blocks), owned by root or this user and
// writable by neither its group nor others. The error wraps ErrUntrusted
// for a file those rules refuse, and fs.ErrNotExist for a missing one; a
// file longer than limit is read up to limit.
func ReadTrustedFile(name string, limit int) ([]byte, error) {
	fd, st, err := openStat(name, false)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	if err := checkTrusted(name, &st); err != nil {
		return nil, err
	}
	buf := make([]byte, max(min(st.Size, int64(limit)), 0))
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		case m == 0:
			return buf[:n], nil
		}
		n += m
	}
	return buf, nil
}
