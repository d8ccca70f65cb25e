// SPDX-License-Identifier: MIT

// Command efap2p answers whether a NIC can DMA into an accelerator's
// memory, pair by pair, the way the kernel's p2pdma code decides, and runs
// programs inside an emulated EFA host.
//
// Usage:
//
//	efap2p check   [--sysfs DIR] [--json | --format text|json|prometheus|line]   will GPUDirect RDMA work on this node?
//	efap2p topo    [--sysfs DIR] [--json | --dot]      the matrix of accelerators and NICs (--dot: a Graphviz picture)
//	efap2p export  [--sysfs DIR] [--format json|nccl] [-o FILE]   a topology file, or an NCCL topology XML
//	efap2p explain [--sysfs DIR] [--json] PROVIDER CLIENT
//	efap2p sim [--machine NAME | --model FILE] [--keep] -- COMMAND [ARGS...]
//	efap2p sim write [--machine NAME | --model FILE] DIR
//	efap2p sim list
//	efap2p help [COMMAND]
//
// Exit status: 0 on success, 1 when the work failed, 2 for bad usage or
// input (a wrong address, a missing tree).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// A command is one subcommand of efap2p.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// usageError is an error in how the tool was called: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

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
			if c, ok := commands[args[1]]; ok {
				return exitCode(c.run([]string{"--help"}, stdout, stderr), stderr)
			}
		}
		printUsage(stdout)
		return 0
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "efap2p: unknown command %q\n", name)
		printUsage(stderr)
		return 2
	}
	return exitCode(c.run(args[1:], stdout, stderr), stderr)
}

// errHelp is returned after --help was printed.
var errHelp = errors.New("help printed")

// exitStatus is an error that carries a child's exit status (sim run).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	var es exitStatus
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &es):
		return int(es)
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "efap2p: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "efap2p: %v\n", err)
		return 1
	}
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "efap2p: can this NIC DMA into that accelerator? The kernel's P2P answer, pair by pair.\n\nUsage: efap2p COMMAND [OPTIONS] [ARGS]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'efap2p COMMAND --help' for a command's options. Exit status: 0 ok, 1 failure, 2 bad usage or input.\n")
}

// splitSub returns the subcommand word and the rest, for commands with
// subcommands ("sim write ...").
func splitSub(args []string) (string, []string) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", args
	}
	return args[0], args[1:]
}
