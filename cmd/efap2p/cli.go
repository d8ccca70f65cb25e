// SPDX-License-Identifier: MIT

package main

// The conventions every command follows, as GNU tools and rdma-core's do:
//
//   - --help (or -h) prints the command's usage and its options on standard
//     output, exit status 0;
//   - options are shown as --name (a one-letter option as -o), each with its
//     value's name and its default;
//   - options and arguments may come in any order ("explain GPU0 NIC0
//     --json"); "--" ends the options;
//   - a usage error (unknown option, missing value, wrong arguments) is one
//     line naming the command, then "Try 'efap2p COMMAND --help' ...": exit
//     status 2. Bad input (an unknown machine, a device that is not there)
//     is one line too, exit status 2, without the hint.
//
// Every command parses its flags with parseFlags; run prints what it returns.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/efap2p/efap2p/internal/textwrap"
)

// usageError is an error in how the tool was called: exit status 2, and a
// hint to read the command's --help.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// inputError is bad input, not bad usage (a tree that is not there, an
// unknown machine or device): exit status 2, without the --help hint.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// helpText is returned after --help: run prints it on standard output.
type helpText string

func (h helpText) Error() string { return "help requested" }

// errHelp is what a helpText matches with errors.Is.
var errHelp = errors.New("help requested")

func (h helpText) Is(target error) bool { return target == errHelp }

// parseFlags parses a command's arguments: options anywhere before "--",
// the rest kept as fs.Args(). usage is the text --help prints before the
// options. stderr is not written to (errors are returned, and printed by
// run); the parameter is kept for the commands that pass it.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stderr io.Writer) error {
	_ = stderr
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			return helpText(renderHelp(fs, usage))
		}
		if err != nil {
			return usageError{flagError(err)}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// Leave the arguments where the commands look for them: fs.Args().
	return fs.Parse(append([]string{"--"}, positional...))
}

// optionName renders a flag's name as the help shows it: --name, or -o.
func optionName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagError rewrites the flag package's messages (which say "-name" and
// "flag") the way the help text shows options.
func flagError(err error) error {
	msg := err.Error()
	name := func(s string) string { return optionName(strings.TrimLeft(s, "-")) }
	switch {
	case strings.HasPrefix(msg, "flag provided but not defined: "):
		return fmt.Errorf("unknown option %s", name(strings.TrimPrefix(msg, "flag provided but not defined: ")))
	case strings.HasPrefix(msg, "flag needs an argument: "):
		return fmt.Errorf("option %s needs a value", name(strings.TrimPrefix(msg, "flag needs an argument: ")))
	case strings.HasPrefix(msg, "bad flag syntax: "):
		return fmt.Errorf("bad option syntax: %s", strings.TrimPrefix(msg, "bad flag syntax: "))
	case strings.HasPrefix(msg, "invalid "):
		// invalid value "x" for flag -name: why / invalid boolean value "x" for -name: why
		if i := strings.Index(msg, " for "); i > 0 {
			rest := strings.TrimPrefix(msg[i+len(" for "):], "flag ")
			flagName, why, _ := strings.Cut(rest, ": ")
			return fmt.Errorf("%s for %s: %s", msg[:i], name(flagName), why)
		}
	}
	return err
}

// renderHelp is a command's --help: its usage, then its options.
func renderHelp(fs *flag.FlagSet, usage string) string {
	var b strings.Builder
	b.WriteString(usage)
	if !strings.HasSuffix(usage, "Options:\n") {
		if !strings.HasSuffix(usage, "\n\n") {
			b.WriteString("\n")
		}
		b.WriteString("Options:\n")
	}
	writeOptions(&b, fs)
	return b.String()
}

// writeOptions lists a flag set's options, GNU style:
//
//	--sysfs DIR      sysfs root DIR to read (default ...)
func writeOptions(w io.Writer, fs *flag.FlagSet) {
	type opt struct{ left, text string }
	var opts []opt
	fs.VisitAll(func(f *flag.Flag) {
		value, text := flag.UnquoteUsage(f)
		left := optionName(f.Name)
		if value != "" {
			left += " " + value
		}
		switch f.DefValue {
		case "", "false", "0", "[]":
		default:
			text += " (default " + f.DefValue + ")"
		}
		opts = append(opts, opt{left, text})
	})
	opts = append(opts, opt{"-h, --help", "print this help and exit"})
	width := 0
	for _, o := range opts {
		if len(o.left) > width && len(o.left) <= 22 {
			width = len(o.left)
		}
	}
	indent := strings.Repeat(" ", width+4)
	for _, o := range opts {
		text := strings.ReplaceAll(textwrap.Wrap(o.text, 78-len(indent)), "\n", "\n"+indent)
		if len(o.left) > width {
			fmt.Fprintf(w, "  %s\n%s%s\n", o.left, indent, text)
			continue
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, o.left, text)
	}
}
