// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/efap2p/efap2p/answer"
	"github.com/efap2p/efap2p/internal/secenv"
	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/nodecheck"
	"github.com/efap2p/efap2p/p2p"
)

func init() {
	register(&command{name: "check", summary: "will GPUDirect RDMA work on this node? every accelerator's P2P NICs, and what is in the way", run: runCheck})
}

// checkUsage is check's --help text (a function: it names the installed
// documents' paths).
func checkUsage() string {
	return `Usage: efap2p check [--sysfs DIR] [--topology FILE] [--expect MODEL]
                    [--kernel RELEASE]
                    [--json | --format text|json|prometheus|line|nfd]
                    [--all-pairs] [-o FILE]

Tells whether GPUDirect RDMA works on this node: for every accelerator, the
EFA NICs it gets true P2P DMA with (by dma-buf, or by the out-of-tree EFA
driver's peer memory), and everything in the way, each with its fix: an EFA
device without an active port or unlisted by libibverbs, missing drivers and
modules, the EFA driver in use and its peer-memory provider, a kernel too old
for dma-buf registration,
pairs the oracle refuses or bounces, a layout that differs from the machine
model of the EC2 instance type (DMI product_name; --expect MODEL compares
with a built-in model or a model file), and verdicts that cannot be vouched
for (without root and without a topology file, ACS state is hidden, and
matters only where it could change an outcome). A node without EFA devices or
without accelerators (a CPU node) is "not applicable", which is healthy.

Formats:
  text        for people (default)
  json        the report (--json is the same); its JSON Schema:
                ` + dataFile("check-report.schema.json") + `
  prometheus  a node_exporter textfile-collector file (write it with
              -o DIR/efap2p.prom): the status, the counts, each
              accelerator's and each EFA NIC's P2P partners, the findings,
              and the pairs that are not OK (--all-pairs: every pair)
  line        one short line on stdout, for Kubernetes node-problem-detector
              custom plugins and Slurm health checks
  nfd         a node-feature-discovery feature file (features.d/efap2p):
              efa.p2p=true, the status, the counts, the instance type

The configurations for node-problem-detector, Slurm, Prometheus and the
others:
  ` + docFile("operators.md") + `

Exit status: 0 all good or not applicable, 1 degraded (findings), 2 bad usage,
3 could not tell (uncertain verdicts only, the machine could not be read, or
the output could not be written: never 1, which reports the node). In line
mode the node-problem-detector protocol: 0 OK (also not applicable), 1
problem, 2 unknown (also bad usage, or a failure to run or write).

Options:
`
}

func runCheck(args []string, stdout, stderr io.Writer) error {
	err := checkCommand(args, stdout, stderr)
	var (
		ue   usageError
		es   exitStatus
		help helpText
	)
	switch {
	case err == nil, errors.As(err, &es), errors.As(err, &help):
		return err
	case errors.As(err, &ue) && !lineFormat(args):
		return err
	}
	// Bad usage in line mode, or a failure to run or write in any mode: the
	// check did not judge the node, so "unknown" (3; node-problem-detector's
	// 2 in line mode), never 1, which says the node is degraded.
	fmt.Fprintf(stderr, "efap2p: %v\n", err)
	if lineFormat(args) {
		// node-problem-detector reads the message on stdout
		fmt.Fprintln(stdout, clipLine("UNKNOWN: efap2p check: "+err.Error()))
		return exitStatus(2)
	}
	return exitStatus(3)
}

// lineFormat reports whether the arguments ask for the line mode.
func lineFormat(args []string) bool {
	for i, a := range args {
		if a == "--format=line" || a == "-format=line" || (a == "--format" || a == "-format") && i+1 < len(args) && args[i+1] == "line" {
			return true
		}
	}
	return false
}

func checkCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	of := oracleFlags{stderr: stderr}
	of.register(fs, true)
	of.registerJSON(fs)
	format := fs.String("format", "text", "output `FORMAT`: text, json, prometheus, line or nfd")
	expect := fs.String("expect", "", "compare with machine `MODEL` (a built-in name, see 'efap2p sim list', or a model file)")
	allPairs := fs.Bool("all-pairs", false, "with --format prometheus, the series of every pair (6 a pair: 1536 on a p5.48xlarge), not only of those that are not OK")
	out := fs.String("o", "", "write the output to `FILE` (atomically: a textfile collector never reads half a file; its folder is created)")
	if err := parseFlags(fs, args, checkUsage(), stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return usagef("check takes no arguments")
	}
	if of.json {
		if *format != "text" && *format != "json" {
			return usagef("--json and --format %s exclude each other", *format)
		}
		*format = "json"
	}
	switch *format {
	case "text", "json", "prometheus", "line", "nfd":
	default:
		return usagef("--format %q: want text, json, prometheus, line or nfd", *format)
	}
	if *allPairs && *format != "prometheus" {
		return usagef("--all-pairs is for --format prometheus (--json lists every pair)")
	}
	opt := nodecheck.Options{}
	switch {
	case of.kernel != nil:
		opt.Kernel = *of.kernel
	case secenv.Getenv(p2p.KernelEnv) != "":
		// The verdicts follow $EFAP2P_KERNEL: so does every finding.
		opt.Kernel, opt.KernelSource = secenv.Getenv(p2p.KernelEnv), "environment"
	}
	if *expect != "" {
		m, err := loadExpect(*expect)
		if err != nil {
			return usageError{err}
		}
		opt.Expect = m
	}
	report, err := checkNode(&of, opt)
	if err != nil {
		fmt.Fprintf(stderr, "efap2p: check: could not tell: %v\n", err)
		switch *format {
		case "line":
			return writeOut(*out, stdout, []byte(clipLine("UNKNOWN: "+err.Error())+"\n"), exitStatus(2), stderr)
		case "prometheus":
			// A textfile that says "could not tell" rather than a stale one.
			var buf bytes.Buffer
			failed := &nodecheck.Report{Status: nodecheck.StatusUnknown, ExitCode: 3, ToolVersion: toolVersion()}
			if err := failed.WritePrometheus(&buf, time.Now()); err != nil {
				return err
			}
			return writeOut(*out, stdout, buf.Bytes(), exitStatus(3), stderr)
		}
		return exitStatus(3)
	}
	var buf bytes.Buffer
	code := report.ExitCode
	report.ToolVersion = toolVersion()
	switch *format {
	case "json":
		err = writeJSON(&buf, report)
	case "prometheus":
		err = report.WritePrometheusWith(&buf, time.Now(), nodecheck.PromOptions{AllPairs: *allPairs})
	case "nfd":
		err = report.WriteNFD(&buf)
	case "line":
		buf.WriteString(report.Line() + "\n")
		code = report.LineExitCode()
	default:
		err = report.WriteText(&buf)
	}
	if err != nil {
		return err
	}
	var status error
	if code != 0 {
		status = exitStatus(code)
	}
	return writeOut(*out, stdout, buf.Bytes(), status, stderr)
}

// checkNode opens the machine and runs the check; a machine that cannot
// be read is an error (could not tell), not a usage error.
func checkNode(of *oracleFlags, opt nodecheck.Options) (*nodecheck.Report, error) {
	o, src, err := of.open()
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			return nil, ue.err
		}
		return nil, err
	}
	opt.Oracle, opt.Root, opt.TopologyFile = o, src.Root(), of.named
	opt.Userspace = userspaceDevices(src.Root())
	return nodecheck.Run(opt)
}

// loadExpect reads --expect: a built-in model's name, or a model file.
func loadExpect(s string) (*models.Machine, error) {
	if strings.ContainsRune(s, '/') || strings.HasSuffix(s, ".json") {
		return models.LoadFile(s)
	}
	m, err := models.Builtin(s)
	if err != nil {
		return nil, fmt.Errorf("--expect: %w", err)
	}
	return m, nil
}

func clipLine(s string) string {
	if len(s) > nodecheck.MaxLine {
		return s[:nodecheck.MaxLine-3] + "..."
	}
	return s
}

// writeOut writes data to stdout, or atomically to file (its folder
// created, a temporary file in it renamed over file, mode 0644, as export
// -o writes), then returns status. An error is the failure to write.
func writeOut(file string, stdout io.Writer, data []byte, status error, stderr io.Writer) error {
	if file == "" {
		if _, err := stdout.Write(data); err != nil {
			return fmt.Errorf("check: writing the output: %w", err)
		}
		return status
	}
	if err := answer.WriteFileAtomic(file, data); err != nil {
		return fmt.Errorf("check: could not write %s: %w", file, err)
	}
	return status
}
