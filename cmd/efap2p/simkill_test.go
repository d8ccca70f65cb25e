// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSimRunKilledTakesCommand kills efap2p sim outright, as a CI job's
// timeout does: the command on the emulated host must not outlive it.
func TestSimRunKilledTakesCommand(t *testing.T) {
	fakeLibrary(t)
	bin := filepath.Join(t.TempDir(), "efap2p")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sim := exec.Command(bin, "sim", "--model", tinyModel(t), "--", "sh", "-c", `echo $$; exec sleep 300`)
	// the killed host's tree is left behind: in this test's folder, not
	// where other runs' efap2p sim would find it and say so
	sim.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := sim.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil || pid <= 0 {
		sim.Process.Kill()
		sim.Wait()
		t.Fatalf("no pid from the command: %v", err)
	}
	if err := sim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	sim.Wait()
	// a bound for the kernel's signal to land, not a measurement
	for deadline := time.Now().Add(20 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the command (pid %d) outlived the killed efap2p sim by 20 s", pid)
		}
	}
}

// alive reports whether pid is a process that has not exited (a zombie
// waiting for init has exited).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
