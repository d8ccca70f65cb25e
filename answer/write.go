// SPDX-License-Identifier: MIT

package answer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/efap2p/efap2p/p2p"
)

// WriteTopology writes the topology file tf to name and its index to
// name+IndexSuffix, for the machine s reads: folders are created (0755),
// each file is written to a temporary file in the same folder, synced, made
// mode 0644 and renamed over the old one, so that a reader sees the old
// file or the new one, never a part. The index is worked out from the
// written file, as a reader will read it (opts.Warnf reports what it
// refuses; opts.TopologyFile is set here).
func WriteTopology(name string, tf *p2p.TopologyFile, s *p2p.Sysfs, opts p2p.Options) error {
	data, err := tf.Marshal()
	if err != nil {
		return err
	}
	// What the index needs of tf, so that its pairs can go (the GC frees
	// them) while the file is read back: a large machine's are hundreds
	// of megabytes, held twice otherwise.
	machine, peers := tf.Machine, peersOf(tf)
	tf = nil
	dir := filepath.Dir(name)
	if err := mkdirAll(dir); err != nil {
		return err
	}
	if err := writeAtomic(name, data); err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(name, &st); err != nil {
		return &os.PathError{Op: "stat", Path: name, Err: err}
	}
	// the index's sentences are explained one by one (Engine.reason)
	opts.TopologyFile, opts.TopologyFiles, opts.NoReasons = name, nil, true
	o := p2p.NewOracleWith(p2p.NewTopology(s), opts)
	if err := o.TopologyFileError(); err != nil {
		return fmt.Errorf("the file just written cannot be read back: %w", err)
	}
	ix, err := buildIndex(NewFromOracle(s, o), &machine, peers, JSONIdentity{
		Size: uint64(st.Size), MtimeNs: uint64(st.Mtim.Sec)*1e9 + uint64(st.Mtim.Nsec), Ino: st.Ino,
		CtimeNs: uint64(st.Ctim.Sec)*1e9 + uint64(st.Ctim.Nsec)})
	if err != nil {
		return err
	}
	// A file that outlives boots is checked on this machine now: in this
	// boot, on this tree, readers need not check its functions again.
	if !ix.BootBound {
		if b := bootID(); b != "" && len(b) < bootLen {
			ix.Checked, ix.BootID, ix.Tree = true, b, TreeID(s.Root())
		}
	}
	data = ix.Marshal()
	fns, err := s.Functions()
	if err != nil {
		return err
	}
	if limit := IndexLimit(len(fns)); uint64(len(data)) > limit {
		return fmt.Errorf("the index of %s would be %d bytes, more than its readers read on a machine of %d PCI functions (%d)", name, len(data), len(fns), limit)
	}
	if err := writeAtomic(name+IndexSuffix, data); err != nil {
		return err
	}
	return syncDir(dir)
}

// bootID is this boot's ID (/proc/sys/kernel/random/boot_id), "" when it
// cannot be read; tests replace it.
var bootID = func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// WriteFileAtomic writes data to name as WriteTopology writes its files:
// the folders created (0755), a temporary file synced, mode 0644, renamed.
func WriteFileAtomic(name string, data []byte) error {
	if err := mkdirAll(filepath.Dir(name)); err != nil {
		return err
	}
	if err := writeAtomic(name, data); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}

// mkdirAll creates dir and the folders above it that are missing, each mode
// 0755 whatever the umask: under umask 027 a folder made 0750 would hide
// the file in it from every reader but root's group (the readers are all
// the machine's processes). Folders that exist are left as they are.
func mkdirAll(dir string) error {
	st, err := os.Stat(dir)
	if err == nil {
		if !st.IsDir() {
			return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if !os.IsNotExist(err) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if os.IsExist(err) {
			return nil // made meanwhile by another: its mode is its maker's
		}
		return err
	}
	// the umask took bits away; fchmod is not subject to it (on the
	// folder just made, not on what its name may lead to by now)
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Chmod(0o755)
}

func writeAtomic(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	ok = true
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && err != syscall.EINVAL {
		return err
	}
	return nil
}
