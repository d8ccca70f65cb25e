// SPDX-License-Identifier: MIT

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/sim"
)

func init() {
	register(&command{name: "sim", summary: "run a command inside an emulated EFA host; list and write machine models", run: runSim})
}

// simUsage is sim's --help text (a function: it names the installed
// documents' paths).
func simUsage() string {
	return `Usage:
  efap2p sim [--machine NAME | --model FILE] [--fabric DIR] [--keep]
             -- COMMAND [ARGS...]
      run COMMAND inside an emulated EFA host
  efap2p sim list
      list the built-in machine models
  efap2p sim write [--machine NAME | --model FILE] [--unprivileged] [--force]
                   DIR
      write the model's sysfs tree (and the emulator's efasim.conf) under DIR

Running a command:
  The model (default ` + models.DefaultMachine + `) is written as a sysfs tree to a new
  temporary directory; COMMAND runs with SYSFS_PATH naming that tree and
  libefasim.so appended to LD_PRELOAD (to the one env sets too, in
  'efap2p sim -- env LD_PRELOAD=LIB PROG'; env -i and env -u LD_PRELOAD,
  which would drop the host, are refused). Inside, the unmodified rdma-core
  userspace (libibverbs, libefa, ibv_devices, ibv_devinfo, pyverbs) sees the
  model's EFA devices: /dev/infiniband/uverbsN, contexts, device and port
  queries, protection domains, memory registration, dma-buf registration
  that the emulated kernel accepts or refuses per the model, and a data
  path: CQs, UD and SRD QPs, address handles, sends, RDMA reads and writes
  executed by an emulated device, between the processes of the host.
  EFASIM_CONFIG is removed from COMMAND's environment, so that the tree's
  efasim.conf is the one used; EFAP2P_KERNEL is set to the model's kernel
  release (its "kernel", default latest), and EFAP2P_KERNEL_CONFIG to the
  tree's kernel.config (its "kernel_config": with PCI_P2PDMA or not), so
  that the oracle inside decides by the emulated host's rules and kernel;
  EFASIM_TRACE=1 makes the library log each emulated call on stderr. The
  tree is removed when COMMAND ends, unless --keep is given (then its path
  is printed on stderr); the tree of an efap2p sim killed before it could
  (SIGKILL) is removed by the next one. Run without CAP_SYS_ADMIN (not as
  root), the tree is the one such a process sees: PCI config files of 64
  bytes (so the ACS state is unknown) and ACPI tables it cannot read; root
  sees them whole.

  lspci, lstopo and efap2p topo inside show the emulated machine, its CPUs
  and NUMA nodes: HWLOC_FSROOT names the tree for hwloc, and an lspci first
  on PATH passes it to libpci (-O sysfs.path=TREE/bus/pci).

  A program inside makes fake dma-bufs owned by the model's accelerators
  with libefasim's efasim_dmabuf_create(), declared in
    ` + headerFile("efasim.h") + `
  What the emulator answers, and how: ` + docFile("emulator.md") + `

  --fabric DIR makes the host one of several sharing the fabric directory
  DIR: each efap2p sim given the same DIR is another host (the lowest free
  host number, held while it runs), whose EFA devices have GIDs of their
  own (the fifth group of each GID is the host number), and the programs of
  every host reach each other's QPs. What departed processes left in DIR is
  removed when a host ends. DIR must be yours and writable by nobody else,
  nor any directory above it except sticky ones (/tmp), as ssh wants of
  ~/.ssh: another user who could write it could plant the files the devices
  open and inject packets, so such a DIR is refused.

  The library is looked for in $EFASIM_LIBRARY, then next to the efap2p
  executable (the build tree), then in the efap2p/ directory of the libdir
  it was installed to (../lib/efap2p/, ../lib/<multiarch>/efap2p/ or
  ../lib64/efap2p/ from the executable, or the libdir it was built for).
  Programs that LD_PRELOAD cannot reach (static binaries, setuid programs,
  raw system calls) see no emulated host.

Models:
  NAME is a built-in model ('efap2p sim list'), or synthetic-N, the
  synthetic machine of N PCI functions (1 to 65536): switch units of GPUs,
  EFA NICs and other NICs, ACS redirect on every third, for benchmarks at
  any size ('efap2p sim write --machine synthetic-512 DIR').

Writing a tree:
  DIR must be new or empty. --force replaces a tree written there before
  (a directory holding efasim.conf); any other non-empty DIR is refused.

Exit status:
  COMMAND's exit status; 128+N when it was killed by signal N; 127 when it
  cannot be found, 126 when it cannot be run; 2 for bad usage, an unknown
  model or a missing library; 1 when the tree cannot be written.
`
}

func runSim(args []string, stdout, stderr io.Writer) error {
	sub, rest := splitSub(args)
	switch sub {
	case "list":
		return simList(rest, stdout)
	case "write":
		return simWrite(rest, stdout, stderr)
	case "":
		if len(rest) > 0 && (rest[0] == "-h" || rest[0] == "--help") {
			return simHelp()
		}
		if len(rest) > 0 {
			return simRun(rest, stdout, stderr)
		}
		return usagef("what to do? A command after --, list or write")
	}
	return usagef("unknown subcommand %q (want -- COMMAND, list or write)", sub)
}

// simHelp is sim's --help: the usage, then the options of each form.
func simHelp() error {
	var b strings.Builder
	b.WriteString(simUsage())
	fs, _, _, _ := simRunFlags()
	b.WriteString("\nOptions of 'efap2p sim ... -- COMMAND':\n")
	writeOptions(&b, fs)
	fs, _, _, _ = simWriteFlags()
	b.WriteString("\nOptions of 'efap2p sim write':\n")
	writeOptions(&b, fs)
	return helpText(b.String())
}

// modelFlags are the flags that choose a machine model.
type modelFlags struct {
	machine string
	model   string
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.machine, "machine", "", "built-in machine model `NAME` (default "+models.DefaultMachine+"; see 'efap2p sim list')")
	fs.StringVar(&m.model, "model", "", "machine model `FILE` (JSON, its format: "+docFile("machine-models.md")+")")
}

func (m *modelFlags) load() (*models.Machine, error) {
	switch {
	case m.machine != "" && m.model != "":
		return nil, usagef("--machine and --model exclude each other")
	case m.model != "":
		mm, err := models.LoadFile(m.model)
		if err != nil {
			return nil, inputError{err}
		}
		return mm, nil
	}
	name := m.machine
	if name == "" {
		name = models.DefaultMachine
	}
	mm, err := models.Builtin(name)
	if err != nil {
		return nil, inputError{err}
	}
	return mm, nil
}

// executable returns the running binary's path; tests replace it.
var executable = os.Executable

// simRunFlags is the flag set of sim -- COMMAND.
func simRunFlags() (*flag.FlagSet, *modelFlags, *bool, *string) {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	mf := &modelFlags{}
	mf.register(fs)
	keep := fs.Bool("keep", false, "keep the emulated host's sysfs tree and print its path")
	fabric := fs.String("fabric", "", "join the fabric `DIR` shared with other 'efap2p sim' hosts")
	return fs, mf, keep, fabric
}

// simRun runs a command inside an emulated host:
// efap2p sim [--machine NAME | --model FILE] [--keep] -- COMMAND [ARGS...].
func simRun(args []string, stdout, stderr io.Writer) error {
	dash := slices.Index(args, "--")
	if dash < 0 {
		fset, _, _, _ := simRunFlags()
		if err := parseFlags(fset, args, simUsage(), stderr); err != nil {
			if _, ok := err.(helpText); ok {
				return simHelp()
			}
			return err
		}
		return usagef("put the command to run after --")
	}
	fset, mf, keep, fabric := simRunFlags()
	if err := parseFlags(fset, args[:dash], simUsage(), stderr); err != nil {
		if _, ok := err.(helpText); ok {
			return simHelp()
		}
		return err
	}
	if fset.NArg() > 0 {
		return usagef("unexpected %q before --", fset.Arg(0))
	}
	command := args[dash+1:]
	if len(command) == 0 {
		return usagef("no command after --")
	}
	lib, err := sim.FindLibrary(executable, libDir)
	if err != nil {
		return inputError{err}
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	code, err := sim.Run(m, command, sim.RunOptions{Library: lib, Fabric: *fabric, Keep: *keep,
		Stdin: os.Stdin, Stdout: stdout, Stderr: stderr,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "efap2p: "+format+"\n", args...) }})
	if errors.Is(err, sim.ErrDropsEmulator) {
		return inputError{err}
	}
	if err != nil {
		return err
	}
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}

// libDir is the libdir the tool was built to be installed with (the
// Makefile and CMake pass their LIBDIR: go build -ldflags
// "-X main.libDir=/usr/lib/x86_64-linux-gnu"); the emulator's library is in
// its efap2p/ directory. Empty in a plain go build.
var libDir string
