// SPDX-License-Identifier: MIT

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOperatorsDocCommands runs every efap2p command docs/operators.md
// shows (shell blocks, indented command lines, the cron line, the NPD
// plugin's and NHC's command) on an emulated p5.48xlarge, its paths moved
// into a temporary directory; the other programs' commands (promtool,
// sinfo, scontrol, curl) must be run by the fleet scripts, which run them
// inside the engines (make fleet-test, ctests/fleet).
func TestOperatorsDocCommands(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operators.md"))
	if err != nil {
		t.Fatal(err)
	}
	var scripts strings.Builder
	for _, g := range []string{"../../ctests/fleet/*.sh", "../../ctests/check/*.sh"} {
		files, _ := filepath.Glob(g)
		for _, f := range files {
			b, _ := os.ReadFile(f)
			scripts.Write(b)
		}
	}
	var cmds []string
	fence, output := "", false
	for _, l := range strings.Split(string(doc), "\n") {
		// an indented "$ CMD" is a command, the indented lines after it
		// its output
		if fence == "" && strings.HasPrefix(l, "    $ ") {
			cmds, output = append(cmds, strings.TrimPrefix(l, "    $ ")), true
			continue
		}
		if output && (l == "" || strings.HasPrefix(l, "    ")) {
			continue
		}
		output = false
		if strings.HasPrefix(l, "```") {
			if fence == "" {
				fence = strings.TrimPrefix(l, "```") + " "
			} else {
				fence = ""
			}
			continue
		}
		switch {
		case fence == "sh ":
			cmds = append(cmds, l)
		case fence == " " && strings.Contains(l, "check_cmd_status"):
			cmds = append(cmds, l[strings.Index(l, "/usr/bin/efap2p"):])
		case fence == "" && strings.HasPrefix(l, "    ") && !strings.HasPrefix(strings.TrimSpace(l), "$ ") && !strings.HasPrefix(l, "     "):
			cmds = append(cmds, strings.TrimPrefix(l, "    "))
		case strings.Contains(l, `"path": "/usr/bin/efap2p"`):
			cmds = append(cmds, "/usr/bin/efap2p check --format line") // with its args line below
		}
	}
	cron := regexp.MustCompile(`^\*/5 \* \* \* \* root `)
	tree := checkTrees(t)["healthy"]
	tmp := t.TempDir()
	ran, other := 0, 0
	for _, c := range cmds {
		c = strings.TrimSpace(c)
		if i := strings.Index(c, " #"); i >= 0 {
			c = strings.TrimSpace(c[:i])
		}
		c = cron.ReplaceAllString(c, "")
		if c == "" || strings.HasPrefix(c, "GPU") || strings.HasPrefix(c, "efap2p check:") {
			continue
		}
		words := strings.Fields(strings.TrimPrefix(c, "sudo "))
		if w := words[0]; w == "efap2p" || w == "/usr/bin/efap2p" {
			args := words[1:]
			if args[0] == "sim" {
				// the emulator's run: ctests/check (check.healthy) runs it
				if !strings.Contains(scripts.String(), `sim --machine p5.48xlarge -- "$efap2p" check`) {
					t.Errorf("%q: no test runs it", c)
				}
				continue
			}
			for i, a := range args {
				if strings.HasPrefix(a, "/") && i > 0 && args[i-1] == "-o" {
					args[i] = filepath.Join(tmp, strings.ReplaceAll(a, "/", "_"))
				}
			}
			args = append([]string{args[0], "--sysfs", tree, checkKernel}, args[1:]...)
			if code, out, errs := runTool(args...); code != 0 {
				t.Errorf("%q: exit %d\n%s%s", c, code, out, errs)
			}
			ran++
			continue
		}
		if words[0] == "kubectl" {
			// no Kubernetes here: test_dist.sh holds the manifest it
			// applies to what the document says (mounts, paths, formats)
			if !strings.Contains(c, "efap2p-check.daemonset.yaml") || !strings.Contains(scripts.String(), "efap2p-check.daemonset.yaml") {
				t.Errorf("%q: the manifest it applies is not tested", c)
			}
			continue
		}
		// another program: the fleet scripts run it, its program and first
		// argument as the document shows them
		key := words[0]
		if len(words) > 1 {
			key += " " + words[1]
		}
		if !strings.Contains(scripts.String(), key) {
			t.Errorf("%q: no fleet or check script runs %q", c, key)
		}
		other++
	}
	if ran < 5 || other < 4 {
		t.Errorf("ran %d efap2p commands, found %d others: the document's commands were not found", ran, other)
	}
}
