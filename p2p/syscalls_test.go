// SPDX-License-Identifier: MIT

package p2p_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/efap2p/efap2p/internal/pciclass"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/p2p"
)

// straceChild names the tree a re-executed test binary works on.
const straceChild = "EFAP2P_TEST_STRACE_TREE"

// marker opens a path that does not exist, so that the trace shows where
// the work begins and ends.
func marker(name string) { os.Open("/nonexistent-efap2p-marker-" + name) }

// TestFirstAnswerSyscalls runs the first P2P answer for every EFA NIC of
// p5.48xlarge under strace and reads what it asked the kernel: no file is
// stat()ed after it is opened (the reads are bounded and non-blocking
// whatever the file is), and the accelerator scan reads classes through
// the bus/pci/devices links, so the only such links read are the NICs'
// and the accelerators' own (their chains), and no link twice.
func TestFirstAnswerSyscalls(t *testing.T) {
	if dir := os.Getenv(straceChild); dir != "" {
		marker("begin")
		src, err := p2p.OpenSysfs(dir)
		if err != nil {
			t.Fatal(err)
		}
		o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{NoReasons: true})
		m, err := models.Builtin("p5.48xlarge")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range m.EFANICs() {
			if ok, _, err := o.ReachesAccelerator(n.Addr); err != nil || !ok {
				t.Fatalf("%s: %v %v", n.Addr, ok, err)
			}
		}
		marker("end")
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace")
	}
	m, dir := writeModel(t, "p5.48xlarge", models.WriteOptions{})
	out := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-o", out, "-e", "trace=openat,readlinkat,fstat,newfstatat,statx",
		os.Args[0], "-test.run=^TestFirstAnswerSyscalls$", "-test.count=1")
	cmd.Env = append(os.Environ(), straceChild+"="+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(b), "ptrace") || strings.Contains(string(b), "PTRACE") {
			t.Skipf("strace cannot trace here: %s", b)
		}
		t.Fatalf("%v: %s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	begin, end := strings.Index(text, "marker-begin"), strings.Index(text, "marker-end")
	if begin < 0 || end < begin {
		t.Fatalf("no markers in the trace:\n%s", text)
	}
	var chains, opens int
	read := map[string]bool{}
	fdStat := regexp.MustCompile(`(fstat\(\d+|newfstatat\(\d+, ""|statx\(\d+, "")`)
	link := regexp.MustCompile(`readlinkat\(AT_FDCWD, "([^"]*)"`)
	for _, line := range strings.Split(text[begin:end], "\n") {
		switch m := link.FindStringSubmatch(line); {
		case fdStat.MatchString(line):
			t.Errorf("a file is stat()ed after it is opened: %s", line)
		case m != nil && strings.HasPrefix(m[1], dir):
			if read[m[1]] {
				t.Errorf("%s read twice", m[1])
			}
			read[m[1]] = true
			if strings.HasPrefix(m[1], dir+"/bus/pci/devices/") {
				chains++
			}
		case strings.Contains(line, "openat(") && strings.Contains(line, dir):
			opens++
		}
	}
	accels := 0
	for _, f := range m.Functions() {
		if pciclass.IsAccelerator(uint32(f.Class), uint16(f.Vendor), uint16(f.Device)) {
			accels++
		}
	}
	if want := len(m.EFANICs()) + accels; chains != want {
		t.Errorf("%d bus/pci/devices links read, want %d: the chains of %d NICs and %d accelerators", chains, want, len(m.EFANICs()), accels)
	}
	if opens == 0 {
		t.Error("no file of the tree was opened: the trace missed the work")
	}
}
