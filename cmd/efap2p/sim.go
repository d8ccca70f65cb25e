// SPDX-License-Identifier: MIT

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim"

	"golang.org/x/sys/unix"
)

func init() {
	register(&command{name: "sim", summary: "run a command inside an emulated EFA host; list and write machine models", run: runSim})
}

const simUsage = `Usage:
  efap2p sim [--machine NAME | --model FILE] [--keep] -- COMMAND [ARGS...]
      run COMMAND inside an emulated EFA host
  efap2p sim list
      list the built-in machine models
  efap2p sim write [--machine NAME | --model FILE] [--unprivileged] DIR
      write the model's sysfs tree (and the emulator's efasim.conf) under DIR

Running a command:
  The model (default ` + sim.DefaultMachine + `) is written as a sysfs tree to a new
  temporary directory; COMMAND runs with SYSFS_PATH naming that tree and
  libefasim.so appended to LD_PRELOAD. Inside, the unmodified rdma-core
  userspace (libibverbs, libefa, ibv_devices, ibv_devinfo, pyverbs) sees the
  model's EFA devices: /dev/infiniband/uverbsN, contexts, device and port
  queries, protection domains, memory registration, and dma-buf
  registration that the emulated kernel accepts or refuses per the model.
  EFASIM_CONFIG is removed from COMMAND's environment, so that the tree's
  efasim.conf is the one used; EFAP2P_KERNEL is set to the model's kernel
  release (its "kernel", default latest), so that the oracle inside decides
  by the emulated host's rules; EFASIM_TRACE=1 makes the library log each
  emulated call on stderr. The tree is removed when COMMAND ends, unless
  --keep is given (then its path is printed on stderr).

  The library is looked for in $EFASIM_LIBRARY, then next to the efap2p
  executable, then in ../lib/efap2p/ from it (an installed layout).
  Programs that LD_PRELOAD cannot reach (static binaries, setuid programs,
  raw system calls) see no emulated host.

Exit status:
  COMMAND's exit status; 128+N when it was killed by signal N; 127 when it
  cannot be found, 126 when it cannot be run; 2 for bad usage, an unknown
  model or a missing library; 1 when the tree cannot be written.
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
		if len(rest) > 0 {
			return simRun(rest, stdout, stderr)
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

// libraryName is the file name of the emulator's preload library.
const libraryName = "libefasim.so"

// executable returns the running binary's path; tests replace it.
var executable = os.Executable

// simRun runs a command inside an emulated host:
// efap2p sim [--machine NAME | --model FILE] [--keep] -- COMMAND [ARGS...].
func simRun(args []string, stdout, stderr io.Writer) error {
	dash := slices.Index(args, "--")
	if dash < 0 {
		fmt.Fprint(stderr, simUsage)
		return usagef("sim: put the command to run after --")
	}
	fset := flag.NewFlagSet("sim", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var mf modelFlags
	mf.register(fset)
	keep := fset.Bool("keep", false, "keep the emulated host's sysfs tree and print its path")
	fset.Usage = func() { fmt.Fprint(stderr, simUsage); fset.PrintDefaults() }
	if err := fset.Parse(args[:dash]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usageError{err}
	}
	if fset.NArg() > 0 {
		return usagef("sim: unexpected %q before --", fset.Arg(0))
	}
	command := args[dash+1:]
	if len(command) == 0 {
		return usagef("sim: no command after --")
	}
	lib, err := findLibrary()
	if err != nil {
		return usageError{err}
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(treeBase(), "efap2p-sim-")
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	defer func() {
		if *keep {
			fmt.Fprintf(stderr, "efap2p: kept the emulated host's tree in %s\n", dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(stderr, "efap2p: removing %s: %v\n", dir, err)
		}
	}()
	if err := m.Write(dir, sim.WriteOptions{}); err != nil {
		return fmt.Errorf("sim: writing machine %s: %w", m.Name, err)
	}
	code, err := runChild(command, sim.EmulatorEnv(os.Environ(), dir, lib, []string{p2p.KernelEnv}, p2p.KernelEnv+"="+m.KernelRelease().String()), stdout, stderr)
	if err != nil {
		return err
	}
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}

// findLibrary locates libefasim.so: $EFASIM_LIBRARY, then next to the
// executable, then ../lib/efap2p/ from it. The path returned is absolute,
// as LD_PRELOAD needs in a child that may change directory.
func findLibrary() (string, error) {
	if p := os.Getenv("EFASIM_LIBRARY"); p != "" {
		abs, err := filepath.Abs(p)
		if err == nil {
			err = regularFile(abs)
		}
		if err != nil {
			return "", fmt.Errorf("EFASIM_LIBRARY=%s: %w", p, err)
		}
		return abs, nil
	}
	exe, err := executable()
	if err != nil {
		return "", fmt.Errorf("finding %s: %w", libraryName, err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	dir := filepath.Dir(exe)
	candidates := []string{
		filepath.Join(dir, libraryName),
		filepath.Join(dir, "..", "lib", "efap2p", libraryName),
	}
	for _, c := range candidates {
		if regularFile(c) == nil {
			return filepath.Abs(c)
		}
	}
	return "", fmt.Errorf("%s not found (looked for %s); build it with 'make c-build', or set EFASIM_LIBRARY", libraryName, strings.Join(candidates, " and "))
}

func regularFile(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", p)
	}
	return nil
}

// runChild runs command and returns its exit status as a shell reports
// it: 128+N for a signal N, 127 when not found, 126 when not runnable.
// SIGTERM and SIGHUP sent to efap2p are passed on; SIGINT and SIGQUIT
// come from the terminal to the whole process group, so efap2p only
// outlives them to clean up.
func runChild(command []string, env []string, stdout, stderr io.Writer) (int, error) {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = env
	cmd.Stdin = os.Stdin
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "efap2p: sim: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return 127, nil
		}
		return 126, nil
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGTERM || s == syscall.SIGHUP {
					_ = cmd.Process.Signal(s)
				}
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ws.ExitStatus(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("sim: %w", err)
	}
	return cmd.ProcessState.ExitCode(), nil
}

// treeBase is where emulated trees go: $TMPDIR when set, else /dev/shm when
// it is a writable directory (a tree is thousands of small files: on tmpfs
// a p5.48xlarge tree takes milliseconds to write, on some disks a second),
// else the system default.
func treeBase() string {
	if os.Getenv("TMPDIR") != "" {
		return ""
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && unix.Access("/dev/shm", unix.W_OK) == nil {
		return "/dev/shm"
	}
	return ""
}
