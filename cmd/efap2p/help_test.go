// SPDX-License-Identifier: MIT

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestHelpFits: every help screen fits 80 columns.
func TestHelpFits(t *testing.T) {
	forms := append(helpForms(), []string{})
	for _, form := range forms {
		_, out, _ := runTool(append(slices.Clone(form), "--help")...)
		for _, l := range strings.Split(out, "\n") {
			if n := len([]rune(l)); n > 80 {
				t.Errorf("efap2p %s --help: a line of %d columns: %q", strings.Join(form, " "), n, l)
			}
		}
	}
}

// TestSimWriteHelp: 'sim write --help' is write's help, not all of sim's.
func TestSimWriteHelp(t *testing.T) {
	_, out, _ := runTool("sim", "write", "--help")
	if !strings.HasPrefix(out, "Usage: efap2p sim write ") {
		t.Errorf("sim write --help starts %.60q; want its own usage", out)
	}
	for _, other := range []string{"Running a command", "--fabric", "--keep"} {
		if strings.Contains(out, other) {
			t.Errorf("sim write --help shows %q, which is sim's, not write's", other)
		}
	}
}

// helpOptions are the options a --help screen lists (its first options
// section), -h and --help aside.
func helpOptions(out string) []string {
	var opts []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "Options"):
			if in {
				return opts
			}
			in = true
		case in && strings.HasPrefix(l, "  -") && !strings.HasPrefix(l, "  -h, --help"):
			opts = append(opts, strings.Fields(l)[0])
		}
	}
	sort.Strings(opts)
	return opts
}

// synopsisOptions reads the options of each form in efap2p(1)'s SYNOPSIS.
func synopsisOptions(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "man", "efap2p.1"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	start, end := strings.Index(page, ".SH SYNOPSIS"), strings.Index(page, ".SH DESCRIPTION")
	if start < 0 || end < start {
		t.Fatal("efap2p.1: no SYNOPSIS section")
	}
	forms := map[string][]string{}
	form := ""
	head := regexp.MustCompile(`^\.B efap2p ([a-z]+(?: (?:list|write))?)\b`)
	opt := regexp.MustCompile(`(?:^|[ "\[])(--[a-z0-9-]+|-o)\b`)
	for _, l := range strings.Split(page[start:end], "\n") {
		if m := head.FindStringSubmatch(l); m != nil {
			// a form shown twice (explain, explain --all) is one command
			form = m[1]
			if forms[form] == nil {
				forms[form] = []string{}
			}
			l = l[len(m[0]):]
		} else if form == "" || !strings.HasPrefix(l, ".") {
			continue
		}
		for _, m := range opt.FindAllStringSubmatch(l, -1) {
			if m[1] != "--" && m[1] != "--help" && !slices.Contains(forms[form], m[1]) {
				forms[form] = append(forms[form], m[1])
			}
		}
	}
	for f := range forms {
		sort.Strings(forms[f])
	}
	return forms
}

// TestManSynopsis: efap2p(1)'s SYNOPSIS shows every option of each
// command, and no option the command lacks.
func TestManSynopsis(t *testing.T) {
	man := synopsisOptions(t)
	for _, form := range [][]string{{"topo"}, {"explain"}, {"export"}, {"check"}, {"env"}, {"sim"}, {"sim", "write"}, {"sim", "list"}} {
		name := strings.Join(form, " ")
		_, out, _ := runTool(append(slices.Clone(form), "--help")...)
		got, ok := man[name]
		if !ok {
			t.Errorf("efap2p.1's SYNOPSIS has no efap2p %s", name)
			continue
		}
		if want := helpOptions(out); !slices.Equal(got, want) {
			t.Errorf("efap2p.1's SYNOPSIS of efap2p %s shows %v; --help lists %v", name, got, want)
		}
	}
}

// TestDocVersions: the header and the man pages name no efap2p release
// later than this one, and efap2p(1) is this release's page.
func TestDocVersions(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	release := strings.TrimSpace(string(b))
	files, _ := filepath.Glob(filepath.Join("..", "..", "man", "*.[0-9]"))
	files = append(files, filepath.Join("..", "..", "include", "infiniband", "efadv_p2p.h"))
	named := regexp.MustCompile(`efap2p ([0-9]+\.[0-9]+(?:\.[0-9]+)?)`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(data), -1) {
			if laterRelease(m[1], release) {
				t.Errorf("%s names efap2p %s; this release is %s", filepath.Base(f), m[1], release)
			}
		}
	}
	page, _ := os.ReadFile(filepath.Join("..", "..", "man", "efap2p.1"))
	if !strings.Contains(string(page), `"efap2p `+release+`"`) {
		t.Errorf("efap2p.1's .TH does not name efap2p %s", release)
	}
}

// laterRelease reports whether release a (1.1, 1.0.2) is later than b.
func laterRelease(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for len(pa) < 3 {
		pa = append(pa, "0")
	}
	for len(pb) < 3 {
		pb = append(pb, "0")
	}
	for i := 0; i < 3; i++ {
		x, y := pa[i], pb[i]
		if len(x) != len(y) {
			return len(x) > len(y)
		}
		if x != y {
			return x > y
		}
	}
	return false
}

// TestVersionCommit: a binary built without go build's VCS stamp (the
// Debian packages) names the commit the Makefile passed.
func TestVersionCommit(t *testing.T) {
	saved := commit
	t.Cleanup(func() { commit = saved })
	for _, tc := range []struct{ commit, want string }{
		{"0123456789abcdef0123456789abcdef01234567", ", commit 0123456789ab\n"},
		{"0123456789abcdef0123456789abcdef01234567+modified", ", commit 0123456789ab, modified\n"},
	} {
		commit = tc.commit
		if _, out, _ := runTool("--version"); !strings.HasSuffix(out, tc.want) {
			t.Errorf("built with -X main.commit=%s: %q; want it to end %q", tc.commit, out, tc.want)
		}
	}
}

// TestHelpNamesFiles: the files the help points to exist: in the source
// tree for a plain go build, and below the directories the Makefile
// passes once installed (scripts/ci-packages.sh checks the installed ones).
func TestHelpNamesFiles(t *testing.T) {
	all := func() string {
		var b strings.Builder
		for _, form := range append(helpForms(), []string{}) {
			_, out, _ := runTool(append(slices.Clone(form), "--help")...)
			b.WriteString(out)
		}
		return b.String()
	}
	source := regexp.MustCompile(`\b(?:docs|models|sim)/[A-Za-z0-9_./-]*[A-Za-z0-9_]`)
	named := source.FindAllString(all(), -1)
	if len(named) < 4 {
		t.Fatalf("the help names %v; want the schema, operators.md, the model format, efasim.h and more", named)
	}
	for _, f := range named {
		if _, err := os.Stat(filepath.Join("..", "..", f)); err != nil {
			t.Errorf("the help names %s: %v", f, err)
		}
	}

	saved := [3]string{docDir, dataDir, includeDir}
	t.Cleanup(func() { docDir, dataDir, includeDir = saved[0], saved[1], saved[2] })
	docDir, dataDir, includeDir = "/usr/share/doc/efap2p", "/usr/share/efap2p", "/usr/include"
	out := all()
	for _, want := range []string{"/usr/share/doc/efap2p/operators.md", "/usr/share/efap2p/check-report.schema.json",
		"/usr/share/doc/efap2p/topology-file.md", "/usr/share/doc/efap2p/machine-models.md", "/usr/include/efasim.h"} {
		if !strings.Contains(out, want) {
			t.Errorf("installed, the help does not name %s", want)
		}
	}
	if m := source.FindString(out); m != "" {
		t.Errorf("installed, the help still names the source tree's %s", m)
	}
}
