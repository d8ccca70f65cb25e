// SPDX-License-Identifier: MIT

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMETool runs every efap2p command the README's "The tool"
// section shows, on an emulated p5.48xlarge (its -o files moved into a
// temporary directory, what follows a pipe left to the program it names),
// and holds the explain output it shows to what explain prints now. The
// emulator's run (sim --machine ... -- ibv_devinfo) is the emulator's
// program tests' (ctests/emulator/test_ibv_tools.py).
func TestREADMETool(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The tool\n")
	if !ok {
		t.Fatal("README.md has no section \"The tool\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	tree := writeTree(t, "p5.48xlarge")
	tmp := t.TempDir()
	ran := 0
	lines := strings.Split(section, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "    ") {
			continue
		}
		cmd := strings.TrimSpace(l)
		shown := strings.HasPrefix(cmd, "$ ")
		cmd = strings.TrimPrefix(cmd, "$ ")
		cmd = strings.TrimPrefix(cmd, "sudo ")
		if !strings.HasPrefix(cmd, "build/efap2p ") {
			continue
		}
		if j := strings.Index(cmd, " #"); j >= 0 {
			cmd = cmd[:j]
		}
		if j := strings.Index(cmd, "|"); j >= 0 {
			cmd = cmd[:j]
		}
		args := strings.Fields(strings.TrimPrefix(cmd, "build/efap2p "))
		if args[0] == "sim" && len(args) > 1 && args[1] != "list" {
			script, err := os.ReadFile(filepath.Join("..", "..", "ctests", "emulator", "test_ibv_tools.py"))
			if err != nil || !strings.Contains(string(script), "ibv_devinfo") {
				t.Errorf("%q: no test runs it (%v)", cmd, err)
			}
			continue
		}
		for j := range args {
			if j > 0 && args[j-1] == "-o" {
				args[j] = filepath.Join(tmp, strings.ReplaceAll(args[j], "/", "_"))
			}
			if args[j] == "TREE" && j > 0 && args[j-1] == "--sysfs" {
				args = append(args[:j-1], args[j+1:]...)
				break
			}
		}
		if args[0] != "sim" {
			args = append([]string{args[0], "--sysfs", tree, checkKernel}, args[1:]...)
		}
		code, out, errs := runTool(args...)
		if code != 0 {
			t.Errorf("%q: exit %d\n%s%s", cmd, code, out, errs)
			continue
		}
		ran++
		if !shown {
			continue
		}
		// the output shown below the command, up to "...": the first lines
		// of what it prints now
		got := strings.Split(out, "\n")
		for k := 0; i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    ") && !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "$ "); k++ {
			i++
			want := strings.TrimSpace(lines[i])
			if want == "..." {
				break
			}
			if k >= len(got) || strings.Join(strings.Fields(got[k]), " ") != strings.Join(strings.Fields(want), " ") {
				t.Errorf("%q: README shows line %d as %q; it prints %q", cmd, k+1, want, got[min(k, len(got)-1)])
			}
		}
	}
	if ran < 10 {
		t.Errorf("ran %d of the README's commands: the section's commands were not found", ran)
	}
}
