package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/efap2p/efap2p/sim"
)

func init() {
	register(&command{name: "sim", summary: "emulated EFA hosts: list models, write a model's sysfs tree", run: runSim})
}

const simUsage = `Usage:
  efap2p sim list
      list the built-in machine models
  efap2p sim write [--machine NAME | --model FILE] [--unprivileged] DIR
      write the model's sysfs tree (and the emulator's efasim.conf) under DIR
`

func runSim(args []string, stdout, stderr io.Writer) error {
	sub, rest := splitSub(args)
	switch sub {
	case "list":
		return simList(rest, stdout)
	case "write":
		return simWrite(rest, stdout, stderr)
	case "":
		if len(rest) > 0 && (rest[0] == "-h" || rest[0] == "--help") {
			fmt.Fprint(stdout, simUsage)
			return errHelp
		}
	}
	fmt.Fprint(stderr, simUsage)
	return usagef("sim: unknown or missing subcommand %q", sub)
}

// modelFlags are the flags that choose a machine model.
type modelFlags struct {
	machine string
	model   string
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.machine, "machine", "", "built-in machine model `NAME` (default "+sim.DefaultMachine+"; see 'efap2p sim list')")
	fs.StringVar(&m.model, "model", "", "machine model `FILE` (JSON, see sim/machines/README.md)")
}

func (m *modelFlags) load() (*sim.Machine, error) {
	switch {
	case m.machine != "" && m.model != "":
		return nil, usagef("--machine and --model exclude each other")
	case m.model != "":
		mm, err := sim.LoadFile(m.model)
		if err != nil {
			return nil, usageError{err}
		}
		return mm, nil
	}
	name := m.machine
	if name == "" {
		name = sim.DefaultMachine
	}
	mm, err := sim.Builtin(name)
	if err != nil {
		return nil, usageError{err}
	}
	return mm, nil
}

func simList(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprint(stdout, simUsage)
			return errHelp
		}
		return usagef("sim list takes no arguments")
	}
	for _, n := range sim.BuiltinNames() {
		m, err := sim.Builtin(n)
		if err != nil {
			return err
		}
		desc := m.Description
		if i := strings.Index(desc, ": "); i > 0 && i < 60 {
			desc = desc[:i]
		}
		fmt.Fprintf(stdout, "%-28s %3d functions %3d EFA  %s\n", n, len(m.Functions()), len(m.EFANICs()), desc)
	}
	return nil
}

func simWrite(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim write", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	unpriv := fs.Bool("unprivileged", false, "write config files as a non-root process sees them (64 bytes: ACS unknown)")
	fs.Usage = func() { fmt.Fprint(stderr, simUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return errHelp
		}
		return usageError{err}
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usagef("sim write needs exactly one directory")
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	opt := sim.WriteOptions{}
	if *unpriv {
		opt.ConfigBytes = 64
	}
	if err := m.Write(fs.Arg(0), opt); err != nil {
		return fmt.Errorf("writing %s: %w", fs.Arg(0), err)
	}
	fmt.Fprintf(stdout, "wrote machine %s (%d functions, %d EFA NICs) to %s\n", m.Name, len(m.Functions()), len(m.EFANICs()), fs.Arg(0))
	return nil
}
