// SPDX-License-Identifier: MIT

package main

import (
	"os"
	"strings"
	"testing"
)

// TestSimRunEnvPreload: a command that sets LD_PRELOAD through env(1)
// inside the emulated host keeps the emulator's library after its own
// (env would otherwise replace it, and the program find no RDMA device);
// env told to empty the environment or unset LD_PRELOAD is refused with
// one line, exit 2, before anything runs.
func TestSimRunEnvPreload(t *testing.T) {
	lib := fakeLibrary(t)
	t.Setenv("LD_PRELOAD", "")
	model := tinyModel(t)
	for _, tc := range []struct {
		name    string
		command []string
		code    int
		stdout  string // with code 0
		stderr  string // with code 2
	}{
		{"env LD_PRELOAD", []string{"env", "LD_PRELOAD=/opt/x/libmine.so", "sh", "-c", `echo "$LD_PRELOAD"`}, 0, "/opt/x/libmine.so:" + lib + "\n", ""},
		{"env -u HOME LD_PRELOAD", []string{"env", "-u", "HOME", "LD_PRELOAD=/a.so", "sh", "-c", `echo "$LD_PRELOAD"`}, 0, "/a.so:" + lib + "\n", ""},
		{"env -i", []string{"env", "-i", "LD_PRELOAD=/a.so", "touch", "ran"}, 2, "", "env -i would drop the emulated host"},
		{"env -u LD_PRELOAD", []string{"env", "-u", "LD_PRELOAD", "touch", "ran"}, 2, "", "env -u LD_PRELOAD would drop the emulated host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			code, stdout, stderr := runSimCmd(t, append([]string{"--model", model, "--"}, tc.command...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stdout %q, stderr %q)", code, tc.code, stdout, stderr)
			}
			if code == 0 && stdout != tc.stdout {
				t.Errorf("LD_PRELOAD inside: %q, want %q", stdout, tc.stdout)
			}
			if code != 0 && (!strings.Contains(stderr, tc.stderr) || strings.Count(stderr, "\n") != 1) {
				t.Errorf("stderr %q: want one line with %q", stderr, tc.stderr)
			}
			if _, err := os.Stat("ran"); code != 0 && err == nil {
				t.Errorf("refused, and yet the command ran")
			}
		})
	}
}
