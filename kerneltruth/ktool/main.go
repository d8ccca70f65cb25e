// SPDX-License-Identifier: MIT

// Command ktool is the kernel-truth harness's helper (kerneltruth/run.sh):
//
//	ktool dump [ROOT]           the PCI sysfs at ROOT (/sys) as a dump, on stdout (in the guest)
//	ktool record [flags] CAPTURE
//	                            a boot's second serial port -> a fixture; compares
//	                            the guest's efap2p explain with the kernel
//	ktool replay --efap2p BIN FIXTURE...
//	                            runs BIN explain --all --json --sysfs DUMP --kernel RELEASE
//	                            on each fixture's dump and compares it with the kernel
//
// Each comparison prints "N/N pairs match the kernel" and every
// disagreement; any disagreement makes the exit status 1.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/efap2p/efap2p/internal/sysfsdump"
	"github.com/efap2p/efap2p/kerneltruth"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "dump":
		root := "/sys"
		if len(os.Args) > 2 {
			root = os.Args[2]
		}
		err = sysfsdump.Write(root, os.Stdout)
	case "record":
		err = record(os.Args[2:])
	case "replay":
		err = replay(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ktool: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: ktool dump [ROOT] | record [flags] CAPTURE | replay --efap2p BIN FIXTURE...")
	os.Exit(2)
}

var errMismatch = errors.New("the oracle disagrees with the kernel")

func record(args []string) error {
	fs := flag.NewFlagSet("record", flag.ExitOnError)
	var fx kerneltruth.Fixture
	out := fs.String("o", "", "the fixture `FILE` to write")
	p2pdma := fs.Bool("p2pdma", true, "the kernel was built with CONFIG_PCI_P2PDMA")
	fs.StringVar(&fx.Scenario, "scenario", "", "the scenario's `NAME`")
	fs.StringVar(&fx.Build, "build", "", "the kernel build's `NAME`")
	fs.StringVar(&fx.QEMU, "qemu", "", "the QEMU machine and device `OPTIONS`")
	fs.StringVar(&fx.Cmdline, "cmdline", "", "the kernel command `LINE`")
	fs.Parse(args)
	if fs.NArg() != 1 || *out == "" || fx.Scenario == "" || fx.Build == "" {
		return errors.New("record needs -o, --scenario, --build and one CAPTURE")
	}
	fx.P2PDMA = *p2pdma
	cap, err := kerneltruth.ReadCaptureFile(fs.Arg(0))
	if err != nil {
		return err
	}
	fx.Kernel, fx.Report, fx.Sysfs = cap.Report.Release, cap.Report, cap.Sysfs
	res := kerneltruth.Compare(cap.Report, cap.Guest)
	fx.Guest = fmt.Sprintf("%d/%d", res.Matches, res.Pairs)
	label := fmt.Sprintf("%s on %s, efap2p in the guest", fx.Scenario, fx.Build)
	fmt.Printf("%-44s %s\n", label+":", res)
	for _, m := range res.Mismatches {
		fmt.Printf("  %s\n", m)
	}
	for _, m := range kerneltruth.CheckACS(&fx) {
		fmt.Printf("  sysfs dump: %s\n", m)
		res.Mismatches = append(res.Mismatches, m)
	}
	var b bytes.Buffer
	if err := fx.Write(&b); err != nil {
		return err
	}
	// The fixture must read back as it was written.
	if _, err := kerneltruth.ReadFixture(bytes.NewReader(b.Bytes())); err != nil {
		return fmt.Errorf("the fixture does not read back: %w", err)
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		return err
	}
	if !res.OK() {
		return errMismatch
	}
	return nil
}

func replay(args []string) error {
	fs := flag.NewFlagSet("replay", flag.ExitOnError)
	bin := fs.String("efap2p", "", "the efap2p `BINARY` to run")
	fs.Parse(args)
	if *bin == "" || fs.NArg() == 0 {
		return errors.New("replay needs --efap2p and at least one FIXTURE")
	}
	total, matches, failed := 0, 0, false
	for _, name := range fs.Args() {
		fx, err := kerneltruth.ReadFixtureFile(name)
		if err != nil {
			return err
		}
		res, err := replayOne(*bin, fx)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		label := fmt.Sprintf("%s on %s, efap2p --sysfs DUMP", fx.Scenario, fx.Build)
		fmt.Printf("%-44s %s\n", label+":", res)
		for _, m := range res.Mismatches {
			fmt.Printf("  %s\n", m)
		}
		total += res.Pairs
		matches += res.Matches
		failed = failed || !res.OK()
	}
	fmt.Printf("all boots, efap2p --sysfs DUMP: %d/%d pairs match the kernel\n", matches, total)
	if failed {
		return errMismatch
	}
	return nil
}

// replayOne extracts the fixture's dump and runs the efap2p binary on it,
// with the fixture's release and kernel configuration.
func replayOne(bin string, fx *kerneltruth.Fixture) (kerneltruth.Result, error) {
	dir, err := os.MkdirTemp("", "ktool-")
	if err != nil {
		return kerneltruth.Result{}, err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "sys")
	if err := os.Mkdir(root, 0o755); err != nil {
		return kerneltruth.Result{}, err
	}
	if err := fx.Sysfs.Extract(root); err != nil {
		return kerneltruth.Result{}, err
	}
	// what /boot/config-RELEASE says on a machine with that kernel
	cfg := filepath.Join(dir, "config-"+fx.Kernel)
	line := "# CONFIG_PCI_P2PDMA is not set\n"
	if fx.P2PDMA {
		line = "CONFIG_PCI_P2PDMA=y\n"
	}
	if err := os.WriteFile(cfg, []byte(line), 0o644); err != nil {
		return kerneltruth.Result{}, err
	}
	cmd := exec.Command(bin, "explain", "--all", "--json", "--sysfs", root, "--kernel", fx.Kernel, "--kernel-config", cfg)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return kerneltruth.Result{}, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(errb.String()))
	}
	answers, err := kerneltruth.ReadAnswers(io.Reader(&out))
	if err != nil {
		return kerneltruth.Result{}, err
	}
	return kerneltruth.Compare(fx.Report, answers), nil
}
