// SPDX-License-Identifier: MIT

package main

// efap2p sim list and efap2p sim write: the built-in models, and a model
// written as the tree of an emulated host.

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/sim"
)

func simList(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sim list", flag.ContinueOnError)
	if err := parseFlags(fs, args, "Usage: efap2p sim list\n\nThe built-in machine models: name, functions, EFA NICs, description.\n\n", nil); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("list takes no arguments")
	}
	for _, n := range models.BuiltinNames() {
		m, err := models.Builtin(n)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%-28s %3d functions %3d EFA  %s\n", n, len(m.Functions()), len(m.EFANICs()), m.Title())
	}
	return nil
}

// simWriteFlags is the flag set of sim write.
func simWriteFlags() (*flag.FlagSet, *modelFlags, *bool, *bool) {
	fs := flag.NewFlagSet("sim write", flag.ContinueOnError)
	mf := &modelFlags{}
	mf.register(fs)
	unpriv := fs.Bool("unprivileged", false, "write the tree as a process without CAP_SYS_ADMIN sees it (64-byte config files: ACS unknown; ACPI tables unreadable)")
	force := fs.Bool("force", false, "replace a tree written to DIR before")
	return fs, mf, unpriv, force
}

const simWriteUsage = `Usage: efap2p sim write [--machine NAME | --model FILE] [--unprivileged]
                        [--force] DIR

Write a machine model (default ` + models.DefaultMachine + `) under DIR as the sysfs tree
of an emulated host, the one 'efap2p sim -- COMMAND' writes for its
command, with the emulator's configuration, efasim.conf, at its root. The
commands of efap2p read it with --sysfs DIR; libibverbs, with libefasim.so
preloaded, with SYSFS_PATH=DIR.

DIR must be new or empty. --force replaces a tree written there before (a
directory holding efasim.conf); any other non-empty DIR is refused.

Options:
`

func simWrite(args []string, stdout, stderr io.Writer) error {
	fs, mf, unpriv, force := simWriteFlags()
	if err := parseFlags(fs, args, simWriteUsage, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("write needs exactly one directory")
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	dir := fs.Arg(0)
	if err := sim.PrepareTreeDir(dir, *force); err != nil {
		var te *sim.TreeDirError
		if errors.As(err, &te) {
			return inputError{err}
		}
		return err
	}
	opt := sim.TreeOptions{}
	opt.Unprivileged = *unpriv
	if err := sim.WriteTree(m, dir, opt); err != nil {
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	efas := fmt.Sprintf("%d EFA NICs", len(m.EFANICs()))
	if len(m.EFANICs()) == 1 {
		efas = "1 EFA NIC"
	}
	fmt.Fprintf(stdout, "wrote machine %s (%d functions, %s) to %s\n", m.Name, len(m.Functions()), efas, dir)
	return nil
}
