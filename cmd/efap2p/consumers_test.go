// SPDX-License-Identifier: MIT

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docCommand is a command a document shows: in a console block with the
// output it shows (want, nil for none), or in a sh block; tree names the
// emulated host it runs on (<!-- tree: NAME --> before its block).
type docCommand struct {
	cmd, tree string
	want      []string
}

// docCommands reads the commands of text's sh and console blocks.
func docCommands(text string) []docCommand {
	var cmds []docCommand
	fence, tree := "", "healthy"
	marker := regexp.MustCompile(`^<!-- tree: ([a-z]+) -->$`)
	for _, l := range strings.Split(text, "\n") {
		if m := marker.FindStringSubmatch(l); m != nil && fence == "" {
			tree = m[1]
			continue
		}
		if strings.HasPrefix(l, "```") {
			if fence == "" {
				fence = strings.TrimPrefix(l, "```") + " "
			} else {
				fence, tree = "", "healthy"
			}
			continue
		}
		switch fence {
		case "sh ":
			if i := strings.Index(l, " #"); i >= 0 {
				l = l[:i]
			}
			if l = strings.TrimSpace(l); l != "" {
				cmds = append(cmds, docCommand{cmd: l, tree: tree})
			}
		case "console ":
			if c, ok := strings.CutPrefix(l, "$ "); ok {
				cmds = append(cmds, docCommand{cmd: c, tree: tree, want: []string{}})
			} else if len(cmds) > 0 {
				cmds[len(cmds)-1].want = append(cmds[len(cmds)-1].want, l)
			}
		}
	}
	return cmds
}

// normalized is output as a document shows it: the emulated host's paths
// as the real host's (below /), and comments unwrapped, one a paragraph.
func normalized(out []string, tree string) []string {
	var lines []string
	for _, l := range out {
		l = strings.ReplaceAll(l, tree+"/", "/")
		if c, ok := strings.CutPrefix(l, "# "); ok && len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], "# ") &&
			!strings.HasSuffix(lines[len(lines)-1], ":") && !strings.HasSuffix(lines[len(lines)-1], ".") {
			lines[len(lines)-1] += " " + c
			continue
		}
		lines = append(lines, l)
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// TestConsumerDocs runs every command docs/consumers.md and the README's
// "What the GPU stacks see" show, on emulated p5.48xlarge hosts with their
// boot-time files (healthy, and every NIC firmware-blocked), and compares
// the output they show; srun runs in the fleet scenario (make fleet-test),
// which must hold it.
func TestConsumerDocs(t *testing.T) {
	cleanEnv(t)
	trees := map[string]string{"healthy": writeTree(t, "p5.48xlarge"), "blocked": writeTree(t, "p5.48xlarge")}
	if code, _, errs := runTool("export", "--sysfs", trees["healthy"], "--boot", checkKernel); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := runTool("export", "--sysfs", trees["blocked"], "--boot", "--peer-blocked", p5NICList(t, trees["blocked"]), checkKernel); code != 0 {
		t.Fatal(errs)
	}
	fleet, err := os.ReadFile(filepath.Join("..", "..", "ctests", "fleet", "fleet.sh"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "consumers.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, _, _ := strings.Cut(string(readme)[max(strings.Index(string(readme), "\n## What the GPU stacks see\n"), 0):], "\n## The library")
	if !strings.HasPrefix(section, "\n## What the GPU stacks see") {
		t.Fatal(`README.md has no section "What the GPU stacks see" before "The library"`)
	}
	tmp := t.TempDir()
	for _, d := range []struct {
		name string
		min  int
		text string
	}{{"docs/consumers.md", 8, string(doc)}, {"README.md", 4, section}} {
		cmds := docCommands(d.text)
		if len(cmds) < d.min {
			t.Errorf("%s: %d commands found, want at least %d", d.name, len(cmds), d.min)
		}
		for _, c := range cmds {
			tree, ok := trees[c.tree]
			if !ok {
				t.Errorf("%s: %q: no tree %q", d.name, c.cmd, c.tree)
				continue
			}
			words := strings.Fields(strings.TrimPrefix(c.cmd, "sudo "))
			var out string
			switch words[0] {
			case "efap2p":
				args := append([]string{words[1], "--sysfs", tree, checkKernel}, words[2:]...)
				for i, a := range args {
					if strings.HasPrefix(a, "/") && i > 0 && args[i-1] == "-o" {
						args[i] = filepath.Join(tmp, strings.ReplaceAll(a, "/", "_"))
					}
				}
				code, stdout, stderr := runTool(args...)
				if code != 0 {
					t.Errorf("%s: %q: exit %d\n%s%s", d.name, c.cmd, code, stdout, stderr)
				}
				out = stdout + stderr
			case "grep":
				// on the host's files: below the emulated host's tree
				b, err := exec.Command("sh", "-c", strings.ReplaceAll(c.cmd, "/run/efap2p/", tree+"/run/efap2p/")).CombinedOutput()
				if err != nil {
					t.Errorf("%s: %q: %v\n%s", d.name, c.cmd, err, b)
				}
				out = string(b)
			default:
				// another program: the fleet scenario runs it
				if key := words[0] + " " + words[1]; !strings.Contains(string(fleet), key) {
					t.Errorf("%s: %q: ctests/fleet/fleet.sh does not run %q", d.name, c.cmd, key)
				}
				continue
			}
			if c.want == nil {
				continue
			}
			got, want := normalized(strings.Split(out, "\n"), tree), normalized(c.want, tree)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: %q on the %s host prints:\n%s\nthe document shows:\n%s", d.name, c.cmd, c.tree, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}
