// SPDX-License-Identifier: MIT

package archtest

import (
	"errors"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/efap2p/efap2p"

// pkg is one package of the module: its path below the module and the
// paths below the module of what its non-test files import; foreign holds
// what it imports from other modules.
type pkg struct {
	imports []string
	foreign []string
	dir     string
}

// rules are docs/architecture.md's tables.
type rules struct {
	helpers []string
	allowed map[string][]string // package -> what it may import
	never   map[string][]string // package or file -> what it never reaches
}

// root is the module's root directory.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", dir, err)
	}
	return dir
}

// scan reads the imports of every package of the module, as the go tool
// builds it here (cgo on).
func scan(t *testing.T, top string) map[string]*pkg {
	t.Helper()
	ctx := build.Default
	ctx.CgoEnabled = true
	out := map[string]*pkg{}
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != top && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "build") {
			return filepath.SkipDir
		}
		if p != top {
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		bp, err := ctx.ImportDir(p, 0)
		var none *build.NoGoError
		if errors.As(err, &none) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, p)
		rel = filepath.ToSlash(rel)
		k := &pkg{dir: p}
		for _, imp := range bp.Imports {
			switch {
			case strings.HasPrefix(imp, module+"/"):
				k.imports = append(k.imports, strings.TrimPrefix(imp, module+"/"))
			case strings.Contains(strings.SplitN(imp, "/", 2)[0], "."):
				k.foreign = append(k.foreign, imp)
			}
		}
		out[rel] = k
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	codeRE   = regexp.MustCompile("`([^`]+)`")
	tableRow = regexp.MustCompile(`^\|(.*)\|(.*)\|$`)
)

// readRules parses the two tables of docs/architecture.md. A row whose
// first cell starts with **helpers** names the helpers; "helpers" in a
// second cell allows them all.
func readRules(t *testing.T, top string) rules {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(top, "docs/architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	r := rules{allowed: map[string][]string{}, never: map[string][]string{}}
	var table map[string][]string
	var withHelpers []string
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "| package | may import |"):
			table = r.allowed
			continue
		case strings.HasPrefix(line, "| package | never reaches |"):
			table = r.never
			continue
		case !strings.HasPrefix(line, "|"):
			table = nil
			continue
		case table == nil || strings.HasPrefix(line, "|---"):
			continue
		}
		m := tableRow.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("docs/architecture.md: malformed row %q", line)
		}
		from := codes(m[1])
		if strings.HasPrefix(strings.TrimSpace(m[1]), "**helpers**") {
			r.helpers = append(r.helpers, from...)
		}
		for _, f := range from {
			if _, dup := table[f]; dup {
				t.Fatalf("docs/architecture.md: %s has two rows", f)
			}
			table[f] = codes(m[2])
			if strings.Contains(m[2], "helpers") {
				withHelpers = append(withHelpers, f)
			}
		}
	}
	for _, f := range withHelpers {
		r.allowed[f] = append(r.allowed[f], r.helpers...)
	}
	if len(r.allowed) == 0 || len(r.never) == 0 || len(r.helpers) == 0 {
		t.Fatalf("docs/architecture.md: tables not found (%d rows allowed, %d never, %d helpers)", len(r.allowed), len(r.never), len(r.helpers))
	}
	return r
}

func codes(s string) []string {
	out := []string{}
	for _, m := range codeRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestArrows: every package of the module has a row in the arrows table of
// docs/architecture.md, and imports only what its row allows.
func TestArrows(t *testing.T) {
	top := root(t)
	pkgs := scan(t, top)
	r := readRules(t, top)
	for name := range r.allowed {
		if pkgs[name] == nil {
			t.Errorf("docs/architecture.md has a row for %s, which is not a package of the module", name)
		}
	}
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		allowed, ok := r.allowed[n]
		if !ok {
			t.Errorf("%s has no row in docs/architecture.md's arrows table: say what it is and what it may import", n)
			continue
		}
		for _, imp := range pkgs[n].imports {
			if !slices.Contains(allowed, imp) {
				t.Errorf("forbidden arrow %s -> %s (docs/architecture.md allows %s only: %s)", n, imp, n, strings.Join(allowed, ", "))
			}
		}
	}
}

// TestNeverReaches: what the second table of docs/architecture.md forbids
// is reached by no path of imports; a row naming a file holds for that
// file's imports.
func TestNeverReaches(t *testing.T) {
	top := root(t)
	pkgs := scan(t, top)
	r := readRules(t, top)
	for from, forbidden := range r.never {
		start, err := starts(top, pkgs, from)
		if err != nil {
			t.Errorf("docs/architecture.md: %s: %v", from, err)
			continue
		}
		for _, bad := range forbidden {
			if path := reach(pkgs, start, bad); path != nil {
				t.Errorf("%s reaches %s: %s", from, bad, strings.Join(append([]string{from}, path...), " -> "))
			}
		}
	}
}

// starts returns what a row of the never table starts from: a package's
// imports, or a file's.
func starts(top string, pkgs map[string]*pkg, from string) ([]string, error) {
	if !strings.HasSuffix(from, ".go") {
		k := pkgs[from]
		if k == nil {
			return nil, fs.ErrNotExist
		}
		return append(append([]string{}, k.imports...), k.foreign...), nil
	}
	ctx := build.Default
	ctx.CgoEnabled = true
	dir, file := filepath.Split(filepath.Join(top, from))
	bp, err := ctx.ImportDir(dir, 0)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(bp.GoFiles, file) && !slices.Contains(bp.CgoFiles, file) {
		return nil, fs.ErrNotExist
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, file), nil, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var fi []string
	for _, spec := range f.Imports {
		fi = append(fi, strings.Trim(spec.Path.Value, `"`))
	}
	var out []string
	for _, imp := range fi {
		if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
			out = append(out, rest)
		} else if strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
			out = append(out, imp)
		}
	}
	return out, nil
}

// reach returns a path of imports from one of start to target, or nil.
func reach(pkgs map[string]*pkg, start []string, target string) []string {
	seen := map[string]bool{}
	var walk func(p string) []string
	walk = func(p string) []string {
		if p == target {
			return []string{p}
		}
		if seen[p] {
			return nil
		}
		seen[p] = true
		k := pkgs[p]
		if k == nil {
			return nil
		}
		for _, next := range append(append([]string{}, k.imports...), k.foreign...) {
			if rest := walk(next); rest != nil {
				return append([]string{p}, rest...)
			}
		}
		return nil
	}
	for _, s := range start {
		if path := walk(s); path != nil {
			return path
		}
	}
	return nil
}

// TestCommandThin: the tool's files are flags, errors and output, none
// longer than docs/architecture.md says (logic belongs to a package a Go
// caller can import).
func TestCommandThin(t *testing.T) {
	const maxLines = 250
	files, err := filepath.Glob(filepath.Join(root(t), "cmd/efap2p/*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in cmd/efap2p (%v)", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "\n"); n > maxLines {
			t.Errorf("%s: %d lines, more than %d", filepath.Base(f), n, maxLines)
		}
	}
}

// TestInternalBelow: internal/ holds what the packages above share, so a
// package under it imports nothing of the module outside internal/: a
// helper for one package's tests lives beside that package (sim/simtest,
// as net/http/httptest), not below the packages it would have to import.
func TestInternalBelow(t *testing.T) {
	top := root(t)
	pkgs := scan(t, top)
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !strings.HasPrefix(n, "internal/") {
			continue
		}
		for _, imp := range pkgs[n].imports {
			if !strings.HasPrefix(imp, "internal/") {
				t.Errorf("%s imports %s from below it: a package under internal/ imports only internal/ packages", n, imp)
			}
		}
	}
}
