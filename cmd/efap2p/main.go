// SPDX-License-Identifier: MIT

// Command efap2p answers whether a NIC can DMA into an accelerator's
// memory, pair by pair, the way the kernel's p2pdma code decides, and runs
// programs inside an emulated EFA host.
//
// Usage:
//
//	efap2p check   [--sysfs DIR] [--json | --format text|json|prometheus|line|nfd] [--all-pairs] [-o FILE]
//	efap2p topo    [--sysfs DIR] [--topology FILE] [--full | --p2p | --json | --dot]
//	efap2p explain [--sysfs DIR] [--topology FILE] [--json] PROVIDER CLIENT
//	efap2p export  [--sysfs DIR] [--format json|nccl] [--peer-blocked NIC]... [--boot] [-o FILE]
//	efap2p sim [--machine NAME | --model FILE] [--keep] -- COMMAND [ARGS...]
//	efap2p sim write [--machine NAME | --model FILE] [--force] DIR
//	efap2p sim list
//	efap2p version | --version
//	efap2p help [COMMAND]
//
// Every command takes --help. Exit status: 0 on success, 1 when the work
// failed, 2 for bad usage or input (a wrong address, a missing tree);
// check's own: 0 good, 1 degraded, 2 bad usage, 3 could not tell (also
// when it could not run or write).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/efap2p/efap2p/internal/textwrap"
)

// A command is one subcommand of efap2p.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "--help", "help":
		if len(args) > 1 {
			c, ok := commands[args[1]]
			if !ok {
				return exitCode(usagef("help: unknown command %q", args[1]), "", stdout, stderr)
			}
			return exitCode(c.run([]string{"--help"}, stdout, stderr), c.name, stdout, stderr)
		}
		printUsage(stdout)
		return 0
	case "--version", "-V":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		if strings.HasPrefix(name, "-") {
			return exitCode(usagef("unknown option %s", name), "", stdout, stderr)
		}
		return exitCode(usagef("unknown command %q", name), "", stdout, stderr)
	}
	return exitCode(c.run(args[1:], stdout, stderr), c.name, stdout, stderr)
}

// exitStatus is an error that carries a child's exit status (sim run).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exitCode prints what a command returned and gives the exit status: help
// on stdout (0); a usage error as one line and a hint (2); bad input as one
// line (2); a failure as one line (1).
func exitCode(err error, cmd string, stdout, stderr io.Writer) int {
	var (
		help helpText
		ue   usageError
		ie   inputError
		es   exitStatus
	)
	switch {
	case err == nil:
		return 0
	case errors.As(err, &help):
		fmt.Fprint(stdout, string(help))
		return 0
	case errors.As(err, &es):
		return int(es)
	case errors.As(err, &ue):
		prog := strings.TrimSpace("efap2p " + cmd)
		fmt.Fprintf(stderr, "%s: %v\nTry '%s --help' for more information.\n", prog, err, prog)
		return 2
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "efap2p: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "efap2p: %v\n", err)
		return 1
	}
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "efap2p: can this NIC DMA into that accelerator? The kernel's P2P answer,\npair by pair.\n\nUsage: efap2p COMMAND [OPTIONS] [ARGS]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		// the summary filled to 80 columns, under itself
		text := textwrap.Wrap(commands[n].summary, 80-len("  command  "))
		fmt.Fprintf(w, "  %-8s %s\n", n, strings.ReplaceAll(text, "\n", "\n"+strings.Repeat(" ", len("  command  "))))
	}
	fmt.Fprint(w, `
Run 'efap2p COMMAND --help' for a command's options, 'efap2p --version' for
the version, 'man efap2p' for the manual.
Exit status: 0 ok, 1 failure, 2 bad usage or input.
`)
}

// splitSub returns the subcommand word and the rest, for commands with
// subcommands ("sim write ...").
func splitSub(args []string) (string, []string) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", args
	}
	return args[0], args[1:]
}
