// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeLibrary points EFASIM_LIBRARY at a file standing for libefasim.so.
// It is not a shared object: the dynamic loader warns on stderr and runs
// the command without it, which is all these tests of the runner need.
func fakeLibrary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "libefasim.so")
	if err := os.WriteFile(p, []byte("not an ELF file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EFASIM_LIBRARY", p)
	return p
}

// tinyModelJSON is a one-NIC machine model: writing it is quicker than the
// 32-NIC default on slow temporary filesystems.
const tinyModelJSON = `{"format": 1, "name": "tiny", "description": "one EFA NIC on a root bus",
  "cpu": {"arch": "x86", "vendor": "AMD", "family": "19", "model": "01"},
  "root_buses": [{"domain": "0000", "bus": "00", "numa_node": 0, "functions": [
    {"addr": "0000:00:00.0", "kind": "host_bridge", "vendor": "1022", "device": "1480", "class": "060000"},
    {"addr": "0000:00:05.0", "kind": "endpoint", "vendor": "1d0f", "device": "efa1", "class": "020000", "driver": "efa", "efa": {}}
  ]}]}`

// tinyModel writes tinyModelJSON and returns its path.
func tinyModel(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tiny.json")
	if err := os.WriteFile(p, []byte(tinyModelJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runSimCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"sim"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestSimRunExitStatus(t *testing.T) {
	fakeLibrary(t)
	model := tinyModel(t)
	for _, tc := range []struct {
		name    string
		command []string
		want    int
	}{
		{"success", []string{"true"}, 0},
		{"exit status", []string{"sh", "-c", "exit 3"}, 3},
		{"killed by SIGTERM", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{"killed by SIGKILL", []string{"sh", "-c", "kill -KILL $$"}, 128 + 9},
		{"not found", []string{"efap2p-no-such-command"}, 127},
		{"not executable", []string{os.DevNull}, 126},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runSimCmd(t, append([]string{"--model", model, "--"}, tc.command...)...)
			if code != tc.want {
				t.Errorf("exit status %d, want %d (stderr: %s)", code, tc.want, stderr)
			}
		})
	}
}

func TestSimRunEnvironment(t *testing.T) {
	lib := fakeLibrary(t)
	t.Setenv("LD_PRELOAD", "/opt/other/libother.so")
	t.Setenv("EFASIM_CONFIG", "/somewhere/else.conf")
	script := `test -f "$SYSFS_PATH/efasim.conf" || exit 9
test -d "$SYSFS_PATH/class/infiniband_verbs/uverbs0" || exit 10
echo "LD_PRELOAD=$LD_PRELOAD"
echo "EFASIM_CONFIG=${EFASIM_CONFIG-unset}"
echo "SYSFS_PATH=$SYSFS_PATH"`
	code, stdout, stderr := runSimCmd(t, "--model", tinyModel(t), "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("exit status %d (stderr: %s)", code, stderr)
	}
	if want := "LD_PRELOAD=/opt/other/libother.so:" + lib + "\n"; !strings.Contains(stdout, want) {
		t.Errorf("stdout %q lacks %q: the library must be appended to LD_PRELOAD", stdout, want)
	}
	if !strings.Contains(stdout, "EFASIM_CONFIG=unset\n") {
		t.Errorf("stdout %q: EFASIM_CONFIG must be removed", stdout)
	}
	_, tree, _ := strings.Cut(stdout, "SYSFS_PATH=")
	tree = strings.TrimSpace(tree)
	if tree == "" {
		t.Fatalf("no SYSFS_PATH in %q", stdout)
	}
	if _, err := os.Stat(tree); !os.IsNotExist(err) {
		t.Errorf("the tree %s is still there after the command (stat: %v)", tree, err)
	}
}

func TestSimRunPreloadAlone(t *testing.T) {
	lib := fakeLibrary(t)
	t.Setenv("LD_PRELOAD", "")
	code, stdout, stderr := runSimCmd(t, "--", "sh", "-c", `echo "$LD_PRELOAD"`)
	if code != 0 || strings.TrimSpace(stdout) != lib {
		t.Errorf("exit %d, LD_PRELOAD %q, want %q (stderr: %s)", code, stdout, lib, stderr)
	}
}

func TestSimRunKeep(t *testing.T) {
	fakeLibrary(t)
	code, stdout, stderr := runSimCmd(t, "--keep", "--model", tinyModel(t), "--", "sh", "-c", `echo "$SYSFS_PATH"`)
	if code != 0 {
		t.Fatalf("exit status %d (stderr: %s)", code, stderr)
	}
	tree := strings.TrimSpace(stdout)
	t.Cleanup(func() { os.RemoveAll(tree) })
	if _, err := os.Stat(filepath.Join(tree, "efasim.conf")); err != nil {
		t.Errorf("--keep: %v", err)
	}
	if !strings.Contains(stderr, tree) {
		t.Errorf("--keep must print the tree's path; stderr: %q", stderr)
	}
}

func TestSimRunMissingLibrary(t *testing.T) {
	t.Run("EFASIM_LIBRARY names no file", func(t *testing.T) {
		t.Setenv("EFASIM_LIBRARY", filepath.Join(t.TempDir(), "missing.so"))
		code, _, stderr := runSimCmd(t, "--", "true")
		if code != 2 || !strings.Contains(stderr, "EFASIM_LIBRARY") {
			t.Errorf("exit %d, stderr %q; want 2 and a message naming EFASIM_LIBRARY", code, stderr)
		}
	})
	t.Run("nothing next to the executable", func(t *testing.T) {
		t.Setenv("EFASIM_LIBRARY", "")
		dir := t.TempDir()
		restore := executable
		executable = func() (string, error) { return filepath.Join(dir, "bin", "efap2p"), nil }
		t.Cleanup(func() { executable = restore })
		code, _, stderr := runSimCmd(t, "--", "true")
		if code != 2 || !strings.Contains(stderr, "libefasim.so, the emulator's library, not found") || !strings.Contains(stderr, "make c-build") {
			t.Errorf("exit %d, stderr %q; want 2 and a hint to build the library", code, stderr)
		}
	})
}

func TestSimRunUsage(t *testing.T) {
	fakeLibrary(t)
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no --", []string{"--machine", "p5.48xlarge", "true"}, "after --"},
		{"nothing after --", []string{"--"}, "no command"},
		{"unknown machine", []string{"--machine", "no-such-machine", "--", "true"}, "no-such-machine"},
		{"both model flags", []string{"--machine", "p5.48xlarge", "--model", "x.json", "--", "true"}, "exclude"},
		{"missing model file", []string{"--model", "/nonexistent/model.json", "--", "true"}, "model.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runSimCmd(t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.msg)
			}
		})
	}
}

func TestSimHelp(t *testing.T) {
	code, stdout, _ := runSimCmd(t, "--help")
	if code != 0 || !strings.Contains(stdout, "-- COMMAND") || !strings.Contains(stdout, "Exit status") {
		t.Errorf("exit %d, help %q", code, stdout)
	}
}

// --fabric: each invocation is a host of the fabric, with a number of its
// own in its GIDs; the fabric directory is named in efasim.conf; a stale
// QP file is removed when the host ends.
func TestSimRunFabric(t *testing.T) {
	fakeLibrary(t)
	fabric := filepath.Join(t.TempDir(), "fabric")
	// what a killed process left: no process holds QPN 9's lock
	stale := filepath.Join(fabric, "qp-fe800000000000000001000000000501-9")
	script := `grep '^fabric ' "$SYSFS_PATH/efasim.conf"
cat "$SYSFS_PATH"/class/infiniband/*/ports/1/gids/0
touch ` + stale
	code, first, stderr := runSimCmd(t, "--model", tinyModel(t), "--fabric", fabric, "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("exit status %d (stderr: %s)", code, stderr)
	}
	if want := "fabric " + fabric + "\nfe80:0000:0000:0000:0001:0000:0028:0001\n"; first != want {
		t.Errorf("host 1 sees %q, want %q", first, want)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale QP file was left in the fabric (stat: %v)", err)
	}
	// a second host while the first one runs: another number
	outer := `efap2p_gid() { cat "$SYSFS_PATH"/class/infiniband/*/ports/1/gids/0; }; efap2p_gid; "$EFAP2P" sim --model "$MODEL" --fabric "$FABRIC" -- sh -c 'cat "$SYSFS_PATH"/class/infiniband/*/ports/1/gids/0'`
	t.Setenv("FABRIC", fabric)
	t.Setenv("MODEL", tinyModel(t))
	bin := filepath.Join(t.TempDir(), "efap2p")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Setenv("EFAP2P", bin)
	code, both, stderr := runSimCmd(t, "--model", tinyModel(t), "--fabric", fabric, "--", "sh", "-c", outer)
	if code != 0 {
		t.Fatalf("exit status %d (stderr: %s)", code, stderr)
	}
	if want := "fe80:0000:0000:0000:0001:0000:0028:0001\nfe80:0000:0000:0000:0002:0000:0028:0001\n"; both != want {
		t.Errorf("hosts 1 and 2 see %q, want %q", both, want)
	}
	if code, _, _ := runSimCmd(t, "--fabric", filepath.Join(fabric, "host-1.lock"), "--", "true"); code == 0 {
		t.Error("a fabric that is a file: want a failure")
	}
}
