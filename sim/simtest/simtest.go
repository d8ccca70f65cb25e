// SPDX-License-Identifier: MIT

// Package simtest runs a package's tests inside the EFA host emulator.
//
// A test binary's TestMain calls Main. Outside the emulator, Main writes
// each machine model's sysfs tree (package sim) and runs the test binary
// again, once per model, with the same flags, SYSFS_PATH naming the tree
// and libefasim.so in LD_PRELOAD, so that the unmodified libibverbs and
// libefa the tests load see the model's EFA devices. Inside, Main runs the
// tests. The library is build/libefasim.so at the module root when it is
// up to date (make build), else it is compiled from sim/preload/*.c with
// the C compiler ($CC, else cc) into the user's cache directory; without
// a compiler the tests that need the emulator skip, saying why.
//
// Environment: EFASIM_LIBRARY names the library to use;
// EFAP2P_SIMTEST_MODELS (comma-separated) chooses the models to run in.
package simtest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/efap2p/efap2p/internal/dl"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/sim"
)

// Models are the machine models the tests run in by default. The first
// one also runs the examples, whose output is written for it. The last
// three put root buses where the kernel does on VMD (a domain above
// 0xffff), devicetree and Hyper-V vPCI hosts.
var Models = []string{"p5.48xlarge", "intel-acs-switch", "multi-domain", "arm64-devicetree", "hyperv-vpci"}

// modelEnv marks a child process: it names the model it runs in.
const modelEnv = "EFAP2P_SIMTEST_MODEL"

var (
	unavailable string          // why the emulator cannot run, outside it
	model       *models.Machine // the model, inside it
)

// Main is for TestMain: it runs the tests inside the emulator, once per
// model, and returns the exit code for os.Exit.
func Main(m *testing.M) int {
	if name := os.Getenv(modelEnv); name != "" {
		mm, err := models.Builtin(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "simtest: %s=%s: %v\n", modelEnv, name, err)
			return 2
		}
		if !active() {
			fmt.Fprintf(os.Stderr, "simtest: %s is set but the emulator is not loaded (LD_PRELOAD=%q)\n", modelEnv, os.Getenv("LD_PRELOAD"))
			return 2
		}
		model = mm
		return m.Run()
	}
	flag.Parse()
	if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
		unavailable = "listing only"
		return m.Run()
	}
	lib, err := Library()
	if err != nil {
		unavailable = err.Error()
		fmt.Fprintf(os.Stderr, "simtest: the emulator tests will skip: %v\n", err)
		// Examples cannot skip; their output is the emulator's.
		if f := flag.Lookup("test.skip"); f != nil {
			pat := "^Example"
			if v := f.Value.String(); v != "" {
				pat = "(?:" + v + ")|^Example"
			}
			if err := f.Value.Set(pat); err != nil {
				fmt.Fprintf(os.Stderr, "simtest: %v\n", err)
			}
		}
		return m.Run()
	}
	models := Models
	if s := os.Getenv("EFAP2P_SIMTEST_MODELS"); s != "" {
		models = strings.Split(s, ",")
	}
	code := 0
	for i, name := range models {
		c, err := runIn(name, lib, i == 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "simtest: %s: %v\n", name, err)
			c = 2
		}
		if c != 0 {
			fmt.Fprintf(os.Stderr, "simtest: FAIL inside the emulated %s (exit status %d)\n", name, c)
			code = 1
		}
	}
	return code
}

// runIn runs the test binary again inside the emulated model name.
func runIn(name, lib string, examples bool) (int, error) {
	mm, err := models.Builtin(name)
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp(treeBase(), "efap2p-simtest-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if err := sim.WriteTree(mm, dir, sim.TreeOptions{}); err != nil {
		return 0, fmt.Errorf("writing the model's tree: %w", err)
	}
	args := os.Args[1:]
	if !examples {
		args = skipExamples(args)
	}
	if testing.Verbose() {
		fmt.Printf("=== simtest: inside the emulated %s\n", name)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = sim.EmulatorEnv(os.Environ(), dir, lib, []string{"EFAP2P_TOPOLOGY", "EFAP2P_KERNEL", modelEnv},
		modelEnv+"="+name, "EFAP2P_KERNEL="+mm.KernelRelease().String())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// skipExamples adds ^Example to the -test.skip pattern: examples show the
// output of the first model. A user's pattern with a slash (one per
// subtest level) is left alone.
func skipExamples(args []string) []string {
	out := make([]string, 0, len(args)+1)
	found := false
	for _, a := range args {
		for _, p := range []string{"-test.skip=", "--test.skip="} {
			if v, ok := strings.CutPrefix(a, p); ok && !found {
				found = true
				if v == "" {
					a = "-test.skip=^Example"
				} else if !strings.Contains(v, "/") {
					a = "-test.skip=(?:" + v + ")|^Example"
				}
			}
		}
		out = append(out, a)
	}
	if !found {
		out = append(out, "-test.skip=^Example")
	}
	return out
}

// treeBase is where trees go: $TMPDIR when set, else /dev/shm when
// writable (a tree is thousands of small files), else the default.
func treeBase() string {
	if os.Getenv("TMPDIR") != "" {
		return ""
	}
	if f, err := os.CreateTemp("/dev/shm", ".efap2p-probe-"); err == nil {
		f.Close()
		os.Remove(f.Name())
		return "/dev/shm"
	}
	return ""
}

// Model returns the machine model the test process runs in, or nil
// outside the emulator.
func Model() *models.Machine { return model }

// Require skips the test when it does not run inside the emulator, saying
// why, and returns the model.
func Require(t testing.TB) *models.Machine {
	t.Helper()
	if model == nil {
		if unavailable == "" {
			unavailable = "not running inside the emulator (call simtest.Main from TestMain)"
		}
		t.Skipf("needs the EFA host emulator: %s", unavailable)
	}
	if _, err := dl.NewLib("libibverbs.so.1").Handle(); err != nil {
		t.Skipf("needs rdma-core's libibverbs (make deps): %v", err)
	}
	return model
}

// ModuleRoot returns the directory of the module's go.mod, searched from
// the working directory up (go test runs a package's tests in its
// directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/efap2p/efap2p\n") {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("the efap2p module's go.mod is not above the working directory")
		}
		dir = up
	}
}

// Library returns the path of libefasim.so: $EFASIM_LIBRARY; else
// build/libefasim.so at the module root when no source in sim/preload is
// newer; else one compiled from the sources into the user's cache.
func Library() (string, error) {
	if p := os.Getenv("EFASIM_LIBRARY"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("EFASIM_LIBRARY: %w", err)
		}
		return abs, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	srcs, err := sources(root)
	if err != nil {
		return "", err
	}
	built := filepath.Join(root, "build", "libefasim.so")
	if fresh(built, srcs) {
		return built, nil
	}
	return compile(srcs)
}

func sources(root string) ([]string, error) {
	dir := filepath.Join(root, "sim", "preload")
	var out []string
	for _, pat := range []string{"*.c", "*.h"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no emulator sources in %s", dir)
	}
	sort.Strings(out)
	return out, nil
}

// fresh reports whether lib exists and is newer than every source.
func fresh(lib string, srcs []string) bool {
	st, err := os.Stat(lib)
	if err != nil {
		return false
	}
	for _, s := range srcs {
		ss, err := os.Stat(s)
		if err != nil || ss.ModTime().After(st.ModTime()) {
			return false
		}
	}
	return true
}

// compile builds libefasim.so from srcs with the flags of
// sim/preload/CMakeLists.txt, into a cache entry named by the sources'
// hash, and returns its path.
func compile(srcs []string) (string, error) {
	h := sha256.New()
	for _, s := range srcs {
		f, err := os.Open(s)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00", filepath.Base(s))
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	fmt.Fprintf(h, "cc=%s", cc)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "efap2p")
	out := filepath.Join(dir, "libefasim-"+hex.EncodeToString(h.Sum(nil))[:16]+".so")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if _, err := exec.LookPath(cc); err != nil {
		return "", fmt.Errorf("libefasim.so is not built (make build) and there is no C compiler to build it (%s: %v)", cc, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".libefasim-*.so")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	var cfiles []string
	for _, s := range srcs {
		if strings.HasSuffix(s, ".c") {
			cfiles = append(cfiles, s)
		}
	}
	args := append([]string{"-shared", "-fPIC", "-O2", "-std=gnu11", "-D_GNU_SOURCE", "-U_FORTIFY_SOURCE", "-U_FILE_OFFSET_BITS",
		"-fno-strict-aliasing", "-fvisibility=hidden", "-o", tmp.Name()}, cfiles...)
	args = append(args, "-ldl", "-lpthread")
	cmd := exec.Command(cc, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("compiling libefasim.so: %s %s: %v\n%s", cc, strings.Join(args, " "), err, b)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", err
	}
	return out, nil
}

// active asks the preloaded library whether an emulated host is loaded.
func active() bool {
	fn, err := dl.Global("efasim_active")
	if err != nil {
		return false
	}
	return int32(dl.Call(fn)) == 1
}

// Dmabuf makes a fake dma-buf of size bytes owned by the PCI function
// owner ("0000:53:00.0"; "" for system memory), exported under expName
// ("" for the owner's driver), through the emulator's
// efasim_dmabuf_create. The caller closes the descriptor.
func Dmabuf(owner, expName string, size uint64) (int, error) {
	fn, err := dl.Global("efasim_dmabuf_create")
	if err != nil {
		return -1, err
	}
	r, errno := dl.CallErrno(fn, uintptr(unsafe.Pointer(cstr(owner))), uintptr(unsafe.Pointer(cstr(expName))), uintptr(size))
	if fd := int32(r); fd >= 0 {
		return int(fd), nil
	}
	return -1, fmt.Errorf("efasim_dmabuf_create(%q, %q, %d): %w", owner, expName, size, dl.ErrnoOrEIO(errno))
}

// RegDmabufMRCalls returns how many REG_DMABUF_MR commands reached the
// emulated kernel in this process.
func RegDmabufMRCalls() uint64 {
	fn, err := dl.Global("efasim_reg_dmabuf_mr_calls")
	if err != nil {
		return 0
	}
	return uint64(dl.Call(fn))
}

// cstr is a C copy of s, or nil for "".
func cstr(s string) *byte {
	if s == "" {
		return nil
	}
	return &dl.CString(s)[0]
}

// Close closes fd through libc, as a C program would: the emulator keeps
// its table of descriptors in step.
func Close(fd int) error {
	fn, err := dl.Global("close")
	if err != nil {
		return err
	}
	if r, errno := dl.CallErrno(fn, uintptr(int32(fd))); int32(r) != 0 {
		return fmt.Errorf("close(%d): %w", fd, dl.ErrnoOrEIO(errno))
	}
	return nil
}
