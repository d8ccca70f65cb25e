// SPDX-License-Identifier: MIT

package p2p_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// within fails the test when f does not return in time, instead of letting
// a blocked read hang the whole test binary.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v (blocked on a FIFO?)", what, d)
	}
}

// TestHostileSysfsTree: a FIFO where sysfs has an attribute, a config file
// or the CPU's modalias gives an error (or a kernel-safe answer), never a
// process blocked for ever in open() or read().
func TestHostileSysfsTree(t *testing.T) {
	_, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	for _, file := range []string{
		"bus/pci/devices/0000:53:00.0/class",
		"bus/pci/devices/0000:45:00.0/config",
		"devices/system/cpu/modalias",
		"bus/pci/drivers/nvidia",
	} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			target := filepath.Join(dir, file)
			saved := filepath.Join(t.TempDir(), "saved")
			if err := os.Rename(target, saved); err != nil {
				t.Fatalf("the model's tree has no %s: %v", file, err)
			}
			defer func() {
				os.Remove(target)
				if err := os.Rename(saved, target); err != nil {
					t.Fatal(err)
				}
			}()
			if err := syscall.Mkfifo(target, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			o, src := openOracle(t, dir)
			within(t, 5*time.Second, "the oracle", func() {
				o.Verdict(p5GPU, p5NIC)
				o.ReachesAccelerator(p5NIC)
				o.Dmabuf(p5NIC, "nvidia")
				src.Drivers()
			})
		})
	}
}

// TestReadTopologyFileRefusesNonFiles: a FIFO, a directory, a character
// device or a file beyond the size limit is refused at once, with an error
// that names the file.
func TestReadTopologyFileRefusesNonFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // sparse: costs no disk
		t.Fatal(err)
	}
	f.Close()
	for _, name := range []string{fifo, dir, "/dev/zero", huge} {
		var err error
		within(t, 5*time.Second, "ReadTopologyFile("+name+")", func() {
			_, err = p2p.ReadTopologyFile(name)
		})
		if err == nil || !errors.Is(err, p2p.ErrTopologyFile) {
			t.Errorf("ReadTopologyFile(%s) = %v, want an ErrTopologyFile", name, err)
			continue
		}
		if !containsPath(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

func containsPath(msg, path string) bool {
	for i := 0; i+len(path) <= len(msg); i++ {
		if msg[i:i+len(path)] == path {
			return true
		}
	}
	return false
}
