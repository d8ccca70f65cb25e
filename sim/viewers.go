// SPDX-License-Identifier: MIT

package sim

// What lets the programs people look at a machine with (lspci, lstopo)
// see the emulated host instead of this one. Neither honours SYSFS_PATH:
// hwloc (lstopo) reads a whole file system root named by HWLOC_FSROOT,
// where the tree is its sys/; libpci (lspci) takes the sysfs tree from its
// sysfs.path parameter only, given on the command line, so the tree holds
// an lspci that passes it, first on the emulated host's PATH.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The folders below an emulated host's tree: FSRootDir, whose sys is the
// tree (HWLOC_FSROOT), and BinDir, the programs put first on its PATH.
const (
	FSRootDir = ".fsroot"
	BinDir    = ".bin"
)

// writeViewers writes the tree's FSRootDir and, when lspci is installed,
// BinDir/lspci.
func writeViewers(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, FSRootDir), 0o755); err != nil {
		return err
	}
	if err := os.Symlink("..", filepath.Join(dir, FSRootDir, "sys")); err != nil {
		return err
	}
	lspci, err := exec.LookPath("lspci")
	if err != nil {
		return nil // nothing to stand in front of
	}
	if lspci, err = filepath.Abs(lspci); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, BinDir), 0o755); err != nil {
		return err
	}
	script := "#!/bin/sh\n" +
		"# efap2p sim: lspci of the emulated host (libpci reads the tree named by\n" +
		"# its sysfs.path parameter, and no environment variable)\n" +
		"exec " + shellQuote(lspci) + " -O " + shellQuote("sysfs.path="+filepath.Join(abs, "bus/pci")) + " \"$@\"\n"
	return os.WriteFile(filepath.Join(dir, BinDir, "lspci"), []byte(script), 0o555)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
