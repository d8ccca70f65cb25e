// SPDX-License-Identifier: MIT

package jobenv

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/efap2p/efap2p/internal/textwrap"
)

// The formats Write writes.
const (
	FormatShell         = "shell"          // export lines for sh, with comments
	FormatSlurm         = "slurm"          // a Slurm TaskProlog's standard output
	FormatJSON          = "json"           // the Result
	FormatLibfabricConf = "libfabric-conf" // libfabric.conf lines
)

// Formats lists the formats, in the order the help shows them.
var Formats = []string{FormatShell, FormatSlurm, FormatJSON, FormatLibfabricConf}

// maxPrint bounds a Slurm print line: slurmstepd reads its TaskProlog's
// output in lines of up to 4 KiB.
const maxPrint = 1000

// Write writes the result in format:
//
//   - shell: "export NAME=value" and "unset NAME" lines, quoted for sh,
//     each after a comment that says why, the answer in a comment first;
//   - slurm: a Slurm TaskProlog's output, "export NAME=value" (the value
//     as is: slurmstepd takes the rest of the line) and "unset NAME"
//     lines, and, where no pair of the task gets P2P, a "print" line that
//     slurmstepd writes to the task's standard output: Why;
//   - json: the Result;
//   - libfabric-conf: "FI_NAME=value" lines for libfabric.conf (libfabric
//     1.18 and later read them; the environment wins), nothing else: the
//     file has no comments (libfabric takes any line with "=" for a
//     variable).
func (r *Result) Write(w io.Writer, format string) error {
	var b strings.Builder
	switch format {
	case FormatShell:
		comment(&b, "efap2p env: "+r.Summary+" ("+r.sourcePhrase()+").")
		for _, n := range r.Unset {
			comment(&b, n+" was set by an earlier efap2p env, and is not for this task:")
			fmt.Fprintf(&b, "unset %s\n", n)
		}
		for _, v := range r.Set {
			if v.Name == VarMarker {
				fmt.Fprintf(&b, "export %s=%s    # what efap2p env set\n", v.Name, shellQuote(v.Value))
				continue
			}
			comment(&b, v.Why+":")
			fmt.Fprintf(&b, "export %s=%s\n", v.Name, shellQuote(v.Value))
		}
		for _, v := range r.Kept {
			comment(&b, v.Name+"="+v.Value+" "+v.Why+".")
		}
	case FormatSlurm:
		for _, n := range r.Unset {
			fmt.Fprintf(&b, "unset %s\n", n)
		}
		for _, v := range r.Set {
			if strings.ContainsAny(v.Value, "\n\r") {
				return fmt.Errorf("%s: a value with a line break cannot be a TaskProlog line: %q", v.Name, v.Value)
			}
			fmt.Fprintf(&b, "export %s=%s\n", v.Name, v.Value)
		}
		if r.Answer == AnswerNoP2P {
			line := "efap2p: " + strings.Join(strings.Fields(r.Why), " ")
			if len(line) > maxPrint {
				line = line[:maxPrint-3] + "..."
			}
			fmt.Fprintf(&b, "print %s\n", line)
		}
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case FormatLibfabricConf:
		for _, v := range r.Set {
			if strings.HasPrefix(v.Name, "FI_") {
				fmt.Fprintf(&b, "%s=%s\n", v.Name, v.Value)
			}
		}
	default:
		return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sourcePhrase says where the verdicts came from.
func (r *Result) sourcePhrase() string {
	if r.Source == "computed" {
		return "verdicts computed from sysfs"
	}
	return "verdicts from " + r.Source
}

// comment writes s as shell comment lines of at most 80 columns.
func comment(b *strings.Builder, s string) {
	for _, l := range strings.Split(textwrap.Wrap(s, 78), "\n") {
		b.WriteString("# " + l + "\n")
	}
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:,@%+=-]+$`)

// shellQuote quotes s for sh when it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
