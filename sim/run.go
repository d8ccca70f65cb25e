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
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

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
// passed on to it, and a kill of this process (SIGKILL) kills it too.
// A command that sets LD_PRELOAD through env(1) keeps the emulator's
// library in it, and one that would drop the host is refused before it
// starts (CommandPreload, ErrDropsEmulator).
func Run(m *models.Machine, command []string, opt RunOptions) (int, error) {
	command, err := CommandPreload(command, opt.Library)
	if err != nil {
		return 0, fmt.Errorf("sim: %w", err)
	}
	base := treeBase()
	for _, d := range CleanTrees(base) {
		opt.logf("removed the tree of an efap2p sim that is gone: %s", d)
	}
	dir, err := os.MkdirTemp(base, treePrefix)
	if err != nil {
		return 0, fmt.Errorf("sim: %w", err)
	}
	// held while this host runs: a tree nobody locks is a dead one's
	lock, err := lockTree(dir, true)
	if err != nil {
		os.RemoveAll(dir)
		return 0, fmt.Errorf("sim: %w", err)
	}
	defer lock.Close()
	defer func() {
		if opt.Keep {
			opt.logf("kept the emulated host's tree in %s", dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			opt.logf("removing %s: %v", dir, err)
		}
	}()
	// a process without CAP_SYS_ADMIN reads 64 bytes of config space and
	// no ACPI table: the tree the command sees says the same
	topt := TreeOptions{WriteOptions: models.WriteOptions{Unprivileged: !CapSysAdmin()}}
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
// outlives them to clean up. If efap2p is killed outright, the command
// is killed with it.
func runChild(command []string, env []string, opt RunOptions) (int, error) {
	// the kernel sends Pdeathsig when the thread that forked exits, not the
	// process: keep this goroutine on that thread until the command is done
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(command[0], command[1:]...)
	// the command is looked for on the emulated host's PATH, as a shell
	// inside it would (the tree's BinDir first)
	if p, ok := lookPathIn(command[0], env); ok {
		cmd.Path, cmd.Err = p, nil
	}
	cmd.Env = env
	// The command lives on the emulated host this process holds: if this
	// process is killed outright (a CI job's timeout, SIGKILL), the host is
	// gone, and a command left behind would spin on a device nobody serves.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
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

// treePrefix names the trees Run makes; treeLock is the file in each that
// its host holds locked.
const (
	treePrefix = "efap2p-sim-"
	treeLock   = "efasim.lock"
)

// lockTree takes the lock a running host holds on its tree: an exclusive
// flock on its lock file (made if create), which the kernel drops when the
// process dies.
func lockTree(dir string, create bool) (*os.File, error) {
	flags := os.O_RDWR | unix.O_NOFOLLOW
	if create {
		flags |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(filepath.Join(dir, treeLock), flags, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return f, nil
}

// CleanTrees removes from base (the default place when "") the trees of
// hosts that are gone: a process killed with SIGKILL could not remove its
// own. A tree is a dead one's when it has a lock file that nobody holds
// and it is whole (its emulator configuration is written after the lock
// is taken), or when nobody holds it for a minute; a tree without a lock
// file (an older efap2p's, which took none) and other users' trees are
// left alone. It returns the trees it removed.
func CleanTrees(base string) []string {
	if base == "" {
		base = os.TempDir()
	}
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var gone []string
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), treePrefix) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		var st unix.Stat_t
		if unix.Lstat(dir, &st) != nil || st.Uid != uint32(os.Geteuid()) {
			continue
		}
		lock, err := lockTree(dir, false)
		if err != nil {
			continue // its host runs, or it has no lock file
		}
		_, whole := os.Stat(filepath.Join(dir, EmulatorConfigName))
		if whole == nil || time.Since(time.Unix(st.Mtim.Unix())) > time.Minute {
			if os.RemoveAll(dir) == nil {
				gone = append(gone, dir)
			}
		}
		lock.Close()
	}
	return gone
}

// CapSysAdmin reports whether this process has CAP_SYS_ADMIN in its
// effective set (what the kernel asks of a reader of config space past 64
// bytes), from /proc/self/status.
func CapSysAdmin() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return os.Geteuid() == 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<unix.CAP_SYS_ADMIN) != 0
		}
	}
	return os.Geteuid() == 0
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
