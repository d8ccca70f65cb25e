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

// helpForms is every form of the tool that has a --help of its own.
func helpForms() [][]string {
	var forms [][]string
	for name := range commands {
		forms = append(forms, []string{name})
	}
	forms = append(forms, []string{"sim", "write"}, []string{"sim", "list"})
	sort.Slice(forms, func(i, j int) bool { return strings.Join(forms[i], " ") < strings.Join(forms[j], " ") })
	return forms
}

// singleDash finds an option shown the flag package's way (-sysfs) rather
// than as --sysfs.
var singleDash = regexp.MustCompile(`(^|[\s\[(|,'])-[a-z][a-z-]+`)

// TestHelp: --help (and -h, and 'help CMD') of every command prints its
// usage and options on stdout, exit status 0, nothing on stderr, with
// every option of more than one letter shown as --name.
func TestHelp(t *testing.T) {
	for _, form := range helpForms() {
		for _, args := range [][]string{append(slices.Clone(form), "--help"), append(slices.Clone(form), "-h")} {
			code, out, errs := runTool(args...)
			if code != 0 || errs != "" || !strings.Contains(out, "Usage") {
				t.Errorf("%v: exit %d, stderr %q, stdout %.80q; want the usage on stdout and exit 0", args, code, errs, out)
				continue
			}
			for _, l := range strings.Split(out, "\n") {
				if m := singleDash.FindString(l); m != "" {
					t.Errorf("%v: option shown as %q in %q; want --name", args, strings.TrimSpace(m), l)
				}
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}, {"help", "topo"}, {"help", "sim"}} {
		code, out, errs := runTool(args...)
		if code != 0 || errs != "" || !strings.Contains(out, "Usage") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}

// TestHelpListsOptions: every command's --help lists its options, sim's
// those of running a command and of writing a tree.
func TestHelpListsOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"topo", "--help"}, []string{"--sysfs DIR", "--topology FILE", "--json", "--full", "--dot", "-h, --help"}},
		{[]string{"explain", "--help"}, []string{"--sysfs DIR", "--topology FILE", "--json"}},
		{[]string{"export", "--help"}, []string{"--sysfs DIR", "--format FORMAT", "-o FILE", "--force", "--peer-blocked NIC"}},
		{[]string{"sim", "--help"}, []string{"--machine NAME", "--model FILE", "--keep", "--unprivileged", "--force"}},
		{[]string{"sim", "write", "--help"}, []string{"--unprivileged", "--force"}},
	} {
		_, out, _ := runTool(tc.args...)
		for _, w := range tc.want {
			if !strings.Contains(out, "  "+w) {
				t.Errorf("%v: no option %q listed in\n%s", tc.args, w, out)
			}
		}
	}
}

// TestUnknownOption: one line naming the command and the option, one
// line of hint, exit status 2, nothing on stdout.
func TestUnknownOption(t *testing.T) {
	for _, form := range helpForms() {
		args := append(slices.Clone(form), "--no-such-option")
		if form[0] == "sim" && len(form) == 1 {
			args = append(args, "--", "true")
		}
		code, out, errs := runTool(args...)
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		want := []string{
			"efap2p " + form[0] + ": unknown option --no-such-option",
			"Try 'efap2p " + form[0] + " --help' for more information.",
		}
		if code != 2 || out != "" || !slices.Equal(lines, want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errs, want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-option"}, "efap2p: unknown option --no-such-option\n"},
		{[]string{"frobnicate"}, "efap2p: unknown command \"frobnicate\"\n"},
		{[]string{"help", "frobnicate"}, "unknown command \"frobnicate\"\n"},
		{[]string{"topo", "--sysfs"}, "efap2p topo: option --sysfs needs a value\n"},
		{[]string{"export", "-o"}, "efap2p export: option -o needs a value\n"},
		{[]string{"topo", "--json=maybe"}, "efap2p topo: invalid boolean value \"maybe\" for --json"},
		// export writes no JSON of its own: no --json that does nothing
		{[]string{"export", "--json"}, "efap2p export: unknown option --json\n"},
		{[]string{"topo", "extra"}, "efap2p topo: takes no arguments\n"},
	} {
		code, out, errs := runTool(tc.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "--help' for more information.") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errs, tc.want)
		}
	}
	if code, out, errs := runTool(); code != 2 || out != "" || !strings.Contains(errs, "Usage") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q; want the usage on stderr, exit 2", code, out, errs)
	}
}

// TestOptionsAfterArguments: options may follow the arguments; "--" ends
// them.
func TestOptionsAfterArguments(t *testing.T) {
	dir := writeTree(t, "p5.48xlarge")
	code, out, errs := runTool("explain", "0000:53:00.0", "0000:4f:00.0", "--sysfs", dir, "--json")
	if code != 0 || !strings.HasPrefix(out, "{") {
		t.Errorf("options after the arguments: exit %d, %s %s", code, out, errs)
	}
	code, _, errs = runTool("explain", "--sysfs", dir, "--", "53:00.0", "--json")
	if code != 2 || !strings.Contains(errs, `"--json"`) {
		t.Errorf("after --, --json is an argument: exit %d, %s", code, errs)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"-V"}} {
		code, out, errs := runTool(args...)
		first, _, _ := strings.Cut(out, "\n")
		if code != 0 || errs != "" || first != "efap2p "+toolVersion() {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want \"efap2p %s\" first", args, code, out, errs, toolVersion())
		}
	}
	saved := version
	t.Cleanup(func() { version = saved })
	version = "9.8.7"
	if _, out, _ := runTool("--version"); !strings.HasPrefix(out, "efap2p 9.8.7\nbuilt with go") {
		t.Errorf("with -X main.version=9.8.7: %q", out)
	}
}

// TestVersionAgrees: the VERSION file (which the Makefile, CMake, the
// library's file name and its pkg-config file take) and the Debian
// package's version are one.
func TestVersionAgrees(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(b))
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(v) {
		t.Fatalf("VERSION %q: want MAJOR.MINOR.PATCH", v)
	}
	cl, err := os.ReadFile(filepath.Join("..", "..", "debian", "changelog"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^efap2p \(([^)-]+)(-[^)]*)?\) `).FindSubmatch(cl)
	if m == nil || string(m[1]) != v {
		t.Errorf("debian/changelog's first entry %q; want version %s (the VERSION file)", strings.SplitN(string(cl), "\n", 2)[0], v)
	}
}
