// SPDX-License-Identifier: MIT

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimWriteForce: sim write refuses a non-empty directory; --force
// replaces a tree written there before (nothing of the old machine is
// left), and never touches a directory that holds something else.
func TestSimWriteForce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	if code, _, errs := runSimCmd(t, "write", "--machine", "p4d.24xlarge", dir); code != 0 {
		t.Fatalf("new directory: exit %d: %s", code, errs)
	}
	code, _, errs := runSimCmd(t, "write", "--model", tinyModel(t), dir)
	if code != 2 || !strings.Contains(errs, "--force") {
		t.Errorf("a tree there: exit %d, %q; want 2 and a hint to --force", code, errs)
	}
	if code, _, errs := runSimCmd(t, "write", "--force", "--model", tinyModel(t), dir); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, errs)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "bus/pci/devices"))
	if err != nil || len(ents) != 2 {
		t.Errorf("after --force: %d functions (%v), want the tiny model's 2", len(ents), err)
	}

	other := t.TempDir()
	keep := filepath.Join(other, "notes.txt")
	if err := os.WriteFile(keep, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"write", other}, {"write", "--force", other}} {
		code, _, errs := runSimCmd(t, args...)
		if code != 2 || !strings.Contains(errs, "not empty") {
			t.Errorf("%v: exit %d, %q; want 2, not empty", args, code, errs)
		}
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine\n" {
		t.Errorf("the directory's own file: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(other); len(ents) != 1 {
		t.Errorf("sim write wrote into a directory it refused: %d entries", len(ents))
	}
}

func TestSimList(t *testing.T) {
	code, stdout, _ := runSimCmd(t, "list")
	if code != 0 || !strings.Contains(stdout, "p5.48xlarge") || !strings.Contains(stdout, " 32 EFA") {
		t.Errorf("exit %d, list %q", code, stdout)
	}
}
