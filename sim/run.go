// SPDX-License-Identifier: MIT

package sim

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"

	"golang.org/x/sys/unix"
)

// RunOptions say how Run runs a command inside an emulated host.
type RunOptions struct {
	// Library is the emulator's library (FindLibrary), appended to the
	// command's LD_PRELOAD.
	Library string
	// Fabric, when set, is the fabric directory the host joins
	// (JoinFabric); the host leaves it when the command ends.
	Fabric string
	// Keep leaves the host's tree in place when the command ends.
	Keep bool
	// Stdin, Stdout and Stderr are the command's.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Logf reports what Run does beside the command, one line each: the
	// tree kept, a tree or fabric it could not clean up, a command it could
	// not start. Nil: nothing is reported.
	Logf func(format string, args ...any)
}

func (opt *RunOptions) logf(format string, args ...any) {
	if opt.Logf != nil {
		opt.Logf(format, args...)
	}
}

// Run runs command inside an emulated host of machine m (efap2p sim --
// COMMAND): the machine's tree (WriteTree) in a new temporary directory,
// the command's environment from EmulatorEnv, with EFAP2P_KERNEL set to
// the machine's kernel release so that the oracle inside decides by the
// emulated host's rules. When the installed libefa does not claim the
// machine's EFA devices, Run says so first (ProviderNote). The tree is
// removed when the command ends, unless opt.Keep is set. Run returns the command's exit status as a shell
// reports it: 128+N when signal N killed it, 127 when it cannot be found,
// 126 when it cannot be run; SIGTERM and SIGHUP sent to this process are
// passed on to it.
func Run(m *models.Machine, command []string, opt RunOptions) (int, error) {
	dir, err := os.MkdirTemp(treeBase(), "efap2p-sim-")
	if err != nil {
		return 0, fmt.Errorf("sim: %w", err)
	}
	defer func() {
		if opt.Keep {
			opt.logf("kept the emulated host's tree in %s", dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			opt.logf("removing %s: %v", dir, err)
		}
	}()
	topt := TreeOptions{}
	if opt.Fabric != "" {
		host, err := JoinFabric(opt.Fabric)
		if err != nil {
			return 0, fmt.Errorf("sim: %w", err)
		}
		defer func() {
			if err := host.Close(); err != nil {
				opt.logf("cleaning fabric %s: %v", host.Dir, err)
			}
		}()
		topt.Fabric, topt.Host = host.Dir, host.ID
	}
	if err := WriteTree(m, dir, topt); err != nil {
		return 0, fmt.Errorf("sim: writing machine %s: %w", m.Name, err)
	}
	if note := ProviderNote(m); note != "" {
		opt.logf("%s", note)
	}
	return runChild(command, EmulatorEnv(os.Environ(), dir, opt.Library, []string{p2p.KernelEnv}, p2p.KernelEnv+"="+m.KernelRelease().String()), opt)
}

// runChild runs command and returns its exit status as a shell reports
// it: 128+N for a signal N, 127 when not found, 126 when not runnable.
// SIGTERM and SIGHUP sent to efap2p are passed on; SIGINT and SIGQUIT
// come from the terminal to the whole process group, so efap2p only
// outlives them to clean up.
func runChild(command []string, env []string, opt RunOptions) (int, error) {
	cmd := exec.Command(command[0], command[1:]...)
	// the command is looked for on the emulated host's PATH, as a shell
	// inside it would (the tree's BinDir first)
	if p, ok := lookPathIn(command[0], env); ok {
		cmd.Path, cmd.Err = p, nil
	}
	cmd.Env = env
	cmd.Stdin = opt.Stdin
	cmd.Stdout = opt.Stdout
	cmd.Stderr = opt.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		opt.logf("sim: %v", err)
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

// lookPathIn finds an executable name (without a slash) in the PATH of
// env.
func lookPathIn(name string, env []string) (string, bool) {
	if strings.Contains(name, "/") {
		return "", false
	}
	for _, kv := range env {
		path, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		for _, d := range filepath.SplitList(path) {
			if d == "" {
				continue
			}
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				return p, true
			}
		}
	}
	return "", false
}
